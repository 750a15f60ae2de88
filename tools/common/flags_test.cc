// The shared flag grammar (flags.h) and the numbers tools print about themselves.
#include "tools/common/flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/common/compare.h"
#include "tools/common/process_stats.h"

namespace kiln {
namespace tools {
namespace {

struct Parsed {
  Status status;
  std::vector<std::string> positional;
};

struct Fixture {
  std::string name, mode = "a";
  std::vector<std::string> items;
  int64_t count = 0;
  int small = 0;
  double x = 0;
  bool flag = false;
  FlagParser parser;
  Fixture() {
    parser.AddString("name", &name);
    parser.AddRepeated("item", &items);
    parser.AddInt("count", 1, int64_t{1000000000}, &count);
    parser.AddInt("small", 0, 9, &small);
    parser.AddDouble("x", 0.5, &x);
    parser.AddChoice("mode", {"a", "b", "c"}, &mode);
    parser.AddSwitch("flag", &flag);
  }
  Parsed Parse(std::vector<const char*> args) {
    args.insert(args.begin(), "tool");
    Parsed p;
    p.status = parser.Parse(static_cast<int>(args.size()), args.data(), &p.positional);
    return p;
  }
};

TEST(FlagParserTest, BothSpellingsAndPositionals) {
  Fixture f;
  Parsed p = f.Parse({"in.vmfb", "--name=a=b", "--item", "1", "--item=2", "--count", "7", "--small=3", "--x", "2.5",
                      "--mode", "c", "--flag", "-", "--", "--not-a-flag"});
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.positional, (std::vector<std::string>{"in.vmfb", "-", "--not-a-flag"}));
  EXPECT_EQ(f.name, "a=b");
  EXPECT_EQ(f.items, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(f.count, 7);
  EXPECT_EQ(f.small, 3);
  EXPECT_EQ(f.x, 2.5);
  EXPECT_EQ(f.mode, "c");
  EXPECT_TRUE(f.flag);
  EXPECT_FALSE(f.parser.help());
  // A value may start with '-' when it follows its flag.
  Fixture g;
  ASSERT_TRUE(g.Parse({"--name", "-x"}).status.ok());
  EXPECT_EQ(g.name, "-x");
}

TEST(FlagParserTest, ShortAlias) {
  Fixture f;
  f.parser.AddAlias("-n", "name");
  ASSERT_TRUE(f.Parse({"-n", "v"}).status.ok());
  EXPECT_EQ(f.name, "v");
  EXPECT_EQ(f.Parse({"-n"}).status.message(), "-n needs a value");
}

TEST(FlagParserTest, Help) {
  for (const char* h : {"-h", "--help"}) {
    Fixture f;
    ASSERT_TRUE(f.Parse({h}).status.ok());
    EXPECT_TRUE(f.parser.help());
  }
}

TEST(FlagParserTest, Errors) {
  auto error = [](std::vector<const char*> args) {
    Fixture f;
    Parsed p = f.Parse(std::move(args));
    EXPECT_EQ(p.status.code(), StatusCode::kInvalidArgument);
    return p.status.message();
  };
  EXPECT_EQ(error({"--bogus=1"}), "unknown flag '--bogus' (see --help)");
  EXPECT_EQ(error({"-x"}), "unknown flag '-x' (see --help)");
  EXPECT_EQ(error({"--name"}), "--name needs a value");
  EXPECT_EQ(error({"--flag=1"}), "--flag takes no value, got '--flag=1'");
  EXPECT_EQ(error({"--count=0"}), "--count: '0' is not a positive integer");
  EXPECT_EQ(error({"--count", "9x"}), "--count: '9x' is not a positive integer");
  EXPECT_EQ(error({"--small=10"}), "--small: '10' is not an integer in [0, 9]");
  EXPECT_EQ(error({"--x=0.25"}), "--x: '0.25' is not a number >= 0.5");
  EXPECT_EQ(error({"--x=nan"}), "--x: 'nan' is not a number >= 0.5");
  EXPECT_EQ(error({"--mode=d"}), "--mode: 'd' is not a, b or c");
}

TEST(FlagParserTest, ValueCallbackErrorsArePrefixed) {
  FlagParser parser;
  parser.AddValue("v", [](const std::string& v) { return InvalidArgument("bad '" + v + "'"); });
  parser.AddValue("w", [](const std::string&) { return InvalidArgument("--w: says it itself"); });
  std::vector<std::string> pos;
  const char* a[] = {"tool", "--v=1"};
  EXPECT_EQ(parser.Parse(2, a, &pos).message(), "--v: bad '1'");
  const char* b[] = {"tool", "--w=1"};
  EXPECT_EQ(parser.Parse(2, b, &pos).message(), "--w: says it itself");
}

TEST(ParseNameValuesTest, ListsAndErrors) {
  Result<std::pair<std::string, std::vector<int64_t>>> r = ParseNameValues("--dim", "n=1,8,64", 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->first, "n");
  EXPECT_EQ(r->second, (std::vector<int64_t>{1, 8, 64}));
  EXPECT_EQ(ParseNameValues("--dim", "n", 1).status().message(), "--dim: expected NAME=VALUE[,VALUE...], got 'n'");
  EXPECT_EQ(ParseNameValues("--dim", "=3", 1).status().message(), "--dim: expected NAME=VALUE[,VALUE...], got '=3'");
  EXPECT_EQ(ParseNameValues("--dim", "n=", 1).status().message(), "--dim: expected NAME=VALUE[,VALUE...], got 'n='");
  EXPECT_EQ(ParseNameValues("--dim", "n=1,,2", 1).status().message(), "--dim n: '' is not a positive integer");
  EXPECT_EQ(ParseNameValues("--dim", "n=0", 1).status().message(), "--dim n: '0' is not a positive integer");
}

TEST(OneLineTest, JoinsLines) { EXPECT_EQ(OneLine("a\nb\n"), "a b "); }

TEST(ProcessStatsTest, BytesAndRss) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(5 * 1024 * 1024 + 1024 * 512), "5.5 MiB");
  EXPECT_EQ(FormatBytes(3ull << 30), "3.00 GiB");
  EXPECT_GT(PeakRssBytes(), 1024u * 1024u);  // a test binary holds more than a MiB
  // Busy work moves the thread's CPU clock forward.
  double before = ThreadCpuSeconds();
  volatile double sink = 0;
  for (int i = 0; i < 20000000 && ThreadCpuSeconds() - before < 0.01; ++i) sink = sink + i;
  EXPECT_GT(ThreadCpuSeconds(), before);
}

Tensor Make(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

TEST(CompareTest, MatchesWithinTolerance) {
  Result<CompareResult> r = CompareTensors(Make({3}, {1, 2, 3}), Make({3}, {1, 2.0001f, 3}), 1e-3, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->elements, 3);
  EXPECT_EQ(r->worst_index, 1);
  EXPECT_EQ(DescribeComparison(*r, 1e-3, 0).rfind("all 3 elements match (max |diff| ", 0), 0u);
}

TEST(CompareTest, ReportsTheWorstMismatch) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Result<CompareResult> r =
      CompareTensors(Make({2, 2}, {1, 5, nan, 4}), Make({2, 2}, {1.5f, 5, nan, 10}), 0.1, 0.01);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mismatches, 2);
  EXPECT_EQ(r->worst_index, 3);
  EXPECT_EQ(r->worst_position, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(DescribeComparison(*r, 0.1, 0.01),
            "2 of 4 elements differ (atol 0.1, rtol 0.01); the worst at [1, 1]: got 4, expected 10, |diff| 6");
  // NaN against a number is a mismatch, and the worst.
  Result<CompareResult> n = CompareTensors(Make({2}, {nan, 1}), Make({2}, {0, 3}), 0, 0);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->mismatches, 2);
  EXPECT_EQ(n->worst_index, 0);
  // rtol scales with the expected value.
  EXPECT_TRUE(CompareTensors(Make({1}, {101}), Make({1}, {100}), 0, 0.011)->ok());
  EXPECT_FALSE(CompareTensors(Make({1}, {101}), Make({1}, {100}), 0, 0.009)->ok());
}

TEST(CompareTest, Errors) {
  EXPECT_EQ(CompareTensors(Make({3}, {1, 2, 3}), Make({1, 3}, {1, 2, 3}), 0, 0).status().message(),
            "got float32[3], expected float32[1, 3]");
  Tensor i = Tensor::Empty(std::vector<int64_t>{3}, DType::Int32()).value();
  EXPECT_EQ(CompareTensors(Make({3}, {1, 2, 3}), i, 0, 0).status().message(), "got float32[3], expected int32[3]");
  Tensor v = Tensor::Empty(std::vector<int64_t>{2}, DType{kDLFloat, 32, 4}).value();
  EXPECT_EQ(CompareTensors(v, v, 0, 0).status().message(), "cannot compare float32x4[2] values");
}

}  // namespace
}  // namespace tools
}  // namespace kiln
