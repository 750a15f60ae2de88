/* The assert framework behind check.h. */
#include "tests/capi_c/check.h"

int check_failures = 0;
int check_test_failures = 0;

void check_fail(const char* file, int line, const char* what, const char* detail) {
  ++check_failures;
  ++check_test_failures;
  fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, what, detail ? "\n    got: " : "",
          detail ? detail : "");
}

void check_ok(const char* file, int line, const char* expr, kiln_status_t* status) {
  if (status != NULL) {
    char detail[1024];
    snprintf(detail, sizeof detail, "%s: %s", kiln_status_code_name(kiln_status_code(status)),
             kiln_status_message(status));
    check_fail(file, line, expr, detail);
  }
  kiln_status_free(status);
}

void check_status(const char* file, int line, const char* expr, kiln_status_t* status, kiln_status_code_t code,
                  const char* substring) {
  if (kiln_status_code(status) != code || strstr(kiln_status_message(status), substring) == NULL) {
    char detail[1024];
    snprintf(detail, sizeof detail, "%s: '%s' (wanted %s containing '%s')",
             kiln_status_code_name(kiln_status_code(status)), kiln_status_message(status),
             kiln_status_code_name(code), substring);
    check_fail(file, line, expr, detail);
  }
  kiln_status_free(status);
}

void check_run(const char* name, void (*test)(void)) {
  check_test_failures = 0;
  fprintf(stderr, "[ RUN  ] %s\n", name);
  test();
  fprintf(stderr, "[ %s ] %s\n", check_test_failures == 0 ? " OK " : "FAIL", name);
}

int check_finish(void) {
  if (check_failures == 0) {
    fprintf(stderr, "all checks passed\n");
    return 0;
  }
  fprintf(stderr, "%d check(s) failed\n", check_failures);
  return 1;
}
