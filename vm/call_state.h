// CallState: what the allocation builtins need from the vm::Context that is
// running on this thread: its allocator and its reuse cache. Internal.
//
// The context installs its state for the duration of a call (ScopedCallState);
// builtins read it with CurrentCallState(). Outside a context call (a
// bytecode function value run by a stray caller) it is null and the builtins
// fall back to the default allocator without reuse.
//
// Reuse. A call on static shapes should allocate nothing after its first
// call, yet builtins make objects (shapes, tensor views, result tensors). Each
// call site (function, argument offset) keeps the object it made last; the next
// time the site runs, the object is reused when nothing else holds it (its
// reference count is 1: the caller dropped the result, the registers were
// cleared) and it already has the wanted shape and type. Otherwise a new one
// is made and kept. So reuse never changes what a caller sees.
//
// Thread-compatible: one per context, used by the thread running its call.
#ifndef KILN_VM_CALL_STATE_H_
#define KILN_VM_CALL_STATE_H_

#include <memory>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/any.h"
#include "runtime/device_memory.h"

namespace kiln {
namespace vm {

struct CallState {
  Allocator* allocator = nullptr;       // never null while installed
  std::shared_ptr<void> keep_alive;     // owner of `allocator`, held by every tensor it allocates
  std::vector<std::vector<Any>> reuse;  // by function index, then argument offset
  // The reuse slots that hold tuples (make_tuple) or views of tensors
  // (reshape_view), in the order they were first made. A kept tuple would
  // keep its fields (result tensors) held, and a kept view its tensor, so
  // that their own sites could never reuse them: when a call begins, every
  // tuple nothing else holds lets go of its fields, and every such view of
  // its tensor (ScopedCallState).
  struct Site {
    uint32_t function;
    uint32_t offset;
  };
  std::vector<Site> release_sites;
};

// The state of the context calling on this thread, or null.
CallState* CurrentCallState();

// The device memory of the calling context's allocator (runtime/device_memory.h):
// non-null when the context's tensors live on a GPU. The builtins that read or
// write tensor values on the host copy through it (and so wait for the
// kernels before them); null on the CPU and outside a call.
inline DeviceMemory* CallDeviceMemory() {
  CallState* s = CurrentCallState();
  return s != nullptr ? s->allocator->device_memory() : nullptr;
}

// Installs `state` for this thread until destroyed (restores the previous
// one, so a packed function may call another context), after releasing the
// fields of the state's tuples and the tensors of its views that nothing else
// holds.
class ScopedCallState {
 public:
  explicit ScopedCallState(CallState* state);
  ~ScopedCallState();
  ScopedCallState(const ScopedCallState&) = delete;
  ScopedCallState& operator=(const ScopedCallState&) = delete;

 private:
  CallState* previous_;
};

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_CALL_STATE_H_
