/* Values: scalars, shapes, tensors and nested tuples; their accessors and
 * every wrong-kind, NULL and index error. */
#include <stdint.h>

#include "tests/capi_c/check.h"

static void test_scalars(void) {
  kiln_value_t* i = NULL;
  kiln_value_t* f = NULL;
  kiln_value_kind_t kind = KILN_VALUE_NONE;
  int64_t iv = 0;
  double fv = 0;
  CHECK_OK(kiln_value_create_int64(-7, &i));
  CHECK_OK(kiln_value_kind(i, &kind));
  CHECK(kind == KILN_VALUE_INT);
  CHECK_OK(kiln_value_get_int64(i, &iv));
  CHECK(iv == -7);
  CHECK_OK(kiln_value_get_float64(i, &fv)); /* ints widen */
  CHECK(fv == -7.0);

  CHECK_OK(kiln_value_create_float64(2.5, &f));
  CHECK_OK(kiln_value_kind(f, &kind));
  CHECK(kind == KILN_VALUE_FLOAT);
  CHECK_OK(kiln_value_get_float64(f, &fv));
  CHECK(fv == 2.5);
  iv = 9;
  CHECK_STATUS(kiln_value_get_int64(f, &iv), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_value_get_int64: expected an int, got float");
  CHECK(iv == 0);
  kiln_value_release(i);
  kiln_value_release(f);
  kiln_value_release(NULL);
}

static void test_shapes(void) {
  const int64_t dims[3] = {1, 784, 0};
  const int64_t bad[2] = {1, -3};
  kiln_value_t* s = NULL;
  int32_t ndim = -1;
  const int64_t* got = NULL;
  CHECK_OK(kiln_value_create_shape(dims, 3, &s));
  CHECK_OK(kiln_value_get_shape(s, &ndim, &got));
  CHECK(ndim == 3 && got != NULL && got[0] == 1 && got[1] == 784 && got[2] == 0);
  kiln_value_release(s);
  CHECK_OK(kiln_value_create_shape(NULL, 0, &s));
  CHECK_OK(kiln_value_get_shape(s, &ndim, &got));
  CHECK(ndim == 0 && got != NULL);
  kiln_value_release(s);

  CHECK_STATUS(kiln_value_create_shape(bad, 2, &s), KILN_STATUS_INVALID_ARGUMENT, "dimension 1 is negative (-3)");
  CHECK(s == NULL);
  CHECK_STATUS(kiln_value_create_shape(dims, -1, &s), KILN_STATUS_INVALID_ARGUMENT, "ndim -1 is negative");
  CHECK_STATUS(kiln_value_create_shape(NULL, 2, &s), KILN_STATUS_INVALID_ARGUMENT, "dims is NULL");
  CHECK_STATUS(kiln_value_create_shape(dims, 3, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_value is NULL");
}

static void test_tensors_and_tuples(void) {
  const int64_t shape[1] = {3};
  const int64_t sdims[2] = {2, 2};
  kiln_tensor_t* t = NULL;
  kiln_value_t* tv = NULL;
  kiln_value_t* iv = NULL;
  kiln_value_t* sv = NULL;
  kiln_value_t* inner = NULL;
  kiln_value_t* outer = NULL;
  kiln_value_t* kept = NULL;
  const kiln_value_t* field = NULL;
  const kiln_value_t* sub = NULL;
  const kiln_tensor_t* bt = NULL;
  size_t size = 0;
  int64_t n = 0;
  void* data = NULL;
  void* field_data = NULL;
  CHECK_OK(kiln_tensor_create(shape, 1, KILN_DTYPE_FLOAT32, &t));
  CHECK_OK(kiln_tensor_data(t, &data));
  CHECK_OK(kiln_value_create_tensor(t, &tv));
  kiln_tensor_release(t); /* the value holds its own reference */
  CHECK_OK(kiln_value_create_int64(5, &iv));
  CHECK_OK(kiln_value_create_shape(sdims, 2, &sv));
  {
    const kiln_value_t* in[2] = {iv, sv};
    CHECK_OK(kiln_value_create_tuple(in, 2, &inner));
  }
  {
    const kiln_value_t* out[2] = {tv, inner};
    CHECK_OK(kiln_value_create_tuple(out, 2, &outer));
  }
  kiln_value_release(iv);
  kiln_value_release(sv);
  kiln_value_release(inner);
  kiln_value_release(tv);

  CHECK_OK(kiln_value_share(outer, &kept));
  kiln_value_release(outer);
  CHECK_OK(kiln_value_tuple_size(kept, &size));
  CHECK(size == 2);
  CHECK_OK(kiln_value_tuple_get(kept, 0, &field));
  CHECK_OK(kiln_value_get_tensor(field, &bt));
  CHECK_OK(kiln_tensor_data(bt, &field_data));
  CHECK(field_data == data);
  CHECK_OK(kiln_value_tuple_get(kept, 1, &field));
  CHECK_OK(kiln_value_tuple_size(field, &size));
  CHECK(size == 2);
  CHECK_OK(kiln_value_tuple_get(field, 0, &sub));
  CHECK_OK(kiln_value_get_int64(sub, &n));
  CHECK(n == 5);
  /* Borrowed handles are stable: asking again gives the same pointer. */
  {
    const kiln_value_t* again = NULL;
    CHECK_OK(kiln_value_tuple_get(field, 0, &again));
    CHECK(again == sub);
  }

  CHECK_STATUS(kiln_value_tuple_get(kept, 2, &field), KILN_STATUS_OUT_OF_RANGE,
               "index 2, but the tuple has 2 fields");
  CHECK(field == NULL);
  CHECK_STATUS(kiln_value_tuple_get(sub, 0, &field), KILN_STATUS_INVALID_ARGUMENT, "expected a tuple, got int 5");
  CHECK_STATUS(kiln_value_tuple_size(sub, &size), KILN_STATUS_INVALID_ARGUMENT, "expected a tuple");
  CHECK_STATUS(kiln_value_get_tensor(kept, &bt), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_value_get_tensor: expected a tensor, got tuple");
  CHECK_STATUS(kiln_value_get_float64(kept, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_value is NULL");
  {
    double d = 1;
    int32_t ndim = 1;
    const int64_t* dims = sdims;
    CHECK_STATUS(kiln_value_get_float64(kept, &d), KILN_STATUS_INVALID_ARGUMENT, "expected a float or an int");
    CHECK(d == 0);
    CHECK_STATUS(kiln_value_get_shape(kept, &ndim, &dims), KILN_STATUS_INVALID_ARGUMENT, "expected a shape");
    CHECK(ndim == 0 && dims == NULL);
  }
  kiln_value_release(kept);
}

static void test_null_arguments(void) {
  kiln_value_t* v = NULL;
  kiln_value_kind_t kind = KILN_VALUE_INT;
  const kiln_value_t* field = NULL;
  const kiln_value_t* fields[1] = {NULL};
  CHECK_STATUS(kiln_value_create_int64(1, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_value is NULL");
  CHECK_STATUS(kiln_value_create_float64(1, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_value is NULL");
  CHECK_STATUS(kiln_value_create_tensor(NULL, &v), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
  CHECK_STATUS(kiln_value_create_tuple(NULL, 1, &v), KILN_STATUS_INVALID_ARGUMENT, "fields is NULL");
  CHECK_STATUS(kiln_value_create_tuple(fields, 1, &v), KILN_STATUS_INVALID_ARGUMENT, "field 0 is NULL");
  CHECK_OK(kiln_value_create_tuple(NULL, 0, &v)); /* the empty tuple */
  kiln_value_release(v);
  CHECK_STATUS(kiln_value_share(NULL, &v), KILN_STATUS_INVALID_ARGUMENT, "value is NULL");
  CHECK_STATUS(kiln_value_kind(NULL, &kind), KILN_STATUS_INVALID_ARGUMENT, "value is NULL");
  CHECK(kind == KILN_VALUE_NONE);
  CHECK_STATUS(kiln_value_kind(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_kind is NULL");
  CHECK_STATUS(kiln_value_get_int64(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_value is NULL");
  CHECK_STATUS(kiln_value_get_tensor(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_tensor is NULL");
  CHECK_STATUS(kiln_value_get_shape(NULL, NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_ndim is NULL");
  {
    int32_t ndim = 0;
    CHECK_STATUS(kiln_value_get_shape(NULL, &ndim, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_dims is NULL");
  }
  CHECK_STATUS(kiln_value_tuple_size(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_size is NULL");
  CHECK_STATUS(kiln_value_tuple_get(NULL, 0, &field), KILN_STATUS_INVALID_ARGUMENT, "value is NULL");
  CHECK_STATUS(kiln_value_tuple_get(NULL, 0, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_field is NULL");
}

int main(void) {
  RUN_TEST(test_scalars);
  RUN_TEST(test_shapes);
  RUN_TEST(test_tensors_and_tuples);
  RUN_TEST(test_null_arguments);
  return FINISH();
}
