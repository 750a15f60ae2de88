// Loading a .vmfb with ~100 MB of weights (issue 5 §1: well under 5 ms, and no
// weight copied). The file is written here through the .vmfb writer: a
// one-function program and 25 float32 constants of 4 MiB each.
//
//   load_file:    vm::Module::LoadFile (map + verify + link) and release
//   load_buffer:  vm::Module::LoadBuffer from the caller's bytes, and release
//   peek:         PeekVmfbFileInfo (map + read the header)
//   copy:         the reference measured in the same run: one memcpy of the
//                 weights, the least a loader that copies them would pay
//
// Runs alternate in pairs (--pairs=N, default 5); the table prints the median
// time of each and the median ratio load / copy (far below 1 means the
// weights are not copied). Before timing, it checks that every constant of a
// loaded module points into the file's bytes.
//
// Not run by ctest:
//   build/benchmarks/runtime/kiln_load_benchmark --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compiler/writer/vmfb_writer.h"
#include "runtime/mapped_file.h"
#include "runtime/program.h"
#include "runtime/vmfb_loader.h"
#include "vm/assembler.h"
#include "vm/module.h"

namespace kiln {
namespace {

constexpr int kConstants = 25;
constexpr int64_t kFloatsPerConstant = int64_t{1} << 20;  // 4 MiB
constexpr size_t kWeightBytes = size_t{kConstants} * kFloatsPerConstant * 4;

std::string g_path;
std::vector<uint8_t> g_bytes;  // the same file in memory, for LoadBuffer

compiler::VmfbProgram BigProgram() {
  compiler::VmfbProgram p;
  p.target.triple = "x86_64-unknown-linux-gnu";
  compiler::FunctionInfo f;
  f.name = "main";
  compiler::ValueInfo x;
  x.name = "x";
  f.params = {x};
  f.results = {x};
  f.register_count = 1;
  vm::Assembler a;
  a.Ret(0);
  f.code = a.Finish();
  p.functions.push_back(f);
  for (int i = 0; i < kConstants; ++i) {
    compiler::ConstantValue c;
    c.kind = compiler::ConstantKind::kTensor;
    c.name = "w" + std::to_string(i);
    c.tensor = Tensor::Empty({kFloatsPerConstant}, DType::Float32()).value();
    float* d = c.tensor.data<float>();
    for (int64_t j = 0; j < kFloatsPerConstant; ++j) d[j] = static_cast<float>((i * 31 + j) % 97);
    p.constants.push_back(std::move(c));
  }
  return p;
}

// Every tensor constant inside [base, base + size)?
bool ConstantsInside(const vm::Module& m, const void* base, size_t size) {
  auto lo = static_cast<const uint8_t*>(base);
  for (const ProgramConstant& c : m.linked_program()->program.constants) {
    if (c.kind != ProgramConstantKind::kTensor) continue;
    auto p = static_cast<const uint8_t*>(c.value.tensor().raw_data());
    if (p < lo || p + c.value.tensor().NumElements() * 4 > lo + size) return false;
  }
  return true;
}

void Fail(const std::string& what) {
  std::fprintf(stderr, "load_benchmark: %s\n", what.c_str());
  std::exit(1);
}

void BM_LoadFile(benchmark::State& state) {
  for (auto _ : state) {
    auto m = vm::Module::LoadFile(g_path);
    if (!m.ok()) {
      state.SkipWithError(m.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(m->get());
  }
}

void BM_LoadBuffer(benchmark::State& state) {
  for (auto _ : state) {
    auto m = vm::Module::LoadBuffer(g_bytes.data(), g_bytes.size());
    if (!m.ok()) {
      state.SkipWithError(m.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(m->get());
  }
}

void BM_Peek(benchmark::State& state) {
  for (auto _ : state) {
    auto info = PeekVmfbFileInfo(g_path);
    if (!info.ok()) {
      state.SkipWithError(info.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(info->format_major);
  }
}

void BM_CopyWeights(benchmark::State& state) {
  std::vector<uint8_t> dst(kWeightBytes);
  std::memset(dst.data(), 1, dst.size());  // fault the pages in before timing
  for (auto _ : state) {
    std::memcpy(dst.data(), g_bytes.data() + (g_bytes.size() - kWeightBytes), kWeightBytes);
    benchmark::ClobberMemory();
  }
}

// Collects each run's real time per iteration (microseconds) by name.
class TimeReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (!r.error_occurred && r.run_type == Run::RT_Iteration) us_[r.run_name.str()] = r.GetAdjustedRealTime();
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double Get(const std::string& name) const {
    auto it = us_.find(name + "/real_time");
    if (it == us_.end()) it = us_.find(name);
    return it == us_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> us_;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string RunName(const char* what, int pair) { return std::string(what) + "/pair:" + std::to_string(pair); }

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  using namespace kiln;  // NOLINT
  int pairs = 5;
  g_path = "/tmp/kiln_load_benchmark.vmfb";
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--pairs=", 8) == 0) {
      pairs = std::max(1, std::atoi(argv[i] + 8));
    } else if (std::strncmp(argv[i], "--path=", 7) == 0) {
      g_path = argv[i] + 7;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;

  Status written = compiler::WriteVmfbFile(BigProgram(), g_path);
  if (!written.ok()) Fail(written.ToString());
  Result<std::string> file = ReadFileToString(g_path);
  if (!file.ok()) Fail(file.status().ToString());
  g_bytes.assign(file->begin(), file->end());
  std::printf("file: %s, %zu bytes (%d constants, %zu weight bytes)\n", g_path.c_str(), g_bytes.size(), kConstants,
              kWeightBytes);
  {
    auto m = vm::Module::LoadBuffer(g_bytes.data(), g_bytes.size());
    if (!m.ok()) Fail(m.status().ToString());
    if (!ConstantsInside(**m, g_bytes.data(), g_bytes.size())) Fail("LoadBuffer copied a constant");
  }

  const char* names[] = {"load_file", "load_buffer", "peek", "copy"};
  void (*fns[])(benchmark::State&) = {BM_LoadFile, BM_LoadBuffer, BM_Peek, BM_CopyWeights};
  for (int p = 0; p < pairs; ++p) {
    for (int k = 0; k < 4; ++k) {
      benchmark::RegisterBenchmark(RunName(names[k], p).c_str(), fns[k])->Unit(benchmark::kMicrosecond)->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  TimeReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  std::printf("\n%-12s %12s %12s %14s %10s\n", "case", "median us", "copy us", "ratio vs copy", "< 5 ms");
  for (int k = 0; k < 3; ++k) {
    std::vector<double> t, c, ratio;
    for (int p = 0; p < pairs; ++p) {
      double tp = reporter.Get(RunName(names[k], p));
      double cp = reporter.Get(RunName("copy", p));
      if (tp > 0) t.push_back(tp);
      if (cp > 0) c.push_back(cp);
      if (tp > 0 && cp > 0) ratio.push_back(tp / cp);
    }
    if (t.empty()) continue;
    std::printf("%-12s %12.1f %12.1f %14.5f %10s\n", names[k], Median(t), Median(c), Median(ratio),
                Median(t) < 5000 ? "yes" : "NO");
  }
  benchmark::Shutdown();
  std::remove(g_path.c_str());
  return 0;
}
