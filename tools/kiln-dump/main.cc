// kiln-dump: prints a .vmfb, or draws a .relax function's dataflow graph.
// The logic lives in dump_tool.cc.
#include <iostream>

#include "tools/kiln-dump/dump_tool.h"

int main(int argc, char** argv) { return kiln::tools::DumpToolMain(argc, argv, std::cout, std::cerr); }
