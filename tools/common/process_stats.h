// What a tool reports about its own process: peak resident memory and a
// human-readable byte count.
//
// Thread-safe: no state.
#ifndef KILN_TOOLS_COMMON_PROCESS_STATS_H_
#define KILN_TOOLS_COMMON_PROCESS_STATS_H_

#include <cstdint>
#include <string>

namespace kiln {
namespace tools {

// The process's peak resident set size in bytes: Linux's VmHWM
// (/proc/self/status), which ResetPeakRss can lower, else getrusage's
// ru_maxrss (since the process started); 0 where the platform does not say.
uint64_t PeakRssBytes();

// Lowers the peak to the current RSS (Linux >= 4.0: "5" to
// /proc/self/clear_refs), so PeakRssBytes measures from now; false when the
// platform does not allow it.
bool ResetPeakRss();

// CPU time the calling thread has used, in seconds (CLOCK_THREAD_CPUTIME_ID);
// 0 where the platform does not say.
double ThreadCpuSeconds();

// "512 B", "1.5 KiB", "12.3 MiB", "2.00 GiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_PROCESS_STATS_H_
