// kiln-bench: the logic lives in bench_tool.cc.
#include "tools/kiln-bench/bench_tool.h"

int main(int argc, char** argv) { return kiln::tools::BenchToolMain(argc, argv); }
