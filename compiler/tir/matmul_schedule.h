// ScheduleMatmuls: rewrites matmul-like loop nests of lowered TIR into a
// register-blocked micro-kernel, with elementwise epilogues fused in.
//
// A matmul nest (what legalize + LowerBlocks produce for R.matmul, batched or
// not) is a perfect nest over (b0.., i, j, k), all loops starting at 0, whose
// body is
//   if k == 0: C[b0.., i, j] = <float constant>
//   C[b0.., i, j] = C[b0.., i, j] + A[.., i, k] * B[.., k, j]     (float32 or int32)
// where the leading indices of A and B use neither i, j nor k (batch
// broadcasting is fine). The operands may appear in either order.
//
// The rewrite computes the output in tiles of MR rows x NR columns (6 x 64
// when N >= 64 or symbolic, 6 x 32 when a static N > 64 leaves at most 32
// columns in its last 64-column block, 8 x 32 below 64; fewer rows when M is
// smaller, wider one-row tiles; MR <= 8, NR a multiple of 16 floats, or N when N is
// smaller): a local accumulator
// acc[MR, NR] is zeroed, then for each k every row ii (unrolled) gets
// acc[ii, :] = fma(A[row0 + ii, k], B[k, col0 : col0 + NR], acc[ii, :]) with
// the column loop vectorized, so LLVM keeps acc in vector registers and the
// inner loop is broadcast x vector FMAs. Rows that do not fill a tile (M % MR)
// run as at most one tile each of 4, 2 and 1 rows (the remainder's binary
// digits) when M is static; with a symbolic M as a tile of 4 rows when the
// remainder is 4 or more and one tile of exactly the rows left (1 to 3,
// chosen at run time), each skipped when it is empty;
// with a static N above NR the last column block is moved back to end at N
// (overlapping the previous one: a few columns computed and stored twice,
// with equal values); with a symbolic N the block that does not fill NR runs
// as 16-column blocks, the last moved back to end at N, when N >= 16, and as
// a vectorized loop of the remaining width otherwise. A one-row tile keeps 4
// partial sums over interleaved k (enough independent FMAs), a two-row tile
// of 32 columns 2, added up before the store.
// Tiles (batch x column blocks x row blocks, rows fastest so consecutive
// tiles share a panel of B) form one loop, parallel when num_threads_hint >= 2
// and M * N * K >= kMinParallelMatmulWork.
//
// Batch folding: with a B shared by every batch element (no batch variable
// in B's index), the batch is folded into the rows: one (batch * M) x K
// matrix, row r being batch element r / M, row r % M. Tiles then fill MR
// rows even when M is 1 and read each panel of B once. Static or symbolic
// extents (a static unit batch is left as it is); with a symbolic M or
// batch extent each tile first fills a small table of its rows' indices
// (one division for its first row, then counting on with carries), which
// the k loop reads, so no division by a run-time value sits in it.
//
// Packing: for static shapes with M >= 256, N a multiple of NR whose rows
// are a multiple of 512 bytes apart, and K x NR panels of 32 KiB or more
// (where the panel's rows would fight over cache sets), B is first copied
// per call into a workspace Bp[N / NR, K, NR] that the kernel streams (with
// 128 rows the copy cost more than it saved: 128x1024x256 0.88x oneDNN
// packed, 0.98x not, one thread, idle machine). With symbolic rows (M or a
// folded batch) and such a B (static K and N), both kernels are built and
// an if on the rows at run time takes the packed one from 256 rows. Packing
// constant weights at compile time needs a Relax-level layout rewrite (not
// done here).
//
// Blocked weights: B read as B[j / 64, k, j % 64] (a [N/64, K, 64] weight,
// R.matmul's weight_layout "KN64n") takes 64-column tiles that read the
// panel of their column block directly: the packed kernel without the copy.
// When N is not a multiple of 64 (weight_columns) the last panel is padding
// past N: its tile runs the full-width FMAs and stores only the columns
// before N (no overlapping last block, which would straddle two panels).
//
// Prefetching: a B of static shape and 2 MiB or more (a weight that does
// not stay in L2 between calls; in a model it streams from L3 or memory)
// is prefetched 4 KiB of the tile's panel ahead: each k step hints the
// lines of B's row k + 4096 / (4 NR) (clamped to the last row), one hint a
// 64-byte line. ResNet-18 (1 thread, CPU time a call, Zen 5, loaded
// machine): 0.92-0.95x in four rounds, mostly layer 4's Winograd products
// (17 MB of weights a call, 944 us in the model against 607 us alone).
//
// Epilogue fusion: the perfect nests right after the matmul, over the same
// extents, that store D[v..] = f(loads of chain buffers at v.., other loads)
// where the chain is C and the earlier stages' outputs (a stage may read
// several of them, as GELU's x * 0.5 * (1 + erf(x / sqrt 2)) reads x twice),
// are applied to the accumulators; "at v.." also admits index 0 for a loop of
// extent 1 (a unit batch dimension). The longest run of such stages whose
// intermediates are allocated in the function and read nowhere else is
// fused: only its last output is stored. Allocations that are no longer used
// are removed.
//
// Results differ from the naive loop only by FMA contraction (one rounding
// per multiply-add instead of two). An int32 nest (ONNX MatMulInteger's
// widened operands) gets the same tiles with multiply and add for the FMA:
// its sums are exact in any order, so it equals the naive loop bit for bit. Pre: `func` is lowered (no BlockRealize).
// Returns the same PrimFunc when no matmul nest is found.
#ifndef KILN_COMPILER_TIR_MATMUL_SCHEDULE_H_
#define KILN_COMPILER_TIR_MATMUL_SCHEDULE_H_

#include <cstdint>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule_knobs.h"

namespace kiln {
namespace tir {

// Columns of a blocked weight (R.matmul weight_layout "KN64n", made from
// constants by transform/pack_matmul_weights.h): the tiles' width, so a
// tile streams one contiguous K x 64 panel with no copy per call.
constexpr int64_t kMatmulWeightBlock = 64;

// Multiply-adds (M * N * K) below which the tile loop stays serial.
constexpr int64_t kMinParallelMatmulWork = 64 * 1024;

// `knobs` (schedule_knobs.h) override the tile, packing and parallel rules;
// empty knobs give the rules above.
ir::PrimFunc ScheduleMatmuls(const ir::PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs = {});

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_MATMUL_SCHEDULE_H_
