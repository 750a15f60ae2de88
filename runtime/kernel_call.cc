#include "runtime/kernel_call.h"

#include <atomic>
#include <cstdint>
#include <utility>

#include "runtime/allocator.h"
#include "runtime/thread_pool.h"

namespace kiln {
namespace {

// Per-call state behind kiln_kernel_env::ctx.
struct CallState {
  ThreadPool* pool = nullptr;
  std::atomic<bool> has_error{false};  // claimed by the first set_error
  std::string error;
};

int32_t StateParallelFor(void* ctx, int32_t num_tasks, kiln_task_fn fn, void* closure) {
  auto* state = static_cast<CallState*>(ctx);
  if (state->pool == nullptr) {
    for (int32_t i = 0; i < num_tasks; ++i) {
      int32_t r = fn(i, num_tasks, closure);
      if (r != 0) return r;
    }
    return 0;
  }
  return state->pool->ParallelFor(num_tasks, fn, closure);
}

// Workspaces (packing buffers) are asked for on every kernel call. Each thread
// keeps up to kCachedWorkspaces blocks its kernels freed, the largest ones, and
// hands them out again (the smallest that fits), so a steady stream of calls
// allocates nothing. A block carries its size and header length in the 16
// bytes before the pointer returned (the header is as large as the alignment,
// at least 64 bytes). Eight: a fused kernel may hold several at once (PP-OCRv4
// det's FPN concatenation, seven intermediates of up to 2.4 MB); with four,
// and the first that fitted handed out, its three large ones were allocated
// afresh each call, their pages faulted in again (about 8 ms of 70).
constexpr int kCachedWorkspaces = 8;

struct WorkspaceBlock {
  void* ptr = nullptr;  // as returned to the kernel
  uint64_t bytes = 0;
};

struct WorkspaceCache {
  WorkspaceBlock blocks[kCachedWorkspaces];
  int count = 0;
  ~WorkspaceCache();
};

uint64_t* WorkspaceHeader(void* ptr) { return static_cast<uint64_t*>(ptr) - 2; }  // {bytes, header}

void FreeWorkspaceBlock(void* ptr) {
  uint64_t header = WorkspaceHeader(ptr)[1];
  DefaultCpuAllocator()->Free(static_cast<char*>(ptr) - header);
}

WorkspaceCache::~WorkspaceCache() {
  for (int i = 0; i < count; ++i) FreeWorkspaceBlock(blocks[i].ptr);
}

thread_local WorkspaceCache t_workspaces;

void* StateWorkspaceAlloc(void*, uint64_t nbytes, uint64_t alignment) {
  if (alignment < kTensorAlignment) alignment = kTensorAlignment;
  WorkspaceCache& cache = t_workspaces;
  int best = -1;
  for (int i = 0; i < cache.count; ++i) {
    const WorkspaceBlock& b = cache.blocks[i];
    if (b.bytes >= nbytes && reinterpret_cast<uintptr_t>(b.ptr) % alignment == 0 &&
        (best < 0 || b.bytes < cache.blocks[best].bytes)) {
      best = i;
    }
  }
  if (best >= 0) {
    void* ptr = cache.blocks[best].ptr;
    cache.blocks[best] = cache.blocks[--cache.count];
    return ptr;
  }
  if (nbytes > UINT64_MAX - alignment) return nullptr;
  char* base = static_cast<char*>(DefaultCpuAllocator()->Allocate(nbytes + alignment, alignment));
  if (base == nullptr) return nullptr;
  void* ptr = base + alignment;
  WorkspaceHeader(ptr)[0] = nbytes;
  WorkspaceHeader(ptr)[1] = alignment;
  return ptr;
}

void StateWorkspaceFree(void*, void* ptr) {
  if (ptr == nullptr) return;
  WorkspaceCache& cache = t_workspaces;
  WorkspaceBlock b{ptr, WorkspaceHeader(ptr)[0]};
  if (cache.count < kCachedWorkspaces) {
    cache.blocks[cache.count++] = b;
    return;
  }
  // Full: keep the larger blocks.
  int smallest = 0;
  for (int i = 1; i < cache.count; ++i) {
    if (cache.blocks[i].bytes < cache.blocks[smallest].bytes) smallest = i;
  }
  if (cache.blocks[smallest].bytes < b.bytes) std::swap(cache.blocks[smallest], b);
  FreeWorkspaceBlock(b.ptr);
}

void StateSetError(void* ctx, const char* message) {
  auto* state = static_cast<CallState*>(ctx);
  // Copied now: the kernel may pass a buffer that dies when it returns. Tasks
  // of a parallel launch may race here; the first message wins, and the pool's
  // join orders the write before CallKernel reads it.
  if (message != nullptr && !state->has_error.exchange(true)) state->error = message;
}

}  // namespace

Status CallKernel(kiln_kernel_fn fn, const std::string& name, const kiln_kernel_arg* args, int32_t num_args,
                  ThreadPool* pool) {
  CallState state;
  state.pool = pool;
  kiln_kernel_env env{};
  env.abi_version = KILN_KERNEL_ABI_VERSION;
  env.num_threads = pool ? pool->num_threads() : 1;
  env.ctx = &state;
  env.parallel_for = StateParallelFor;
  env.workspace_alloc = StateWorkspaceAlloc;
  env.workspace_free = StateWorkspaceFree;
  env.set_error = StateSetError;
  int32_t rc = fn(&env, args, num_args);
  if (rc == 0) return Status::Ok();
  if (state.has_error.load()) return InvalidArgument("kernel '" + name + "': " + state.error);
  return Internal(StrFormat("kernel '%s' failed with code %d", name.c_str(), rc));
}

}  // namespace kiln
