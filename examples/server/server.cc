// kiln-server: a small inference server over the C++ API (capi/kiln.hpp).
//
// It loads one .vmfb, starts N worker threads that each own a call context,
// and feeds them requests through a bounded queue: from a generator (as fast
// as the workers take them, for --requests or --seconds) or one per line of
// stdin (--stdin). At the end it reports throughput and the latency
// percentiles of the requests, from entering the queue to their result, and of
// the calls alone.
//
// The function's inputs are made from its signature (kiln_value_info_t):
// tensors of its declared dtype and shape, each symbolic dimension taken from
// --dim NAME=N (1 when not given), filled with pseudo-random values. A few
// input sets are made up front; request i uses set i mod their count.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using kiln::api::Result;
using kiln::api::Tensor;

struct Options {
  std::string model;
  std::string function = "main";
  int workers = 2;
  int threads = 1;
  int64_t requests = 0;  // 0: use --seconds (or 1000 when neither is given)
  double seconds = 0;
  bool from_stdin = false;
  int queue_depth = 0;  // 0: 2 x workers
  kiln_executor_t executor = KILN_EXECUTOR_AUTO;
  std::map<std::string, int64_t> dims;
  uint32_t seed = 1;
};

const char kUsage[] =
    "usage: kiln-server MODEL.vmfb [options]\n"
    "  --function=NAME        function to serve (default main)\n"
    "  --workers=N            worker threads, each with its own context (default 2)\n"
    "  --threads=N            kernel threads of the shared pool (default 1; 0: one per core)\n"
    "  --requests=N           serve N generated requests (default 1000)\n"
    "  --seconds=S            serve generated requests for S seconds instead\n"
    "  --stdin                one request per line of standard input, until EOF\n"
    "  --queue=N              queue capacity (default 2 x workers)\n"
    "  --executor=auto|vm|graph\n"
    "  --dim NAME=N           value of a symbolic dimension (repeatable; default 1)\n"
    "  --seed=N               seed of the random inputs (default 1)\n";

bool ParseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

// Parses argv; prints the problem and returns false on a bad flag.
bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    size_t eq = arg.find('=');
    std::string flag = arg.substr(0, eq);
    bool has_value = eq != std::string::npos;
    if (has_value) value = arg.substr(eq + 1);
    auto need_value = [&]() {
      if (has_value) return true;
      if (i + 1 < argc) {
        value = argv[++i];
        return true;
      }
      std::fprintf(stderr, "kiln-server: %s needs a value\n", flag.c_str());
      return false;
    };
    int64_t n = 0;
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (flag == "--stdin") {
      o->from_stdin = true;
    } else if (flag == "--function") {
      if (!need_value()) return false;
      o->function = value;
    } else if (flag == "--workers" || flag == "--threads" || flag == "--requests" || flag == "--queue" ||
               flag == "--seed") {
      if (!need_value()) return false;
      if (!ParseInt(value, &n) || n < 0 || n > (1 << 20) || ((flag == "--workers") && n == 0)) {
        std::fprintf(stderr, "kiln-server: %s=%s: expected a%s integer\n", flag.c_str(), value.c_str(),
                     flag == "--workers" ? " positive" : " non-negative");
        return false;
      }
      if (flag == "--workers") o->workers = static_cast<int>(n);
      if (flag == "--threads") o->threads = static_cast<int>(n);
      if (flag == "--requests") o->requests = n;
      if (flag == "--queue") o->queue_depth = static_cast<int>(n);
      if (flag == "--seed") o->seed = static_cast<uint32_t>(n);
    } else if (flag == "--seconds") {
      if (!need_value()) return false;
      char* end = nullptr;
      o->seconds = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !(o->seconds > 0)) {
        std::fprintf(stderr, "kiln-server: --seconds=%s: expected a positive number\n", value.c_str());
        return false;
      }
    } else if (flag == "--executor") {
      if (!need_value()) return false;
      if (value == "auto") {
        o->executor = KILN_EXECUTOR_AUTO;
      } else if (value == "vm") {
        o->executor = KILN_EXECUTOR_VM;
      } else if (value == "graph") {
        o->executor = KILN_EXECUTOR_GRAPH;
      } else {
        std::fprintf(stderr, "kiln-server: --executor=%s: expected auto, vm or graph\n", value.c_str());
        return false;
      }
    } else if (flag == "--dim") {
      if (!need_value()) return false;
      size_t at = value.find('=');
      if (at == std::string::npos || at == 0 || !ParseInt(value.substr(at + 1), &n) || n < 0) {
        std::fprintf(stderr, "kiln-server: --dim %s: expected NAME=N\n", value.c_str());
        return false;
      }
      o->dims[value.substr(0, at)] = n;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "kiln-server: unknown flag %s\n%s", arg.c_str(), kUsage);
      return false;
    } else if (o->model.empty()) {
      o->model = arg;
    } else {
      std::fprintf(stderr, "kiln-server: one model only (got %s and %s)\n", o->model.c_str(), arg.c_str());
      return false;
    }
  }
  if (o->model.empty()) {
    std::fputs(kUsage, stderr);
    return false;
  }
  if (o->requests == 0 && o->seconds == 0) o->requests = 1000;
  if (o->queue_depth == 0) o->queue_depth = 2 * o->workers;
  return true;
}

// A small deterministic generator (xorshift32): inputs need no quality.
float NextRandom(uint32_t* state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *state = x;
  return static_cast<float>(x >> 8) / static_cast<float>(1u << 24) - 0.5f;
}

// One set of inputs for `function`, shaped by its signature.
Result<std::vector<Tensor>> MakeInputs(const kiln::api::Function& function, const Options& o, uint32_t* rng) {
  std::vector<Tensor> inputs;
  for (const kiln::api::ValueInfo& p : function.params()) {
    if (p.kind != KILN_VALUE_TENSOR || p.ndim < 0) {
      return kiln::api::Status(KILN_STATUS_UNIMPLEMENTED,
                               "parameter '" + p.name + "' is a " + kiln_value_kind_name(p.kind) +
                                   (p.kind == KILN_VALUE_TENSOR ? " of unknown rank" : "") +
                                   "; kiln-server makes tensors of known rank only");
    }
    std::vector<int64_t> shape;
    for (size_t d = 0; d < p.dims.size(); ++d) {
      if (p.dims[d] >= 0) {
        shape.push_back(p.dims[d]);
        continue;
      }
      auto it = o.dims.find(p.dim_names[d]);
      shape.push_back(it != o.dims.end() ? it->second : 1);
    }
    Result<Tensor> t = Tensor::Create(shape, p.dtype);
    if (!t.ok()) return t.status();
    if (p.dtype == KILN_DTYPE_FLOAT32) {
      float* data = t->data<float>();
      for (int64_t i = 0; i < t->element_count(); ++i) data[i] = NextRandom(rng);
    }
    inputs.push_back(std::move(t).value());
  }
  return inputs;
}

struct Request {
  int64_t id;
  Clock::time_point enqueued;
};

// A bounded multi-producer multi-consumer queue; Close() ends the consumers'
// Pop once the queue is empty.
class RequestQueue {
 public:
  explicit RequestQueue(size_t capacity) : capacity_(capacity) {}
  void Push(Request r) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    r.enqueued = Clock::now();  // latency starts when the request is accepted
    items_.push_back(r);
    not_empty_.notify_one();
  }
  bool Pop(Request* r) {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return false;
    *r = items_.front();
    items_.pop_front();
    not_full_.notify_one();
    return true;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<Request> items_;
  size_t capacity_;
  bool closed_ = false;
};

// What one worker measured.
struct WorkerStats {
  std::vector<double> latency_ms;  // queue + call
  std::vector<double> call_ms;     // the call alone
  int64_t errors = 0;
  std::string first_error;
  Clock::time_point last_done{};
};

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(q * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::min(std::max<size_t>(rank, 1), sorted.size());
  return sorted[rank - 1];
}

void PrintPercentiles(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("%-13s p50 %9.3f   p90 %9.3f   p99 %9.3f   max %9.3f\n", what, Percentile(v, 0.50), Percentile(v, 0.90),
              Percentile(v, 0.99), v.empty() ? 0.0 : v.back());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) return 2;

  kiln::api::InstanceOptions instance_options;
  instance_options.num_threads = o.threads;
  Result<kiln::api::Instance> instance = kiln::api::Instance::Create(instance_options);
  if (!instance.ok()) {
    std::fprintf(stderr, "kiln-server: %s\n", instance.status().ToString().c_str());
    return 1;
  }
  Result<kiln::api::Module> module = instance->LoadModule(o.model);
  if (!module.ok()) {
    std::fprintf(stderr, "kiln-server: %s\n", module.status().ToString().c_str());
    return 1;
  }
  Result<kiln::api::Function> function = module->Lookup(o.function);
  if (!function.ok()) {
    std::fprintf(stderr, "kiln-server: %s\n", function.status().ToString().c_str());
    return 1;
  }
  constexpr int kInputSets = 4;
  std::vector<std::vector<Tensor>> input_sets;
  uint32_t rng = o.seed == 0 ? 1 : o.seed;
  for (int i = 0; i < kInputSets; ++i) {
    Result<std::vector<Tensor>> inputs = MakeInputs(*function, o, &rng);
    if (!inputs.ok()) {
      std::fprintf(stderr, "kiln-server: %s: %s\n", o.function.c_str(), inputs.status().ToString().c_str());
      return 1;
    }
    input_sets.push_back(std::move(inputs).value());
  }

  // Each worker: its own context and its own handles of the input sets (a
  // tensor handle is used by one thread at a time; the storage is shared).
  std::vector<kiln::api::Context> contexts;
  std::vector<std::vector<std::vector<Tensor>>> worker_inputs(o.workers);
  for (int w = 0; w < o.workers; ++w) {
    Result<kiln::api::Context> context = instance->CreateContext(*module, {o.executor, 0, nullptr});
    if (!context.ok()) {
      std::fprintf(stderr, "kiln-server: %s\n", context.status().ToString().c_str());
      return 1;
    }
    contexts.push_back(std::move(context).value());
    for (const std::vector<Tensor>& set : input_sets) {
      std::vector<Tensor> mine;
      for (const Tensor& t : set) mine.push_back(std::move(t.Share()).value());
      worker_inputs[w].push_back(std::move(mine));
    }
  }

  RequestQueue queue(static_cast<size_t>(o.queue_depth));
  std::vector<WorkerStats> stats(o.workers);
  std::vector<std::thread> workers;
  for (int w = 0; w < o.workers; ++w) {
    workers.emplace_back([&, w] {
      WorkerStats& s = stats[w];
      std::vector<std::vector<kiln_tensor_t*>> sets;
      for (const std::vector<Tensor>& set : worker_inputs[w]) {
        std::vector<kiln_tensor_t*> raw;
        for (const Tensor& t : set) raw.push_back(t.get());
        sets.push_back(raw);
      }
      Request r;
      while (queue.Pop(&r)) {
        const std::vector<kiln_tensor_t*>& in = sets[static_cast<size_t>(r.id) % sets.size()];
        Clock::time_point start = Clock::now();
        Result<kiln::api::Outputs> out = contexts[w].InvokeRaw(*function, in.data(), in.size());
        Clock::time_point done = Clock::now();
        if (!out.ok()) {
          if (s.errors++ == 0) s.first_error = out.status().ToString();
          continue;
        }
        s.call_ms.push_back(std::chrono::duration<double, std::milli>(done - start).count());
        s.latency_ms.push_back(std::chrono::duration<double, std::milli>(done - r.enqueued).count());
        s.last_done = done;
      }
    });
  }

  // The generator (or stdin): requests until the count, the time or EOF.
  Clock::time_point begin = Clock::now();
  int64_t sent = 0;
  if (o.from_stdin) {
    std::string line;
    while (std::getline(std::cin, line)) queue.Push(Request{sent++, {}});
  } else {
    const auto deadline = begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
    while (o.requests > 0 ? sent < o.requests : Clock::now() < deadline) queue.Push(Request{sent++, {}});
  }
  queue.Close();
  for (std::thread& t : workers) t.join();

  WorkerStats all;
  Clock::time_point end = begin;
  for (WorkerStats& s : stats) {
    all.latency_ms.insert(all.latency_ms.end(), s.latency_ms.begin(), s.latency_ms.end());
    all.call_ms.insert(all.call_ms.end(), s.call_ms.begin(), s.call_ms.end());
    all.errors += s.errors;
    if (all.first_error.empty()) all.first_error = s.first_error;
    end = std::max(end, s.last_done);
  }
  double wall_s = std::chrono::duration<double>(end - begin).count();
  size_t done = all.latency_ms.size();
  std::printf("kiln-server: %s, function %s: %d workers, %d kernel threads (%s executor)\n", o.model.c_str(),
              o.function.c_str(), o.workers, instance->num_threads(),
              o.executor == KILN_EXECUTOR_VM ? "vm" : o.executor == KILN_EXECUTOR_GRAPH ? "graph" : "auto");
  std::printf("requests:     %zu served, %lld failed, in %.3f s\n", done, static_cast<long long>(all.errors), wall_s);
  std::printf("throughput:   %.1f requests/s\n", wall_s > 0 ? static_cast<double>(done) / wall_s : 0.0);
  PrintPercentiles("latency ms:", all.latency_ms);
  PrintPercentiles("call ms:", all.call_ms);
  if (all.errors > 0) {
    std::fprintf(stderr, "kiln-server: %lld requests failed; the first: %s\n", static_cast<long long>(all.errors),
                 all.first_error.c_str());
    return 1;
  }
  return 0;
}
