/* Tensors: create, wrap (with and without a release callback), share,
 * accessors, DLPack import and export, and every argument error. */
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdlib.h>

#include "tests/capi_c/check.h"

static void test_create_and_accessors(void) {
  const int64_t shape[2] = {2, 3};
  kiln_tensor_t* t = NULL;
  kiln_dtype_t dtype = 0;
  int32_t ndim = -1;
  const int64_t* dims = NULL;
  int64_t count = 0;
  size_t bytes = 0;
  void* data = NULL;
  CHECK_OK(kiln_tensor_create(shape, 2, KILN_DTYPE_FLOAT32, &t));
  CHECK_OK(kiln_tensor_dtype(t, &dtype));
  CHECK(dtype == KILN_DTYPE_FLOAT32);
  CHECK_OK(kiln_tensor_ndim(t, &ndim));
  CHECK(ndim == 2);
  CHECK_OK(kiln_tensor_shape(t, &dims));
  CHECK(dims != NULL && dims[0] == 2 && dims[1] == 3);
  CHECK_OK(kiln_tensor_element_count(t, &count));
  CHECK(count == 6);
  CHECK_OK(kiln_tensor_byte_size(t, &bytes));
  CHECK(bytes == 24);
  CHECK_OK(kiln_tensor_data(t, &data));
  CHECK(data != NULL && ((uintptr_t)data % KILN_TENSOR_ALIGNMENT) == 0);
  for (int i = 0; i < 6; ++i) CHECK(((float*)data)[i] == 0.0f); /* zeroed */
  kiln_tensor_release(t);

  /* A scalar: ndim 0, one element, a non-NULL shape pointer. */
  CHECK_OK(kiln_tensor_create(NULL, 0, KILN_DTYPE_INT64, &t));
  CHECK_OK(kiln_tensor_shape(t, &dims));
  CHECK(dims != NULL);
  CHECK_OK(kiln_tensor_element_count(t, &count));
  CHECK(count == 1);
  kiln_tensor_release(t);
  kiln_tensor_release(NULL);
}

static void test_wrap_and_share(void) {
  float buffer[4] = {1, 2, 3, 4};
  const int64_t shape[1] = {4};
  kiln_tensor_t* t = NULL;
  kiln_tensor_t* shared = NULL;
  void* data = NULL;
  CHECK_OK(kiln_tensor_wrap(buffer, shape, 1, KILN_DTYPE_FLOAT32, &t));
  CHECK_OK(kiln_tensor_data(t, &data));
  CHECK(data == buffer);
  CHECK_OK(kiln_tensor_share(t, &shared));
  kiln_tensor_release(t);
  CHECK_OK(kiln_tensor_data(shared, &data));
  CHECK(data == buffer && ((float*)data)[3] == 4.0f);
  kiln_tensor_release(shared);
}

static int g_releases = 0;
static void* g_released_data = NULL;
static void count_release(void* user, void* data) {
  ++*(int*)user;
  g_released_data = data;
}

static void test_wrap_with_release(void) {
  const int64_t shape[2] = {2, 2};
  float* buffer = (float*)aligned_alloc(64, 64);
  kiln_tensor_t* t = NULL;
  kiln_tensor_t* shared = NULL;
  g_releases = 0;
  CHECK_OK(kiln_tensor_wrap_with_release(buffer, shape, 2, KILN_DTYPE_FLOAT32, count_release, &g_releases, &t));
  CHECK_OK(kiln_tensor_share(t, &shared));
  kiln_tensor_release(t);
  CHECK(g_releases == 0); /* the shared handle still holds the storage */
  kiln_tensor_release(shared);
  CHECK(g_releases == 1);
  CHECK(g_released_data == buffer);
  free(buffer);

  /* A failed wrap never calls the callback: the memory stays the caller's. */
  g_releases = 0;
  CHECK_STATUS(kiln_tensor_wrap_with_release(NULL, shape, 2, KILN_DTYPE_FLOAT32, count_release, &g_releases, &t),
               KILN_STATUS_INVALID_ARGUMENT, "data is NULL");
  CHECK(t == NULL && g_releases == 0);
  /* No callback: like kiln_tensor_wrap. */
  {
    float small[2] = {0, 0};
    const int64_t two[1] = {2};
    CHECK_OK(kiln_tensor_wrap_with_release(small, two, 1, KILN_DTYPE_FLOAT32, NULL, NULL, &t));
    kiln_tensor_release(t);
  }
}

static void test_argument_errors(void) {
  const int64_t shape[2] = {2, 3};
  const int64_t negative[2] = {2, -1};
  float buffer[6];
  kiln_tensor_t* t = (kiln_tensor_t*)&t; /* must be reset to NULL */
  CHECK_STATUS(kiln_tensor_create(shape, 2, KILN_DTYPE_FLOAT32, NULL), KILN_STATUS_INVALID_ARGUMENT,
               "out_tensor is NULL");
  CHECK_STATUS(kiln_tensor_create(shape, -1, KILN_DTYPE_FLOAT32, &t), KILN_STATUS_INVALID_ARGUMENT,
               "ndim -1 is negative");
  CHECK(t == NULL);
  CHECK_STATUS(kiln_tensor_create(NULL, 2, KILN_DTYPE_FLOAT32, &t), KILN_STATUS_INVALID_ARGUMENT, "shape is NULL");
  CHECK_STATUS(kiln_tensor_create(negative, 2, KILN_DTYPE_FLOAT32, &t), KILN_STATUS_INVALID_ARGUMENT,
               "dimension 1 is negative (-1)");
  CHECK_STATUS(kiln_tensor_create(shape, 2, KILN_DTYPE(9, 32, 1), &t), KILN_STATUS_INVALID_ARGUMENT,
               "invalid dtype");
  CHECK_STATUS(kiln_tensor_create(shape, 2, KILN_DTYPE(KILN_DTYPE_CODE_FLOAT, 0, 1), &t),
               KILN_STATUS_INVALID_ARGUMENT, "invalid dtype");
  CHECK_STATUS(kiln_tensor_wrap(NULL, shape, 2, KILN_DTYPE_FLOAT32, &t), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_tensor_wrap: data is NULL");
  CHECK_STATUS(kiln_tensor_wrap(buffer, shape, 2, KILN_DTYPE_FLOAT32, NULL), KILN_STATUS_INVALID_ARGUMENT,
               "out_tensor is NULL");
  CHECK_STATUS(kiln_tensor_wrap_with_release(buffer, negative, 2, KILN_DTYPE_FLOAT32, NULL, NULL, &t),
               KILN_STATUS_INVALID_ARGUMENT, "kiln_tensor_wrap_with_release: dimension 1 is negative");
  CHECK_STATUS(kiln_tensor_share(NULL, &t), KILN_STATUS_INVALID_ARGUMENT, "kiln_tensor_share: tensor is NULL");
  CHECK_STATUS(kiln_tensor_share(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_tensor is NULL");

  /* Accessors: NULL tensor, NULL out-parameter; the out-parameter is reset. */
  {
    kiln_dtype_t dtype = 5;
    int32_t ndim = 5;
    const int64_t* dims = shape;
    int64_t count = 5;
    size_t bytes = 5;
    void* data = buffer;
    CHECK_STATUS(kiln_tensor_dtype(NULL, &dtype), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
    CHECK(dtype == 0);
    CHECK_STATUS(kiln_tensor_ndim(NULL, &ndim), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
    CHECK(ndim == 0);
    CHECK_STATUS(kiln_tensor_shape(NULL, &dims), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
    CHECK(dims == NULL);
    CHECK_STATUS(kiln_tensor_element_count(NULL, &count), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
    CHECK(count == 0);
    CHECK_STATUS(kiln_tensor_byte_size(NULL, &bytes), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
    CHECK(bytes == 0);
    CHECK_STATUS(kiln_tensor_data(NULL, &data), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
    CHECK(data == NULL);
    CHECK_STATUS(kiln_tensor_dtype(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_dtype is NULL");
    CHECK_STATUS(kiln_tensor_ndim(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_ndim is NULL");
    CHECK_STATUS(kiln_tensor_shape(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_shape is NULL");
    CHECK_STATUS(kiln_tensor_element_count(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_count is NULL");
    CHECK_STATUS(kiln_tensor_byte_size(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_size is NULL");
    CHECK_STATUS(kiln_tensor_data(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_data is NULL");
  }
}

/* ---- DLPack ---- */

static int g_dl_deletes = 0;
static int64_t g_dl_shape[2] = {2, 3};
static float g_dl_data[6] = {1, 2, 3, 4, 5, 6};
static void count_dl_delete(DLManagedTensor* self) { ++*(int*)self->manager_ctx; }

static DLManagedTensor make_managed(void) {
  DLManagedTensor m;
  memset(&m, 0, sizeof m);
  m.dl_tensor.data = g_dl_data;
  m.dl_tensor.device.device_type = kDLCPU;
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = g_dl_shape;
  m.manager_ctx = &g_dl_deletes;
  m.deleter = count_dl_delete;
  return m;
}

static void test_dlpack_import(void) {
  DLManagedTensor m = make_managed();
  kiln_tensor_t* t = NULL;
  kiln_tensor_t* shared = NULL;
  const int64_t* dims = NULL;
  void* data = NULL;
  kiln_dtype_t dtype = 0;
  g_dl_deletes = 0;
  CHECK_OK(kiln_tensor_from_dlpack(&m, &t));
  CHECK_OK(kiln_tensor_shape(t, &dims));
  CHECK(dims != NULL && dims[0] == 2 && dims[1] == 3);
  CHECK_OK(kiln_tensor_dtype(t, &dtype));
  CHECK(dtype == KILN_DTYPE_FLOAT32);
  CHECK_OK(kiln_tensor_data(t, &data));
  CHECK(data == g_dl_data);
  CHECK_OK(kiln_tensor_share(t, &shared));
  kiln_tensor_release(t);
  CHECK(g_dl_deletes == 0);
  kiln_tensor_release(shared);
  CHECK(g_dl_deletes == 1); /* exactly once, with the last reference */

  /* byte_offset is honoured; compact strides are accepted. */
  {
    int64_t strides[2] = {3, 1};
    m = make_managed();
    m.dl_tensor.byte_offset = 0;
    m.dl_tensor.strides = strides;
    CHECK_OK(kiln_tensor_from_dlpack(&m, &t));
    kiln_tensor_release(t);
    CHECK(g_dl_deletes == 2);
  }
}

static void test_dlpack_import_errors(void) {
  DLManagedTensor m = make_managed();
  kiln_tensor_t* t = NULL;
  int64_t strides[2] = {1, 2}; /* column-major */
  g_dl_deletes = 0;
  CHECK_STATUS(kiln_tensor_from_dlpack(NULL, &t), KILN_STATUS_INVALID_ARGUMENT, "managed is NULL");
  CHECK_STATUS(kiln_tensor_from_dlpack(&m, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_tensor is NULL");
  m.dl_tensor.device.device_type = kDLOpenCL;
  CHECK_STATUS(kiln_tensor_from_dlpack(&m, &t), KILN_STATUS_INVALID_ARGUMENT, "Kiln takes kDLCPU (1), kDLCUDA (2)");
  m = make_managed();
  m.dl_tensor.strides = strides;
  CHECK_STATUS(kiln_tensor_from_dlpack(&m, &t), KILN_STATUS_INVALID_ARGUMENT, "strided");
  m = make_managed();
  m.dl_tensor.dtype.code = 17;
  CHECK_STATUS(kiln_tensor_from_dlpack(&m, &t), KILN_STATUS_INVALID_ARGUMENT, "invalid dtype");
  m = make_managed();
  m.dl_tensor.data = NULL;
  CHECK_STATUS(kiln_tensor_from_dlpack(&m, &t), KILN_STATUS_INVALID_ARGUMENT, "data is NULL");
  m = make_managed();
  m.dl_tensor.ndim = -2;
  CHECK_STATUS(kiln_tensor_from_dlpack(&m, &t), KILN_STATUS_INVALID_ARGUMENT, "ndim -2 is negative");
  CHECK(t == NULL);
  CHECK(g_dl_deletes == 0); /* a failed import leaves the tensor to the caller */
}

static void test_dlpack_export(void) {
  const int64_t shape[2] = {3, 2};
  kiln_tensor_t* t = NULL;
  DLManagedTensor* m = NULL;
  void* data = NULL;
  CHECK_OK(kiln_tensor_create(shape, 2, KILN_DTYPE_INT32, &t));
  CHECK_OK(kiln_tensor_data(t, &data));
  ((int32_t*)data)[5] = 42;
  CHECK_OK(kiln_tensor_to_dlpack(t, &m));
  kiln_tensor_release(t); /* the export keeps the storage alive */
  CHECK(m != NULL);
  if (m == NULL) return;
  CHECK(m->dl_tensor.device.device_type == kDLCPU);
  CHECK(m->dl_tensor.ndim == 2 && m->dl_tensor.shape[0] == 3 && m->dl_tensor.shape[1] == 2);
  CHECK(m->dl_tensor.strides == NULL);
  CHECK(m->dl_tensor.dtype.code == kDLInt && m->dl_tensor.dtype.bits == 32 && m->dl_tensor.dtype.lanes == 1);
  CHECK(m->dl_tensor.data == data && ((int32_t*)m->dl_tensor.data)[5] == 42);
  CHECK(m->deleter != NULL);

  /* Round trip: importing an export gives the same storage back. */
  {
    kiln_tensor_t* back = NULL;
    void* back_data = NULL;
    CHECK_OK(kiln_tensor_from_dlpack(m, &back)); /* takes m over */
    CHECK_OK(kiln_tensor_data(back, &back_data));
    CHECK(back_data == data);
    kiln_tensor_release(back); /* runs m's deleter */
  }

  CHECK_STATUS(kiln_tensor_to_dlpack(NULL, &m), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
  CHECK(m == NULL);
  CHECK_STATUS(kiln_tensor_to_dlpack(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_managed is NULL");
}

int main(void) {
  RUN_TEST(test_create_and_accessors);
  RUN_TEST(test_wrap_and_share);
  RUN_TEST(test_wrap_with_release);
  RUN_TEST(test_argument_errors);
  RUN_TEST(test_dlpack_import);
  RUN_TEST(test_dlpack_import_errors);
  RUN_TEST(test_dlpack_export);
  return FINISH();
}
