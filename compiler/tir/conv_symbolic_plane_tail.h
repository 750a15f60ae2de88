// The remainder tile of the symbolic conv schedule's flat (phase-)plane
// tiles (conv_symbolic_schedule.cc, StridedPlanes): convolutions that are
// not depthwise, on output rows narrower than 64 columns of a symbolic
// width, whose output plane is one flat span of (Ho - 1) * Wph + Wo columns.
//
// A span of nr columns or more runs span / nr whole tiles of nr columns,
// then the remainder span % nr (when not 0) in one tile of the narrowest
// width in `widths` (at least 8: one vector) that holds it, moved back to
// end at the span's end. Before, the last of ceil(span / nr) tiles was
// moved back: a one-row plane of 40 columns (PP-OCRv4 rec's 1 x 3 mixing
// convolutions at height 1) computed two tiles of 32, 64 columns for 40;
// now 32 + 8. The narrowest width and single columns keep the one loop.
//
// Header only: the schedule and its tests share the rule.
#ifndef KILN_COMPILER_TIR_CONV_SYMBOLIC_PLANE_TAIL_H_
#define KILN_COMPILER_TIR_CONV_SYMBOLIC_PLANE_TAIL_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kiln {
namespace tir {

// Which tiles of a flat span one tile loop computes.
enum class FlatTiles {
  kCover,  // ceil(span / nr) tiles, the last moved back to end at the span's end
  kWhole,  // span / nr tiles from column 0 (no remainder)
  kLast,   // one tile ending at the span's end
};

// The widths that may take the remainder of a span cut into tiles of nr
// columns: those of [begin, end) from 8 to nr, narrowest first. Fewer than
// two (nr the narrowest vector width, or 1): the span keeps kCover.
inline std::vector<int64_t> PlaneTailWidths(int64_t nr, const int64_t* begin, const int64_t* end) {
  std::vector<int64_t> out;
  for (const int64_t* w = begin; w != end; ++w) {
    if (*w >= 8 && *w <= nr) out.push_back(*w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Columns the tiles of nr compute for a span of `span` >= nr columns: what
// the rule above costs (the schedule's tests compare it with the old rule).
inline int64_t PlaneTailColumns(int64_t span, int64_t nr, const int64_t* begin, const int64_t* end) {
  const std::vector<int64_t> tails = PlaneTailWidths(nr, begin, end);
  if (tails.size() < 2) return (span + nr - 1) / nr * nr;
  const int64_t rem = span % nr;
  int64_t cols = span - rem;
  if (rem > 0) {
    for (int64_t w : tails) {
      if (rem <= w) {
        cols += w;
        break;
      }
    }
  }
  return cols;
}

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_SYMBOLIC_PLANE_TAIL_H_
