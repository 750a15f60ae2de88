// Which vectorized loops the kernel emitter writes as explicit LLVM vectors
// instead of a scalar loop with vectorize metadata.
//
// A T.vectorized loop of constant extent nested inside a T.unroll loop (the
// register tiles of the matmul and conv schedules: acc[ii, jj] with ii
// unrolled, jj vectorized) reaches LLVM as straight-line scalar code once
// its loop unroller has run, and the SLP vectorizer then groups the scalars.
// For a 10-column matmul tile it packed scalars of different rows into one
// vector and built every operand with shuffles (the MLP's 128 -> 10 layer:
// 9 us for 5 K useful FMAs). Whole 16-float widths fared better but not
// always well: the depthwise row tiles (6 rows of 32 columns, taps reading
// rows 30 floats apart) came out as vectors assembled from 8-byte pieces
// (vbroadcastsd, vinsertf64x4, vpermt2pd): 192 channels at 28^2 took 67 us,
// as explicit vectors 46 us. Such loops, of any width up to 64 lanes, are
// emitted here as vectors of 16 and one narrower vector per chunk, each
// operand one vector load or a splat, which the SLP vectorizer leaves alone.
// (Whole models, one thread, kernel profiles: MobileNetV2 -2.6 %, ResNet-18
// -1.3 %, SqueezeNet unchanged; matmul kernels unchanged within noise.)
//
// The same holds for a vectorized loop that touches only stack buffers (the
// halving steps of a row reduction's tree, reduce_schedule.h), wherever it
// is: LLVM promotes those small arrays to scalars, and for softmax's
// 128-column rows its SLP vectorizer rebuilt the max tree as about 70 4-lane
// shuffles and maxes (explicit: 11 instructions; softmax over 512 rows of
// 128, one thread, kiln-bench medians: 27.6 -> 23.5 us).
//
// Only simple bodies qualify (everything else keeps the scalar loop):
//   - one float32 BufferStore, or a sequence of them; a float16 / bfloat16
//     store qualifies when its value is a cast of a float32 value (rounded
//     once per lane, --precision=fp16|bf16);
//   - values built from float32 loads (or float16 / bfloat16 loads cast to
//     float32: one vector load of halves, widened), literals, + - * /, min, max, the fma
//     intrinsic, erf, tanh, sigmoid and exp (the activations of fused matmul
//     and conv epilogues: a 256 x 1536 GELU epilogue left to the SLP
//     vectorizer came out as 8-lane vectors), and selects on a float
//     comparison (< <= > >=); any
//     subexpression that does not use the loop variable is computed once
//     per chunk and splat (so anything goes there);
//   - every access that uses the loop variable moves by exactly one element
//     per iteration in the buffer's flat (row-major) offset, or (loads only)
//     by two, and its indices are sums, differences and constant multiples
//     of variables;
//   - a buffer both stored and loaded in the body is loaded only at the
//     store's own indices (an accumulator: acc[i, j] = fma(a, b, acc[i, j])),
//     so computing one statement's lanes before the next's keeps the loop's
//     meaning.
#ifndef KILN_COMPILER_CODEGEN_VECTOR_LOOP_H_
#define KILN_COMPILER_CODEGEN_VECTOR_LOOP_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace codegen {

// The coefficient of `var` in the flat row-major offset of `buf` at
// `indices`, when the offset is affine in `var` with a static coefficient;
// nullopt otherwise (a division, a modulo, a product of two variables, a
// symbolic extent in a dimension the coefficient needs).
std::optional<int64_t> FlatCoefficient(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices,
                                       const ir::VarNode* var);

// The stores of `s` in order, when it is only stores and sequences of them
// (false otherwise).
bool CollectStores(const ir::Stmt& s, std::vector<const ir::BufferStoreNode*>* out);

// Loads that move by this many elements per iteration qualify too: the
// even or odd columns of a row (the stride-2 window schedules' deinterleaved
// rows, window_deinterleave.h). As a scalar loop LLVM unrolls such a short
// loop and the SLP vectorizer assembles each vector lane by lane (vinsertps,
// MobileNetV2's 6-column rows) or, for longer rows, the loop vectorizer uses
// gathers; as an explicit vector it is one wide masked load and one shuffle.
constexpr int64_t kMaxLoadStride = 2;

// And by three when the caller allows it: one of three interleaved channels
// (an NHWC image's pixels read channel by channel, deinterleave_channels.h):
// one wide masked load of 3 x lanes and one shuffle. Allowed only for loops
// of whole 16-lane chunks, the form that pass writes, so that the static
// transposes LLVM vectorizes as before keep their code.
constexpr int64_t kDeinterleaveStride = 3;

// Whether `body`, the body of a vectorized loop over `var`, qualifies for
// explicit vectors (see the file comment). `strided` (optional) is set when
// some load moves by kMaxLoadStride (or, with `stride3`, kDeinterleaveStride)
// elements per iteration; `repeated` (optional) when some load repeats its
// elements (RepeatFactor).
bool EmitsAsVectors(const ir::Stmt& body, const ir::VarNode* var, bool* strided = nullptr, bool* repeated = nullptr,
                    bool stride3 = false);

// Loads whose last index is e // k, e moving by one per iteration of `var`
// and k a power of two up to kMaxRepeat, repeat each element k times: a
// nearest resize by k along the row (x[.., o // 2], op_resize.cc's
// NearestFactor). LLVM's loop vectorizer built each 8-lane vector of such a
// load from four broadcasts and three shuffles (64 x 80^2 -> 160^2: 111 us,
// ONNX Runtime 80); explicitly it is one contiguous load of lanes / k
// elements and one shuffle that repeats each k times. The lanes of a chunk
// read consecutive elements only when e is a multiple of k at the chunk's
// first lane: the rest of e (what is not `var`) must be a multiple of k
// structurally, and the emitter starts chunks at multiples of 16.
constexpr int64_t kMaxRepeat = 16;

// k for such a load of `buf` at `indices` (the other indices free of
// `var`, no explicit strides); 0 otherwise.
int64_t RepeatFactor(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices, const ir::VarNode* var);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_VECTOR_LOOP_H_
