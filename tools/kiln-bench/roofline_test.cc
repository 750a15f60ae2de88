// kiln-bench --profile's roofline: the peak file (parse, cache, remeasure),
// the parsing of profile rows' argument shapes, and whole runs of the MLP of
// examples/mlp.relax compiled twice: as kiln-compile writes it (kernel costs:
// the GFLOP/s, GB/s and roof% columns) and with its costs removed, as a .vmfb
// from before them (the plain table, which says why).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "tools/kiln-bench/bench_tool.h"
#include "tools/kiln-bench/machine_peak.h"
#include "tools/kiln-bench/roofline_table.h"

namespace kiln {
namespace tools {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "kiln_roofline_" + std::to_string(getpid()) + "_" + name;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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

TEST(MachinePeak, JsonRoundTripsAndScalesWithThreads) {
  MachinePeak p;
  p.cpu = "Some_CPU";
  p.isa = "avx2+fma";
  p.gflops_per_core = 64;
  p.gbs_one_thread = 10;
  p.gbs_all_threads = 15;
  p.curve = {{1000, 40}, {4000, 20}, {16000, 11}};
  p.hardware_threads = 4;
  Result<MachinePeak> q = ParseMachinePeakJson(MachinePeakJson(p));
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->isa, "avx2+fma");
  EXPECT_EQ(q->gflops_per_core, 64);
  EXPECT_EQ(q->GflopsAt(2), 128);
  EXPECT_EQ(q->GbsAt(1), 10);
  EXPECT_EQ(q->GbsAt(2), 15);  // bandwidth stops at what all threads reach
  ASSERT_EQ(q->curve.size(), 3u);
  EXPECT_EQ(q->GbsAt(2, 500), 80);   // a working set in cache: per-core bandwidth
  EXPECT_EQ(q->GbsAt(2, 3999), 80);  // the largest measured set not above it
  EXPECT_EQ(q->GbsAt(1, 4000), 20);
  EXPECT_EQ(q->GbsAt(2, 16000), 15);  // past the curve: memory
  Result<MachinePeak> unsorted = ParseMachinePeakJson(std::regex_replace(
      MachinePeakJson(p), std::regex("1000:40.000"), "99999:40.000"));
  ASSERT_FALSE(unsorted.ok());
  EXPECT_EQ(unsorted.status().message(),
            "not a kiln-bench peak file (bandwidth_curve '99999:40.000 4000:20.000 16000:11.000')");
  Result<MachinePeak> bad = ParseMachinePeakJson("{\"cpu\": \"x\"}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "not a kiln-bench peak file (a field is missing or not positive)");
}

TEST(RooflineTable, ProfileArgsAreTensorsAndScalars) {
  std::optional<std::vector<KernelCostArg>> a = ParseProfileArgs("float32[1, 784], float32[784], 5, int64[] -> x");
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->size(), 4u);
  EXPECT_TRUE((*a)[0].is_tensor);
  EXPECT_EQ((*a)[0].dims, (std::vector<int64_t>{1, 784}));
  EXPECT_EQ((*a)[1].dims, (std::vector<int64_t>{784}));
  EXPECT_FALSE((*a)[2].is_tensor);
  EXPECT_EQ((*a)[2].value, 5);
  EXPECT_TRUE((*a)[3].is_tensor);
  EXPECT_TRUE((*a)[3].dims.empty());
  EXPECT_FALSE(ParseProfileArgs("shape(1, 2)").has_value());
}

// Two kernels of 1e6 operations (10 us at the test peak's 100 GFLOP/s): one
// whose mean is 1000 us because a few calls were preempted but whose fastest
// call takes 20 us (50 % of the roofline), one that never beats 150 us (6.7 %).
// Only the second is far below its roofline; the mark goes by the fastest call.
TEST(RooflineTable, TheMarkGoesByTheFastestCall) {
  MachinePeak peak;
  peak.isa = "avx2+fma";
  peak.gflops_per_core = 100;
  peak.gbs_one_thread = 10;
  peak.gbs_all_threads = 10;
  std::map<std::string, ProgramKernelCost> costs = {{"preempted", {"1000000", "4"}}, {"slow", {"1000000", "4"}}};
  std::vector<ProfileRow> rows(3);
  rows[0].category = kProfileInvoke;
  rows[0].name = "main";
  rows[0].count = 10;
  rows[0].total_ns = 20000000;
  rows[1].name = "preempted";
  rows[1].shapes = "float32[1]";
  rows[1].count = 10;
  rows[1].total_ns = 10000000;
  rows[1].min_ns = 20000;
  rows[2].name = "slow";
  rows[2].shapes = "float32[1]";
  rows[2].count = 10;
  rows[2].total_ns = 2000000;
  rows[2].min_ns = 150000;
  std::string t = FormatRooflineTable(rows, "", costs, peak, 1);
  std::regex row(R"(\n +[0-9.]+ +[0-9.]+% +10 +([0-9.]+) +([0-9.]+) +[0-9.]+ +[0-9.]+ +([0-9.]+) +(<<)? +kernel +(\S+))");
  std::map<std::string, std::vector<std::string>> got;
  for (std::sregex_iterator it(t.begin(), t.end(), row), end; it != end; ++it)
    got[(*it)[5]] = {(*it)[1], (*it)[2], (*it)[3], (*it)[4]};
  ASSERT_EQ(got.size(), 2u) << t;
  EXPECT_EQ(got["preempted"], (std::vector<std::string>{"1000.000", "20.000", "1.0", ""})) << t;
  EXPECT_EQ(got["slow"], (std::vector<std::string>{"200.000", "150.000", "5.0", "<<"})) << t;
  EXPECT_NE(t.find("<< marks 1 kernel under 10% of it even in their fastest call (min us) taking >= 5% of the time"),
            std::string::npos)
      << t;
}

class RooflineRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    peak_ = TempPath("peak.json");
    with_costs_ = TempPath("with_costs.vmfb");
    without_costs_ = TempPath("without_costs.vmfb");
    std::ofstream(peak_) << "{\"cpu\": \"test\", \"isa\": \"avx2+fma\", \"gflops_per_core\": 50.0, "
                            "\"gbs_one_thread\": 10.0, \"gbs_all_threads\": 12.0, "
                            "\"bandwidth_curve\": \"262144:30.0 1048576:20.0\", \"hardware_threads\": 2}\n";
    setenv("KILN_PEAK_CACHE", peak_.c_str(), 1);
    unsetenv("KILN_REMEASURE_PEAK");
    Result<ir::IRModule> mod = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
    ASSERT_TRUE(mod.ok()) << mod.status().message();
    Result<compiler::VmfbProgram> p = driver::CompileModule(*mod, driver::CompileOptions{});
    ASSERT_TRUE(p.ok()) << p.status().message();
    ASSERT_EQ(p->native_libraries.size(), 1u);
    ASSERT_EQ(p->native_libraries[0].kernel_costs.size(), p->native_libraries[0].kernel_names.size());
    ASSERT_TRUE(compiler::WriteVmfbFile(*p, with_costs_).ok());
    p->native_libraries[0].kernel_costs.clear();
    ASSERT_TRUE(compiler::WriteVmfbFile(*p, without_costs_).ok());
  }
  void TearDown() override {
    unsetenv("KILN_PEAK_CACHE");
    std::remove(peak_.c_str());
    std::remove(with_costs_.c_str());
    std::remove(without_costs_.c_str());
  }
  std::string peak_, with_costs_, without_costs_;
};

TEST_F(RooflineRunTest, KernelsGetTheirShareOfTheCachedPeak) {
  ToolRun r = Main({with_costs_, "--dim=n=8", "--runs=2", "--min-time=0", "--warmup=1", "--threads=2", "--profile",
                    "--profile_calls=3"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("GFLOP/s     GB/s  roof%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("roofline at 2 threads: 100.0 GFLOP/s (50.0 per core, avx2+fma FMA); 12.0 GB/s from memory, "
                       "from caches 60 at 256 KiB, 40 at 1024 KiB (by the bytes a kernel moves) (cached in " +
                       peak_ + ")"),
            std::string::npos)
      << r.out;
  // Every generated kernel's row has numbers in the three columns: the
  // matmul with bias and ReLU of the first layer, 2*8*784*128 operations.
  std::regex kernel_row(
      R"(\n +[0-9.]+ +[0-9.]+% +3 +([0-9.]+) +[0-9.]+ +([0-9.]+) +([0-9.]+) +([0-9.]+) +(<<)? +kernel +(\S+))");
  int kernels = 0;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), kernel_row), end; it != end; ++it) {
    ++kernels;
    double mean_us = std::stod((*it)[1]), gflops = std::stod((*it)[2]);
    EXPECT_GT(mean_us, 0);
    EXPECT_GT(gflops, 0) << (*it)[6];
  }
  EXPECT_GE(kernels, 2) << r.out;
  EXPECT_EQ(r.out.find("no kernel costs"), std::string::npos);
  EXPECT_EQ(r.err.find("measuring"), std::string::npos) << "the cached peak is used: " << r.err;
}

TEST_F(RooflineRunTest, AnOlderFileStillProfilesWithoutTheColumns) {
  ToolRun r = Main({without_costs_, "--dim=n=8", "--runs=2", "--min-time=0", "--warmup=1", "--threads=1",
                    "--profile", "--profile_calls=3"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("mean us  kind"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" kernel "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("GFLOP/s     GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(no kernel costs in this .vmfb: it was compiled before kiln-compile wrote them; recompile it "
                       "for the GFLOP/s, GB/s and roof% columns)"),
            std::string::npos)
      << r.out;
}

TEST_F(RooflineRunTest, RemeasuringRewritesTheCache) {
  ToolRun r = Main({with_costs_, "--dim=n=1", "--runs=1", "--min-time=0", "--warmup=0", "--threads=1", "--profile",
                    "--profile_calls=1", "--remeasure-peak"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("kiln-bench: measuring this machine's peak"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("(measured now)"), std::string::npos) << r.out;
  Result<MachinePeak> p = ParseMachinePeakJson(ReadText(peak_));
  ASSERT_TRUE(p.ok()) << p.status().message() << ": " << ReadText(peak_);
  EXPECT_NE(p->cpu, "test");
  EXPECT_GT(p->gflops_per_core, 0);
  EXPECT_GT(p->gbs_one_thread, 0);
  // A damaged cache is measured again, and said so.
  std::ofstream(peak_) << "{}";
  r = Main({with_costs_, "--dim=n=1", "--runs=1", "--min-time=0", "--warmup=0", "--threads=1", "--profile",
            "--profile_calls=1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find(peak_ + ": not a kiln-bench peak file (a field is missing or not positive); measuring the peak "
                               "again"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace tools
}  // namespace kiln
