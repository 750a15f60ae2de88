// Pass on lowered TIR, run before inline_elementwise and the default
// schedule: a concatenation that stores a kernel's output becomes one nest
// per source, each writing its slice of the output:
//
//   for n, c, h, w:                                for n, c, h, w in (N, 24, H, W):
//     D[n, c, h, w] = if_then_else(c < 24,     =>    D[n, c, h, w] = A0[n, c, h, w]
//         A0[n, c, h, w],                          for n, c, h, w in (N, 72, H, W):
//         A1[n, c - 24, h, w])                       D[n, c + 24, h, w] = A1[n, c, h, w]
//
// Why: the select chain is evaluated per element (one branch per source),
// which keeps the loop from vectorizing into plain copies, and a source
// computed in the same kernel (an upsampling, a squeeze-and-excitation
// scale) was written whole to a temporary and copied. Split, each piece is
// a plain copy of one source into a slice, and inline_elementwise moves the
// source's own store into the slice (its "slice" reverse rewrite): the
// producer writes straight into the concatenation's output (PP-OCRv4 det's
// feature-pyramid concatenation of four upsampled maps).
//
// Rewritten: a top-level item (under the function's Allocates) that is a
// perfect nest of loops from 0 around one store at its loop point into a
// parameter buffer (the kernel's output: a concatenation kept in a
// temporary may be read in place by a pointwise convolution's schedule,
// conv_match.h, and is left alone), whose value is a chain
// if_then_else(v < b1, e0, if_then_else(v < b2, e1, .. ek)) on one loop
// variable v with constant, increasing bounds inside v's extent. Piece i
// runs v over [b_i, b_{i+1}) as v' + b_i from 0. Everything else is
// returned as the same node.
#ifndef KILN_COMPILER_TIR_SPLIT_CONCAT_H_
#define KILN_COMPILER_TIR_SPLIT_CONCAT_H_

#include <cstdint>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

ir::PrimFunc SplitConcatenations(const ir::PrimFunc& func);

// SplitConcatenations, then InlineElementwise (before the schedules); and
// once more when inlining moved a concatenation kept in a temporary into the
// output's store (a slice or a transpose read it: basic-pitch's harmonic
// stack of shifted spectra, concatenated on a last axis of 1 and transposed
// to channels), so each source is copied into its slice of the output
// instead of selected per element from temporaries. That second split takes
// only chains whose every piece stores at least kMinLateSplitPieceElements
// elements (a symbolic extent counted as 1): captcha_crnn's 40 LSTM steps
// of batch x 100, each a nest of its own, took 25 us against 16 us as the
// chain (attacut's two embedding gathers 2.5 against 1.8 us).
constexpr int64_t kMinLateSplitPieceElements = 1024;
ir::PrimFunc SplitConcatenationsAndInline(const ir::PrimFunc& lowered);

// Whether `func`, lowered, holds a nest SplitConcatenations rewrites (the
// concatenation kernels fuse-ops lets its sources join across a shape check).
bool HasSplittableConcatenation(const ir::PrimFunc& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_SPLIT_CONCAT_H_
