// kiln_doc_runner: runs the examples of Markdown files (see doc_runner.h).
// Exit status: 0 all passed, 1 some failed, 2 bad usage or nothing could run.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tests/docs/doc_runner.h"

namespace {

const char kUsage[] =
    "usage: kiln_doc_runner --kiln-compile=PATH --include=DIR --libdir=DIR --examples=DIR --work=DIR\n"
    "                       [--path=DIR]... [--cc=CC] [--cxx=CXX] [--flags=FLAGS] [--timeout=S]\n"
    "                       FILE.md|DIR...\n";

bool Take(const std::string& arg, const char* flag, std::string* value) {
  std::string prefix = std::string(flag) + "=";
  if (arg.compare(0, prefix.size(), prefix) != 0) return false;
  *value = arg.substr(prefix.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  kiln::docs::RunnerOptions o;
  std::vector<std::string> inputs;
  std::string value;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (Take(arg, "--kiln-compile", &o.kiln_compile) || Take(arg, "--include", &o.include_dir) ||
        Take(arg, "--libdir", &o.library_dir) || Take(arg, "--examples", &o.examples_dir) ||
        Take(arg, "--work", &o.work_dir) || Take(arg, "--cc", &o.cc) || Take(arg, "--cxx", &o.cxx) ||
        Take(arg, "--flags", &o.extra_flags)) {
    } else if (Take(arg, "--path", &value)) {
      o.path_dirs.push_back(value);
    } else if (Take(arg, "--timeout", &value)) {
      o.timeout_s = std::atoi(value.c_str());
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      std::cerr << "kiln_doc_runner: unknown option '" << arg << "'\n" << kUsage;
      return 2;
    } else {
      inputs.push_back(arg);
    }
  }
  if (o.kiln_compile.empty() || o.include_dir.empty() || o.library_dir.empty() || o.examples_dir.empty() ||
      o.work_dir.empty() || inputs.empty() || o.timeout_s <= 0) {
    std::cerr << kUsage;
    return 2;
  }
  int failed = kiln::docs::RunDocs(o, inputs, std::cout);
  if (failed < 0) return 2;
  return failed == 0 ? 0 : 1;
}
