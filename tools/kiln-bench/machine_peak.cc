#include "tools/kiln-bench/machine_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include <sys/stat.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_PEAK_X86 1
#endif

namespace kiln {
namespace tools {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Each kernel runs `iters` rounds over 12 independent accumulators (enough to
// cover an FMA latency of 4-6 cycles on two ports) and returns a value that
// depends on all of them, so nothing is optimized away. acc = acc * a + b
// with a < 1 converges: no overflow, no denormals.
constexpr int kChains = 12;

#ifdef KILN_PEAK_X86
__attribute__((target("avx512f"))) float FmaAvx512(int64_t iters) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + 0.01f * static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) float FmaAvx2(int64_t iters) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(1.0f + 0.01f * static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
#endif

// Portable: 4-lane vectors; the compiler contracts a * b + c into an FMA where
// the target has one, otherwise a multiply and an add (still 2 flops).
float FmaPortable(int64_t iters) {
  typedef float V __attribute__((vector_size(16)));
  V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = V{1, 1, 1, 1} * (1.0f + 0.01f * static_cast<float>(c));
  const V a = V{1, 1, 1, 1} * 0.999999f, b = V{1, 1, 1, 1} * 1e-6f;
  for (int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * a + b;
  V s = acc[0];
  for (int c = 1; c < kChains; ++c) s += acc[c];
  return s[0] + s[1] + s[2] + s[3];
}

struct FmaKernel {
  const char* isa;
  int lanes;
  float (*fn)(int64_t);
};

FmaKernel WidestFma() {
#ifdef KILN_PEAK_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512f", 16, FmaAvx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2+fma", 8, FmaAvx2};
  return {"sse", 4, FmaPortable};
#else
  return {"portable", 4, FmaPortable};
#endif
}

// Many short runs (about 2 ms each) and the best of them: on a shared machine
// a run that no other process interrupted shows the core's peak, where one
// long run would average in the time slices of others.
double MeasureFmaGflops(std::string* isa) {
  FmaKernel k = WidestFma();
  *isa = k.isa;
  volatile float sink = k.fn(1000);  // warm up (and wake the vector unit)
  int64_t iters = 1 << 12;
  for (;;) {
    Clock::time_point t0 = Clock::now();
    sink = k.fn(iters);
    double s = Seconds(t0, Clock::now());
    if (s > 0.001 || iters > (int64_t(1) << 34)) break;
    iters *= 2;
  }
  double best = 0;
  for (int r = 0; r < 40; ++r) {
    Clock::time_point t0 = Clock::now();
    sink = k.fn(iters);
    double s = Seconds(t0, Clock::now());
    double flops = 2.0 * kChains * k.lanes * static_cast<double>(iters);
    best = std::max(best, flops / s / 1e9);
  }
  (void)sink;
  return best;
}

// y = x * k over two arrays of n floats. One thread times chunks of at most
// 4 MiB (a whole small array, repeated) and keeps the best: as for the FMA
// runs, short timings find the moments no other process ran. Several
// threads time whole passes over the arrays, best of 5.
double MeasureBandwidthGbs(int threads, size_t n = size_t(16) << 20) {
  std::unique_ptr<float[]> x(new float[n]), y(new float[n]);
  std::fill(x.get(), x.get() + n, 1.0f);
  std::fill(y.get(), y.get() + n, 0.0f);
  auto scale = [&](size_t lo, size_t hi, float k) {
    float* __restrict yy = y.get();
    const float* __restrict xx = x.get();
    for (size_t i = lo; i < hi; ++i) yy[i] = xx[i] * k;
  };
  double best = 0;
  if (threads == 1) {
    const size_t chunk = std::min(n, size_t(1) << 20);
    const int passes = n > chunk ? 3 : static_cast<int>(std::min<size_t>(400, (size_t(64) << 20) / n));
    for (int r = 0; r < passes; ++r) {
      for (size_t lo = 0; lo < n; lo += chunk) {
        size_t hi = std::min(n, lo + chunk);
        Clock::time_point t0 = Clock::now();
        scale(lo, hi, r % 2 == 0 ? 0.5f : 2.0f);
        double s = Seconds(t0, Clock::now());
        best = std::max(best, 2.0 * static_cast<double>((hi - lo) * sizeof(float)) / std::max(s, 1e-9) / 1e9);
      }
    }
    return best;
  }
  auto part = [&](int t, float k) {
    scale(n * static_cast<size_t>(t) / static_cast<size_t>(threads),
          n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads), k);
  };
  auto pass = [&](float k) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(part, t, k);
    part(0, k);
    for (auto& th : pool) th.join();
  };
  pass(1.0f);
  for (int r = 0; r < 5; ++r) {
    Clock::time_point t0 = Clock::now();
    pass(r % 2 == 0 ? 0.5f : 2.0f);
    double s = Seconds(t0, Clock::now());
    best = std::max(best, 2.0 * static_cast<double>(n * sizeof(float)) / s / 1e9);
  }
  return best;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 10, "model name") == 0 || line.compare(0, 9, "Processor") == 0) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(' '));
      return v;
    }
  }
  return "unknown-cpu";
}

std::string Sanitized(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// The text between the quotes after "key": (a string) or the number after it.
bool Field(const std::string& text, const std::string& key, std::string* out) {
  std::string pat = "\"" + key + "\":";
  size_t p = text.find(pat);
  if (p == std::string::npos) return false;
  p += pat.size();
  while (p < text.size() && text[p] == ' ') ++p;
  if (p < text.size() && text[p] == '"') {
    size_t e = text.find('"', p + 1);
    if (e == std::string::npos) return false;
    *out = text.substr(p + 1, e - p - 1);
    return true;
  }
  size_t e = text.find_first_of(",}\n", p);
  if (e == std::string::npos || e == p) return false;
  *out = text.substr(p, e - p);
  return true;
}

bool NumberField(const std::string& text, const std::string& key, double* out) {
  std::string v;
  if (!Field(text, key, &v)) return false;
  char* end = nullptr;
  *out = std::strtod(v.c_str(), &end);
  return end != v.c_str() && *out > 0;
}

void MakeDirs(const std::string& path) {
  for (size_t p = path.find('/', 1); p != std::string::npos; p = path.find('/', p + 1))
    ::mkdir(path.substr(0, p).c_str(), 0755);
}

}  // namespace

double MachinePeak::GflopsAt(int threads) const { return gflops_per_core * std::max(threads, 1); }

double MachinePeak::GbsAt(int threads, double bytes) const {
  threads = std::max(threads, 1);
  if (bytes > 0 && !curve.empty() && bytes < curve.back().first) {
    double gbs = curve.front().second;
    for (const auto& [size, v] : curve)
      if (size <= bytes) gbs = v;
    return std::max(gbs, gbs_one_thread) * threads;
  }
  if (threads <= 1) return gbs_one_thread;
  return std::min(gbs_all_threads, gbs_one_thread * threads);
}

MachinePeak MeasureMachinePeak() {
  MachinePeak p;
  p.cpu = CpuModel();
  p.hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  p.gflops_per_core = MeasureFmaGflops(&p.isa);
  p.gbs_one_thread = MeasureBandwidthGbs(1);
  p.gbs_all_threads = std::max(p.gbs_one_thread, MeasureBandwidthGbs(p.hardware_threads));
  for (size_t bytes = size_t(256) << 10; bytes <= size_t(64) << 20; bytes *= 4)
    p.curve.emplace_back(static_cast<double>(bytes), MeasureBandwidthGbs(1, bytes / 2 / sizeof(float)));
  p.source = "measured";
  return p;
}

std::string MachinePeakCachePath() {
  if (const char* f = std::getenv("KILN_PEAK_CACHE"); f && *f) return f;
  std::string dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = x;
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.cache";
  } else {
    dir = "/tmp";
  }
  return dir + "/kiln/peak-" + Sanitized(CpuModel()) + ".json";
}

std::string MachinePeakJson(const MachinePeak& p) {
  std::string curve;
  for (const auto& [size, gbs] : p.curve) curve += StrFormat("%s%.0f:%.3f", curve.empty() ? "" : " ", size, gbs);
  return StrFormat(
      "{\"cpu\": \"%s\", \"isa\": \"%s\", \"gflops_per_core\": %.3f, \"gbs_one_thread\": %.3f, "
      "\"gbs_all_threads\": %.3f, \"bandwidth_curve\": \"%s\", \"hardware_threads\": %d}\n",
      Sanitized(p.cpu).c_str(), p.isa.c_str(), p.gflops_per_core, p.gbs_one_thread, p.gbs_all_threads, curve.c_str(),
      p.hardware_threads);
}

Result<MachinePeak> ParseMachinePeakJson(const std::string& text) {
  MachinePeak p;
  double threads = 0;
  std::string curve;
  if (!Field(text, "cpu", &p.cpu) || !Field(text, "isa", &p.isa) ||
      !NumberField(text, "gflops_per_core", &p.gflops_per_core) ||
      !NumberField(text, "gbs_one_thread", &p.gbs_one_thread) ||
      !NumberField(text, "gbs_all_threads", &p.gbs_all_threads) ||
      !Field(text, "bandwidth_curve", &curve) ||
      !NumberField(text, "hardware_threads", &threads)) {
    return InvalidArgument("not a kiln-bench peak file (a field is missing or not positive)");
  }
  p.hardware_threads = static_cast<int>(threads);
  // "SIZE:GBS SIZE:GBS ...", sizes increasing.
  std::istringstream points(curve);
  std::string point;
  while (points >> point) {
    double size = 0, gbs = 0;
    if (std::sscanf(point.c_str(), "%lf:%lf", &size, &gbs) != 2 || size <= 0 || gbs <= 0 ||
        (!p.curve.empty() && size <= p.curve.back().first)) {
      return InvalidArgument("not a kiln-bench peak file (bandwidth_curve '" + curve + "')");
    }
    p.curve.emplace_back(size, gbs);
  }
  return p;
}

MachinePeak GetMachinePeak(bool remeasure, std::ostream& log) {
  std::string path = MachinePeakCachePath();
  const char* env = std::getenv("KILN_REMEASURE_PEAK");
  remeasure = remeasure || (env && *env && std::strcmp(env, "0") != 0);
  if (!remeasure) {
    std::ifstream in(path);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      Result<MachinePeak> p = ParseMachinePeakJson(ss.str());
      if (p.ok()) {
        p->source = path;
        return *p;
      }
      log << "kiln-bench: " << path << ": " << p.status().message() << "; measuring the peak again\n";
    }
  }
  log << "kiln-bench: measuring this machine's peak (FMA throughput, memory bandwidth; once, cached in " << path
      << ")\n";
  MachinePeak p = MeasureMachinePeak();
  MakeDirs(path);
  std::ofstream out(path);
  out << MachinePeakJson(p);
  if (!out) log << "kiln-bench: could not write " << path << " (the peak is measured again next time)\n";
  return p;
}

}  // namespace tools
}  // namespace kiln
