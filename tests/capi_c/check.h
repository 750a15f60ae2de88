/* check.h: the C test suite's assert framework (tests/capi_c). Plain C11.
 *
 * A test file defines `static void test_x(void)` functions and a main that
 * runs them with RUN_TEST(test_x) and returns FINISH(). A failed check prints
 * the file, line, expression and, for statuses, the code and message, then
 * the test goes on (checks do not return), so one run lists every failure.
 */
#ifndef KILN_TESTS_CAPI_C_CHECK_H_
#define KILN_TESTS_CAPI_C_CHECK_H_

#include <stdio.h>
#include <string.h>

#include "capi/kiln.h"

/* Failures so far in this process, and in the current test. */
extern int check_failures;
extern int check_test_failures;

void check_fail(const char* file, int line, const char* what, const char* detail);
/* Consumes `status`: fails when it is not NULL. */
void check_ok(const char* file, int line, const char* expr, kiln_status_t* status);
/* Consumes `status`: fails unless it has `code` and its message contains
 * `substring`. */
void check_status(const char* file, int line, const char* expr, kiln_status_t* status, kiln_status_code_t code,
                  const char* substring);
void check_run(const char* name, void (*test)(void));
int check_finish(void);

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) check_fail(__FILE__, __LINE__, #cond, NULL);        \
  } while (0)
#define CHECK_OK(expr) check_ok(__FILE__, __LINE__, #expr, (expr))
#define CHECK_STATUS(expr, code, substring) \
  check_status(__FILE__, __LINE__, #expr, (expr), (code), (substring))
#define CHECK_STREQ(a, b)                                                          \
  do {                                                                             \
    const char* check_a_ = (a);                                                    \
    const char* check_b_ = (b);                                                    \
    if (check_a_ == NULL || check_b_ == NULL || strcmp(check_a_, check_b_) != 0) { \
      check_fail(__FILE__, __LINE__, #a " == " #b, check_a_ ? check_a_ : "(null)"); \
    }                                                                              \
  } while (0)
#define RUN_TEST(test) check_run(#test, test)
#define FINISH() check_finish()

#endif /* KILN_TESTS_CAPI_C_CHECK_H_ */
