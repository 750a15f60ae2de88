/* The shared helpers of the C tests (test_model.h). */
#include "tests/capi_c/test_model.h"

#include <stdio.h>
#include <stdlib.h>

#include "tests/capi_c/check.h"

const char* test_model_path(void) { return KILN_CAPI_C_MODEL; }

/* test.capi_c.scale(x, out): out = 2 * x, destination-passing style. */
static kiln_status_t* scale(void* user, const kiln_args_t* args, kiln_result_t* result) {
  const kiln_tensor_t* x = NULL;
  const kiln_tensor_t* out = NULL;
  void* xd = NULL;
  void* od = NULL;
  int64_t n = 0;
  kiln_status_t* s;
  (void)user;
  (void)result;
  if ((s = kiln_args_get_tensor(args, 0, &x)) != NULL) return s;
  if ((s = kiln_args_get_tensor(args, 1, &out)) != NULL) return s;
  if ((s = kiln_tensor_data(x, &xd)) != NULL) return s;
  if ((s = kiln_tensor_data(out, &od)) != NULL) return s;
  if ((s = kiln_tensor_element_count(x, &n)) != NULL) return s;
  for (int64_t i = 0; i < n; ++i) ((float*)od)[i] = 2.0f * ((const float*)xd)[i];
  return NULL;
}

void test_register_scale(void) {
  static int registered = 0;
  if (registered) return;
  CHECK_OK(kiln_register_function(TEST_SCALE_FUNCTION, scale, NULL));
  registered = 1;
}

kiln_module_t* test_load_model(void) {
  kiln_module_t* module = NULL;
  test_register_scale();
  CHECK_OK(kiln_module_load_file(test_model_path(), &module));
  return module;
}

kiln_tensor_t* test_f32_tensor(const int64_t* shape, int32_t ndim, float start, float step) {
  kiln_tensor_t* t = NULL;
  void* data = NULL;
  int64_t n = 0;
  CHECK_OK(kiln_tensor_create(shape, ndim, KILN_DTYPE_FLOAT32, &t));
  if (t == NULL) return NULL;
  CHECK_OK(kiln_tensor_data(t, &data));
  CHECK_OK(kiln_tensor_element_count(t, &n));
  for (int64_t i = 0; i < n; ++i) ((float*)data)[i] = start + step * (float)i;
  return t;
}

float test_f32_at(const kiln_tensor_t* tensor, int64_t i) {
  void* data = NULL;
  int64_t n = 0;
  CHECK_OK(kiln_tensor_data(tensor, &data));
  CHECK_OK(kiln_tensor_element_count(tensor, &n));
  CHECK(data != NULL && i < n);
  if (data == NULL || i >= n) return 0.0f;
  return ((const float*)data)[i];
}

void* test_read_file(const char* path, size_t* out_size) {
  FILE* f = fopen(path, "rb");
  void* data = NULL;
  long size;
  *out_size = 0;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
    /* The loader wants 8-byte aligned buffers; aligned_alloc wants a multiple. */
    size_t padded = ((size_t)size + 63u) & ~(size_t)63u;
    data = aligned_alloc(64, padded);
    if (data != NULL && fread(data, 1, (size_t)size, f) != (size_t)size) {
      free(data);
      data = NULL;
    }
    if (data != NULL) *out_size = (size_t)size;
  }
  fclose(f);
  return data;
}
