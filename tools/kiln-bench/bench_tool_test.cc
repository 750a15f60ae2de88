// kiln-bench's flag errors: each exits with status 2 and a message naming the
// flag, before any module is loaded or benchmark run.
#include "tools/kiln-bench/bench_tool.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln {
namespace tools {
namespace {

// Runs BenchToolMain on `args` (after argv[0]); its stderr goes to *err.
int RunBench(std::vector<std::string> args, std::string* err) {
  args.insert(args.begin(), "kiln-bench");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStderr();
  int rc = BenchToolMain(static_cast<int>(args.size()), argv.data());
  *err = ::testing::internal::GetCapturedStderr();
  return rc;
}

TEST(BenchToolTest, ProfilingFlagErrors) {
  std::string err;
  EXPECT_EQ(RunBench({"m.vmfb", "--trace="}, &err), 2);
  EXPECT_NE(err.find("kiln-bench: error: --trace needs a file name"), std::string::npos) << err;
  EXPECT_EQ(RunBench({"m.vmfb", "--profile", "--profile_calls=0"}, &err), 2);
  EXPECT_NE(err.find("kiln-bench: error: --profile_calls: '0' is not a positive integer"), std::string::npos) << err;
  EXPECT_EQ(RunBench({"m.vmfb", "--profile=yes"}, &err), 2);
  EXPECT_NE(err.find("unknown option '--profile=yes'"), std::string::npos) << err;
}

TEST(BenchToolTest, UsageNamesTheProfilingFlags) {
  std::string err;
  EXPECT_EQ(RunBench({}, &err), 2);
  EXPECT_NE(err.find("[--profile] [--trace=FILE]"), std::string::npos) << err;
}

}  // namespace
}  // namespace tools
}  // namespace kiln
