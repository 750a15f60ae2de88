#include "compiler/tune/runner.h"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "compiler/arith/simplify.h"
#include "compiler/tune/cache_evict.h"
#include "compiler/tune/pin_threads.h"
#include "runtime/kernel_call.h"
#include "runtime/native_library.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace tune {

using namespace ir;  // NOLINT

int64_t ColdCacheFlushBytes(const RunnerOptions& options) {
  if (!options.cold_cache) return 0;
  if (options.cold_cache_bytes > 0) return options.cold_cache_bytes;
  return options.command.empty() ? DefaultColdCacheBytes() : int64_t{64} << 20;  // kiln_measure.c's default
}

const char* MeasureStateName(MeasureState s) {
  switch (s) {
    case MeasureState::kOk: return "ok";
    case MeasureState::kBuildFailed: return "build failed";
    case MeasureState::kCrashed: return "crashed";
    case MeasureState::kTimedOut: return "timed out";
    case MeasureState::kRunFailed: return "run failed";
    case MeasureState::kWrong: return "wrong result";
  }
  return "?";
}

namespace {

// The child's report, written to a pipe: a tag byte then the payload.
constexpr uint8_t kTagError = 1;    // u32 length, message
constexpr uint8_t kTagOutputs = 2;  // u32 count, then per parameter u64 length, bytes
constexpr uint8_t kTagTimes = 3;    // u32 count, doubles

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

template <typename T>
bool WriteValue(int fd, T v) {
  return WriteAll(fd, &v, sizeof v);
}

[[noreturn]] void ChildFail(int fd, const std::string& message) {
  WriteValue<uint8_t>(fd, kTagError);
  WriteValue<uint32_t>(fd, static_cast<uint32_t>(message.size()));
  WriteAll(fd, message.data(), message.size());
  _exit(3);
}

// Runs in the child; never returns.
[[noreturn]] void ChildMain(int fd, const std::vector<uint8_t>& so, const std::string& kernel,
                            const std::vector<std::vector<int64_t>>& shapes, const RunnerOptions& options) {
  Result<std::unique_ptr<NativeLibrary>> lib = NativeLibrary::LoadFromMemory(so.data(), so.size(), kernel);
  if (!lib.ok()) ChildFail(fd, lib.status().ToString());
  Result<const kiln_kernel_entry*> entry = (*lib)->Find(kernel);
  if (!entry.ok()) ChildFail(fd, entry.status().ToString());
  std::vector<Tensor> tensors;
  for (size_t k = 0; k < shapes.size(); ++k) {
    Result<Tensor> t = Tensor::Empty(shapes[k], DType::Float32());
    if (!t.ok()) ChildFail(fd, t.status().ToString());
    std::vector<float> v = SeededInput(options.input_seed, k, t->NumElements());
    std::copy(v.begin(), v.end(), t->data<float>());
    tensors.push_back(*t);
  }
  ThreadPool pool(options.threads);
  std::string unpinned;
  PinPoolThreads(&pool, &unpinned);  // as kiln-measure-host (pin_threads.h)
  std::vector<kiln_kernel_arg> args(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) args[k].tensor = reinterpret_cast<kiln_dltensor*>(tensors[k].dl());
  // As the VM calls kernels (CallKernel: workspaces kept from one call to the
  // next), as kiln-measure-host does.
  auto call = [&] {
    Status st = CallKernel((*entry)->fn, kernel, args.data(), static_cast<int32_t>(args.size()), &pool);
    if (!st.ok()) ChildFail(fd, "the kernel failed: " + st.ToString());
  };
  call();
  WriteValue<uint8_t>(fd, kTagOutputs);
  WriteValue<uint32_t>(fd, static_cast<uint32_t>(tensors.size()));
  for (const Tensor& t : tensors) {
    WriteValue<uint64_t>(fd, t.NumBytes());
    WriteAll(fd, t.raw_data(), t.NumBytes());
  }
  const auto warm_until = std::chrono::steady_clock::now() + kMinWarmupTime;
  for (int k = 0; k < options.warmup || std::chrono::steady_clock::now() < warm_until; ++k) call();
  std::unique_ptr<CacheEvictor> evictor;
  if (options.cold_cache) evictor = std::make_unique<CacheEvictor>(options.cold_cache_bytes);
  std::vector<double> times;
  for (int k = 0; k < options.repeats; ++k) {
    if (evictor) evictor->Evict(&pool);  // on every kernel thread (cache_evict.h)
    auto t0 = std::chrono::steady_clock::now();
    call();
    auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  WriteValue<uint8_t>(fd, kTagTimes);
  WriteValue<uint32_t>(fd, static_cast<uint32_t>(times.size()));
  WriteAll(fd, times.data(), times.size() * sizeof(double));
  _exit(0);
}

// Reads the child's whole report (until EOF) or gives up at `deadline`.
bool ReadReport(int fd, std::chrono::steady_clock::time_point deadline, std::string* out) {
  char buf[1 << 16];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // EOF (or the pipe broke): the child is done
    out->append(buf, static_cast<size_t>(n));
  }
}

// A cursor over the report.
struct Reader {
  const std::string& s;
  size_t p = 0;
  template <typename T>
  bool Get(T* v) {
    if (p + sizeof(T) > s.size()) return false;
    memcpy(v, s.data() + p, sizeof(T));
    p += sizeof(T);
    return true;
  }
  bool Bytes(size_t n, std::string* out) {
    if (p + n > s.size()) return false;
    out->assign(s.data() + p, n);
    p += n;
    return true;
  }
};

}  // namespace

std::vector<float> SeededInput(uint64_t seed, size_t k, int64_t count) {
  std::mt19937 rng(static_cast<uint32_t>(seed * 1000 + k));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}

Status CompareOutputs(const std::vector<std::vector<uint8_t>>& got, const std::vector<std::vector<uint8_t>>& want) {
  if (got.size() != want.size())
    return Internal(std::to_string(got.size()) + " parameters, the reference has " + std::to_string(want.size()));
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].size() != want[k].size()) return Internal("parameter " + std::to_string(k) + " has another size");
    const float* x = reinterpret_cast<const float*>(got[k].data());
    const float* y = reinterpret_cast<const float*>(want[k].data());
    for (size_t i = 0; i < got[k].size() / sizeof(float); ++i) {
      if (std::isnan(y[i]) && std::isnan(x[i])) continue;
      if (!(std::fabs(x[i] - y[i]) <= 1e-4f * std::max(1.0f, std::fabs(y[i]))))
        return Internal("parameter " + std::to_string(k) + " element " + std::to_string(i) + ": " +
                        std::to_string(x[i]) + ", the default schedule gives " + std::to_string(y[i]));
    }
  }
  return Status::Ok();
}

namespace {

Measurement Fail(MeasureState state, std::string message) {
  Measurement m;
  m.state = state;
  m.message = std::move(message);
  return m;
}

}  // namespace

Measurement Measure(const PrimFunc& func, const RunnerOptions& options, const Measurement* reference) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : func->params) {
    Buffer buf = func->BufferOf(p);
    if (!buf) return Fail(MeasureState::kBuildFailed, "parameter " + p->name + " is a scalar (not supported yet)");
    if (!(buf->dtype == DType::Float32()))
      return Fail(MeasureState::kBuildFailed, "parameter " + p->name + " is not float32 (not supported yet)");
    std::vector<int64_t> shape;
    for (const auto& d : buf->shape) {
      auto c = arith::AsConstInt(d);
      if (!c) return Fail(MeasureState::kBuildFailed, "parameter " + p->name + " has a symbolic shape");
      shape.push_back(*c);
    }
    shapes.push_back(shape);
  }
  Result<codegen::NativeLibraryBuild> built = codegen::BuildNativeLibrary({func}, options.codegen);
  if (!built.ok()) return Fail(MeasureState::kBuildFailed, built.status().ToString());
  if (!options.command.empty()) return MeasureWithCommand(built->shared_object, func->name, shapes, options, reference);
  if (!options.host_program.empty())
    return MeasureWithHostProgram(built->shared_object, func->name, shapes, options, reference);

  int fds[2];
  if (pipe(fds) != 0) return Fail(MeasureState::kRunFailed, std::string("pipe: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Fail(MeasureState::kRunFailed, std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    ChildMain(fds[1], built->shared_object, func->name, shapes, options);
  }
  close(fds[1]);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
  std::string report;
  bool finished = ReadReport(fds[0], deadline, &report);
  close(fds[0]);
  if (!finished) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!finished) return Fail(MeasureState::kTimedOut, "still running after " + std::to_string(options.timeout_s) + " s; killed");
  if (WIFSIGNALED(wstatus))
    return Fail(MeasureState::kCrashed,
                "killed by signal " + std::to_string(WTERMSIG(wstatus)) + " (" + strsignal(WTERMSIG(wstatus)) + ")");

  Measurement m;
  Reader r{report};
  uint8_t tag = 0;
  while (r.Get(&tag)) {
    if (tag == kTagError) {
      uint32_t n = 0;
      std::string msg;
      if (!r.Get(&n) || !r.Bytes(n, &msg)) break;
      return Fail(MeasureState::kRunFailed, msg);
    } else if (tag == kTagOutputs) {
      uint32_t count = 0;
      if (!r.Get(&count)) break;
      for (uint32_t k = 0; k < count; ++k) {
        uint64_t n = 0;
        std::string bytes;
        if (!r.Get(&n) || !r.Bytes(n, &bytes)) break;
        m.outputs.emplace_back(bytes.begin(), bytes.end());
      }
    } else if (tag == kTagTimes) {
      uint32_t count = 0;
      if (!r.Get(&count)) break;
      for (uint32_t k = 0; k < count; ++k) {
        double t = 0;
        if (!r.Get(&t)) break;
        m.times_us.push_back(t);
      }
    } else {
      break;
    }
  }
  bool complete = m.times_us.size() == static_cast<size_t>(options.repeats) && m.outputs.size() == shapes.size();
  // A failing exit before the report was complete is a crash too: under a
  // sanitizer (or a candidate's own abort handler) a SIGSEGV becomes a
  // report and exit(1) instead of death by the signal.
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0 && !complete) {
    return Fail(MeasureState::kCrashed, "the measuring process exited with status " +
                                            std::to_string(WEXITSTATUS(wstatus)) + " before its report was complete");
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || !complete)
    return Fail(MeasureState::kRunFailed, "the measuring process exited with status " +
                                              std::to_string(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1) +
                                              " and an incomplete report");
  return Finish(std::move(m), reference);
}

Measurement Finish(Measurement m, const Measurement* reference) {
  if (reference != nullptr) {
    Status same = CompareOutputs(m.outputs, reference->outputs);
    if (!same.ok()) return Fail(MeasureState::kWrong, same.message());
  }
  std::vector<double> sorted = m.times_us;
  std::sort(sorted.begin(), sorted.end());
  m.median_us = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  m.state = MeasureState::kOk;
  return m;
}

}  // namespace tune
}  // namespace kiln
