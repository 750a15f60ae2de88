// The round trip of one cache line between two CPUs, in nanoseconds: thread A
// on the first CPU writes a value, thread B on the second answers with the
// next one, 50 batches of 2000 exchanges. The fastest batch tells the
// placement even on a loaded machine (a batch is about a millisecond, so
// many run without either thread being preempted); the median is reported
// beside it.
//
// Why: on the shared 2-vCPU development VM the host places the two virtual
// CPUs sometimes on one core complex (a round trip of 75-120 ns) and
// sometimes far apart (390-480 ns), switching every few minutes. Two-thread
// timings differ by up to 1.7x between the two (DenseNet-121: 13.8 against
// 20-24 ms; one-thread timings do not move), so a two-thread benchmark is
// only comparable with another taken at the same placement. Run this
// before and after a two-thread measurement and note the result.
//
// Usage: kiln_core_round_trip [CPU_A CPU_B]   (default: the first two CPUs this
// process may run on). Prints "round trip CPU_A <-> CPU_B: min N ns (median
// M)"; exit status 1 when fewer than two CPUs are available.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

bool Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// The first two CPUs of this process's affinity mask, or -1.
void FirstTwoCpus(int* a, int* b) {
  *a = *b = -1;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    if (*a < 0) {
      *a = cpu;
    } else {
      *b = cpu;
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int cpu_a, cpu_b;
  FirstTwoCpus(&cpu_a, &cpu_b);
  if (argc == 3) {
    cpu_a = std::atoi(argv[1]);
    cpu_b = std::atoi(argv[2]);
  }
  if (cpu_a < 0 || cpu_b < 0) {
    std::fprintf(stderr, "kiln_core_round_trip: needs two CPUs\n");
    return 1;
  }
  constexpr int kBatches = 50, kExchanges = 2000;
  // Its own cache line: nothing else shares it.
  alignas(64) static std::atomic<int64_t> line{0};
  std::thread answerer([&] {
    Pin(cpu_b);
    for (int64_t k = 0; k < int64_t{kBatches} * kExchanges; ++k) {
      while (line.load(std::memory_order_acquire) != 2 * k + 1) {
      }
      line.store(2 * k + 2, std::memory_order_release);
    }
  });
  Pin(cpu_a);
  std::vector<double> ns(kBatches);
  for (int b = 0; b < kBatches; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kExchanges; ++i) {
      int64_t k = int64_t{b} * kExchanges + i;
      line.store(2 * k + 1, std::memory_order_release);
      while (line.load(std::memory_order_acquire) != 2 * k + 2) {
      }
    }
    ns[b] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kExchanges;
  }
  answerer.join();
  std::sort(ns.begin(), ns.end());
  std::printf("round trip CPU %d <-> CPU %d: min %.0f ns (median %.0f)\n", cpu_a, cpu_b, ns.front(), ns[kBatches / 2]);
  return 0;
}
