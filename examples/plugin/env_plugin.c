/* env_plugin.c: a Kiln plugin with the two functions of the MLC course's
 * MyModuleWithExternCall and MyModuleMixture, in destination-passing style:
 *
 *   env.linear(x, w, b, out)   out = x @ w^T + b   x (n, k), w (m, k), b (m), out (n, m)
 *   env.relu(x, out)           out = max(x, 0)     any shape, out shaped like x
 *
 * float32 only. Kiln calls a plugin's functions from several threads at once;
 * these keep no state, so that is safe.
 *
 *   kiln-run model.vmfb --plugin=libkiln_env_plugin.so --input=...
 *
 * Plain C11 over <kiln/kiln.h>: the one entry point kiln_plugin_register
 * (KILN_PLUGIN_ENTRY_POINT) registers both functions. */
#include <stdio.h>
#include <string.h>

#include "kiln/kiln.h"

/* A failed C API call becomes this function's failure. */
#define TRY(call)                        \
  do {                                   \
    kiln_status_t* try_status_ = (call); \
    if (try_status_) return try_status_; \
  } while (0)

static kiln_status_t* fail(const char* function, const char* what) {
  char message[256];
  snprintf(message, sizeof message, "%s: %s", function, what);
  return kiln_status_create(KILN_STATUS_INVALID_ARGUMENT, message);
}

/* Argument `index` as a float32 tensor of `ndim` dimensions. */
static kiln_status_t* float_tensor(const char* function, const kiln_args_t* args, size_t index, int32_t ndim,
                                   const int64_t** shape, float** data) {
  const kiln_tensor_t* t = NULL;
  kiln_dtype_t dtype = 0;
  int32_t actual_ndim = 0;
  void* p = NULL;
  TRY(kiln_args_get_tensor(args, index, &t));
  TRY(kiln_tensor_dtype(t, &dtype));
  TRY(kiln_tensor_ndim(t, &actual_ndim));
  if (dtype != KILN_DTYPE_FLOAT32) return fail(function, "tensors must be float32");
  if (ndim >= 0 && actual_ndim != ndim) {
    char what[64];
    snprintf(what, sizeof what, "argument %zu must have %d dimensions", index, (int)ndim);
    return fail(function, what);
  }
  TRY(kiln_tensor_shape(t, shape));
  TRY(kiln_tensor_data(t, &p));
  *data = (float*)p;
  return NULL;
}

static kiln_status_t* env_linear(void* user, const kiln_args_t* args, kiln_result_t* result) {
  const int64_t *xs, *ws, *bs, *os;
  float *x, *w, *b, *out;
  size_t count = 0;
  (void)user;
  (void)result; /* destination passing: the result is `out` */
  TRY(kiln_args_count(args, &count));
  if (count != 4) return fail("env.linear", "takes 4 tensors: x, w, b, out");
  TRY(float_tensor("env.linear", args, 0, 2, &xs, &x));
  TRY(float_tensor("env.linear", args, 1, 2, &ws, &w));
  TRY(float_tensor("env.linear", args, 2, 1, &bs, &b));
  TRY(float_tensor("env.linear", args, 3, 2, &os, &out));
  int64_t n = xs[0], k = xs[1], m = ws[0];
  if (ws[1] != k || bs[0] != m || os[0] != n || os[1] != m)
    return fail("env.linear", "shapes must be x (n, k), w (m, k), b (m), out (n, m)");
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      float acc = b[j];
      for (int64_t t = 0; t < k; ++t) acc += x[i * k + t] * w[j * k + t];
      out[i * m + j] = acc;
    }
  }
  return NULL;
}

static kiln_status_t* env_relu(void* user, const kiln_args_t* args, kiln_result_t* result) {
  const kiln_tensor_t *xt = NULL, *ot = NULL;
  const int64_t *xs, *os;
  float *x, *out;
  int64_t n = 0, n_out = 0;
  size_t count = 0;
  (void)user;
  (void)result;
  TRY(kiln_args_count(args, &count));
  if (count != 2) return fail("env.relu", "takes 2 tensors: x, out");
  TRY(float_tensor("env.relu", args, 0, -1, &xs, &x));
  TRY(float_tensor("env.relu", args, 1, -1, &os, &out));
  TRY(kiln_args_get_tensor(args, 0, &xt));
  TRY(kiln_args_get_tensor(args, 1, &ot));
  TRY(kiln_tensor_element_count(xt, &n));
  TRY(kiln_tensor_element_count(ot, &n_out));
  if (n != n_out) return fail("env.relu", "out must have as many elements as x");
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return NULL;
}

/* The entry point. Registers both functions or none. */
kiln_status_t* kiln_plugin_register(uint32_t host_api_version) {
  /* kiln_plugin_load needs API 0.5; the functions used here are all older. */
  if ((host_api_version >> 16) != KILN_API_VERSION_MAJOR) {
    return kiln_status_create(KILN_STATUS_INCOMPATIBLE, "built for another major version of the Kiln C API");
  }
  TRY(kiln_register_function("env.linear", env_linear, NULL));
  kiln_status_t* s = kiln_register_function("env.relu", env_relu, NULL);
  if (s) {
    kiln_status_free(kiln_unregister_function("env.linear"));
    return s;
  }
  return NULL;
}
