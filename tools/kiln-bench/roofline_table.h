// kiln-bench --profile's table with a roofline per kernel: the profiler's rows
// (runtime/profiler.h) plus, for each generated kernel whose .vmfb carries its
// cost (compiler/tir/kernel_cost.h), its achieved GFLOP/s and GB/s and the
// share of its roofline it reaches.
//
// A kernel's counts are the cost expressions evaluated with the argument
// shapes of its row. Its roofline time is the larger of flops / (peak FLOP/s
// per core x threads) and bytes / bandwidth at those threads (MachinePeak);
// "roof%" is that time over the measured mean. A row is marked "<<" when even
// its fastest call ("min us") reaches under 10 % of its roofline and it takes
// at least 5 % of the time: the kernels to look at first. (By the mean alone,
// calls preempted on a loaded machine marked kernels that are not slow.) Rows without a cost (library calls, builtins, a
// kernel of an older .vmfb) leave the columns empty.
#ifndef KILN_TOOLS_KILN_BENCH_ROOFLINE_TABLE_H_
#define KILN_TOOLS_KILN_BENCH_ROOFLINE_TABLE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/kernel_cost.h"
#include "runtime/program.h"
#include "runtime/profiler.h"
#include "tools/kiln-bench/machine_peak.h"

namespace kiln {
namespace tools {

constexpr double kFarBelowRoofPercent = 10.0;
constexpr double kFarBelowMinSharePercent = 5.0;

// The arguments of a profile row's shapes text ("float32[1, 784], 5 -> ..."):
// tensors by dims, integers by value; nullopt for anything else.
std::optional<std::vector<KernelCostArg>> ParseProfileArgs(const std::string& shapes);

// Kernel costs by kernel name, from every native library of `program`.
std::map<std::string, ProgramKernelCost> KernelCosts(const Program& program);

// The table (FormatTable's header line, then the rows with the roofline
// columns) and a legend with the peak used.
std::string FormatRooflineTable(const std::vector<ProfileRow>& rows, const std::string& header,
                                const std::map<std::string, ProgramKernelCost>& costs, const MachinePeak& peak,
                                int threads);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_KILN_BENCH_ROOFLINE_TABLE_H_
