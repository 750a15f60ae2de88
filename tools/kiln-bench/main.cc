// kiln-bench: the logic lives in bench_tool.cc.
#include <iostream>

#include "tools/common/openmp_env.h"
#include "tools/kiln-bench/bench_tool.h"

int main(int argc, char** argv) {
  kiln::tools::PreferPassiveOpenMpWait(argv);  // oneDNN's OpenMP threads must not spin between kernels
  return kiln::tools::BenchToolMain(argc, argv, std::cout, std::cerr);
}
