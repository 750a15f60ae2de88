/* Versions and statuses (kiln.h: kiln_api_version ... kiln_status_free). */
#include <stdint.h>

#include "tests/capi_c/check.h"

static void test_versions(void) {
  CHECK(kiln_api_version() == KILN_API_VERSION);
  CHECK(KILN_API_VERSION == ((KILN_API_VERSION_MAJOR << 16) | KILN_API_VERSION_MINOR));
  CHECK(KILN_API_VERSION_MINOR >= 4);
  CHECK(kiln_version_string() != NULL && strlen(kiln_version_string()) >= 5);
}

static void test_status_create_and_read(void) {
  kiln_status_t* s = kiln_status_create(KILN_STATUS_NOT_FOUND, "no such thing");
  CHECK(s != NULL);
  CHECK(kiln_status_code(s) == KILN_STATUS_NOT_FOUND);
  CHECK_STREQ(kiln_status_message(s), "no such thing");
  kiln_status_free(s);

  /* OK is the NULL status; a NULL message is empty. */
  CHECK(kiln_status_create(KILN_STATUS_OK, "ignored") == NULL);
  s = kiln_status_create(KILN_STATUS_INTERNAL, NULL);
  CHECK_STREQ(kiln_status_message(s), "");
  kiln_status_free(s);

  CHECK(kiln_status_code(NULL) == KILN_STATUS_OK);
  CHECK_STREQ(kiln_status_message(NULL), "");
  kiln_status_free(NULL);
}

static void test_code_names(void) {
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_OK), "OK");
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_NOT_FOUND), "NOT_FOUND");
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_OUT_OF_RANGE), "OUT_OF_RANGE");
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_DATA_LOSS), "DATA_LOSS");
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_UNIMPLEMENTED), "UNIMPLEMENTED");
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_FAILED_PRECONDITION), "FAILED_PRECONDITION");
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_INTERNAL), "INTERNAL");
  CHECK_STREQ(kiln_status_code_name(KILN_STATUS_INCOMPATIBLE), "INCOMPATIBLE");
}

static void test_value_kind_names(void) {
  CHECK_STREQ(kiln_value_kind_name(KILN_VALUE_NONE), "none");
  CHECK_STREQ(kiln_value_kind_name(KILN_VALUE_INT), "int");
  CHECK_STREQ(kiln_value_kind_name(KILN_VALUE_FLOAT), "float");
  CHECK_STREQ(kiln_value_kind_name(KILN_VALUE_STRING), "string");
  CHECK_STREQ(kiln_value_kind_name(KILN_VALUE_TENSOR), "tensor");
  CHECK_STREQ(kiln_value_kind_name(KILN_VALUE_SHAPE), "shape");
  CHECK_STREQ(kiln_value_kind_name(KILN_VALUE_TUPLE), "tuple");
  CHECK_STREQ(kiln_value_kind_name(KILN_VALUE_FUNCTION), "function");
  CHECK_STREQ(kiln_value_kind_name(KILN_VALUE_OBJECT), "object");
  CHECK_STREQ(kiln_value_kind_name((kiln_value_kind_t)77), "unknown");
}

static void test_dtype_macros(void) {
  CHECK(KILN_DTYPE_GET_CODE(KILN_DTYPE_FLOAT32) == KILN_DTYPE_CODE_FLOAT);
  CHECK(KILN_DTYPE_GET_BITS(KILN_DTYPE_FLOAT32) == 32);
  CHECK(KILN_DTYPE_GET_LANES(KILN_DTYPE_FLOAT32) == 1);
  CHECK(KILN_DTYPE_GET_CODE(KILN_DTYPE_UINT8) == KILN_DTYPE_CODE_UINT);
  CHECK(KILN_DTYPE_GET_BITS(KILN_DTYPE_INT64) == 64);
}

int main(void) {
  RUN_TEST(test_versions);
  RUN_TEST(test_status_create_and_read);
  RUN_TEST(test_code_names);
  RUN_TEST(test_value_kind_names);
  RUN_TEST(test_dtype_macros);
  return FINISH();
}
