// Arena layout: offsets for buffers of known size and known lifetime inside
// one block of memory, so that buffers whose lifetimes do not overlap share
// bytes. The compiler lays out static arenas with it (compiler/memory/arena.h:
// the memory planner, the static graph) and the VM lays out arenas of
// symbolic size when a call's shapes are known (vm.builtin.alloc_arena), so
// that a symbolic function at given shapes gets the layout a function
// compiled for those shapes gets.
//
// Algorithm: first fit in the order given (callers pass definition order):
// each buffer takes the lowest offset, a multiple of `alignment`, where it
// overlaps no already-placed buffer that is live at the same time. Lifetimes
// are closed intervals [begin, end] of program positions: a buffer read by
// the instruction that writes another is live at that instruction, so an
// input and an output of one kernel never share bytes.
//
// Pure function; thread-safe.
#ifndef KILN_RUNTIME_ARENA_LAYOUT_H_
#define KILN_RUNTIME_ARENA_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {

constexpr uint64_t kArenaAlignment = 64;

struct ArenaBuffer {
  uint64_t bytes = 0;
  size_t begin = 0;  // first position where it is live (its definition)
  size_t end = 0;    // last position where it is live (begin when never read)
};

struct ArenaLayout {
  std::vector<uint64_t> offsets;  // one per buffer, multiples of the alignment
  uint64_t total_bytes = 0;       // arena size: a multiple of the alignment
};

// Pre: every begin <= end; alignment is a power of two; AlignUp of every size
// and their sum do not overflow.
ArenaLayout LayOutArena(const std::vector<ArenaBuffer>& buffers, uint64_t alignment = kArenaAlignment);

// `bytes` rounded up to a multiple of `alignment` (a power of two).
inline uint64_t AlignUp(uint64_t bytes, uint64_t alignment = kArenaAlignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

}  // namespace kiln

#endif  // KILN_RUNTIME_ARENA_LAYOUT_H_
