// kiln-compile: .relax -> .vmfb. The logic lives in compiler/driver/compile_tool.cc.
#include <iostream>

#include "compiler/driver/compile_tool.h"

int main(int argc, char** argv) { return kiln::driver::CompileToolMain(argc, argv, std::cout, std::cerr); }
