#include "tools/kiln-bench/roofline_table.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/status.h"

namespace kiln {
namespace tools {

std::optional<std::vector<KernelCostArg>> ParseProfileArgs(const std::string& shapes) {
  std::string s = shapes.substr(0, shapes.find("->"));
  std::vector<KernelCostArg> args;
  size_t p = 0;
  auto skip = [&] {
    while (p < s.size() && (s[p] == ' ' || s[p] == ',')) ++p;
  };
  for (skip(); p < s.size(); skip()) {
    KernelCostArg a;
    size_t bracket = s.find('[', p), comma = s.find(',', p);
    if (bracket != std::string::npos && (comma == std::string::npos || bracket < comma) &&
        std::isalpha(static_cast<unsigned char>(s[p]))) {
      size_t close = s.find(']', bracket);
      if (close == std::string::npos) return std::nullopt;
      a.is_tensor = true;
      const char* c = s.c_str() + bracket + 1;
      const char* end = s.c_str() + close;
      while (c < end) {
        char* next = nullptr;
        long long v = std::strtoll(c, &next, 10);
        if (next == c) break;
        a.dims.push_back(v);
        c = next;
        while (c < end && (*c == ',' || *c == ' ')) ++c;
      }
      p = close + 1;
    } else {
      const char* c = s.c_str() + p;
      char* next = nullptr;
      long long v = std::strtoll(c, &next, 10);
      if (next == c || (*next != '\0' && *next != ',' && *next != ' ')) return std::nullopt;
      a.value = v;
      p += static_cast<size_t>(next - c);
    }
    args.push_back(std::move(a));
  }
  return args;
}

std::map<std::string, ProgramKernelCost> KernelCosts(const Program& program) {
  std::map<std::string, ProgramKernelCost> costs;
  for (const ProgramNativeLibrary& lib : program.native_libraries) {
    if (lib.kernel_costs.size() != lib.kernel_names.size()) continue;
    for (size_t i = 0; i < lib.kernel_names.size(); ++i) costs[lib.kernel_names[i]] = lib.kernel_costs[i];
  }
  return costs;
}

std::string FormatRooflineTable(const std::vector<ProfileRow>& rows, const std::string& header,
                                const std::map<std::string, ProgramKernelCost>& costs, const MachinePeak& peak,
                                int threads) {
  int64_t base_ns = 0;
  for (const ProfileRow& r : rows)
    if (std::strcmp(r.category, kProfileInvoke) == 0) base_ns += r.total_ns;
  if (base_ns == 0)
    for (const ProfileRow& r : rows) base_ns += r.total_ns;
  size_t name_width = 4;
  for (const ProfileRow& r : rows) name_width = std::max(name_width, r.name.size());
  name_width = std::min<size_t>(name_width, 48);
  const double peak_gflops = peak.GflopsAt(threads), peak_gbs = peak.GbsAt(threads);

  std::string out = header;
  out += StrFormat("%12s %7s %8s %10s %10s %9s %8s %6s %2s  %-8s  %-*s  %s\n", "total us", "share", "count", "mean us",
                   "min us", "GFLOP/s", "GB/s", "roof%", "", "kind", static_cast<int>(name_width), "name", "shapes");
  int marked = 0;
  for (const ProfileRow& r : rows) {
    double share = base_ns > 0 ? 100.0 * static_cast<double>(r.total_ns) / static_cast<double>(base_ns) : 0.0;
    double mean_ns = r.count > 0 ? static_cast<double>(r.total_ns) / static_cast<double>(r.count) : 0.0;
    double min_ns = static_cast<double>(r.min_ns);
    std::string gflops, gbs, roof, mark;
    auto cost = std::strcmp(r.category, kProfileKernel) == 0 ? costs.find(r.name) : costs.end();
    if (cost != costs.end() && mean_ns > 0) {
      std::optional<std::vector<KernelCostArg>> args = ParseProfileArgs(r.shapes);
      std::optional<double> flops, bytes;
      if (args) {
        flops = EvaluateKernelCost(cost->second.flops, *args);
        bytes = EvaluateKernelCost(cost->second.bytes, *args);
      }
      if (flops) gflops = StrFormat("%.2f", *flops / mean_ns);
      if (bytes) gbs = StrFormat("%.2f", *bytes / mean_ns);
      if (flops && bytes) {
        // Seconds the kernel would take at the roofline (ns, as mean_ns).
        double gbs = peak.GbsAt(threads, *bytes);
        double roof_ns = std::max(*flops / peak_gflops, *bytes / gbs);
        double percent = 100.0 * roof_ns / mean_ns;
        roof = StrFormat("%.1f", percent);
        // The mark goes by the fastest call: on a shared machine a call that
        // was preempted inflates the mean many times over, which marked
        // kernels that run near their roofline whenever they get the core.
        double best_percent = min_ns > 0 ? 100.0 * roof_ns / min_ns : percent;
        if (best_percent < kFarBelowRoofPercent && share >= kFarBelowMinSharePercent) {
          mark = "<<";
          ++marked;
        }
      }
    }
    out += StrFormat("%12.3f %6.1f%% %8lld %10.3f %10.3f %9s %8s %6s %2s  %-8s  %-*s  %s\n",
                     static_cast<double>(r.total_ns) / 1e3, share, static_cast<long long>(r.count), mean_ns / 1e3,
                     min_ns / 1e3,
                     gflops.c_str(), gbs.c_str(), roof.c_str(), mark.c_str(), r.category,
                     static_cast<int>(name_width), r.name.c_str(), r.shapes.c_str());
  }
  std::string curve;
  for (const auto& [size, gbs] : peak.curve)
    curve += StrFormat("%s%.0f at %.0f KiB", curve.empty() ? "" : ", ", gbs * threads, size / 1024);
  out += StrFormat(
      "roofline at %d thread%s: %.1f GFLOP/s (%.1f per core, %s FMA); %.1f GB/s from memory, from caches %s (by "
      "the bytes a kernel moves) (%s%s); roof%% = time at the roofline / mean time; << marks %d kernel%s under "
      "%.0f%% of it even in their fastest call (min us) taking >= %.0f%% of the time\n",
      threads, threads == 1 ? "" : "s", peak_gflops, peak.gflops_per_core, peak.isa.c_str(), peak_gbs,
      curve.empty() ? "not measured" : curve.c_str(), peak.source == "measured" ? "measured now" : "cached in ",
      peak.source == "measured" ? "" : peak.source.c_str(), marked, marked == 1 ? "" : "s", kFarBelowRoofPercent,
      kFarBelowMinSharePercent);
  return out;
}

}  // namespace tools
}  // namespace kiln
