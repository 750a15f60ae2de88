// oneDNN (Debian's build) runs on libgomp, whose worker threads keep spinning
// for a while after every parallel region by default. Between Kiln's kernels
// they then compete with Kiln's own pool for the same cores. libgomp reads
// OMP_WAIT_POLICY once, when it is loaded (before main), so a tool that wants
// passive waiting must have it in its environment from the start.
//
// PreferPassiveOpenMpWait: when OMP_WAIT_POLICY is unset, sets it to
// "passive" and re-executes the program (/proc/self/exe) with the same
// arguments; returns normally when the variable is already set (by the user
// or by the re-exec) or when re-executing is not possible. Call it first in
// main. Applications embedding Kiln set the variable themselves.
#ifndef KILN_TOOLS_COMMON_OPENMP_ENV_H_
#define KILN_TOOLS_COMMON_OPENMP_ENV_H_

namespace kiln {
namespace tools {

void PreferPassiveOpenMpWait(char** argv);

}  // namespace tools
}  // namespace kiln

#endif  // KILN_TOOLS_COMMON_OPENMP_ENV_H_
