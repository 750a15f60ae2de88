// Helpers of the database tests (database_test.cc, database_show_test.cc):
// an n x n x n matmul PrimFunc in TVMScript and a fresh temporary directory.
#ifndef KILN_COMPILER_TUNE_DATABASE_TEST_UTIL_H_
#define KILN_COMPILER_TUNE_DATABASE_TEST_UTIL_H_

#include <cstdlib>
#include <string>

#include "runtime/status.h"

namespace kiln {
namespace tune {
namespace testing {

inline std::string MM(const char* name, int n) {
  std::string N = std::to_string(n);
  return std::string("@T.prim_func\ndef ") + name + "(A: T.Buffer((" + N + ", " + N + "), \"float32\"), B: T.Buffer((" +
         N + ", " + N + "), \"float32\"), C: T.Buffer((" + N + ", " + N + "), \"float32\")):\n" +
         "    for i, j, k in T.grid(" + N + ", " + N + ", " + N + "):\n" +
         "        with T.block(\"C\"):\n"
         "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
         "            with T.init():\n"
         "                C[vi, vj] = T.float32(0)\n"
         "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";
}

// A new directory under $TMPDIR (or /tmp) named after `prefix`.
inline std::string TempDir(const char* prefix = "kiln-db-test") {
  const char* base = getenv("TMPDIR");
  std::string path = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  KILN_CHECK(mkdtemp(path.data()) != nullptr, "mkdtemp");
  return path;
}

}  // namespace testing
}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_DATABASE_TEST_UTIL_H_
