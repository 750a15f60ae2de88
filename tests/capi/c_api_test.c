/* Tests of kiln.h written in C11, so that the header and the calling patterns
 * are exercised the way C programs use them. c_api_driver_test.cc (GoogleTest)
 * writes the test module and calls the kiln_capi_test_* functions below.
 *
 * The module (see the driver) has:
 *   main(x: float32[2, 3]) -> float32[2, 3]          = test.capi.add_one(x)
 *   pair(x: float32[2, 3]) -> (float32[2, 3], int 7)
 *   graphed(x: float32[2, 3]) -> float32[2, 3]       = main, plus a static graph
 * where test.capi.add_one is the C function registered here (destination
 * passing: it writes x + 1 into its second argument).
 *
 * Each test returns 0 on success, or 1 with a message in `err`. */
#include "tests/capi/c_api_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi/kiln.h"

#define FAIL(...)                                         \
  do {                                                    \
    int n_ = snprintf(err, err_size, "%s:%d: ", __FILE__, __LINE__); \
    if (n_ > 0 && (size_t)n_ < err_size) snprintf(err + n_, err_size - (size_t)n_, __VA_ARGS__); \
    return 1;                                             \
  } while (0)

#define EXPECT(cond)                       \
  do {                                     \
    if (!(cond)) FAIL("failed: %s", #cond); \
  } while (0)

/* The call must succeed. */
#define EXPECT_OK(expr)                                                                   \
  do {                                                                                    \
    kiln_status_t* s_ = (expr);                                                           \
    if (s_ != NULL) {                                                                     \
      char m_[512];                                                                       \
      snprintf(m_, sizeof m_, "%s: %s", kiln_status_code_name(kiln_status_code(s_)),     \
               kiln_status_message(s_));                                                  \
      kiln_status_free(s_);                                                               \
      FAIL("%s failed: %s", #expr, m_);                                                   \
    }                                                                                     \
  } while (0)

/* The call must fail with `code` and a message containing `text`. */
#define EXPECT_ERROR(expr, code, text)                                                          \
  do {                                                                                          \
    kiln_status_t* s_ = (expr);                                                                 \
    if (s_ == NULL) FAIL("%s succeeded; expected %s", #expr, kiln_status_code_name(code));      \
    kiln_status_code_t c_ = kiln_status_code(s_);                                               \
    char m_[512];                                                                               \
    snprintf(m_, sizeof m_, "%s", kiln_status_message(s_));                                     \
    kiln_status_free(s_);                                                                       \
    if (c_ != (code)) {                                                                         \
      FAIL("%s: expected %s, got %s: %s", #expr, kiln_status_code_name(code), kiln_status_code_name(c_), m_); \
    }                                                                                           \
    if (strstr(m_, (text)) == NULL) FAIL("%s: message \"%s\" lacks \"%s\"", #expr, m_, (text));  \
  } while (0)

/* ---- the C function the module calls -------------------------------------- */

/* Atomic: the driver calls the function from several threads at once. */
static atomic_int g_add_one_calls;

static kiln_status_t* AddOne(void* user, const kiln_args_t* args, kiln_result_t* result) {
  size_t n = 0;
  const kiln_tensor_t* in = NULL;
  const kiln_tensor_t* out = NULL;
  kiln_status_t* s;
  kiln_dtype_t dtype = 0;
  int64_t count_in = 0, count_out = 0;
  void* in_data = NULL;
  void* out_data = NULL;
  int64_t i;
  (void)result;
  if ((s = kiln_args_count(args, &n)) != NULL) return s;
  if (n != 2) return kiln_status_create(KILN_STATUS_INVALID_ARGUMENT, "test.capi.add_one takes 2 arguments");
  if ((s = kiln_args_get_tensor(args, 0, &in)) != NULL) return s;
  if ((s = kiln_args_get_tensor(args, 1, &out)) != NULL) return s;
  if ((s = kiln_tensor_dtype(in, &dtype)) != NULL) return s;
  if (dtype != KILN_DTYPE_FLOAT32) return kiln_status_create(KILN_STATUS_INVALID_ARGUMENT, "add_one wants float32");
  if ((s = kiln_tensor_element_count(in, &count_in)) != NULL) return s;
  if ((s = kiln_tensor_element_count(out, &count_out)) != NULL) return s;
  if (count_in != count_out) return kiln_status_create(KILN_STATUS_INVALID_ARGUMENT, "add_one: size mismatch");
  if ((s = kiln_tensor_data(in, &in_data)) != NULL) return s;
  if ((s = kiln_tensor_data(out, &out_data)) != NULL) return s;
  /* A sentinel input makes the function fail, to test error propagation. */
  if (count_in > 0 && ((const float*)in_data)[0] == -999.0f) {
    return kiln_status_create(KILN_STATUS_FAILED_PRECONDITION, "add_one refuses -999");
  }
  for (i = 0; i < count_in; ++i) ((float*)out_data)[i] = ((const float*)in_data)[i] + 1.0f;
  atomic_fetch_add((atomic_int*)user, 1);
  return NULL;
}

static void Unregister(void) { kiln_status_free(kiln_unregister_function(KILN_CAPI_TEST_FUNCTION)); }

static kiln_status_t* Register(void) {
  Unregister(); /* a previous failed test may have left it */
  return kiln_register_function(KILN_CAPI_TEST_FUNCTION, AddOne, &g_add_one_calls);
}

/* Invokes `function` on a 2x3 input 0..5 and checks output 0 is input + 1. */
static int InvokeAndCheck(kiln_context_t* context, const char* function, size_t expected_outputs, char* err,
                          size_t err_size) {
  float x[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3};
  kiln_tensor_t* input = NULL;
  kiln_outputs_t* outputs = NULL;
  const kiln_tensor_t* y = NULL;
  size_t count = 0, bytes = 0;
  kiln_dtype_t dtype = 0;
  int32_t ndim = 0;
  const int64_t* y_shape = NULL;
  void* data = NULL;
  int calls_before = atomic_load(&g_add_one_calls);
  int i;

  EXPECT_OK(kiln_tensor_wrap(x, shape, 2, KILN_DTYPE_FLOAT32, &input));
  EXPECT_OK(kiln_context_invoke(context, function, &input, 1, &outputs));
  EXPECT(atomic_load(&g_add_one_calls) == calls_before + 1);
  EXPECT_OK(kiln_outputs_count(outputs, &count));
  EXPECT(count == expected_outputs);
  EXPECT_OK(kiln_outputs_get(outputs, 0, &y));
  EXPECT_OK(kiln_tensor_dtype(y, &dtype));
  EXPECT(dtype == KILN_DTYPE_FLOAT32);
  EXPECT(KILN_DTYPE_GET_CODE(dtype) == KILN_DTYPE_CODE_FLOAT && KILN_DTYPE_GET_BITS(dtype) == 32);
  EXPECT_OK(kiln_tensor_ndim(y, &ndim));
  EXPECT(ndim == 2);
  EXPECT_OK(kiln_tensor_shape(y, &y_shape));
  EXPECT(y_shape[0] == 2 && y_shape[1] == 3);
  EXPECT_OK(kiln_tensor_byte_size(y, &bytes));
  EXPECT(bytes == 24);
  EXPECT_OK(kiln_tensor_data(y, &data));
  EXPECT(data != (void*)x); /* the output is the VM's allocation, not the input */
  for (i = 0; i < 6; ++i) {
    if (((const float*)data)[i] != x[i] + 1.0f) FAIL("output[%d] = %g, expected %g", i, ((const float*)data)[i], x[i] + 1.0f);
  }
  kiln_outputs_release(outputs);
  kiln_tensor_release(input);
  return 0;
}

/* ---- tests ------------------------------------------------------------------ */

int kiln_capi_test_version_and_status(char* err, size_t err_size) {
  kiln_status_t* s;
  EXPECT(kiln_api_version() == ((KILN_API_VERSION_MAJOR << 16) | KILN_API_VERSION_MINOR));
  EXPECT(strlen(kiln_version_string()) >= 5);
  EXPECT(kiln_status_create(KILN_STATUS_OK, "ignored") == NULL);
  EXPECT(kiln_status_code(NULL) == KILN_STATUS_OK);
  EXPECT(strcmp(kiln_status_message(NULL), "") == 0);
  s = kiln_status_create(KILN_STATUS_DATA_LOSS, "bad bytes");
  EXPECT(s != NULL);
  EXPECT(kiln_status_code(s) == KILN_STATUS_DATA_LOSS);
  EXPECT(strcmp(kiln_status_message(s), "bad bytes") == 0);
  kiln_status_free(s);
  kiln_status_free(NULL);
  EXPECT(strcmp(kiln_status_code_name(KILN_STATUS_NOT_FOUND), "NOT_FOUND") == 0);
  return 0;
}

int kiln_capi_test_tensors(char* err, size_t err_size) {
  int32_t values[4] = {1, 2, 3, 4};
  int64_t shape[2] = {2, 2};
  int64_t bad_shape[2] = {2, -1};
  kiln_tensor_t* t = NULL;
  kiln_tensor_t* shared = NULL;
  kiln_tensor_t* created = NULL;
  void* data = NULL;
  const int64_t* dims = NULL;
  int64_t count = 0;
  int32_t ndim = -1;
  int i;

  EXPECT_OK(kiln_tensor_wrap(values, shape, 2, KILN_DTYPE_INT32, &t));
  EXPECT_OK(kiln_tensor_data(t, &data));
  EXPECT(data == (void*)values); /* wrapping does not copy */
  EXPECT_OK(kiln_tensor_share(t, &shared));
  kiln_tensor_release(t);
  EXPECT_OK(kiln_tensor_data(shared, &data));
  EXPECT(data == (void*)values);
  kiln_tensor_release(shared);

  EXPECT_OK(kiln_tensor_create(shape, 2, KILN_DTYPE_FLOAT64, &created));
  EXPECT_OK(kiln_tensor_data(created, &data));
  EXPECT(((uintptr_t)data) % 64 == 0);
  EXPECT_OK(kiln_tensor_element_count(created, &count));
  EXPECT(count == 4);
  for (i = 0; i < 4; ++i) EXPECT(((double*)data)[i] == 0.0);
  kiln_tensor_release(created);

  /* A scalar: ndim 0, shape may be NULL, the shape accessor still gives a pointer. */
  EXPECT_OK(kiln_tensor_wrap(values, NULL, 0, KILN_DTYPE_INT32, &t));
  EXPECT_OK(kiln_tensor_ndim(t, &ndim));
  EXPECT(ndim == 0);
  EXPECT_OK(kiln_tensor_shape(t, &dims));
  EXPECT(dims != NULL);
  kiln_tensor_release(t);

  /* Errors; out-parameters are NULL afterwards. */
  t = (kiln_tensor_t*)values;
  EXPECT_ERROR(kiln_tensor_wrap(values, bad_shape, 2, KILN_DTYPE_FLOAT32, &t), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_tensor_wrap: dimension 1 is negative (-1)");
  EXPECT(t == NULL);
  EXPECT_ERROR(kiln_tensor_wrap(values, shape, -1, KILN_DTYPE_FLOAT32, &t), KILN_STATUS_INVALID_ARGUMENT,
               "ndim -1 is negative");
  EXPECT_ERROR(kiln_tensor_wrap(values, NULL, 2, KILN_DTYPE_FLOAT32, &t), KILN_STATUS_INVALID_ARGUMENT,
               "shape is NULL");
  EXPECT_ERROR(kiln_tensor_wrap(NULL, shape, 2, KILN_DTYPE_FLOAT32, &t), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_tensor_wrap: data is NULL");
  EXPECT_ERROR(kiln_tensor_wrap(values, shape, 2, KILN_DTYPE(9, 32, 1), &t), KILN_STATUS_INVALID_ARGUMENT,
               "invalid dtype 0x09200001");
  EXPECT_ERROR(kiln_tensor_wrap(values, shape, 2, KILN_DTYPE_FLOAT32, NULL), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_tensor_wrap: out_tensor is NULL");
  EXPECT_ERROR(kiln_tensor_data(NULL, &data), KILN_STATUS_INVALID_ARGUMENT, "kiln_tensor_data: tensor is NULL");
  EXPECT(data == NULL);
  EXPECT_ERROR(kiln_tensor_create(bad_shape, 2, KILN_DTYPE_FLOAT32, &created), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_tensor_create: dimension 1 is negative");
  kiln_tensor_release(NULL);
  return 0;
}

int kiln_capi_test_missing_function_fails_load(const char* path, char* err, size_t err_size) {
  kiln_module_t* module = NULL;
  Unregister();
  EXPECT_ERROR(kiln_module_load_file(path, &module), KILN_STATUS_NOT_FOUND, KILN_CAPI_TEST_FUNCTION);
  EXPECT(module == NULL);
  return 0;
}

int kiln_capi_test_invoke_from_file(const char* path, char* err, size_t err_size) {
  kiln_module_t* module = NULL;
  kiln_context_t* context = NULL;
  const kiln_function_t* fn = NULL;
  const char* name = NULL;
  size_t count = 0, params = 0, results = 0, i;
  int saw_main = 0, saw_pair = 0, saw_graphed = 0;

  EXPECT_OK(Register());
  EXPECT_OK(kiln_module_load_file(path, &module));
  EXPECT_OK(kiln_module_function_count(module, &count));
  EXPECT(count == 3);
  for (i = 0; i < count; ++i) {
    EXPECT_OK(kiln_module_function_at(module, i, &fn));
    EXPECT_OK(kiln_function_name(fn, &name));
    if (strcmp(name, "main") == 0) saw_main = 1;
    if (strcmp(name, "pair") == 0) saw_pair = 1;
    if (strcmp(name, "graphed") == 0) saw_graphed = 1;
  }
  EXPECT(saw_main && saw_pair && saw_graphed);
  EXPECT_OK(kiln_module_lookup_function(module, "main", &fn));
  EXPECT_OK(kiln_function_param_count(fn, &params));
  EXPECT(params == 1);
  EXPECT_OK(kiln_function_result_count(fn, &results));
  EXPECT(results == 1);

  EXPECT_OK(kiln_context_create(module, &context));
  /* The context keeps the module alive on its own. */
  kiln_module_release(module);
  if (InvokeAndCheck(context, "main", 1, err, err_size)) return 1;
  if (InvokeAndCheck(context, "main", 1, err, err_size)) return 1; /* a context is reusable */
  if (InvokeAndCheck(context, "pair", 2, err, err_size)) return 1;
  kiln_context_release(context);
  Unregister();
  return 0;
}

int kiln_capi_test_invoke_from_buffer(const char* path, char* err, size_t err_size) {
  FILE* f = fopen(path, "rb");
  long size;
  void* buffer;
  kiln_module_t* module = NULL;
  kiln_context_t* context = NULL;
  const kiln_tensor_t* y = NULL;
  kiln_tensor_t* kept = NULL;
  kiln_outputs_t* outputs = NULL;
  kiln_tensor_t* input = NULL;
  float x[6] = {10, 20, 30, 40, 50, 60};
  int64_t shape[2] = {2, 3};
  void* data = NULL;

  EXPECT(f != NULL);
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  EXPECT(size > 0);
  /* 64-byte aligned like a mapped file, so segments keep their alignment. */
  buffer = aligned_alloc(64, ((size_t)size + 63) / 64 * 64);
  EXPECT(buffer != NULL);
  EXPECT(fread(buffer, 1, (size_t)size, f) == (size_t)size);
  fclose(f);

  EXPECT_OK(Register());
  EXPECT_OK(kiln_module_load_buffer(buffer, (size_t)size, &module));
  EXPECT_OK(kiln_context_create(module, &context));
  EXPECT_OK(kiln_tensor_wrap(x, shape, 2, KILN_DTYPE_FLOAT32, &input));
  EXPECT_OK(kiln_context_invoke(context, "main", &input, 1, &outputs));
  EXPECT_OK(kiln_outputs_get(outputs, 0, &y));
  /* Keep the output beyond the outputs handle. */
  EXPECT_OK(kiln_tensor_share(y, &kept));
  kiln_outputs_release(outputs);
  EXPECT_OK(kiln_tensor_data(kept, &data));
  EXPECT(((float*)data)[5] == 61.0f);
  kiln_tensor_release(kept);
  kiln_tensor_release(input);
  kiln_context_release(context);
  kiln_module_release(module);
  free(buffer);
  Unregister();
  return 0;
}

int kiln_capi_test_executors(const char* path, char* err, size_t err_size) {
  kiln_module_t* module = NULL;
  kiln_context_t* auto_ctx = NULL;
  kiln_context_t* vm_ctx = NULL;
  kiln_context_t* graph_ctx = NULL;
  kiln_tensor_t* wide = NULL;
  kiln_outputs_t* outputs = NULL;
  float x[8] = {0};
  int64_t wide_shape[2] = {2, 4};

  EXPECT_OK(Register());
  EXPECT_OK(kiln_module_load_file(path, &module));
  EXPECT_OK(kiln_context_create(module, &auto_ctx));
  EXPECT_OK(kiln_context_create_with_executor(module, KILN_EXECUTOR_VM, &vm_ctx));
  EXPECT_ERROR(kiln_context_create_with_executor(module, (kiln_executor_t)7, &graph_ctx),
               KILN_STATUS_INVALID_ARGUMENT, "unknown executor 7");
  EXPECT(graph_ctx == NULL);
  EXPECT_OK(kiln_context_create_with_executor(module, KILN_EXECUTOR_GRAPH, &graph_ctx));

  /* Same results on every engine (twice each: sessions are reused). */
  if (InvokeAndCheck(auto_ctx, "graphed", 1, err, err_size)) return 1;
  if (InvokeAndCheck(auto_ctx, "graphed", 1, err, err_size)) return 1;
  if (InvokeAndCheck(auto_ctx, "main", 1, err, err_size)) return 1;
  if (InvokeAndCheck(vm_ctx, "graphed", 1, err, err_size)) return 1;
  if (InvokeAndCheck(graph_ctx, "graphed", 1, err, err_size)) return 1;
  if (InvokeAndCheck(graph_ctx, "graphed", 1, err, err_size)) return 1;

  /* Which engine ran shows in the shape error: the graph checks whole
   * shapes, the VM's bytecode checks dimension by dimension. */
  EXPECT_OK(kiln_tensor_wrap(x, wide_shape, 2, KILN_DTYPE_FLOAT32, &wide));
  EXPECT_ERROR(kiln_context_invoke(auto_ctx, "graphed", &wide, 1, &outputs), KILN_STATUS_INVALID_ARGUMENT,
               "graphed: input x: expected float32[2, 3], got float32[2, 4]");
  EXPECT_ERROR(kiln_context_invoke(vm_ctx, "graphed", &wide, 1, &outputs), KILN_STATUS_INVALID_ARGUMENT,
               "argument x, dimension 1: expected 3, got 4");
  EXPECT_ERROR(kiln_context_invoke(graph_ctx, "main", &wide, 1, &outputs), KILN_STATUS_FAILED_PRECONDITION,
               "function 'main' has no static graph; use KILN_EXECUTOR_VM or AUTO");
  EXPECT(outputs == NULL);

  kiln_tensor_release(wide);
  kiln_context_release(graph_ctx);
  kiln_context_release(vm_ctx);
  kiln_context_release(auto_ctx);
  kiln_module_release(module);
  Unregister();
  return 0;
}

int kiln_capi_test_threads(const char* path, char* err, size_t err_size) {
  kiln_module_t* module = NULL;
  kiln_context_options_t* options = NULL;
  kiln_context_t* one = NULL;
  kiln_context_t* two_graph = NULL;
  kiln_context_t* by_default = NULL;
  kiln_context_t* none = NULL;
  int32_t n = -1;

  EXPECT_OK(Register());
  EXPECT_OK(kiln_module_load_file(path, &module));
  EXPECT_OK(kiln_context_create(module, &by_default));
  EXPECT_OK(kiln_context_num_threads(by_default, &n));
  EXPECT(n >= 1);

  EXPECT_OK(kiln_context_options_create(&options));
  EXPECT_OK(kiln_context_options_set_num_threads(options, 1));
  EXPECT_OK(kiln_context_create_with_options(module, options, &one));
  EXPECT_OK(kiln_context_options_set_num_threads(options, 2));
  EXPECT_OK(kiln_context_options_set_executor(options, KILN_EXECUTOR_GRAPH));
  EXPECT_OK(kiln_context_create_with_options(module, options, &two_graph));
  kiln_context_options_release(options); /* the contexts copied them */
  options = NULL;

  EXPECT_OK(kiln_context_num_threads(one, &n));
  EXPECT(n == 1);
  EXPECT_OK(kiln_context_num_threads(two_graph, &n));
  EXPECT(n == 2);
  if (InvokeAndCheck(one, "main", 1, err, err_size)) return 1;
  if (InvokeAndCheck(one, "graphed", 1, err, err_size)) return 1;
  if (InvokeAndCheck(two_graph, "graphed", 1, err, err_size)) return 1;
  /* The executor option took effect: the graph refuses a function without one. */
  {
    float x[6] = {0};
    int64_t shape[2] = {2, 3};
    kiln_tensor_t* input = NULL;
    kiln_outputs_t* outputs = NULL;
    EXPECT_OK(kiln_tensor_wrap(x, shape, 2, KILN_DTYPE_FLOAT32, &input));
    EXPECT_ERROR(kiln_context_invoke(two_graph, "main", &input, 1, &outputs), KILN_STATUS_FAILED_PRECONDITION,
                 "function 'main' has no static graph");
    kiln_tensor_release(input);
  }

  /* Misuse. */
  EXPECT_OK(kiln_context_options_create(&options));
  EXPECT_ERROR(kiln_context_options_set_num_threads(options, -1), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_context_options_set_num_threads: num_threads is -1; use 0 (one per core) to 1024");
  EXPECT_ERROR(kiln_context_options_set_num_threads(options, 1025), KILN_STATUS_INVALID_ARGUMENT,
               "num_threads is 1025");
  EXPECT_ERROR(kiln_context_options_set_executor(options, (kiln_executor_t)9), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_context_options_set_executor: unknown executor 9");
  EXPECT_ERROR(kiln_context_options_set_num_threads(NULL, 2), KILN_STATUS_INVALID_ARGUMENT, "options is NULL");
  EXPECT_ERROR(kiln_context_create_with_options(module, NULL, &none), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_context_create_with_options: options is NULL");
  EXPECT(none == NULL);
  EXPECT_ERROR(kiln_context_num_threads(NULL, &n), KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  EXPECT(n == 0);
  /* The defaults: one thread per core. */
  EXPECT_OK(kiln_context_create_with_options(module, options, &none));
  {
    int32_t m = -1;
    EXPECT_OK(kiln_context_num_threads(by_default, &n));
    EXPECT_OK(kiln_context_num_threads(none, &m));
    EXPECT(m == n);
  }
  kiln_context_options_release(options);
  kiln_context_options_release(NULL);

  kiln_context_release(none);
  kiln_context_release(by_default);
  kiln_context_release(two_graph);
  kiln_context_release(one);
  kiln_module_release(module);
  Unregister();
  return 0;
}

int kiln_capi_test_errors(const char* path, char* err, size_t err_size) {
  kiln_module_t* module = NULL;
  kiln_context_t* context = NULL;
  kiln_outputs_t* outputs = NULL;
  const kiln_function_t* fn = NULL;
  const kiln_tensor_t* y = NULL;
  kiln_tensor_t* input = NULL;
  kiln_tensor_t* wide = NULL;
  kiln_tensor_t* ints = NULL;
  kiln_tensor_t* inputs2[2];
  float x[8] = {0};
  int32_t xi[6] = {0};
  int64_t shape[2] = {2, 3};
  int64_t wide_shape[2] = {2, 4};
  const char garbage[64] = "this is not a vmfb file at all, just some bytes";

  /* Loading. */
  EXPECT_ERROR(kiln_module_load_file("/nonexistent/dir/model.vmfb", &module), KILN_STATUS_NOT_FOUND,
               "/nonexistent/dir/model.vmfb");
  EXPECT(module == NULL);
  {
    kiln_status_t* s = kiln_module_load_buffer(garbage, sizeof garbage, &module);
    EXPECT(s != NULL);
    EXPECT(kiln_status_code(s) == KILN_STATUS_DATA_LOSS || kiln_status_code(s) == KILN_STATUS_INCOMPATIBLE);
    kiln_status_free(s);
    EXPECT(module == NULL);
  }
  EXPECT_ERROR(kiln_module_load_file(NULL, &module), KILN_STATUS_INVALID_ARGUMENT,
               "kiln_module_load_file: path is NULL");

  EXPECT_OK(Register());
  EXPECT_ERROR(kiln_register_function(KILN_CAPI_TEST_FUNCTION, AddOne, NULL), KILN_STATUS_FAILED_PRECONDITION,
               "already registered");
  EXPECT_OK(kiln_module_load_file(path, &module));

  /* Function names. */
  EXPECT_ERROR(kiln_module_lookup_function(module, "mian", &fn), KILN_STATUS_NOT_FOUND,
               "no function 'mian' in the module (it has: ");
  EXPECT(fn == NULL);
  EXPECT_ERROR(kiln_module_function_at(module, 5, &fn), KILN_STATUS_OUT_OF_RANGE,
               "index 5, but the module has 3 functions");
  EXPECT_OK(kiln_context_create(module, &context));
  EXPECT_OK(kiln_tensor_wrap(x, shape, 2, KILN_DTYPE_FLOAT32, &input));
  outputs = (kiln_outputs_t*)x;
  EXPECT_ERROR(kiln_context_invoke(context, "mian", &input, 1, &outputs), KILN_STATUS_NOT_FOUND,
               "no function 'mian'");
  EXPECT(outputs == NULL);

  /* Inputs: count, shape, dtype. */
  inputs2[0] = input;
  inputs2[1] = input;
  EXPECT_ERROR(kiln_context_invoke(context, "main", inputs2, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
               "main: expected 1 inputs, got 2");
  EXPECT_ERROR(kiln_context_invoke(context, "main", NULL, 1, &outputs), KILN_STATUS_INVALID_ARGUMENT,
               "inputs is NULL");
  EXPECT_OK(kiln_tensor_wrap(x, wide_shape, 2, KILN_DTYPE_FLOAT32, &wide));
  EXPECT_ERROR(kiln_context_invoke(context, "main", &wide, 1, &outputs), KILN_STATUS_INVALID_ARGUMENT,
               "main: argument x, dimension 1: expected 3, got 4");
  EXPECT_OK(kiln_tensor_wrap(xi, shape, 2, KILN_DTYPE_INT32, &ints));
  EXPECT_ERROR(kiln_context_invoke(context, "main", &ints, 1, &outputs), KILN_STATUS_INVALID_ARGUMENT,
               "main: argument x: expected dtype float32, got int32");

  /* An error from the C function comes back with its code and message. */
  x[0] = -999.0f;
  EXPECT_ERROR(kiln_context_invoke(context, "main", &input, 1, &outputs), KILN_STATUS_FAILED_PRECONDITION,
               "add_one refuses -999");
  x[0] = 0.0f;

  /* The context still works after errors. */
  if (InvokeAndCheck(context, "main", 1, err, err_size)) return 1;

  /* A non-tensor output. */
  EXPECT_OK(kiln_context_invoke(context, "pair", &input, 1, &outputs));
  EXPECT_ERROR(kiln_outputs_get(outputs, 1, &y), KILN_STATUS_INVALID_ARGUMENT, "output 1 is not a tensor (int 7)");
  EXPECT(y == NULL);
  EXPECT_ERROR(kiln_outputs_get(outputs, 2, &y), KILN_STATUS_OUT_OF_RANGE, "index 2, but there are 2 outputs");
  kiln_outputs_release(outputs);

  kiln_tensor_release(ints);
  kiln_tensor_release(wide);
  kiln_tensor_release(input);
  kiln_context_release(context);
  kiln_module_release(module);
  Unregister();
  EXPECT_ERROR(kiln_unregister_function(KILN_CAPI_TEST_FUNCTION), KILN_STATUS_NOT_FOUND,
               "no function named 'test.capi.add_one' is registered");
  EXPECT_ERROR(kiln_register_function(NULL, AddOne, NULL), KILN_STATUS_INVALID_ARGUMENT, "name is NULL");
  EXPECT_ERROR(kiln_register_function("x", NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "fn is NULL");
  return 0;
}

int kiln_capi_test_register(char* err, size_t err_size) {
  EXPECT_OK(Register());
  return 0;
}

void kiln_capi_test_unregister(void) { Unregister(); }

int kiln_capi_test_add_one_calls(void) { return atomic_load(&g_add_one_calls); }
