// One-row matmuls whose B is a transposed copy of another tensor, as dot
// products along that tensor's contiguous axis (used by ScheduleMatmuls).
//
// Attention over an encoder's memory in a decoder step (one query row):
// scores[b, 0, j] = sum_k q[b, 0, k] * memory[b, j, k], lowered as a copy
// Bt[b, k, j] = memory[b, j, k] followed by a matmul reading Bt. The tiled
// matmul then spends its time on the transpose (a gather when the number of
// columns j is symbolic) and on one-row tiles. Read in place, each output is
// a dot product of two contiguous rows of K floats: 16-lane fma chains over
// k, four columns at a time (four independent chains hide the fma latency
// and share the loads of q), each reduced by a lane tree, the k % 16 tail
// in scalars. The copy and its buffer go away.
//
// Matched: a matmul nest (batch.., i, j, k) with i of extent 1, A read with
// k as its last index, and B a buffer stored by exactly one earlier
// statement of the same sequence, a plain copy B[v..] = S[w..] over a
// perfect nest (every index of both a loop variable of that nest, each of
// B's once) with S float32, compact, and not stored between the copy and
// the matmul; B's dimension read as k must be S's last (so S[.., j, k] is
// contiguous along k) and nothing else may read B.
#ifndef KILN_COMPILER_TIR_MATMUL_DOT_H_
#define KILN_COMPILER_TIR_MATMUL_DOT_H_

#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// Lanes of one column's accumulator: one AVX-512 register of floats.
constexpr int64_t kDotLanes = 16;
// Columns computed together (independent fma chains).
constexpr int64_t kDotCols = 4;

// Whether `copy` is the plain copy into `b` described above such that the
// matmul's load b[b_idx] (k = `k`, j = `j`) reads S[*s_idx] with k as its
// last index only; fills *s and *s_idx.
bool MatchTransposedCopy(const ir::Stmt& copy, const ir::Buffer& b, const std::vector<ir::PrimExpr>& b_idx,
                         const ir::VarNode* j, const ir::VarNode* k, ir::Buffer* s, std::vector<ir::PrimExpr>* s_idx);

// The dot-product kernel of the nest `loops` (batch.., i, j, k; i of extent
// 1): C[c_idx] = init + sum_k A[a_idx] * S[s_idx], indices over the nest's
// variables. When `threads` > 1 the outermost batch loop is parallel, or
// without one the loop over groups of four columns.
ir::Stmt DotProductMatmul(const std::vector<const ir::ForNode*>& loops, const ir::Buffer& c,
                          const std::vector<ir::PrimExpr>& c_idx, const ir::PrimExpr& init, const ir::Buffer& a,
                          const std::vector<ir::PrimExpr>& a_idx, const ir::Buffer& s,
                          const std::vector<ir::PrimExpr>& s_idx, int threads);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_MATMUL_DOT_H_
