/* The C API's side of benchmarks/python/overhead.py: the per-call time of one
 * function of a .vmfb through libkiln.so, the library the Python package
 * calls, on the same file the Python cases load, so that the difference is
 * what the Python layer adds.
 *
 *   kiln_python_capi_call MODULE.vmfb vm|graph MIN_SECONDS
 *
 * Calls "main" with Kiln-allocated (aligned) inputs of the declared shapes (a
 * symbolic dimension is 1), each call being what a C caller does:
 * kiln_context_invoke_function on a context made once (one thread) and
 * kiln_outputs_release. Prints "us_per_call T": CPU time of the process per
 * call (as Python's time.process_time), after 1000 warm-up calls, over
 * batches of 1000 calls until MIN_SECONDS of CPU time have passed. */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void check(kiln_status_t* status, const char* what) {
  if (status == NULL) return;
  fprintf(stderr, "kiln_python_capi_call: %s: %s\n", what, kiln_status_message(status));
  kiln_status_free(status);
  exit(1);
}

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { kMaxInputs = 16, kBatch = 1000 };

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[2], "vm") != 0 && strcmp(argv[2], "graph") != 0)) {
    fprintf(stderr, "usage: kiln_python_capi_call MODULE.vmfb vm|graph MIN_SECONDS\n");
    return 2;
  }
  double min_seconds = atof(argv[3]);
  kiln_module_t* module = NULL;
  check(kiln_module_load_file(argv[1], &module), "load");
  const kiln_function_t* function = NULL;
  check(kiln_module_lookup_function(module, "main", &function), "lookup");
  kiln_context_options_t* options = NULL;
  check(kiln_context_options_create(&options), "options");
  check(kiln_context_options_set_num_threads(options, 1), "threads");
  check(kiln_context_options_set_executor(options, strcmp(argv[2], "vm") == 0 ? KILN_EXECUTOR_VM
                                                                                  : KILN_EXECUTOR_GRAPH),
        "executor");
  kiln_context_t* context = NULL;
  check(kiln_context_create_with_options(module, options, &context), "context");
  kiln_context_options_release(options);

  size_t count = 0;
  check(kiln_function_param_count(function, &count), "params");
  if (count > kMaxInputs) {
    fprintf(stderr, "kiln_python_capi_call: more than %d parameters\n", kMaxInputs);
    return 1;
  }
  kiln_tensor_t* inputs[kMaxInputs];
  for (size_t i = 0; i < count; ++i) {
    kiln_value_info_t info;
    check(kiln_function_param_info(function, i, &info), "param info");
    int64_t shape[8];
    int32_t ndim = info.ndim < 0 ? 0 : info.ndim;
    if (info.kind != KILN_VALUE_TENSOR || ndim > 8 || info.dtype != KILN_DTYPE(KILN_DTYPE_CODE_FLOAT, 32, 1)) {
      fprintf(stderr, "kiln_python_capi_call: parameter %s is not a float32 tensor of rank <= 8\n", info.name);
      return 1;
    }
    for (int32_t d = 0; d < ndim; ++d) shape[d] = info.dims[d] >= 0 ? info.dims[d] : 1;
    check(kiln_tensor_create(shape, ndim, info.dtype, &inputs[i]), "input");
    float* data = NULL;
    int64_t elements = 0;
    check(kiln_tensor_data(inputs[i], (void**)&data), "data");
    check(kiln_tensor_element_count(inputs[i], &elements), "count");
    for (int64_t k = 0; k < elements; ++k) data[k] = 0.01f * (float)(k % 101) - 0.5f;
  }

  for (int k = 0; k < kBatch; ++k) {
    kiln_outputs_t* outputs = NULL;
    check(kiln_context_invoke_function(context, function, inputs, count, &outputs), "call");
    kiln_outputs_release(outputs);
  }
  long calls = 0;
  double start = cpu_seconds();
  double elapsed = 0;
  do {
    for (int k = 0; k < kBatch; ++k) {
      kiln_outputs_t* outputs = NULL;
      check(kiln_context_invoke_function(context, function, inputs, count, &outputs), "call");
      kiln_outputs_release(outputs);
    }
    calls += kBatch;
    elapsed = cpu_seconds() - start;
  } while (elapsed < min_seconds);
  printf("us_per_call %.4f\n", elapsed * 1e6 / (double)calls);

  for (size_t i = 0; i < count; ++i) kiln_tensor_release(inputs[i]);
  kiln_context_release(context);
  kiln_module_release(module);
  return 0;
}
