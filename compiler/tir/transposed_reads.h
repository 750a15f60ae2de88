// BlockTransposedReads: elementwise nests that read a matrix across its rows
// (a transpose fused with the arithmetic around it) visit it in blocks of
// kTransposeBlock of the outer loop's values, so that each row of the read
// matrix is read a whole cache line at a time.
//
// Matched (lowered, default kinds chosen): a loop A of static extent that
// is a multiple of kTransposeBlock (at least twice it; serial or parallel)
// whose body is, through loops of extent 1, one serial loop B of static
// extent >= kTransposeBlock whose body is, through loops of extent 1, one
// BufferStore S with no loop or allocation inside, where
//   - S's indices hold A's and B's variables each as a whole index (every
//     (a, b) writes its own element) and its value never loads S's buffer;
//   - some load in the value has A's variable as its last index and B's
//     variable in another one (it reads down a column: one float per row).
// As lowered, magika's layer-norm output is written transposed
// ([512, 256] -> [256, 512]): for each of 256 columns a loop over 512 rows
// 1 KiB apart, whose lines fall into 4 of the L1's 64 sets, so every load
// missed L1 (105 us for 131 K floats, 1 thread).
//
// Rewrite: for a_o in kind(A)(E_A / T): for b in B: for a_i in T: (the
// unit loops) S with a = a_o * T + a_i. Each b reads T consecutive floats
// of one row; the T output rows are written front to back. The stores
// are independent and nothing reads S's buffer, so any order computes the
// same values. Returns `func` itself when nothing matches.
#ifndef KILN_COMPILER_TIR_TRANSPOSED_READS_H_
#define KILN_COMPILER_TIR_TRANSPOSED_READS_H_

#include <cstdint>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// Values of the outer loop per block: 16 floats, one 64-byte line.
constexpr int64_t kTransposeBlock = 16;

ir::PrimFunc BlockTransposedReads(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_TRANSPOSED_READS_H_
