/* The C-side tests of kiln.h (c_api_test.c), called by c_api_driver_test.cc.
 * Each returns 0 on success or 1 with a message written to `err`. */
#ifndef KILN_TESTS_CAPI_C_API_TEST_H_
#define KILN_TESTS_CAPI_C_API_TEST_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The packed function the test module imports; the C tests register it. */
#define KILN_CAPI_TEST_FUNCTION "test.capi.add_one"

int kiln_capi_test_version_and_status(char* err, size_t err_size);
int kiln_capi_test_tensors(char* err, size_t err_size);
/* Expects loading `path` to fail because KILN_CAPI_TEST_FUNCTION is not registered. */
int kiln_capi_test_missing_function_fails_load(const char* path, char* err, size_t err_size);
int kiln_capi_test_invoke_from_file(const char* path, char* err, size_t err_size);
int kiln_capi_test_invoke_from_buffer(const char* path, char* err, size_t err_size);
/* The VM and the static graph executor ("graphed" has a graph). */
int kiln_capi_test_executors(const char* path, char* err, size_t err_size);
int kiln_capi_test_errors(const char* path, char* err, size_t err_size);
/* Context options: thread counts and executors, and their misuse. */
int kiln_capi_test_threads(const char* path, char* err, size_t err_size);
/* For the driver's multi-threaded test: register / unregister the C function
 * and read how many times it ran. */
int kiln_capi_test_register(char* err, size_t err_size);
void kiln_capi_test_unregister(void);
int kiln_capi_test_add_one_calls(void);

#ifdef __cplusplus
}
#endif

#endif /* KILN_TESTS_CAPI_C_API_TEST_H_ */
