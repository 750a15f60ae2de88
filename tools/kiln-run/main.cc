// kiln-run: load a .vmfb, run a function, print or save its outputs.
// All logic lives in tools/common/run_tool.h.
#include <iostream>

#include "tools/common/openmp_env.h"
#include "tools/common/run_tool.h"

int main(int argc, char** argv) {
  kiln::tools::PreferPassiveOpenMpWait(argv);  // oneDNN's OpenMP threads must not spin between kernels
  return kiln::tools::RunToolMain(argc, argv, std::cout, std::cerr);
}
