#include "runtime/arena_layout.h"

#include <algorithm>
#include <utility>

#include "runtime/status.h"

namespace kiln {

ArenaLayout LayOutArena(const std::vector<ArenaBuffer>& buffers, uint64_t alignment) {
  KILN_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0);
  ArenaLayout layout;
  layout.offsets.resize(buffers.size());
  // Placed buffers live at the same time as the one being placed, by offset.
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const ArenaBuffer& b = buffers[i];
    KILN_CHECK(b.begin <= b.end);
    uint64_t size = AlignUp(b.bytes, alignment);
    busy.clear();
    for (size_t j = 0; j < i; ++j) {
      const ArenaBuffer& o = buffers[j];
      if (o.begin <= b.end && b.begin <= o.end) busy.emplace_back(layout.offsets[j], AlignUp(o.bytes, alignment));
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto& used : busy) {
      if (offset + size <= used.first) break;
      offset = std::max(offset, used.first + used.second);
    }
    layout.offsets[i] = offset;
    layout.total_bytes = std::max(layout.total_bytes, offset + size);
  }
  return layout;
}

}  // namespace kiln
