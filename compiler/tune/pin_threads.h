// Pinning a measuring process's kernel threads, one to each physical core,
// and how long it warms up before timing.
//
// Why. kiln-measure-host (and runner.cc's forked child) creates its thread
// pool, times a kernel for a few milliseconds and exits. On this 2-vCPU
// machine the pool's new worker often shared the launching thread's CPU for
// the first 10-40 ms of the process (the scheduler moves it later), so a
// kernel planned for two threads ran its whole launch on one core: at
// --threads 2, RegNetY-800MF's 320 -> 784 1 x 1 conv measured 390-400 us in
// about half of the processes and 200-210 us in the others, the same kernel
// the model runs in 209 us (kiln-bench --profile). kiln-tune kept candidates
// measured in the lucky processes against defaults measured in unlucky ones,
// and its model check found all 17 records of a RegNetY --threads 2 run
// (1.01-1.66x faster alone) slower in the model, the tuned build 1.09x the
// default's time. A long-lived pool (a server, kiln-bench) is spread over the
// cores long before it matters; pinning gives the short-lived measuring
// process that steady state from its first call.
//
// How. One launch of `threads` tasks (the pool deals one per thread, the
// launching thread taking part), each of which records its thread's handle
// and waits (yielding) until all have started, so that each ran on a thread
// of its own; then each of those threads is pinned, by its handle, to a CPU
// of its own (OneCpuPerPhysicalCore, runtime/cpu_topology.h).
#ifndef KILN_COMPILER_TUNE_PIN_THREADS_H_
#define KILN_COMPILER_TUNE_PIN_THREADS_H_

#include <chrono>
#include <string>
#include <vector>

namespace kiln {
class ThreadPool;
namespace tune {

// The warm-up that goes with it: a measuring process calls the kernel for at
// least this long (besides its RunnerOptions::warmup calls) before timing it.
// Pinned, RegNetY's 32-channel conv at 112^2 still took 140-235 us over its
// first 10-20 calls at 2 threads, 116-120 after (1 thread: 2-3 calls); 2 + 7
// calls timed that transient. 20 ms is 2000 trials x 20 ms = 40 s of a whole-model run.
constexpr std::chrono::milliseconds kMinWarmupTime{20};

// Pins the calling thread and each worker of `pool` (of more than one
// thread) to a distinct CPU, one per physical core. Returns the CPUs, in the
// order the threads took them, or an empty list and, in *why, the reason
// nothing was pinned: a pool of one thread (nothing to spread), fewer
// physical cores than threads (measuring oversubscribed, as the model would
// run), or a failed sched_setaffinity (a container's policy).
std::vector<int> PinPoolThreads(ThreadPool* pool, std::string* why);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_PIN_THREADS_H_
