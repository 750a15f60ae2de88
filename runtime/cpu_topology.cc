#include "runtime/cpu_topology.h"

#include <sched.h>

#include <cstdio>
#include <set>
#include <string>
#include <utility>

namespace kiln {
namespace {

// The first line of a small sysfs file, or "" when it cannot be read.
std::string ReadFirstLine(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return "";
  char buf[256];
  std::string line;
  if (std::fgets(buf, sizeof(buf), f) != nullptr) line = buf;
  std::fclose(f);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace

std::vector<int> OneCpuPerPhysicalCore() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return {};
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask)) continue;
    std::string topo = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::string package = ReadFirstLine(topo + "physical_package_id");
    std::string core = ReadFirstLine(topo + "core_id");
    if (package.empty() || core.empty()) core = "cpu" + std::to_string(cpu);
    if (seen.emplace(package, core).second) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace kiln
