// kiln-tune: tunes a PrimFunc's schedule by measurement into a database.
// The logic lives in compiler/tune/tune_tool.cc.
#include <iostream>

#include "compiler/tune/tune_tool.h"

int main(int argc, char** argv) { return kiln::tune::TuneToolMain(argc, argv, std::cout, std::cerr); }
