// Which CPUs this process may run on, one per physical core.
//
// The thread pool sizes itself by it (DefaultThreadCount: SMT siblings share
// a core's FMA units, so a second thread on one core adds little to a
// kernel), and kiln-tune's measuring processes pin their kernel threads to
// it (compiler/tune/pin_threads.h).
#ifndef KILN_RUNTIME_CPU_TOPOLOGY_H_
#define KILN_RUNTIME_CPU_TOPOLOGY_H_

#include <vector>

namespace kiln {

// The lowest-numbered CPU of each physical core (a distinct pair of sysfs
// topology/physical_package_id and core_id) among the CPUs of this process's
// affinity mask, in increasing order. Where sysfs does not say, each CPU is a
// core of its own. Empty when the affinity mask cannot be read.
std::vector<int> OneCpuPerPhysicalCore();

}  // namespace kiln

#endif  // KILN_RUNTIME_CPU_TOPOLOGY_H_
