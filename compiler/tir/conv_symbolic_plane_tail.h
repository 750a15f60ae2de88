// The remainder tile of the symbolic conv schedule's flat (phase-)plane
// tiles (conv_symbolic_planes.cc, StridedPlanes): convolutions that are
// not depthwise, on output rows narrower than 64 columns of a symbolic
// width, whose output plane is one flat span of (Ho - 1) * Wph + Wo columns.
//
// A span of nr columns or more runs span / nr whole tiles of nr columns;
// the remainder rem = span % nr (when not 0) goes, with w the narrowest
// tail width (8, 16, ... up to nr) that holds it:
//   - into the last whole tile, widened to nr + w columns and moved back to
//     end at the span's end, when w < nr, the span has nr + w columns and
//     the tile's accumulators fit the registers (PlaneTailWidens): one pass
//     over the weights for the last columns;
//   - else into a tile of w columns of its own, moved back to end at the
//     span's end.
// Before, the last of ceil(span / nr) tiles was moved back: a one-row plane
// of 40 columns (PP-OCRv4 rec's 1 x 3 mixing convolutions at height 1)
// computed two tiles of 32, 64 columns for 40; now one tile of 40. The
// narrowest width and single columns keep the one loop. Those convolutions
// alone (1 x 3 with a scale, shift and swish, symbolic H and W, at 1 x 40,
// one thread, loaded machine, CPU time per call in one kiln-bench run):
// 960 -> 60 130 -> 81 us (a tail tile of its own: 113 us; the pinned
// build's 8 x 40 tiles: 94 us), 480 -> 60 62 -> 41 us (pinned 46 us).
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
  kWholeButLast,  // span / nr - 1 tiles from column 0 (a widened tile follows)
  kLast,   // one tile ending at the span's end
  kFirst,  // one tile from column 0 (it may pass the span's end: SmallPlanes)
};

// Whether a tile of `rows` channels x nr columns may widen to nr + w
// columns: its accumulators (vectors of 16 lanes, a part vector counted
// whole) within `max_vectors`.
inline bool PlaneTailWidens(int64_t nr, int64_t w, int64_t rows, int64_t max_vectors) {
  return rows * ((nr + w + 15) / 16) <= max_vectors;
}

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

// The widths of the tiles, in order, that the rule above runs over a span
// of `span` >= nr columns with tiles of `rows` channels (what the schedule's
// tests check against the lowered kernel).
inline std::vector<int64_t> PlaneTailPlan(int64_t span, int64_t nr, int64_t rows, int64_t max_vectors,
                                          const int64_t* begin, const int64_t* end) {
  const std::vector<int64_t> tails = PlaneTailWidths(nr, begin, end);
  std::vector<int64_t> plan;
  if (tails.size() < 2) {
    plan.assign(static_cast<size_t>((span + nr - 1) / nr), nr);
    return plan;
  }
  const int64_t rem = span % nr;
  plan.assign(static_cast<size_t>(span / nr), nr);
  if (rem == 0) return plan;
  for (int64_t w : tails) {
    if (rem > w) continue;
    if (w < nr && span >= nr + w && PlaneTailWidens(nr, w, rows, max_vectors)) {
      plan.back() = nr + w;
    } else {
      plan.push_back(w);
    }
    break;
  }
  return plan;
}

}  // namespace tir
}  // namespace kiln

#endif  // KILN_COMPILER_TIR_CONV_SYMBOLIC_PLANE_TAIL_H_
