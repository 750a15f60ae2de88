/* The plugins that kiln_plugin_load must refuse, one per message: built three
 * times (tests/plugins/CMakeLists.txt) with one of these defined.
 *   KILN_TEST_NO_ENTRY     exports a function, but not kiln_plugin_register;
 *   KILN_TEST_EMPTY        its entry point registers nothing;
 *   KILN_TEST_FAILING      registers kiln_test.first, then fails. */
#include <stddef.h>

#include "kiln/kiln.h"

static kiln_status_t* first(void* user, const kiln_args_t* args, kiln_result_t* result) {
  (void)user;
  (void)args;
  (void)result;
  return NULL;
}

#if defined(KILN_TEST_NO_ENTRY)
kiln_status_t* kiln_plugin_init(uint32_t host_api_version) {
  (void)host_api_version;
  return kiln_register_function("kiln_test.first", first, NULL);
}
#elif defined(KILN_TEST_EMPTY)
kiln_status_t* kiln_plugin_register(uint32_t host_api_version) {
  (void)host_api_version;
  (void)first;
  return NULL;
}
#elif defined(KILN_TEST_FAILING)
kiln_status_t* kiln_plugin_register(uint32_t host_api_version) {
  kiln_status_t* s = kiln_register_function("kiln_test.first", first, NULL);
  if (s) return s;
  (void)host_api_version;
  return kiln_status_create(KILN_STATUS_FAILED_PRECONDITION, "refused on purpose");
}
#else
#error "define KILN_TEST_NO_ENTRY, KILN_TEST_EMPTY or KILN_TEST_FAILING"
#endif
