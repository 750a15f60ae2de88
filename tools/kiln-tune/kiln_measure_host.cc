// kiln-measure-host: the program kiln-tune runs (fork + exec, one process per
// candidate) to measure a kernel on this machine. It reads the job file that
// kiln-measure reads (tools/kiln-tune/kiln_measure.c has the format) and
// answers the same way (PATH.out per argument after one run, "time_us X" per
// timed run, "done"), but runs the kernel the way production does: the
// library loaded by the runtime's NativeLibrary (memfd, CPU-feature check),
// called through CallKernel (runtime/kernel_call.h: the env the VM gives
// kernels, with its workspace cache) and parallel_for on the runtime's
// ThreadPool.
//
// Why a program of its own rather than a forked copy of kiln-tune: the child
// of a fork inherits a copy of every lock of a process whose other threads
// (LLVM's, a sanitizer's, a thread pool's) may hold them, so anything it does
// beyond exec can hang. An exec'd program starts clean.
//
// Exit status: 0 done; 2 the kernel returned an error; 3 the job cannot be
// read or set up. Anything else (a signal, a sanitizer's exit 1) is the
// candidate crashing, and the runner records it so.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <iterator>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/tune/cache_evict.h"
#include "compiler/tune/pin_threads.h"
#include "runtime/kernel_call.h"
#include "runtime/native_library.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace {

constexpr int kKernelError = 2;
constexpr int kBadJob = 3;

int Fail(const std::string& message) {
  std::fprintf(stderr, "kiln-measure-host: %s\n", message.c_str());
  return kBadJob;
}

struct Job {
  std::string library, kernel;
  int threads = 1, warmup = 0, repeats = 1;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> paths;
  int64_t cold_cache_bytes = -1;  // < 0: warm; 0: tune::DefaultColdCacheBytes()
};

bool Key(std::istream& in, const char* key, std::string* value) {
  std::string k;
  return static_cast<bool>(in >> k >> *value) && k == key;
}

bool IntKey(std::istream& in, const char* key, int lo, int hi, int* value) {
  std::string v;
  if (!Key(in, key, &v)) return false;
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || n < lo || n > hi) return false;
  *value = static_cast<int>(n);
  return true;
}

// Empty when the job is well formed; else what is wrong with it.
std::string ReadJob(const std::string& path, Job* job) {
  std::ifstream in(path);
  if (!in) return "cannot open the job file " + path;
  std::string version;
  if (!Key(in, "kiln-measure-job", &version) || version != "1") return "not a version-1 job file: " + path;
  if (!Key(in, "library", &job->library)) return "job: missing 'library'";
  if (!Key(in, "kernel", &job->kernel)) return "job: missing 'kernel'";
  if (!IntKey(in, "threads", 1, 256, &job->threads)) return "job: bad 'threads'";
  if (!IntKey(in, "warmup", 0, 1 << 20, &job->warmup)) return "job: bad 'warmup'";
  if (!IntKey(in, "repeats", 1, 1 << 20, &job->repeats)) return "job: bad 'repeats'";
  int nargs = 0;
  if (!IntKey(in, "args", 0, 1024, &nargs)) return "job: bad 'args'";
  for (int a = 0; a < nargs; ++a) {
    int ndim = -1;
    if (!(in >> ndim) || ndim < 0 || ndim > 16) return "job: bad rank of argument " + std::to_string(a);
    std::vector<int64_t> shape(static_cast<size_t>(ndim));
    for (int64_t& e : shape)
      if (!(in >> e) || e < 0) return "job: bad extent of argument " + std::to_string(a);
    std::string p;
    if (!(in >> p)) return "job: missing data file of argument " + std::to_string(a);
    job->shapes.push_back(std::move(shape));
    job->paths.push_back(std::move(p));
  }
  // Optional: kiln-tune --cold-cache.
  std::string key, v;
  if (in >> key) {
    char* end = nullptr;
    if (key != "cold_cache_bytes" || !(in >> v)) return "job: bad 'cold_cache_bytes'";
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || n < 0) return "job: bad 'cold_cache_bytes'";
    job->cold_cache_bytes = n;
  }
  return "";
}

int Run(const std::string& job_path) {
  Job job;
  std::string bad = ReadJob(job_path, &job);
  if (!bad.empty()) return Fail(bad);

  std::ifstream lib_file(job.library, std::ios::binary);
  if (!lib_file) return Fail("cannot open " + job.library);
  std::vector<char> so((std::istreambuf_iterator<char>(lib_file)), std::istreambuf_iterator<char>());
  Result<std::unique_ptr<NativeLibrary>> lib = NativeLibrary::LoadFromMemory(so.data(), so.size(), job.kernel);
  if (!lib.ok()) return Fail(lib.status().ToString());
  Result<const kiln_kernel_entry*> entry = (*lib)->Find(job.kernel);
  if (!entry.ok()) return Fail(entry.status().ToString());

  std::vector<Tensor> tensors;
  for (size_t a = 0; a < job.shapes.size(); ++a) {
    Result<Tensor> t = Tensor::Empty(job.shapes[a], DType::Float32());
    if (!t.ok()) return Fail(t.status().ToString());
    std::ifstream in(job.paths[a], std::ios::binary);
    in.read(static_cast<char*>(t->raw_data()), static_cast<std::streamsize>(t->NumBytes()));
    if (!in || in.gcount() != static_cast<std::streamsize>(t->NumBytes())) return Fail("short data file " + job.paths[a]);
    tensors.push_back(*t);
  }
  ThreadPool pool(job.threads);
  // Each kernel thread on a core of its own from the first call, as a
  // long-lived pool ends up (pin_threads.h); unpinned when that cannot be.
  std::string unpinned;
  tune::PinPoolThreads(&pool, &unpinned);
  std::vector<kiln_kernel_arg> args(tensors.size());
  for (size_t a = 0; a < tensors.size(); ++a) args[a].tensor = reinterpret_cast<kiln_dltensor*>(tensors[a].dl());
  // Through CallKernel, as the VM and the graph executor call kernels: its
  // env keeps the workspaces (packing buffers) a call frees for the next
  // call. With a fresh aligned_alloc per call (MakeKernelEnv's env), a 3 x 3
  // conv of 24 -> 40 channels at 14^2, packed as three shifted planes
  // (77 KiB), measured 45 us here against 20 us in kiln-bench (19.2 us here
  // now), and kiln-tune kept a record 8 % slower in the module than the
  // default. (Likely glibc returning the freed block at the top of its heap
  // to the system, and the next call faulting its pages in again.)
  auto call = [&] {
    return CallKernel((*entry)->fn, job.kernel, args.data(), static_cast<int32_t>(args.size()), &pool);
  };

  if (Status st = call(); !st.ok()) {
    std::fprintf(stderr, "kiln-measure-host: the kernel %s failed: %s\n", job.kernel.c_str(), st.ToString().c_str());
    return kKernelError;
  }
  for (size_t a = 0; a < tensors.size(); ++a) {
    std::ofstream out(job.paths[a] + ".out", std::ios::binary);
    out.write(static_cast<const char*>(tensors[a].raw_data()), static_cast<std::streamsize>(tensors[a].NumBytes()));
    if (!out) return Fail("cannot write " + job.paths[a] + ".out");
  }
  const auto warm_until = std::chrono::steady_clock::now() + tune::kMinWarmupTime;
  for (int k = 0; k < job.warmup || std::chrono::steady_clock::now() < warm_until; ++k)
    if (!call().ok()) return kKernelError;
  // Cold cache (cache_evict.h): the flush before each timed call, untimed.
  std::unique_ptr<tune::CacheEvictor> evictor;
  if (job.cold_cache_bytes >= 0) evictor = std::make_unique<tune::CacheEvictor>(job.cold_cache_bytes);
  for (int k = 0; k < job.repeats; ++k) {
    if (evictor) evictor->Evict(&pool);  // on every kernel thread (cache_evict.h)
    auto t0 = std::chrono::steady_clock::now();
    if (!call().ok()) return kKernelError;
    auto t1 = std::chrono::steady_clock::now();
    std::printf("time_us %.3f\n", std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::printf("done\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  if (argc != 2) return kiln::Fail("usage: kiln-measure-host JOB");
  return kiln::Run(argv[1]);
}
