#include "runtime/kernel_call.h"

#include <atomic>

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

void* StateWorkspaceAlloc(void*, uint64_t nbytes, uint64_t alignment) {
  return DefaultCpuAllocator()->Allocate(nbytes, alignment);
}

void StateWorkspaceFree(void*, void* ptr) { DefaultCpuAllocator()->Free(ptr); }

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
