// kiln-bench: times calls of one function of a .vmfb with Google Benchmark.
//
//   kiln-bench FILE.vmfb [--function=main] [--input=SPEC]... [--threads=N]
//              [--executor=auto|vm|graph] [--name=LABEL] [--profile] [--trace=FILE]
//              [--profile_calls=N] [--benchmark_* flags]
//
// Inputs are given as for kiln-run (SPEC: @x.npy, inline values or
// SHAPExDTYPE=random:SEED). One untimed call checks that the function runs;
// then the benchmark reports wall time per call over 5 repetitions
// (mean, median, stddev), unless --benchmark_repetitions says otherwise.
// --profile and --trace=FILE then make --profile_calls (default 100) more
// calls with a profiler (runtime/profiler.h) and print its table / write its
// Chrome trace JSON (Perfetto opens it); the timed calls are never profiled.
#ifndef KILN_TOOLS_KILN_BENCH_BENCH_TOOL_H_
#define KILN_TOOLS_KILN_BENCH_BENCH_TOOL_H_

namespace kiln {
namespace tools {

int BenchToolMain(int argc, char** argv);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_KILN_BENCH_BENCH_TOOL_H_
