// Pass: dispatch-int8-matmul — run R.matmul_integer on the CPU's 8-bit
// kernel (kernels/int8_matmul_kernels.cc: VNNI / AMX, operands kept 8-bit).
//
//   y = R.matmul_integer(a, B, za, zb)     B, zb constants
// becomes
//   y = R.call_dps_packed("kiln.int8.matmul_integer_packed", (a, Bp, Bterms, za), out_sinfo=...)
// with Bp int8 [ceil(N/16), ceil(K/4), 64] (B in the kernel's layout,
// kernels/int8_pack.h) and Bterms int32 [2, 16*ceil(N/16)] (B's column sums
// and each column's effective zero point zb - s_b, s_b = 128 for uint8 B),
// both computed here once; the .vmfb stores B as int8, not as int32 copies.
// Any other B (a graph input, a computed tensor) goes to
//   y = R.call_dps_packed("kiln.int8.matmul_integer", (a, B, za, zb), out_sinfo=...)
// which packs it on every call. A call whose result shape is not known stays
// (its legalization reports it).
//
// CPU targets only: the GPU pipeline legalizes R.matmul_integer to a generic
// int32 kernel instead (a CPU packed function cannot run between GPU
// launches).
//
// Pre: normalized and flattened (A-normal form). Post: normalized. No
// failures of its own.
#ifndef KILN_COMPILER_TRANSFORM_DISPATCH_INT8_MATMUL_H_
#define KILN_COMPILER_TRANSFORM_DISPATCH_INT8_MATMUL_H_

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

Result<ir::IRModule> DispatchInt8Matmul(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_DISPATCH_INT8_MATMUL_H_
