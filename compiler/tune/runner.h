// Measuring a kernel out of process. Build (the production LLVM codegen) a
// lowered PrimFunc into a native library in this process; then a child
// process loads it with the production loader (NativeLibrary, memfd), fills
// every parameter with seeded random numbers, runs the kernel once and sends
// back every parameter's bytes, then warms up and times repeats through the
// production kernel ABI and thread pool, and sends back the times. The child
// runs with a timeout; a child that dies by a signal (segfault), outlives the
// timeout (killed) or exits with an error gives a failed result, never a
// failure of the caller.
//
// The child is one of two kinds. With RunnerOptions::host_program set (what
// kiln-tune does), it is that program (kiln-measure-host, exec'd per
// candidate, tools/kiln-tune/kiln_measure_host.cc) given the job as files as
// for a runner command below: it starts clean whatever threads this process
// has. Without it, a fork of this process that runs the kernel without exec:
// no files, but the caller must hold no other threads that may own locks
// across fork() (library callers and tests that keep to one thread).
//
// Correctness: the parameters after one run are compared with a reference's
// (the default schedule's) element by element: |x - ref| <= 1e-4 * max(1,
// |ref|), NaN where the reference has NaN. Only float32 parameters of static
// shape are supported (others: kUnimplemented from Measure's build step).
//
// Through a runner command (RunnerOptions::command non-empty): for another
// target (codegen.triple, e.g. aarch64-linux-gnu) or a host run under a
// wrapper. The library, the inputs (the same seeded numbers) and a job file
// are written to a fresh directory; then `COMMAND MEASURE_PROGRAM JOB` runs
// under /bin/sh in its own process group (killed whole at the timeout).
// MEASURE_PROGRAM is kiln-measure built for the target
// (tools/kiln-tune/kiln_measure.c: it writes the arguments after one run
// beside the inputs and prints the times). The command's exit status and
// output say what failed: not found (127), died by a signal, the kernel's
// error, a missing report. The files are removed afterwards.
//
// Thread-compatible.
#ifndef KILN_COMPILER_TUNE_RUNNER_H_
#define KILN_COMPILER_TUNE_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/native_codegen.h"
#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace tune {

struct RunnerOptions {
  int warmup = 2;          // calls before timing, and at least kMinWarmupTime (pin_threads.h)
  int repeats = 7;          // the median of these is the result
  double timeout_s = 10.0;  // the whole child: load, check run, warm-up, repeats
  int threads = 1;          // the kernel thread pool's size
  uint64_t input_seed = 1;
  codegen::CodegenOptions codegen;
  // Empty: measure in a forked child of this process. Else a shell command
  // prefix that runs a program of the target (e.g. "qemu-aarch64 -L
  // /usr/aarch64-linux-gnu"; "env" for none).
  std::string command;
  std::string measure_program;  // kiln-measure for the target (with `command`)
  std::string work_dir;         // where the job directories go (empty: $TMPDIR or /tmp)
  // With `command` empty: the host measuring program (kiln-measure-host) to
  // exec per candidate; empty: a forked child without exec.
  std::string host_program;
  // Cold-cache timing (cache_evict.h): before each timed run the measuring
  // process reads cold_cache_bytes (0: twice its machine's last-level cache)
  // so the kernel's operands come from memory. The flush is not timed.
  bool cold_cache = false;
  int64_t cold_cache_bytes = 0;
};

// What each cold-cache flush of a measurement with `options` reads, in
// bytes (0 when it measures warm): cold_cache_bytes, or its default on the
// measuring machine (this one's DefaultColdCacheBytes(), or kiln-measure's
// 64 MiB through a runner command). Stored with each record (database.h).
int64_t ColdCacheFlushBytes(const RunnerOptions& options);

enum class MeasureState : uint8_t { kOk, kBuildFailed, kCrashed, kTimedOut, kRunFailed, kWrong };
const char* MeasureStateName(MeasureState s);

struct Measurement {
  MeasureState state = MeasureState::kRunFailed;
  std::string message;           // why it failed; empty when ok
  std::vector<double> times_us;  // each repeat
  double median_us = 0;
  // Every parameter's bytes after one run (for use as a reference).
  std::vector<std::vector<uint8_t>> outputs;
  bool ok() const { return state == MeasureState::kOk; }
};

// Measures the lowered `func` (its kernel is named func->name). When
// `reference` is non-null its outputs are what `func` must produce (same
// parameters, same seed); a mismatch gives kWrong.
Measurement Measure(const ir::PrimFunc& func, const RunnerOptions& options, const Measurement* reference = nullptr);

// Measure's runner-command path for a built library (runner_command.cc).
Measurement MeasureWithCommand(const std::vector<uint8_t>& shared_object, const std::string& kernel,
                               const std::vector<std::vector<int64_t>>& shapes, const RunnerOptions& options,
                               const Measurement* reference);
// Measure's host-program path (runner_command.cc): the same job files, run
// by `exec HOST_PROGRAM JOB`; its exits other than 0, 2 (the kernel's error)
// and 3 (a bad job) are crashes.
Measurement MeasureWithHostProgram(const std::vector<uint8_t>& shared_object, const std::string& kernel,
                                   const std::vector<std::vector<int64_t>>& shapes, const RunnerOptions& options,
                                   const Measurement* reference);
// The parameters of one seeded input set (uniform in [-1, 1), per parameter
// k from seed * 1000 + k), as both paths fill them.
std::vector<float> SeededInput(uint64_t seed, size_t k, int64_t count);
// OK when `got` matches `want` within the tolerance above (same count and
// sizes); else why not.
Status CompareOutputs(const std::vector<std::vector<uint8_t>>& got, const std::vector<std::vector<uint8_t>>& want);
// Fills the median from times_us and marks the measurement ok, after
// comparing its outputs with the reference's (kWrong when they differ).
Measurement Finish(Measurement m, const Measurement* reference);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_RUNNER_H_
