// MatchSymbolicChannelConcat: the concatenation along channels that a
// pointwise convolution of symbolic height and width reads, so that the
// symbolic conv schedule (conv_symbolic_schedule.h) reads its sources in
// place instead of the copy (YOLOv8's C2f blocks end in a concatenation read
// by a 1x1 convolution; a source may be the kernel's own buffer, an
// elementwise result fused before it).
//
// Recognized: a perfect nest of 4 loops from 0 (any kinds: the default
// schedule may have parallelized or vectorized them) over dst's extents
// (provably equal, symbolic allowed; the channel extent static), storing
//   dst[n, c, y, x] = if_then_else(c < K1, A[n, c, y, x],
//                       if_then_else(c < K2, B[n, c - K1, y, x], .. Z[n, c - Kk, y, x]))
// (concatenate along axis 1 as legalized), each source a compact float32
// buffer of rank 4 whose batch, height and width are provably dst's and
// whose channel extent is static and equal to its slice. An index of a loop
// of extent 1 may be the constant 0 (a static batch of one).
#ifndef KILN_COMPILER_TIR_CONV_SYMBOLIC_CONCAT_H_
#define KILN_COMPILER_TIR_CONV_SYMBOLIC_CONCAT_H_

#include <cstdint>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace tir {

// One source of the concatenation: channels [c0, c0 + count) of dst.
struct SymConcatSource {
  ir::Buffer buffer;
  int64_t c0 = 0, count = 0;
};

// Whether `s` is such a nest storing `dst`; *out gets the sources in channel
// order (unchanged when false).
bool MatchSymbolicChannelConcat(const ir::Stmt& s, const ir::Buffer& dst, std::vector<SymConcatSource>* out);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_SYMBOLIC_CONCAT_H_
