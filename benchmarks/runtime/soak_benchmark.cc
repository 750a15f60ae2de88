// Soak (issue 5 §3): 100,000 calls in a loop must leave resident memory flat.
//
// Cases, each on a fresh context of one module, one thread:
//   mlp-vm:     the batch-1 784-128-10 MLP (tests/data/mlc_e2e.relax) on the VM;
//   mlp-graph:  the same on the static graph executor;
//   mlp-dyn:    the symbolic-batch MLP (tests/data/mlc_e2e_dynamic.relax) on
//               the VM, batch cycling through 1, 3, 8, 2, with a PoolAllocator
//               (no cap) under the context.
// Every call gets a result and releases it before the next, as a server does.
// Resident memory (/proc/self/statm, pages * page size) is printed at
// checkpoints; the reference is the value after the first 1,000 calls (warm-up),
// and the ratio final / reference is printed with the growth in KiB: flat means
// a ratio of 1.00 (growth within a page or two of allocator noise).
//
// Not run by ctest. From the repository root:
//   build/benchmarks/runtime/kiln_soak_benchmark [--calls=100000]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/allocator.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace {

// Resident set size in bytes, from /proc/self/statm (second field, pages).
long ResidentBytes() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

std::shared_ptr<const vm::Module> CompileFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s (run from the repository root)\n", path.c_str());
    std::exit(1);
  }
  std::stringstream text;
  text << in.rdbuf();
  auto mod = text::ParseModule(text.str(), path);
  if (!mod.ok()) Die(path, mod.status());
  auto program = driver::CompileModule(*mod, driver::CompileOptions());
  if (!program.ok()) Die(path, program.status());
  auto bytes = compiler::SerializeVmfb(*program);
  if (!bytes.ok()) Die(path, bytes.status());
  // The module owns a copy of the bytes.
  size_t n = bytes->size();
  void* copy = std::aligned_alloc(64, (n + 63) / 64 * 64);
  std::memcpy(copy, bytes->data(), n);
  auto m = vm::Module::LoadOwnedBuffer(copy, n, [](const void* p, void*) { std::free(const_cast<void*>(p)); },
                                       nullptr);
  if (!m.ok()) Die(path, m.status());
  return std::move(m).value();
}

Tensor Filled(const std::vector<int64_t>& shape, uint64_t seed) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    t.data<float>()[i] = static_cast<float>((s >> 40) & 0xFFFF) / 65536.0f - 0.5f;
  }
  return t;
}

struct Case {
  const char* name;
  const char* file;
  vm::Executor executor;
  std::vector<int64_t> batches;  // cycled through
  bool pool;
};

// Runs `calls` calls and prints RSS at checkpoints; returns final / reference.
double Soak(const Case& c, long calls) {
  std::shared_ptr<const vm::Module> module = CompileFile(c.file);
  std::unique_ptr<PoolAllocator> pool;
  if (c.pool) pool = std::make_unique<PoolAllocator>(0);
  vm::ContextOptions options;
  options.num_threads = 1;
  options.executor = c.executor;
  options.allocator = pool.get();
  auto ctx = module->CreateContext(options);
  if (!ctx.ok()) Die(c.name, ctx.status());
  // One argument list per batch size: weights shared, x per batch.
  std::vector<std::vector<Any>> args;
  for (int64_t b : c.batches) {
    args.push_back({Any(Filled({b, 784}, 1)), Any(Filled({128, 784}, 2)), Any(Filled({128}, 3)),
                    Any(Filled({10, 128}, 4)), Any(Filled({10}, 5))});
  }
  const std::string name = "main";
  long reference = 0;
  std::printf("%-10s %9s %12s\n", c.name, "calls", "RSS KiB");
  auto start = std::chrono::steady_clock::now();
  for (long i = 1; i <= calls; ++i) {
    Any out;
    Status s = (*ctx)->Invoke(name, args[i % args.size()], &out);
    if (!s.ok()) Die(c.name, s);
    out = Any();
    if (i == 1000) reference = ResidentBytes();
    if (i == 1 || i == 1000 || i % (calls / 10) == 0) std::printf("%-10s %9ld %12ld\n", c.name, i, ResidentBytes() / 1024);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  long final_rss = ResidentBytes();
  double ratio = static_cast<double>(final_rss) / static_cast<double>(reference);
  std::printf("%-10s final/after-1000 = %.4f (%+ld KiB), %.2f us per call, peak bytes of the last call %llu\n\n",
              c.name, ratio, (final_rss - reference) / 1024, seconds * 1e6 / calls,
              static_cast<unsigned long long>((*ctx)->LastCallPeakBytes()));
  return ratio;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  long calls = 100000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--calls=", 8) == 0) calls = std::atol(argv[i] + 8);
  }
  if (calls < 1000) calls = 1000;
  using kiln::vm::Executor;
  const kiln::Case cases[] = {
      {"mlp-vm", "tests/data/mlc_e2e.relax", Executor::kVm, {1}, false},
      {"mlp-graph", "tests/data/mlc_e2e.relax", Executor::kGraph, {1}, false},
      {"mlp-dyn", "tests/data/mlc_e2e_dynamic.relax", Executor::kVm, {1, 3, 8, 2}, true},
  };
  std::printf("soak: %ld calls per case, resident memory from /proc/self/statm\n\n", calls);
  double worst = 0;
  for (const kiln::Case& c : cases) {
    double r = kiln::Soak(c, calls);
    if (r > worst) worst = r;
  }
  std::printf("worst final/after-1000 ratio: %.4f (%s)\n", worst, worst < 1.01 ? "flat" : "GROWING");
  return 0;
}
