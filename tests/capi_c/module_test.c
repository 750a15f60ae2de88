/* Modules and functions: loading from a file and a buffer, the function
 * table, lookup, and introspection of parameters and results
 * (kiln_value_info_t), with every error path. */
#include <stdint.h>
#include <stdlib.h>

#include "tests/capi_c/check.h"
#include "tests/capi_c/test_model.h"

static const kiln_function_t* lookup(const kiln_module_t* module, const char* name) {
  const kiln_function_t* f = NULL;
  CHECK_OK(kiln_module_lookup_function(module, name, &f));
  return f;
}

static void test_function_table(void) {
  kiln_module_t* module = test_load_model();
  size_t count = 0;
  int seen = 0;
  if (module == NULL) return;
  CHECK_OK(kiln_module_function_count(module, &count));
  CHECK(count >= 4);
  for (size_t i = 0; i < count; ++i) {
    const kiln_function_t* f = NULL;
    const char* name = NULL;
    CHECK_OK(kiln_module_function_at(module, i, &f));
    CHECK_OK(kiln_function_name(f, &name));
    if (name != NULL && (strcmp(name, "main") == 0 || strcmp(name, "pair") == 0 || strcmp(name, "values") == 0 ||
                         strcmp(name, "scaled") == 0)) {
      ++seen;
      CHECK(lookup(module, name) == f); /* the same borrowed handle */
    }
  }
  CHECK(seen == 4);
  {
    const kiln_function_t* f = (const kiln_function_t*)module;
    CHECK_STATUS(kiln_module_function_at(module, count, &f), KILN_STATUS_OUT_OF_RANGE, "but the module has");
    CHECK(f == NULL);
    CHECK_STATUS(kiln_module_lookup_function(module, "nope", &f), KILN_STATUS_NOT_FOUND,
                 "no function 'nope' in the module (it has: ");
    CHECK_STATUS(kiln_module_lookup_function(module, "nope", &f), KILN_STATUS_NOT_FOUND, "values");
    CHECK_STATUS(kiln_module_lookup_function(module, NULL, &f), KILN_STATUS_INVALID_ARGUMENT, "name is NULL");
    CHECK_STATUS(kiln_module_lookup_function(NULL, "main", &f), KILN_STATUS_INVALID_ARGUMENT, "module is NULL");
    CHECK_STATUS(kiln_module_lookup_function(module, "main", NULL), KILN_STATUS_INVALID_ARGUMENT,
                 "out_function is NULL");
    CHECK_STATUS(kiln_module_function_at(NULL, 0, &f), KILN_STATUS_INVALID_ARGUMENT, "module is NULL");
    CHECK_STATUS(kiln_module_function_at(module, 0, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_function is NULL");
    CHECK_STATUS(kiln_module_function_count(NULL, &count), KILN_STATUS_INVALID_ARGUMENT, "module is NULL");
    CHECK(count == 0);
    CHECK_STATUS(kiln_module_function_count(module, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_count is NULL");
  }
  kiln_module_release(module);
  kiln_module_release(NULL);
}

static void test_signatures(void) {
  kiln_module_t* module = test_load_model();
  const kiln_function_t* main_fn;
  const kiln_function_t* values_fn;
  const kiln_function_t* pair_fn;
  kiln_value_info_t info;
  size_t n = 0;
  if (module == NULL) return;
  main_fn = lookup(module, "main");
  values_fn = lookup(module, "values");
  pair_fn = lookup(module, "pair");

  CHECK_OK(kiln_function_param_count(main_fn, &n));
  CHECK(n == 2);
  CHECK_OK(kiln_function_result_count(main_fn, &n));
  CHECK(n == 1);
  CHECK_OK(kiln_function_param_info(main_fn, 0, &info));
  CHECK_STREQ(info.name, "x");
  CHECK(info.kind == KILN_VALUE_TENSOR);
  CHECK(info.dtype == KILN_DTYPE_FLOAT32);
  CHECK(info.ndim == 2);
  CHECK(info.dims != NULL && info.dims[0] == -1 && info.dims[1] == 4);
  CHECK(info.dim_names != NULL);
  if (info.dim_names != NULL) {
    CHECK_STREQ(info.dim_names[0], "n");
    CHECK_STREQ(info.dim_names[1], "4");
  }
  CHECK_OK(kiln_function_param_info(main_fn, 1, &info));
  CHECK_STREQ(info.name, "y");
  CHECK_OK(kiln_function_result_info(main_fn, 0, &info));
  CHECK_STREQ(info.name, "result");
  CHECK(info.kind == KILN_VALUE_TENSOR && info.ndim == 2 && info.dims != NULL && info.dims[1] == 4);

  /* Shapes, scalars and tuples. */
  CHECK_OK(kiln_function_param_count(values_fn, &n));
  CHECK(n == 4);
  CHECK_OK(kiln_function_param_info(values_fn, 1, &info));
  CHECK_STREQ(info.name, "s");
  CHECK(info.kind == KILN_VALUE_SHAPE && info.ndim == 2 && info.dims != NULL && info.dims[0] == -1 &&
        info.dims[1] == 4);
  CHECK_OK(kiln_function_param_info(values_fn, 2, &info));
  CHECK_STREQ(info.name, "p");
  CHECK(info.kind == KILN_VALUE_INT && info.dtype == KILN_DTYPE_INT64);
  CHECK(info.dims == NULL && info.dim_names == NULL);
  CHECK_OK(kiln_function_param_info(values_fn, 3, &info));
  CHECK(info.kind == KILN_VALUE_FLOAT && info.dtype == KILN_DTYPE_FLOAT64);
  CHECK_OK(kiln_function_result_info(values_fn, 0, &info));
  CHECK(info.kind == KILN_VALUE_TUPLE && info.dtype == 0);
  CHECK_OK(kiln_function_result_info(pair_fn, 0, &info));
  CHECK(info.kind == KILN_VALUE_TUPLE);
  CHECK_OK(kiln_function_param_info(pair_fn, 0, &info));
  CHECK(info.ndim == 2 && info.dims != NULL && info.dims[0] == 2 && info.dims[1] == 3);

  /* Errors: the out-struct is zeroed first. */
  CHECK_STATUS(kiln_function_param_info(main_fn, 2, &info), KILN_STATUS_OUT_OF_RANGE,
               "kiln_function_param_info: index 2, but 'main' has 2 parameters");
  CHECK(info.name == NULL && info.dims == NULL);
  CHECK_STATUS(kiln_function_result_info(main_fn, 1, &info), KILN_STATUS_OUT_OF_RANGE,
               "kiln_function_result_info: index 1, but 'main' has 1 results");
  CHECK_STATUS(kiln_function_param_info(NULL, 0, &info), KILN_STATUS_INVALID_ARGUMENT, "function is NULL");
  CHECK_STATUS(kiln_function_param_info(main_fn, 0, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_info is NULL");
  CHECK_STATUS(kiln_function_result_info(NULL, 0, &info), KILN_STATUS_INVALID_ARGUMENT, "function is NULL");
  CHECK_STATUS(kiln_function_result_info(main_fn, 0, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_info is NULL");
  {
    const char* name = "x";
    CHECK_STATUS(kiln_function_name(NULL, &name), KILN_STATUS_INVALID_ARGUMENT, "function is NULL");
    CHECK(name == NULL);
    CHECK_STATUS(kiln_function_name(main_fn, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_name is NULL");
    CHECK_STATUS(kiln_function_param_count(NULL, &n), KILN_STATUS_INVALID_ARGUMENT, "function is NULL");
    CHECK_STATUS(kiln_function_param_count(main_fn, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_count is NULL");
    CHECK_STATUS(kiln_function_result_count(NULL, &n), KILN_STATUS_INVALID_ARGUMENT, "function is NULL");
    CHECK_STATUS(kiln_function_result_count(main_fn, NULL), KILN_STATUS_INVALID_ARGUMENT, "out_count is NULL");
  }
  kiln_module_release(module);
}

static void test_load_from_buffer(void) {
  size_t size = 0;
  void* data = test_read_file(test_model_path(), &size);
  kiln_module_t* module = NULL;
  size_t count = 0;
  CHECK(data != NULL);
  if (data == NULL) return;
  test_register_scale();
  CHECK_OK(kiln_module_load_buffer(data, size, &module));
  CHECK_OK(kiln_module_function_count(module, &count));
  CHECK(count >= 4);
  kiln_module_release(module);

  /* A damaged buffer is a status, never a crash. */
  memset(data, 0x5a, 64);
  CHECK_STATUS(kiln_module_load_buffer(data, size, &module), KILN_STATUS_DATA_LOSS, "");
  CHECK(module == NULL);
  free(data);
}

static void test_load_errors(void) {
  kiln_module_t* module = (kiln_module_t*)&module;
  static const char kText[64] = "not a vmfb file at all";
  CHECK_STATUS(kiln_module_load_file("/nonexistent/model.vmfb", &module), KILN_STATUS_NOT_FOUND,
               "/nonexistent/model.vmfb");
  CHECK(module == NULL);
  CHECK_STATUS(kiln_module_load_file(NULL, &module), KILN_STATUS_INVALID_ARGUMENT, "path is NULL");
  CHECK_STATUS(kiln_module_load_file(test_model_path(), NULL), KILN_STATUS_INVALID_ARGUMENT,
               "out_module is NULL");
  CHECK_STATUS(kiln_module_load_buffer(NULL, 10, &module), KILN_STATUS_INVALID_ARGUMENT, "data is NULL");
  CHECK_STATUS(kiln_module_load_buffer(kText, sizeof kText, NULL), KILN_STATUS_INVALID_ARGUMENT,
               "out_module is NULL");
  {
    kiln_status_t* s = kiln_module_load_buffer(kText, sizeof kText, &module);
    CHECK(s != NULL && module == NULL);
    kiln_status_free(s);
  }
}

/* Loading resolves imports: without the C function registered, the load
 * fails naming it. Runs first, before anything registers it. */
static void test_missing_import_fails_load(void) {
  kiln_module_t* module = NULL;
  CHECK_STATUS(kiln_module_load_file(test_model_path(), &module), KILN_STATUS_NOT_FOUND, TEST_SCALE_FUNCTION);
  CHECK(module == NULL);
}

int main(void) {
  RUN_TEST(test_missing_import_fails_load);
  RUN_TEST(test_function_table);
  RUN_TEST(test_signatures);
  RUN_TEST(test_load_from_buffer);
  RUN_TEST(test_load_errors);
  return FINISH();
}
