#include "tools/common/openmp_env.h"

#include <stdlib.h>
#include <unistd.h>

namespace kiln {
namespace tools {

void PreferPassiveOpenMpWait(char** argv) {
  if (getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc): go on with libgomp's default policy.
}

}  // namespace tools
}  // namespace kiln
