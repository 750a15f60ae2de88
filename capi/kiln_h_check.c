/* Compiles kiln.h as strict C11 (-Wpedantic -Werror) so C++-isms cannot creep in. */
#include "capi/kiln.h"

kiln_dtype_t kiln_h_check_dtype(void) { return KILN_DTYPE_FLOAT32; }
