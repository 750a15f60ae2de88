// kiln-run: load a .vmfb, run a function, print or save its outputs.
// All logic lives in tools/common/run_tool.h.
#include <iostream>

#include "tools/common/run_tool.h"

int main(int argc, char** argv) { return kiln::tools::RunToolMain(argc, argv, std::cout, std::cerr); }
