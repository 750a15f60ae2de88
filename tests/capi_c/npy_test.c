/* .npy files through kiln.h (kiln_tensor_read_npy, kiln_tensor_write_npy):
 * a round trip of every dtype, bytes checked against a header written by
 * hand, bfloat16's '<V2', a call whose input and output go through files, and
 * every error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/capi_c/check.h"
#include "tests/capi_c/test_model.h"

static const kiln_dtype_t kEveryDtype[] = {
    KILN_DTYPE_FLOAT16, KILN_DTYPE_FLOAT32, KILN_DTYPE_FLOAT64, KILN_DTYPE_BFLOAT16, KILN_DTYPE_INT8,
    KILN_DTYPE_INT16,   KILN_DTYPE_INT32,   KILN_DTYPE_INT64,   KILN_DTYPE_UINT8,    KILN_DTYPE_UINT16,
    KILN_DTYPE_UINT32,  KILN_DTYPE_UINT64,  KILN_DTYPE_BOOL,
};
/* What NumPy calls each of them in a header, in the same order. */
static const char* const kDescr[] = {"<f2", "<f4", "<f8", "<V2", "|i1", "<i2", "<i4",
                                     "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"};

static const char* temp_path(const char* name) {
  static char path[512];
  const char* dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/%s", dir != NULL && dir[0] != '\0' ? dir : "/tmp", name);
  return path;
}

static void test_round_trip_every_dtype(void) {
  const int64_t shape[2] = {2, 3};
  const char* path = temp_path("kiln_capi_c_npy_test.npy");
  for (size_t k = 0; k < sizeof kEveryDtype / sizeof kEveryDtype[0]; ++k) {
    kiln_tensor_t* t = NULL;
    kiln_tensor_t* back = NULL;
    void* data = NULL;
    void* back_data = NULL;
    size_t bytes = 0;
    size_t file_size = 0;
    kiln_dtype_t dtype = 0;
    const int64_t* dims = NULL;
    char* file = NULL;
    char header[128];
    CHECK_OK(kiln_tensor_create(shape, 2, kEveryDtype[k], &t));
    CHECK_OK(kiln_tensor_data(t, &data));
    CHECK_OK(kiln_tensor_byte_size(t, &bytes));
    for (size_t i = 0; i < bytes; ++i) {
      ((uint8_t*)data)[i] = (uint8_t)(kEveryDtype[k] == KILN_DTYPE_BOOL ? i % 2 : 17 * i + 3);
    }
    CHECK_OK(kiln_tensor_write_npy(t, path));

    /* The file is what NumPy reads: the descriptor, then the raw bytes at the end. */
    file = (char*)test_read_file(path, &file_size);
    CHECK(file != NULL && file_size > bytes);
    if (file != NULL) {
      snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (2, 3), }", kDescr[k]);
      CHECK(memcmp(file, "\x93NUMPY", 6) == 0);
      CHECK(strstr(file + 10, header) != NULL);
      CHECK(memcmp(file + file_size - bytes, data, bytes) == 0);
      free(file);
    }

    CHECK_OK(kiln_tensor_read_npy(path, &back));
    CHECK_OK(kiln_tensor_dtype(back, &dtype));
    CHECK(dtype == kEveryDtype[k]);
    CHECK_OK(kiln_tensor_shape(back, &dims));
    CHECK(dims != NULL && dims[0] == 2 && dims[1] == 3);
    CHECK_OK(kiln_tensor_data(back, &back_data));
    CHECK(back_data != NULL && memcmp(back_data, data, bytes) == 0);
    CHECK(((uintptr_t)back_data % KILN_TENSOR_ALIGNMENT) == 0);
    kiln_tensor_release(back);
    kiln_tensor_release(t);
  }
  remove(path);
}

/* main(x, y) = x + y with both inputs and the output in .npy files. */
static void test_call_through_files(void) {
  const int64_t shape[2] = {2, 4};
  const char* x_path = temp_path("kiln_capi_c_npy_x.npy");
  const char* y_path = "kiln_capi_c_npy_y.npy";  /* relative: the working directory */
  kiln_module_t* module = test_load_model();
  kiln_context_t* context = NULL;
  kiln_tensor_t* x = test_f32_tensor(shape, 2, 1.0f, 1.0f);
  kiln_tensor_t* inputs[2] = {NULL, NULL};
  kiln_outputs_t* outputs = NULL;
  const kiln_tensor_t* out = NULL;
  kiln_tensor_t* saved = NULL;
  char x_copy[512];
  CHECK_OK(kiln_tensor_write_npy(x, x_path));
  snprintf(x_copy, sizeof x_copy, "%s", x_path);
  CHECK_OK(kiln_tensor_read_npy(x_copy, &inputs[0]));
  CHECK_OK(kiln_tensor_read_npy(x_copy, &inputs[1]));
  CHECK_OK(kiln_context_create(module, &context));
  CHECK_OK(kiln_context_invoke(context, "main", inputs, 2, &outputs));
  CHECK_OK(kiln_outputs_get(outputs, 0, &out));
  CHECK_OK(kiln_tensor_write_npy(out, y_path));
  CHECK_OK(kiln_tensor_read_npy(y_path, &saved));
  for (int i = 0; i < 8; ++i) CHECK(test_f32_at(saved, i) == 2.0f * (float)(i + 1));
  kiln_tensor_release(saved);
  kiln_outputs_release(outputs);
  kiln_context_release(context);
  kiln_tensor_release(inputs[0]);
  kiln_tensor_release(inputs[1]);
  kiln_tensor_release(x);
  kiln_module_release(module);
  remove(x_copy);
  remove(y_path);
}

static void test_errors(void) {
  const int64_t one[1] = {1};
  kiln_tensor_t* t = (kiln_tensor_t*)&t; /* must be reset to NULL */
  kiln_tensor_t* vec = NULL;
  const char* path = temp_path("kiln_capi_c_npy_bad.npy");
  FILE* f;
  CHECK_STATUS(kiln_tensor_read_npy("/nonexistent/dir/x.npy", &t), KILN_STATUS_NOT_FOUND,
               "cannot open '/nonexistent/dir/x.npy'");
  CHECK(t == NULL);
  CHECK_STATUS(kiln_tensor_read_npy(NULL, &t), KILN_STATUS_INVALID_ARGUMENT, "kiln_tensor_read_npy: path is NULL");
  CHECK_STATUS(kiln_tensor_read_npy("x.npy", NULL), KILN_STATUS_INVALID_ARGUMENT, "out_tensor is NULL");

  f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f != NULL) {
    fputs("not numpy", f);
    fclose(f);
  }
  CHECK_STATUS(kiln_tensor_read_npy(path, &t), KILN_STATUS_DATA_LOSS, "not a .npy file (bad magic)");
  remove(path);

  /* A vector dtype has no .npy form. */
  CHECK_OK(kiln_tensor_create(one, 1, KILN_DTYPE(KILN_DTYPE_CODE_FLOAT, 32, 4), &vec));
  CHECK_STATUS(kiln_tensor_write_npy(vec, path), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_tensor_write_npy: cannot write dtype float32x4 as .npy (supported: float16, float32");
  CHECK_STATUS(kiln_tensor_write_npy(NULL, path), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
  CHECK_STATUS(kiln_tensor_write_npy(vec, NULL), KILN_STATUS_INVALID_ARGUMENT, "path is NULL");
  kiln_tensor_release(vec);
  {
    kiln_tensor_t* ok = NULL;
    CHECK_OK(kiln_tensor_create(one, 1, KILN_DTYPE_FLOAT32, &ok));
    CHECK_STATUS(kiln_tensor_write_npy(ok, "/nonexistent/dir/y.npy"), KILN_STATUS_NOT_FOUND,
                 "cannot open '/nonexistent/dir/y.npy' for writing");
    kiln_tensor_release(ok);
  }
}

int main(void) {
  RUN_TEST(test_round_trip_every_dtype);
  RUN_TEST(test_call_through_files);
  RUN_TEST(test_errors);
  return FINISH();
}
