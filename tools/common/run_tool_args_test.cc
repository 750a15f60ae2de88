// kiln-run argument handling (no module needed).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tools/common/run_tool.h"

namespace kiln {
namespace tools {
namespace {

Result<RunToolOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "kiln-run");
  return ParseRunToolArgs(static_cast<int>(args.size()), args.data());
}

std::string ParseError(std::vector<const char*> args) {
  Result<RunToolOptions> r = Parse(std::move(args));
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(RunToolArgsTest, ParsesEverything) {
  Result<RunToolOptions> r = Parse({"m.vmfb", "--function=pair", "--input=@x.npy", "--input=f32=1",
                                    "--output=@y.npy", "--output", "-", "--repeat", "5", "--threads=3", "--executor=vm",
                                    "--expected_output=@r.npy", "--atol=0.5", "--rtol", "1e-3",
                                    "--print-statistics"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->module_path, "m.vmfb");
  EXPECT_EQ(r->function, "pair");
  EXPECT_EQ(r->inputs, (std::vector<std::string>{"@x.npy", "f32=1"}));
  EXPECT_EQ(r->outputs, (std::vector<std::string>{"@y.npy", "-"}));
  EXPECT_EQ(r->expected_outputs, (std::vector<std::string>{"@r.npy"}));
  EXPECT_EQ(r->atol, 0.5);
  EXPECT_EQ(r->rtol, 1e-3);
  EXPECT_TRUE(r->print_statistics);
  EXPECT_EQ(r->repeat, 5);
  EXPECT_EQ(r->threads, 3);
  EXPECT_EQ(r->executor, "vm");
  EXPECT_FALSE(r->help);
}

TEST(RunToolArgsTest, Defaults) {
  Result<RunToolOptions> r = Parse({"m.vmfb"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->function, "main");
  EXPECT_TRUE(r->inputs.empty());
  EXPECT_EQ(r->repeat, 0);
  EXPECT_EQ(r->threads, 0);
  EXPECT_EQ(r->executor, "auto");
  EXPECT_EQ(r->atol, 1e-5);
  EXPECT_EQ(r->rtol, 1e-5);
  EXPECT_FALSE(r->print_statistics);
}

TEST(RunToolArgsTest, ModuleMayComeAfterFlags) {
  Result<RunToolOptions> r = Parse({"--input", "f32=1", "m.vmfb"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->module_path, "m.vmfb");
  EXPECT_EQ(r->inputs, (std::vector<std::string>{"f32=1"}));
}

TEST(RunToolArgsTest, Errors) {
  EXPECT_EQ(ParseError({}), "no .vmfb file given (see --help)");
  EXPECT_EQ(ParseError({"m.vmfb", "--bogus"}), "unknown flag '--bogus' (see --help)");
  EXPECT_EQ(ParseError({"m.vmfb", "--input"}), "--input needs a value");
  EXPECT_EQ(ParseError({"m.vmfb", "--print-statistics=yes"}),
            "--print-statistics takes no value, got '--print-statistics=yes'");
  EXPECT_EQ(ParseError({"m.vmfb", "--atol=-1"}), "--atol: '-1' is not a number >= 0");
  EXPECT_EQ(ParseError({"m.vmfb", "--rtol=x"}), "--rtol: 'x' is not a number >= 0");
  EXPECT_EQ(ParseError({"a.vmfb", "b.vmfb"}), "more than one module file: 'a.vmfb' and 'b.vmfb'");
  EXPECT_EQ(ParseError({"m.vmfb", "--repeat=0"}), "--repeat: '0' is not a positive integer");
  EXPECT_EQ(ParseError({"m.vmfb", "--repeat=x"}), "--repeat: 'x' is not a positive integer");
  EXPECT_EQ(ParseError({"m.vmfb", "--threads=-2"}), "--threads: '-2' is not a positive integer");
  EXPECT_EQ(ParseError({"m.vmfb", "--threads=4k"}), "--threads: '4k' is not a positive integer");
  EXPECT_EQ(ParseError({"m.vmfb", "--output=y.npy"}), "--output: expected @PATH.npy or -, got 'y.npy'");
  EXPECT_EQ(ParseError({"m.vmfb", "--output=@"}), "--output: expected @PATH.npy or -, got '@'");
  EXPECT_EQ(ParseError({"m.vmfb", "--function="}), "--function: empty function name");
  EXPECT_EQ(ParseError({"m.vmfb", "--executor=gpu"}), "--executor: 'gpu' is not auto, vm or graph");
}

int Main(std::vector<const char*> args, std::string* out, std::string* err) {
  args.insert(args.begin(), "kiln-run");
  std::ostringstream o, e;
  int rc = RunToolMain(static_cast<int>(args.size()), args.data(), o, e);
  *out = o.str();
  *err = e.str();
  return rc;
}

TEST(RunToolMainTest, HelpAndUsageErrors) {
  std::string out, err;
  EXPECT_EQ(Main({"--help"}, &out, &err), 0);
  EXPECT_EQ(out, kRunToolUsage);
  EXPECT_EQ(err, "");
  EXPECT_EQ(Main({"m.vmfb", "--repeat=0"}, &out, &err), 2);
  EXPECT_EQ(err, "kiln-run: error: --repeat: '0' is not a positive integer\n");
}

TEST(RunToolMainTest, BadInputIsReportedBeforeLoading) {
  std::string out, err;
  // The module does not exist either; the input error comes first.
  EXPECT_EQ(Main({"/nonexistent/m.vmfb", "--input=2x3xf32=1,2"}, &out, &err), 1);
  EXPECT_EQ(err, "kiln-run: error: --input 1: inline tensor '2x3xf32=1,2': shape [2, 3] needs 6 values, got 2\n");
  EXPECT_EQ(Main({"/nonexistent/m.vmfb", "--input=f32=1", "--input=@/nonexistent/x.npy"}, &out, &err), 1);
  EXPECT_EQ(err, "kiln-run: error: --input 2: cannot open '/nonexistent/x.npy'\n");
}

TEST(RunToolMainTest, MissingModuleFile) {
  std::string out, err;
  EXPECT_EQ(Main({"/nonexistent/m.vmfb"}, &out, &err), 1);
  EXPECT_EQ(err.rfind("kiln-run: error: loading '/nonexistent/m.vmfb': ", 0), 0u) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "one line: " << err;
}

TEST(RunToolArgsTest, Device) {
  EXPECT_EQ(Parse({"m.vmfb"}).value().device, -1);
  EXPECT_EQ(Parse({"m.vmfb", "--device=cpu"}).value().device, -1);
  EXPECT_EQ(Parse({"m.vmfb", "--device=cuda"}).value().device, 0);
  EXPECT_EQ(Parse({"m.vmfb", "--device=cuda:3"}).value().device, 3);
  EXPECT_NE(ParseError({"m.vmfb", "--device=gpu"}).find("expected cpu, cuda or cuda:N, got 'gpu'"), std::string::npos);
  EXPECT_NE(ParseError({"m.vmfb", "--device=cuda:x"}).find("got 'cuda:x'"), std::string::npos);
}

}  // namespace
}  // namespace tools
}  // namespace kiln
