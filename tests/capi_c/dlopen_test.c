/* Loads libkiln.so with dlopen and runs the model through C symbols resolved
 * with dlsym only: the program links no Kiln code, as a C user's plugin host
 * would. Arguments: the library path and the model path. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi/kiln.h"

/* One function pointer per kiln.h function used, named like the function. */
#define KILN_FN(name) static __typeof__(&name) p_##name;
#define KILN_FUNCTIONS(X)                                                                                \
  X(kiln_api_version) X(kiln_version_string) X(kiln_status_code) X(kiln_status_message) X(kiln_status_free) \
  X(kiln_register_function) X(kiln_unregister_function) X(kiln_args_get_tensor) X(kiln_tensor_data)          \
  X(kiln_tensor_element_count) X(kiln_module_load_file) X(kiln_module_release) X(kiln_module_lookup_function) \
  X(kiln_function_param_info) X(kiln_context_create) X(kiln_context_release) X(kiln_tensor_create)          \
  X(kiln_tensor_release) X(kiln_context_invoke_function) X(kiln_outputs_count) X(kiln_outputs_get)           \
  X(kiln_outputs_release) X(kiln_context_invoke)
KILN_FUNCTIONS(KILN_FN)

static int g_failures = 0;
#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                    \
    }                                                                  \
  } while (0)
/* Consumes the status. */
static int ok(kiln_status_t* s, int line) {
  if (s == NULL) return 1;
  fprintf(stderr, "line %d: status %d: %s\n", line, (int)p_kiln_status_code(s), p_kiln_status_message(s));
  p_kiln_status_free(s);
  ++g_failures;
  return 0;
}
#define OK(expr) ok((expr), __LINE__)

static kiln_status_t* scale(void* user, const kiln_args_t* args, kiln_result_t* result) {
  const kiln_tensor_t* x = NULL;
  const kiln_tensor_t* out = NULL;
  void* xd = NULL;
  void* od = NULL;
  int64_t n = 0;
  kiln_status_t* s;
  (void)user;
  (void)result;
  if ((s = p_kiln_args_get_tensor(args, 0, &x)) != NULL) return s;
  if ((s = p_kiln_args_get_tensor(args, 1, &out)) != NULL) return s;
  if ((s = p_kiln_tensor_data(x, &xd)) != NULL) return s;
  if ((s = p_kiln_tensor_data(out, &od)) != NULL) return s;
  if ((s = p_kiln_tensor_element_count(x, &n)) != NULL) return s;
  for (int64_t i = 0; i < n; ++i) ((float*)od)[i] = 2.0f * ((const float*)xd)[i];
  return NULL;
}

int main(int argc, char** argv) {
  void* lib;
  kiln_module_t* module = NULL;
  kiln_context_t* context = NULL;
  const kiln_function_t* main_fn = NULL;
  kiln_value_info_t info;
  if (argc != 3) {
    fprintf(stderr, "usage: %s libkiln.so model.vmfb\n", argv[0]);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
#define KILN_RESOLVE(name)                                             \
  *(void**)(&p_##name) = dlsym(lib, #name);                            \
  if (p_##name == NULL) {                                              \
    fprintf(stderr, "dlsym(%s): %s\n", #name, dlerror());              \
    return 1;                                                          \
  }
  KILN_FUNCTIONS(KILN_RESOLVE)
  /* Nothing but kiln_* is exported: a runtime C++ symbol is not found. */
  EXPECT(dlsym(lib, "_ZN4kiln6Status2OkEv") == NULL);

  EXPECT(p_kiln_api_version() == KILN_API_VERSION);
  EXPECT(strlen(p_kiln_version_string()) > 0);
  if (!OK(p_kiln_register_function("test.capi_c.scale", scale, NULL))) return 1;
  if (!OK(p_kiln_module_load_file(argv[2], &module))) return 1;
  OK(p_kiln_module_lookup_function(module, "main", &main_fn));
  OK(p_kiln_function_param_info(main_fn, 0, &info));
  EXPECT(info.kind == KILN_VALUE_TENSOR && info.ndim == 2 && strcmp(info.dim_names[0], "n") == 0);
  OK(p_kiln_context_create(module, &context));
  {
    const int64_t shape[2] = {2, 3};
    kiln_tensor_t* x = NULL;
    kiln_outputs_t* outputs = NULL;
    const kiln_tensor_t* y = NULL;
    void* xd = NULL;
    void* yd = NULL;
    size_t count = 0;
    OK(p_kiln_tensor_create(shape, 2, KILN_DTYPE_FLOAT32, &x));
    OK(p_kiln_tensor_data(x, &xd));
    for (int i = 0; i < 6; ++i) ((float*)xd)[i] = (float)i;
    OK(p_kiln_context_invoke(context, "scaled", &x, 1, &outputs));
    OK(p_kiln_outputs_count(outputs, &count));
    EXPECT(count == 1);
    OK(p_kiln_outputs_get(outputs, 0, &y));
    OK(p_kiln_tensor_data(y, &yd));
    EXPECT(yd != NULL && ((float*)yd)[5] == 10.0f);
    p_kiln_outputs_release(outputs);
    /* An error crosses the boundary as a status. */
    {
      kiln_status_t* s = p_kiln_context_invoke(context, "nope", &x, 1, &outputs);
      EXPECT(p_kiln_status_code(s) == KILN_STATUS_NOT_FOUND);
      EXPECT(strstr(p_kiln_status_message(s), "no function 'nope'") != NULL);
      p_kiln_status_free(s);
    }
    p_kiln_tensor_release(x);
  }
  p_kiln_context_release(context);
  p_kiln_module_release(module);
  OK(p_kiln_unregister_function("test.capi_c.scale"));
  dlclose(lib);
  if (g_failures == 0) fprintf(stderr, "all checks passed\n");
  return g_failures == 0 ? 0 : 1;
}
