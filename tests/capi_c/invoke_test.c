/* Contexts and calls: context creation and options, invoke by name, by
 * function handle and with values (scalars, shapes, nested tuples), outputs,
 * profiling, and every input error (count, shape, dtype, unknown name, wrong
 * kinds, NULLs). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/capi_c/check.h"
#include "tests/capi_c/test_model.h"

static kiln_module_t* g_module = NULL;

static const kiln_function_t* fn(const char* name) {
  const kiln_function_t* f = NULL;
  CHECK_OK(kiln_module_lookup_function(g_module, name, &f));
  return f;
}

static void test_invoke_by_name(void) {
  const int64_t shape[2] = {3, 4};
  kiln_context_t* context = NULL;
  kiln_tensor_t* x = test_f32_tensor(shape, 2, 0.0f, 1.0f);
  kiln_tensor_t* y = test_f32_tensor(shape, 2, 100.0f, 0.0f);
  kiln_tensor_t* inputs[2] = {x, y};
  kiln_outputs_t* outputs = NULL;
  const kiln_tensor_t* out = NULL;
  const int64_t* dims = NULL;
  size_t count = 0;
  CHECK_OK(kiln_context_create(g_module, &context));
  CHECK_OK(kiln_context_invoke(context, "main", inputs, 2, &outputs));
  CHECK_OK(kiln_outputs_count(outputs, &count));
  CHECK(count == 1);
  CHECK_OK(kiln_outputs_get(outputs, 0, &out));
  CHECK_OK(kiln_tensor_shape(out, &dims));
  CHECK(dims != NULL && dims[0] == 3 && dims[1] == 4);
  CHECK(test_f32_at(out, 0) == 100.0f);
  CHECK(test_f32_at(out, 11) == 111.0f);
  kiln_outputs_release(outputs);

  /* The same by handle, and a kept output outlives its outputs handle. */
  {
    kiln_tensor_t* kept = NULL;
    CHECK_OK(kiln_context_invoke_function(context, fn("main"), inputs, 2, &outputs));
    CHECK_OK(kiln_outputs_get(outputs, 0, &out));
    CHECK_OK(kiln_tensor_share(out, &kept));
    kiln_outputs_release(outputs);
    CHECK(test_f32_at(kept, 5) == 105.0f);
    kiln_tensor_release(kept);
  }
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  kiln_context_release(context);
  kiln_context_release(NULL);
  kiln_outputs_release(NULL);
}

static void test_tuple_outputs_and_executors(void) {
  const int64_t shape[2] = {2, 3};
  kiln_tensor_t* x = test_f32_tensor(shape, 2, 1.0f, 1.0f);
  const kiln_executor_t executors[3] = {KILN_EXECUTOR_AUTO, KILN_EXECUTOR_VM, KILN_EXECUTOR_GRAPH};
  for (int e = 0; e < 3; ++e) {
    kiln_context_t* context = NULL;
    kiln_outputs_t* outputs = NULL;
    const kiln_tensor_t* a = NULL;
    const kiln_tensor_t* b = NULL;
    size_t count = 0;
    CHECK_OK(kiln_context_create_with_executor(g_module, executors[e], &context));
    CHECK_OK(kiln_context_invoke(context, "pair", &x, 1, &outputs));
    CHECK_OK(kiln_outputs_count(outputs, &count));
    CHECK(count == 2);
    CHECK_OK(kiln_outputs_get(outputs, 0, &a));
    CHECK_OK(kiln_outputs_get(outputs, 1, &b));
    CHECK(test_f32_at(a, 5) == 12.0f);
    CHECK(test_f32_at(b, 5) == 36.0f);
    CHECK_STATUS(kiln_outputs_get(outputs, 2, &a), KILN_STATUS_OUT_OF_RANGE, "index 2, but there are 2 outputs");
    CHECK(a == NULL);
    kiln_outputs_release(outputs);
    kiln_context_release(context);
  }
  /* The graph executor cannot run a function with symbolic shapes. */
  {
    kiln_context_t* context = NULL;
    kiln_outputs_t* outputs = NULL;
    kiln_tensor_t* inputs[2] = {x, x};
    CHECK_OK(kiln_context_create_with_executor(g_module, KILN_EXECUTOR_GRAPH, &context));
    CHECK_STATUS(kiln_context_invoke(context, "main", inputs, 2, &outputs), KILN_STATUS_FAILED_PRECONDITION,
                 "function 'main' has no static graph");
    CHECK(outputs == NULL);
    kiln_context_release(context);
  }
  kiln_tensor_release(x);
}

static void test_invoke_values(void) {
  const int64_t shape[2] = {2, 4};
  const int64_t sdims[2] = {2, 4};
  kiln_context_t* context = NULL;
  kiln_tensor_t* x = test_f32_tensor(shape, 2, 0.0f, 0.5f);
  kiln_value_t* in[4] = {NULL, NULL, NULL, NULL};
  kiln_outputs_t* outputs = NULL;
  const kiln_value_t* v = NULL;
  const kiln_value_t* sub = NULL;
  const kiln_value_t* leaf = NULL;
  kiln_value_kind_t kind = KILN_VALUE_NONE;
  size_t count = 0;
  CHECK_OK(kiln_value_create_tensor(x, &in[0]));
  CHECK_OK(kiln_value_create_shape(sdims, 2, &in[1]));
  CHECK_OK(kiln_value_create_int64(42, &in[2]));
  CHECK_OK(kiln_value_create_float64(0.25, &in[3]));
  CHECK_OK(kiln_context_create_with_executor(g_module, KILN_EXECUTOR_VM, &context));
  CHECK_OK(kiln_context_invoke_values(context, fn("values"), (const kiln_value_t* const*)in, 4, &outputs));
  CHECK_OK(kiln_outputs_count(outputs, &count));
  CHECK(count == 3); /* (x, (s, p), f) */
  CHECK_OK(kiln_outputs_get_value(outputs, 0, &v));
  CHECK_OK(kiln_value_kind(v, &kind));
  CHECK(kind == KILN_VALUE_TENSOR);
  CHECK_OK(kiln_outputs_get_value(outputs, 1, &v));
  CHECK_OK(kiln_value_kind(v, &kind));
  CHECK(kind == KILN_VALUE_TUPLE);
  CHECK_OK(kiln_value_tuple_get(v, 0, &sub));
  {
    int32_t ndim = 0;
    const int64_t* dims = NULL;
    CHECK_OK(kiln_value_get_shape(sub, &ndim, &dims));
    CHECK(ndim == 2 && dims != NULL && dims[0] == 2 && dims[1] == 4);
  }
  CHECK_OK(kiln_value_tuple_get(v, 1, &leaf));
  {
    int64_t p = 0;
    CHECK_OK(kiln_value_get_int64(leaf, &p));
    CHECK(p == 42);
  }
  CHECK_OK(kiln_outputs_get_value(outputs, 2, &v));
  {
    double f = 0;
    CHECK_OK(kiln_value_get_float64(v, &f));
    CHECK(f == 0.25);
  }
  /* kiln_outputs_get reads tensors only. */
  {
    const kiln_tensor_t* t = NULL;
    CHECK_STATUS(kiln_outputs_get(outputs, 1, &t), KILN_STATUS_INVALID_ARGUMENT, "output 1 is not a tensor");
  }
  CHECK_STATUS(kiln_outputs_get_value(outputs, 3, &v), KILN_STATUS_OUT_OF_RANGE, "index 3, but there are 3 outputs");
  CHECK(v == NULL);
  CHECK_STATUS(kiln_outputs_get_value(NULL, 0, &v), KILN_STATUS_INVALID_ARGUMENT, "outputs is NULL");
  CHECK_STATUS(kiln_outputs_get_value(outputs, 0, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_value is NULL");
  kiln_outputs_release(outputs);

  /* The shape argument must match x: the VM checks it. */
  {
    const int64_t wrong[2] = {3, 4};
    kiln_value_t* s = NULL;
    const kiln_value_t* bad[4];
    CHECK_OK(kiln_value_create_shape(wrong, 2, &s));
    bad[0] = in[0];
    bad[1] = s;
    bad[2] = in[2];
    bad[3] = in[3];
    CHECK_STATUS(kiln_context_invoke_values(context, fn("values"), bad, 4, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "values");
    CHECK(outputs == NULL);
    /* A scalar where a tensor is declared. */
    bad[0] = in[2];
    bad[1] = in[1];
    CHECK_STATUS(kiln_context_invoke_values(context, fn("values"), bad, 4, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "argument x");
    kiln_value_release(s);
  }
  {
    const kiln_value_t* nulls[4] = {in[0], NULL, in[2], in[3]};
    CHECK_STATUS(kiln_context_invoke_values(context, fn("values"), nulls, 4, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "kiln_context_invoke_values: input 1 is NULL");
    CHECK_STATUS(kiln_context_invoke_values(context, fn("values"), (const kiln_value_t* const*)in, 3, &outputs),
                 KILN_STATUS_INVALID_ARGUMENT, "values: expected 4 inputs, got 3");
    CHECK_STATUS(kiln_context_invoke_values(context, fn("values"), NULL, 4, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "inputs is NULL");
    CHECK_STATUS(kiln_context_invoke_values(NULL, fn("values"), nulls, 4, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "context is NULL");
    CHECK_STATUS(kiln_context_invoke_values(context, NULL, nulls, 4, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "function is NULL");
    CHECK_STATUS(kiln_context_invoke_values(context, fn("values"), nulls, 4, NULL), KILN_STATUS_INVALID_ARGUMENT,
                 "out_outputs is NULL");
  }
  for (int i = 0; i < 4; ++i) kiln_value_release(in[i]);
  kiln_context_release(context);
  kiln_tensor_release(x);
}

static void test_input_errors(void) {
  const int64_t good[2] = {2, 4};
  const int64_t bad_width[2] = {2, 5};
  const int64_t other_rows[2] = {3, 4};
  kiln_context_t* context = NULL;
  kiln_tensor_t* x = test_f32_tensor(good, 2, 0, 1);
  kiln_tensor_t* wide = test_f32_tensor(bad_width, 2, 0, 1);
  kiln_tensor_t* rows = test_f32_tensor(other_rows, 2, 0, 1);
  kiln_tensor_t* ints = NULL;
  kiln_outputs_t* outputs = (kiln_outputs_t*)&outputs;
  CHECK_OK(kiln_tensor_create(good, 2, KILN_DTYPE_INT32, &ints));
  CHECK_OK(kiln_context_create(g_module, &context));
  {
    kiln_tensor_t* in[2] = {x, wide};
    CHECK_STATUS(kiln_context_invoke(context, "main", in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "main: argument y");
    CHECK(outputs == NULL);
    CHECK_STATUS(kiln_context_invoke(context, "main", in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "dimension 1");
  }
  {
    kiln_tensor_t* in[2] = {x, rows}; /* n bound to 2 by x, then 3 */
    CHECK_STATUS(kiln_context_invoke(context, "main", in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "main: argument y");
  }
  {
    kiln_tensor_t* in[2] = {ints, x};
    CHECK_STATUS(kiln_context_invoke(context, "main", in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT, "float32");
  }
  {
    kiln_tensor_t* in[2] = {x, x};
    CHECK_STATUS(kiln_context_invoke(context, "main", in, 1, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "main: expected 2 inputs, got 1");
    CHECK_STATUS(kiln_context_invoke(context, "mian", in, 2, &outputs), KILN_STATUS_NOT_FOUND,
                 "no function 'mian' in the module (it has: ");
    CHECK_STATUS(kiln_context_invoke(context, NULL, in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "function is NULL");
    CHECK_STATUS(kiln_context_invoke(NULL, "main", in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "context is NULL");
    CHECK_STATUS(kiln_context_invoke(context, "main", NULL, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "inputs is NULL");
    CHECK_STATUS(kiln_context_invoke(context, "main", in, 2, NULL), KILN_STATUS_INVALID_ARGUMENT,
                 "out_outputs is NULL");
    in[1] = NULL;
    CHECK_STATUS(kiln_context_invoke(context, "main", in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "input 1 is NULL");
    CHECK_STATUS(kiln_context_invoke_function(context, fn("main"), in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "kiln_context_invoke_function: input 1 is NULL");
    CHECK_STATUS(kiln_context_invoke_function(context, NULL, in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "function is NULL");
    CHECK_STATUS(kiln_context_invoke_function(context, fn("main"), NULL, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "inputs is NULL");
  }
  /* A function of another module. */
  {
    kiln_module_t* other = NULL;
    const kiln_function_t* f = NULL;
    kiln_tensor_t* in[2] = {x, x};
    const kiln_value_t* none[1] = {NULL};
    CHECK_OK(kiln_module_load_file(test_model_path(), &other));
    CHECK_OK(kiln_module_lookup_function(other, "main", &f));
    CHECK_STATUS(kiln_context_invoke_function(context, f, in, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "function 'main' is not of this context's module");
    CHECK_STATUS(kiln_context_invoke_values(context, f, none, 0, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "is not of this context's module");
    kiln_module_release(other);
  }
  /* A failed call leaves the context usable. */
  {
    kiln_tensor_t* in[2] = {x, x};
    CHECK_OK(kiln_context_invoke(context, "main", in, 2, &outputs));
    kiln_outputs_release(outputs);
  }
  {
    size_t count = 3;
    const kiln_tensor_t* t = NULL;
    CHECK_STATUS(kiln_outputs_count(NULL, &count), KILN_STATUS_INVALID_ARGUMENT, "outputs is NULL");
    CHECK(count == 0);
    CHECK_STATUS(kiln_outputs_count(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_count is NULL");
    CHECK_STATUS(kiln_outputs_get(NULL, 0, &t), KILN_STATUS_INVALID_ARGUMENT, "outputs is NULL");
    CHECK_STATUS(kiln_outputs_get(NULL, 0, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_tensor is NULL");
  }
  kiln_context_release(context);
  kiln_tensor_release(x);
  kiln_tensor_release(wide);
  kiln_tensor_release(rows);
  kiln_tensor_release(ints);
}

/* Context creation and options: threads, executors, allocator. */
static size_t g_allocated = 0;
static int g_frees = 0;
static void* counting_allocate(void* user, size_t size, size_t alignment) {
  (void)user;
  g_allocated += size;
  return aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
static void counting_free(void* user, void* ptr) {
  (void)user;
  ++g_frees;
  free(ptr);
}

static void test_context_options(void) {
  kiln_context_options_t* options = NULL;
  kiln_context_t* context = NULL;
  int32_t threads = 0;
  kiln_allocator_t allocator = {NULL, counting_allocate, counting_free};
  kiln_allocator_t half = {NULL, counting_allocate, NULL};
  CHECK_OK(kiln_context_options_create(&options));
  CHECK_OK(kiln_context_options_set_num_threads(options, 1));
  CHECK_OK(kiln_context_options_set_executor(options, KILN_EXECUTOR_VM));
  CHECK_OK(kiln_context_options_set_allocator(options, &allocator));
  CHECK_OK(kiln_context_create_with_options(g_module, options, &context));
  kiln_context_options_release(options);
  CHECK_OK(kiln_context_num_threads(context, &threads));
  CHECK(threads == 1);
  {
    const int64_t shape[2] = {5, 4};
    kiln_tensor_t* x = test_f32_tensor(shape, 2, 1, 0);
    kiln_tensor_t* in[2] = {x, x};
    kiln_outputs_t* outputs = NULL;
    g_allocated = 0;
    CHECK_OK(kiln_context_invoke(context, "main", in, 2, &outputs));
    CHECK(g_allocated >= 5 * 4 * sizeof(float)); /* the result came from the caller's allocator */
    kiln_outputs_release(outputs);
    kiln_tensor_release(x);
  }
  kiln_context_release(context);
  CHECK(g_frees > 0);

  CHECK_OK(kiln_context_options_create(&options));
  CHECK_STATUS(kiln_context_options_set_num_threads(options, -1), KILN_STATUS_INVALID_ARGUMENT,
               "num_threads is -1");
  CHECK_STATUS(kiln_context_options_set_num_threads(options, 5000), KILN_STATUS_INVALID_ARGUMENT,
               "num_threads is 5000");
  CHECK_STATUS(kiln_context_options_set_executor(options, (kiln_executor_t)9), KILN_STATUS_INVALID_ARGUMENT,
               "unknown executor 9");
  CHECK_STATUS(kiln_context_options_set_allocator(options, &half), KILN_STATUS_INVALID_ARGUMENT,
               "needs both an allocate and a free callback");
  CHECK_OK(kiln_context_options_set_allocator(options, NULL)); /* back to the default */
  CHECK_STATUS(kiln_context_options_set_num_threads(NULL, 1), KILN_STATUS_INVALID_ARGUMENT, "options is NULL");
  CHECK_STATUS(kiln_context_options_set_executor(NULL, KILN_EXECUTOR_VM), KILN_STATUS_INVALID_ARGUMENT,
               "options is NULL");
  CHECK_STATUS(kiln_context_options_set_allocator(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "options is NULL");
  CHECK_STATUS(kiln_context_create_with_options(g_module, NULL, &context), KILN_STATUS_INVALID_ARGUMENT,
               "options is NULL");
  CHECK_STATUS(kiln_context_create_with_options(NULL, options, &context), KILN_STATUS_INVALID_ARGUMENT,
               "module is NULL");
  CHECK_STATUS(kiln_context_create_with_options(g_module, options, NULL), KILN_STATUS_INVALID_ARGUMENT,
               "out_context is NULL");
  kiln_context_options_release(options);
  kiln_context_options_release(NULL);
  CHECK_STATUS(kiln_context_options_create(NULL), KILN_STATUS_INVALID_ARGUMENT, "out_options is NULL");
  CHECK_STATUS(kiln_context_create(NULL, &context), KILN_STATUS_INVALID_ARGUMENT, "module is NULL");
  CHECK(context == NULL);
  CHECK_STATUS(kiln_context_create(g_module, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_context is NULL");
  CHECK_STATUS(kiln_context_create_with_executor(g_module, (kiln_executor_t)-3, &context),
               KILN_STATUS_INVALID_ARGUMENT, "unknown executor -3");
  CHECK_STATUS(kiln_context_num_threads(NULL, &threads), KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  CHECK_STATUS(kiln_context_num_threads(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_num_threads is NULL");
}

static void test_profiling(void) {
  const int64_t shape[2] = {2, 4};
  kiln_context_t* context = NULL;
  kiln_tensor_t* x = test_f32_tensor(shape, 2, 0, 1);
  kiln_tensor_t* in[2] = {x, x};
  kiln_outputs_t* outputs = NULL;
  const char* table = NULL;
  char path[256];
  CHECK_OK(kiln_context_create_with_executor(g_module, KILN_EXECUTOR_VM, &context));
  CHECK_STATUS(kiln_context_profile_table(context, &table), KILN_STATUS_FAILED_PRECONDITION,
               "profiling was never enabled");
  CHECK_STATUS(kiln_context_write_trace(context, "/tmp/never.json"), KILN_STATUS_FAILED_PRECONDITION,
               "profiling was never enabled");
  CHECK_OK(kiln_context_enable_profiling(context, 1));
  CHECK_OK(kiln_context_invoke(context, "main", in, 2, &outputs));
  kiln_outputs_release(outputs);
  CHECK_OK(kiln_context_profile_table(context, &table));
  CHECK(table != NULL && strstr(table, "main") != NULL);
  snprintf(path, sizeof path, "%s.trace.json", test_model_path());
  CHECK_OK(kiln_context_write_trace(context, path));
  remove(path);
  CHECK_STATUS(kiln_context_write_trace(context, "/nonexistent/dir/trace.json"), KILN_STATUS_INVALID_ARGUMENT,
               "/nonexistent/dir/trace.json");
  CHECK_OK(kiln_context_reset_profile(context));
  CHECK_OK(kiln_context_enable_profiling(context, 0));
  CHECK_STATUS(kiln_context_enable_profiling(NULL, 1), KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  CHECK_STATUS(kiln_context_reset_profile(NULL), KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  CHECK_STATUS(kiln_context_profile_table(NULL, &table), KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  CHECK_STATUS(kiln_context_profile_table(context, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_table is NULL");
  CHECK_STATUS(kiln_context_write_trace(NULL, path), KILN_STATUS_INVALID_ARGUMENT, "context is NULL");
  CHECK_STATUS(kiln_context_write_trace(context, NULL), KILN_STATUS_INVALID_ARGUMENT, "path is NULL");
  kiln_context_release(context);
  kiln_tensor_release(x);
}

int main(void) {
  g_module = test_load_model();
  if (g_module == NULL) return FINISH();
  RUN_TEST(test_invoke_by_name);
  RUN_TEST(test_tuple_outputs_and_executors);
  RUN_TEST(test_invoke_values);
  RUN_TEST(test_input_errors);
  RUN_TEST(test_context_options);
  RUN_TEST(test_profiling);
  kiln_module_release(g_module);
  return FINISH();
}
