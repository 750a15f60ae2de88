/* Registering C functions that compiled programs call (kiln_register_function):
 * the model's `scaled` calls test.capi_c.scale in destination-passing style.
 * The function here also checks, from inside a call, every kiln_args_* and
 * kiln_result_* accessor and their errors. */
#include <stdint.h>

#include "tests/capi_c/check.h"
#include "tests/capi_c/test_model.h"

static int g_calls = 0;
static int g_fail = 0; /* make the next call fail */

static kiln_status_t* scale_checked(void* user, const kiln_args_t* args, kiln_result_t* result) {
  size_t count = 0;
  kiln_value_kind_t kind = KILN_VALUE_NONE;
  const kiln_tensor_t* x = NULL;
  const kiln_tensor_t* out = NULL;
  const kiln_value_t* v = NULL;
  int64_t i = 5;
  double d = 5;
  void* xd = NULL;
  void* od = NULL;
  ++*(int*)user;
  if (g_fail) return kiln_status_create(KILN_STATUS_UNIMPLEMENTED, "scale: asked to fail");
  CHECK_OK(kiln_args_count(args, &count));
  CHECK(count == 2);
  CHECK_OK(kiln_args_kind(args, 0, &kind));
  CHECK(kind == KILN_VALUE_TENSOR);
  CHECK_OK(kiln_args_get_value(args, 1, &v));
  CHECK_OK(kiln_value_kind(v, &kind));
  CHECK(kind == KILN_VALUE_TENSOR);
  CHECK_OK(kiln_args_get_tensor(args, 0, &x));
  CHECK_OK(kiln_args_get_tensor(args, 1, &out));
  /* Errors inside a call. */
  CHECK_STATUS(kiln_args_get_int64(args, 0, &i), KILN_STATUS_INVALID_ARGUMENT, "argument 0");
  CHECK(i == 0);
  CHECK_STATUS(kiln_args_get_float64(args, 0, &d), KILN_STATUS_INVALID_ARGUMENT, "argument 0");
  CHECK(d == 0);
  CHECK_STATUS(kiln_args_get_tensor(args, 2, &x), KILN_STATUS_OUT_OF_RANGE, "index 2, but there are 2 arguments");
  CHECK_STATUS(kiln_args_kind(args, 9, &kind), KILN_STATUS_OUT_OF_RANGE, "index 9");
  CHECK_STATUS(kiln_args_get_int64(args, 2, &i), KILN_STATUS_OUT_OF_RANGE, "index 2");
  CHECK_STATUS(kiln_args_get_float64(args, 2, &d), KILN_STATUS_OUT_OF_RANGE, "index 2");
  CHECK_STATUS(kiln_args_get_value(args, 2, &v), KILN_STATUS_OUT_OF_RANGE, "index 2, but there are 2 arguments");
  CHECK_STATUS(kiln_args_count(NULL, &count), KILN_STATUS_INVALID_ARGUMENT, "args is NULL");
  CHECK_STATUS(kiln_args_get_value(NULL, 0, &v), KILN_STATUS_INVALID_ARGUMENT, "args is NULL");
  CHECK_STATUS(kiln_args_get_value(args, 0, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_value is NULL");
  CHECK_STATUS(kiln_args_get_tensor(NULL, 0, &x), KILN_STATUS_INVALID_ARGUMENT, "args is NULL");
  CHECK_STATUS(kiln_args_kind(args, 0, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_kind is NULL");
  CHECK_STATUS(kiln_result_set_tensor(result, NULL), KILN_STATUS_INVALID_ARGUMENT, "tensor is NULL");
  CHECK_STATUS(kiln_result_set_value(result, NULL), KILN_STATUS_INVALID_ARGUMENT, "value is NULL");
  CHECK_STATUS(kiln_result_set_value(NULL, v), KILN_STATUS_INVALID_ARGUMENT, "result is NULL");
  CHECK_STATUS(kiln_result_set_int64(NULL, 1), KILN_STATUS_INVALID_ARGUMENT, "result is NULL");
  CHECK_STATUS(kiln_result_set_float64(NULL, 1), KILN_STATUS_INVALID_ARGUMENT, "result is NULL");
  CHECK_OK(kiln_args_get_tensor(args, 0, &x));
  CHECK_OK(kiln_tensor_data(x, &xd));
  CHECK_OK(kiln_tensor_data(out, &od));
  for (int k = 0; k < 6; ++k) ((float*)od)[k] = 2.0f * ((const float*)xd)[k];
  /* A DPS call ignores the result; setting one is allowed. */
  CHECK_OK(kiln_result_set_int64(result, 1));
  CHECK_OK(kiln_result_set_float64(result, 1.5));
  CHECK(v == NULL); /* reset by the failed kiln_args_get_value above */
  CHECK_OK(kiln_args_get_value(args, 1, &v));
  CHECK_OK(kiln_result_set_value(result, v));
  CHECK_OK(kiln_result_set_tensor(result, out));
  return NULL;
}

static void test_registered_function_runs(void) {
  kiln_module_t* module = NULL;
  kiln_context_t* context = NULL;
  const int64_t shape[2] = {2, 3};
  kiln_tensor_t* x = test_f32_tensor(shape, 2, 1, 1);
  kiln_outputs_t* outputs = NULL;
  const kiln_tensor_t* y = NULL;
  CHECK_OK(kiln_register_function(TEST_SCALE_FUNCTION, scale_checked, &g_calls));
  CHECK_STATUS(kiln_register_function(TEST_SCALE_FUNCTION, scale_checked, &g_calls), KILN_STATUS_FAILED_PRECONDITION,
               TEST_SCALE_FUNCTION);
  CHECK_OK(kiln_module_load_file(test_model_path(), &module));
  CHECK_OK(kiln_context_create(module, &context));
  CHECK_OK(kiln_context_invoke(context, "scaled", &x, 1, &outputs));
  CHECK(g_calls == 1);
  CHECK_OK(kiln_outputs_get(outputs, 0, &y));
  CHECK(test_f32_at(y, 0) == 2.0f && test_f32_at(y, 5) == 12.0f);
  kiln_outputs_release(outputs);

  /* A failure from the C function reaches the caller with its code and message. */
  g_fail = 1;
  CHECK_STATUS(kiln_context_invoke(context, "scaled", &x, 1, &outputs), KILN_STATUS_UNIMPLEMENTED,
               "scale: asked to fail");
  CHECK(outputs == NULL);
  g_fail = 0;

  /* Unregistering leaves loaded modules working; new loads fail. */
  CHECK_OK(kiln_unregister_function(TEST_SCALE_FUNCTION));
  CHECK_OK(kiln_context_invoke(context, "scaled", &x, 1, &outputs));
  kiln_outputs_release(outputs);
  {
    kiln_module_t* again = NULL;
    CHECK_STATUS(kiln_module_load_file(test_model_path(), &again), KILN_STATUS_NOT_FOUND, TEST_SCALE_FUNCTION);
    CHECK(again == NULL);
  }
  kiln_context_release(context);
  kiln_module_release(module);
  kiln_tensor_release(x);
}

static void test_registration_errors(void) {
  CHECK_STATUS(kiln_register_function(NULL, scale_checked, NULL), KILN_STATUS_INVALID_ARGUMENT, "name is NULL");
  CHECK_STATUS(kiln_register_function("test.capi_c.x", NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "fn is NULL");
  CHECK_STATUS(kiln_unregister_function("test.capi_c.never"), KILN_STATUS_NOT_FOUND,
               "no function named 'test.capi_c.never' is registered");
  CHECK_STATUS(kiln_unregister_function(NULL), KILN_STATUS_INVALID_ARGUMENT, "name is NULL");
}

int main(void) {
  RUN_TEST(test_registered_function_runs);
  RUN_TEST(test_registration_errors);
  return FINISH();
}
