// Arena layout for the compiler: the memory planner (plan_memory.h) lays out
// statically sized tensors with it, and so does the static graph
// (compiler/relax/graph_codegen.cc). The algorithm (first fit in definition
// order, 64-byte aligned, closed lifetimes) lives in the runtime
// (runtime/arena_layout.h), because the VM lays out arenas of symbolic size
// with the same code once a call's shapes are known.
#ifndef KILN_COMPILER_MEMORY_ARENA_H_
#define KILN_COMPILER_MEMORY_ARENA_H_

#include "runtime/arena_layout.h"

namespace kiln {
namespace memory {

constexpr uint64_t kStorageAlignment = kArenaAlignment;

using ::kiln::AlignUp;
using ::kiln::ArenaBuffer;
using ::kiln::ArenaLayout;
using ::kiln::LayOutArena;

}  // namespace memory
}  // namespace kiln

#endif  // KILN_COMPILER_MEMORY_ARENA_H_
