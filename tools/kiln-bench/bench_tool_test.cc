// kiln-bench: every flag and its errors (no module needed), the statistics,
// and real runs of testdata/double.relax (compiled at build time; a symbolic
// dimension n) with --dim, --concurrency, two files, --format, --profile and
// --trace. The runs use --min-time=0 and a few calls: well under a second.
#include "tools/kiln-bench/bench_tool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>


namespace kiln {
namespace tools {
namespace {

Result<BenchOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "kiln-bench");
  return ParseBenchArgs(static_cast<int>(args.size()), args.data());
}

std::string ParseError(std::vector<const char*> args) {
  Result<BenchOptions> r = Parse(std::move(args));
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

struct ToolRun {
  int rc;
  std::string out, err;
};

ToolRun Main(std::vector<std::string> args) {
  args.insert(args.begin(), "kiln-bench");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int rc = BenchToolMain(static_cast<int>(argv.size()), argv.data(), out, err);
  return {rc, out.str(), err.str()};
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(BenchArgsTest, ParsesEveryFlagInBothSpellings) {
  Result<BenchOptions> r = Parse({"a.vmfb", "b.vmfb", "--function", "f", "--dim=n=1,8,64", "--dim", "m=2",
                                  "--seed=9", "--warmup", "0", "--runs=5", "--min-time", "0.25", "--threads=2",
                                  "--concurrency", "4", "--executor=vm", "--profile", "--profile_calls=7",
                                  "--format", "json", "--replay=off"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files, (std::vector<std::string>{"a.vmfb", "b.vmfb"}));
  EXPECT_EQ(r->function, "f");
  ASSERT_EQ(r->dims.size(), 2u);
  EXPECT_EQ(r->dims[0].first, "n");
  EXPECT_EQ(r->dims[0].second, (std::vector<int64_t>{1, 8, 64}));
  EXPECT_EQ(r->dims[1].first, "m");
  EXPECT_EQ(r->seed, 9u);
  EXPECT_EQ(r->warmup, 0);
  EXPECT_EQ(r->runs, 5);
  EXPECT_EQ(r->min_time, 0.25);
  EXPECT_EQ(r->threads, 2);
  EXPECT_EQ(r->concurrency, 4);
  EXPECT_EQ(r->executor, "vm");
  EXPECT_TRUE(r->profile);
  EXPECT_EQ(r->profile_calls, 7);
  EXPECT_EQ(r->format, "json");
  EXPECT_FALSE(r->replay);
  Result<BenchOptions> d = Parse({"a.vmfb", "--input", "f32=1", "--trace", "t.json"});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->inputs, (std::vector<std::string>{"f32=1"}));
  EXPECT_EQ(d->trace_path, "t.json");
  EXPECT_EQ(d->warmup, 2);
  EXPECT_EQ(d->runs, 10);
  EXPECT_EQ(d->min_time, 1.0);
  EXPECT_EQ(d->concurrency, 1);
  EXPECT_EQ(d->format, "table");
  EXPECT_TRUE(d->replay);
}

TEST(BenchArgsTest, Errors) {
  EXPECT_EQ(ParseError({}), "no .vmfb file given (see --help)");
  EXPECT_EQ(ParseError({"m.vmfb", "--bogus"}), "unknown flag '--bogus' (see --help)");
  EXPECT_EQ(ParseError({"m.vmfb", "--trace="}), "--trace: needs a file name");
  EXPECT_EQ(ParseError({"m.vmfb", "--profile_calls=0"}), "--profile_calls: '0' is not a positive integer");
  EXPECT_EQ(ParseError({"m.vmfb", "--profile=yes"}), "--profile takes no value, got '--profile=yes'");
  EXPECT_EQ(ParseError({"m.vmfb", "--runs=0"}), "--runs: '0' is not a positive integer");
  EXPECT_EQ(ParseError({"m.vmfb", "--warmup=-1"}), "--warmup: '-1' is not an integer in [0, 1000000000]");
  EXPECT_EQ(ParseError({"m.vmfb", "--min-time=-1"}), "--min-time: '-1' is not a number >= 0");
  EXPECT_EQ(ParseError({"m.vmfb", "--min-time=0.5s"}), "--min-time: '0.5s' is not a number >= 0");
  EXPECT_EQ(ParseError({"m.vmfb", "--concurrency=0"}), "--concurrency: '0' is not an integer in [1, 1024]");
  EXPECT_EQ(ParseError({"m.vmfb", "--threads=x"}), "--threads: 'x' is not a positive integer");
  EXPECT_EQ(ParseError({"m.vmfb", "--seed=-3"}), "--seed: '-3' is not an integer in [0, 9223372036854775807]");
  EXPECT_EQ(ParseError({"m.vmfb", "--format=xml"}), "--format: 'xml' is not table, json or csv");
  EXPECT_EQ(ParseError({"m.vmfb", "--executor=gpu"}), "--executor: 'gpu' is not auto, vm or graph");
  EXPECT_EQ(ParseError({"m.vmfb", "--function="}), "--function: empty function name");
  EXPECT_EQ(ParseError({"m.vmfb", "--replay=yes"}), "--replay: expected on or off, got 'yes'");
  EXPECT_EQ(ParseError({"m.vmfb", "--dim=n"}), "--dim: expected NAME=VALUE[,VALUE...], got 'n'");
  EXPECT_EQ(ParseError({"m.vmfb", "--dim=n=-1"}), "--dim n: '-1' is not an integer in [0, 4611686018427387903]");
  EXPECT_EQ(ParseError({"m.vmfb", "--dim=n=1", "--dim=n=2"}), "--dim: 'n' given twice");
  EXPECT_EQ(ParseError({"m.vmfb", "--dim=n=1", "--input=f32=1"}),
            "--dim shapes random inputs; it cannot be used with --input");
  EXPECT_EQ(ParseError({"m.vmfb", "--dim=n=1,2", "--trace=t.json"}),
            "--trace writes one case, but there are 2 (files x --dim values)");
  EXPECT_EQ(ParseError({"a.vmfb", "b.vmfb", "--trace=t.json"}),
            "--trace writes one case, but there are 2 (files x --dim values)");
}

TEST(BenchMainTest, HelpAndUsageErrors) {
  ToolRun r = Main({"--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, kBenchToolUsage);
  for (const char* flag : {"--concurrency", "--dim NAME=V1,V2", "--runs=N", "--min-time=SECONDS", "--warmup=N",
                           "--format=table|json|csv", "--profile", "--trace=FILE", "--threads=N"}) {
    EXPECT_TRUE(Contains(r.out, flag)) << flag;
  }
  r = Main({"m.vmfb", "--runs=0"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-bench: error: --runs: '0' is not a positive integer\n");
  EXPECT_EQ(r.out, "");
}

TEST(BenchMainTest, MissingFileAndBadInputFailWithStatusOne) {
  ToolRun r = Main({"/nonexistent/m.vmfb"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind("kiln-bench: error: loading '/nonexistent/m.vmfb': ", 0), 0u) << r.err;
  r = Main({"/nonexistent/m.vmfb", "--input=2xf32=1"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "kiln-bench: error: --input 1: inline tensor '2xf32=1': shape [2] needs 2 values, got 1\n");
}

TEST(SummarizeTest, NearestRankPercentiles) {
  std::vector<double> ms;
  for (int i = 100; i >= 1; --i) ms.push_back(i);
  LatencyStats s = Summarize(ms, 2.0);
  EXPECT_EQ(s.calls, 100);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p90, 90);
  EXPECT_EQ(s.p99, 99);
  EXPECT_EQ(s.max, 100);
  EXPECT_EQ(s.mean, 50.5);
  EXPECT_EQ(s.throughput, 50);
  LatencyStats one = Summarize({3.0}, 0);
  EXPECT_EQ(one.p50, 3);
  EXPECT_EQ(one.p99, 3);
  EXPECT_EQ(one.throughput, 0);
  EXPECT_EQ(Summarize({}, 1).calls, 0);
  EXPECT_EQ(DimsText({}), "-");
  EXPECT_EQ(DimsText({{"n", 8}, {"b", 1}}), "b=1,n=8");
}

#ifdef KILN_BENCH_TEST_MODEL

class BenchRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { vmfb_ = new std::string(KILN_BENCH_TEST_MODEL); }
  static void TearDownTestSuite() { delete vmfb_; }
  static std::string* vmfb_;
};
std::string* BenchRunTest::vmfb_ = nullptr;

const std::vector<std::string> kQuick = {"--runs=3", "--min-time=0", "--warmup=1", "--threads=1"};

std::vector<std::string> Args(std::vector<std::string> args) {
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  return args;
}

TEST_F(BenchRunTest, DimValuesAreCasesAndJsonHasEveryStatistic) {
  ToolRun r = Main(Args({*vmfb_, "--dim", "n=1,8,64", "--format=json"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* part : {"\"dims\": {\"n\": 1}", "\"dims\": {\"n\": 8}", "\"dims\": {\"n\": 64}", "\"calls\": 3,",
                           "\"p50\": ", "\"p90\": ", "\"p99\": ", "\"max\": ", "\"min\": ", "\"mean\": ",
                           "\"throughput_per_s\": ", "\"cpu_ms_per_call\": ", "\"peak_tensor_bytes\": ", "\"peak_rss_bytes\": "}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << " in " << r.out;
  }
  EXPECT_FALSE(Contains(r.out, "p50_ratio")) << r.out;
  // One progress line per case.
  EXPECT_TRUE(Contains(r.err, "kiln-bench: " + *vmfb_ + " n=64: 3 calls, p50 ")) << r.err;
}

TEST_F(BenchRunTest, PeakTensorMemoryFollowsTheDim) {
  BenchOptions o;
  o.files = {*vmfb_};
  o.dims = {{"n", {1, 1000}}};
  o.runs = 2;
  o.min_time = 0;
  o.threads = 1;
  std::ostringstream log;
  Result<std::vector<BenchCase>> cases = RunBench(o, log);
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  ASSERT_EQ(cases->size(), 2u);
  // The result alone is n x 4 floats.
  EXPECT_GE((*cases)[1].peak_tensor_bytes, 1000u * 4 * 4);
  EXPECT_LT((*cases)[0].peak_tensor_bytes, (*cases)[1].peak_tensor_bytes);
  EXPECT_GT((*cases)[1].peak_rss_bytes, 0u);
  EXPECT_EQ((*cases)[1].stats.calls, 2);
}

TEST_F(BenchRunTest, ConcurrentCallersEachMakeTheirRuns) {
  BenchOptions o;
  o.files = {*vmfb_};
  o.inputs = {"16x4xf32=random:1"};
  o.runs = 5;
  o.min_time = 0;
  o.threads = 1;
  o.concurrency = 3;
  std::ostringstream log;
  Result<std::vector<BenchCase>> cases = RunBench(o, log);
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  ASSERT_EQ(cases->size(), 1u);
  EXPECT_EQ((*cases)[0].stats.calls, 15);
  EXPECT_GT((*cases)[0].stats.throughput, 0);
  EXPECT_LE((*cases)[0].stats.min, (*cases)[0].stats.p50);
  EXPECT_LE((*cases)[0].stats.p99, (*cases)[0].stats.max);
  EXPECT_GT((*cases)[0].stats.cpu_ms_per_call, 0);
}

TEST_F(BenchRunTest, TwoFilesSideBySideWithTheirRatio) {
  ToolRun r = Main(Args({*vmfb_, *vmfb_, "--dim=n=4", "--format=csv"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header, first, second, extra;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_FALSE(std::getline(lines, extra));
  EXPECT_EQ(header,
            "file,dims,executor,calls,min_ms,p50_ms,p90_ms,p99_ms,max_ms,mean_ms,cpu_ms_per_call,calls_per_s,"
            "peak_tensor_bytes,peak_rss_bytes,p50_ratio");
  EXPECT_EQ(first.rfind(*vmfb_ + ",n=4,vm,3,", 0), 0u) << first;
  EXPECT_EQ(first.back(), ',') << "the reference has no ratio: " << first;
  EXPECT_NE(second.back(), ',') << "the second file has one: " << second;

  r = Main(Args({*vmfb_, *vmfb_, "--input=2x4xf32=random:3"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "p50 ratio")) << r.out;
  EXPECT_TRUE(Contains(r.out, "1 (ref)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "function main, 1 threads, concurrency 1, warm-up 1, at least 3 calls")) << r.out;
}

TEST_F(BenchRunTest, ProfileAndTrace) {
  std::string trace = ::testing::TempDir() + "kiln_bench_trace_" + std::to_string(getpid()) + ".json";
  // The roofline's peak (measured on the first --profile) goes to a scratch
  // file, not the user's cache.
  std::string peak = ::testing::TempDir() + "kiln_bench_peak_" + std::to_string(getpid()) + ".json";
  setenv("KILN_PEAK_CACHE", peak.c_str(), 1);
  ToolRun r = Main(Args({*vmfb_, "--dim=n=2", "--profile", "--profile_calls=4", "--trace", trace}));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "\nprofile of " + *vmfb_ + " n=2 (4 calls):\n")) << r.out;
  EXPECT_TRUE(Contains(r.err, "kiln-bench: wrote a Chrome trace of 4 profiled calls to " + trace)) << r.err;
  std::ifstream f(trace);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_TRUE(Contains(text.str(), "traceEvents")) << text.str().substr(0, 200);
  std::remove(trace.c_str());
  r = Main(Args({*vmfb_, "--dim=n=2", "--trace", "/nonexistent/dir/t.json"}));
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "kiln-bench: error: " + *vmfb_ + " (n=2): --trace: ")) << r.err;
  std::remove(peak.c_str());
  unsetenv("KILN_PEAK_CACHE");
}

TEST_F(BenchRunTest, RunErrorsNameTheFileAndCase) {
  ToolRun r = Main(Args({*vmfb_}));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "kiln-bench: error: " + *vmfb_ +
                       ": dimension 'n' of parameter 0 'x' of 'main' is symbolic: give its value with --dim n=N\n");
  r = Main(Args({*vmfb_, "--function=nope", "--dim=n=1"}));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind("kiln-bench: error: " + *vmfb_ + " (n=1): no function 'nope' (it has: main", 0), 0u)
      << r.err;
  r = Main(Args({*vmfb_, "--input=2x5xf32=random:1"}));
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "kiln-bench: error: " + *vmfb_ + ": warm-up call 1: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "dimension 1: expected 4, got 5")) << r.err;
  r = Main(Args({*vmfb_, "--input=2x4xf32=random:1", "--executor=graph"}));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "kiln-bench: error: " + *vmfb_ + ": function 'main' has no static graph (try --executor=vm)\n");
}

#endif  // KILN_BENCH_TEST_MODEL

}  // namespace
}  // namespace tools
}  // namespace kiln
