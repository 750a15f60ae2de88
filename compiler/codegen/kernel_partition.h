// Internal to compiler/codegen: splits a library's kernels into parts that
// are compiled as separate LLVM modules, on separate threads, and linked into
// one shared object (native_codegen.cc).
//
// LLVM's optimizer and instruction selection take most of a symbolic model's
// compile time (ppocr_cls_v2: 86 % of kiln-compile's CPU samples are in
// libLLVM, perf) and run on one thread per module; each kernel is independent of the others (no
// kernel calls another), so a part's code does not depend on which other
// kernels share its module.
//
// The parts depend only on the kernels, never on the machine or the thread
// count, so a model compiles to the same library everywhere. Kernels that
// may be copies of each other (the same size and parameter count) go to the
// same part, where merge_outlined.h can still merge their loops.
#ifndef KILN_COMPILER_CODEGEN_KERNEL_PARTITION_H_
#define KILN_COMPILER_CODEGEN_KERNEL_PARTITION_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace codegen {

// At most this many parts.
constexpr size_t kMaxKernelParts = 8;
// A library whose kernels sum to fewer TIR nodes than this stays one module:
// thread start and a second object are not worth it (constant folding builds
// many small libraries).
constexpr uint64_t kMinPartitionedNodes = 20000;

// The number of statement and expression nodes of `func`'s body: a stand-in
// for the LLVM IR it becomes.
uint64_t KernelNodeCount(const ir::PrimFunc& func);

// Indices into `funcs`, one list per part, each in input order; one part
// holding everything when the library is small or has a single group.
// Groups of kernels with the same node count and parameter count are placed
// whole, the largest first, each on the part with the least so far.
std::vector<std::vector<size_t>> PartitionKernels(const std::vector<ir::PrimFunc>& funcs);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_KERNEL_PARTITION_H_
