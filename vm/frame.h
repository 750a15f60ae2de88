// Frame: the state of one active bytecode function call (registers, shape
// heap, scratch for building call arguments). Internal to the VM.
//
// Thread-compatible: owned by one Context.
#ifndef KILN_VM_FRAME_H_
#define KILN_VM_FRAME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kiln_kernel_abi.h"
#include "runtime/any.h"
#include "runtime/program.h"
#include "runtime/tensor.h"
#include "vm/builtins.h"
#include "vm/bytecode.h"
#include "vm/call_state.h"

namespace kiln {
namespace vm {

struct Frame {
  std::vector<Any> regs;
  std::vector<int64_t> heap;
  std::vector<Any> call_args;                 // packed / function call arguments
  std::vector<kiln_kernel_arg> kernel_args;   // kernel call arguments
  // Planned storage (vm.builtin.alloc_storage) by function index, then by
  // storage index: kept across calls so a static plan allocates once.
  std::vector<std::vector<Tensor>> storage;
};

// Where argument words get their values.
struct ValueSource {
  const Program* program;
  const std::vector<Any>* callable_values;  // per callable; None for builtins
};

// The value of a Register, Constant or Callable argument; an Immediate is
// materialized into *tmp.
inline const Any& ArgValue(const Arg& a, const Frame& f, const ValueSource& src, Any* tmp) {
  switch (a.kind) {
    case ArgKind::kRegister: return f.regs[a.value];
    case ArgKind::kConstant: return src.program->constants[a.value].value;
    case ArgKind::kCallable: return (*src.callable_values)[a.value];
    case ArgKind::kImmediate: break;
  }
  *tmp = Any(a.value);
  return *tmp;
}

// Runs builtin `b` on verified arguments. `function` names the running
// function for messages of builtins that carry no context string; `code`
// supplies shape-heap slot names for match_shape's messages. The
// result (None for builtins without one) goes to *out.
Status RunBuiltin(Builtin b, const Arg* args, uint32_t num_args, Frame& frame, const ValueSource& src,
                  const std::string& function, const DecodedFunction& code, Any* out);

// The reuse slot (vm/call_state.h) of the call site whose arguments start at
// `offset` of `code.args`, or null outside a context call.
Any* ReuseSlotAt(const DecodedFunction& code, uint32_t offset);

// alloc_tensor's result at the site whose reuse slot is `slot` (may be null):
// the slot's tensor when nothing else holds it and it has this shape and
// dtype, else a new one (kept in the slot). Errors name `function`.
Status TensorAtSite(Any* slot, Span<const int64_t> dims, DType dtype, const std::string& function, Any* out);

// make_tuple's result at the site (`function`, `offset`) whose reuse slot is
// `slot` (may be null), of the `n` values field(0) .. field(n - 1): the
// slot's tuple refilled in place when nothing else holds it, else a new one
// (kept in the slot, whose fields are let go of when a later call begins).
template <typename FieldFn>
Any TupleAtSite(Any* slot, uint32_t function, uint32_t offset, uint32_t n, FieldFn field) {
  if (slot != nullptr && slot->is_tuple() && slot->object().use_count() == 1 && slot->tuple_fields().size() == n) {
    // The caller let go of last call's tuple (its fields were released when
    // this call began, vm/call_state.h): refill it in place.
    std::vector<Any>& fields = static_cast<TupleObj*>(slot->object().get())->fields;
    for (uint32_t i = 0; i < n; ++i) fields[i] = field(i);
    return *slot;
  }
  std::vector<Any> fields;
  fields.reserve(n);
  for (uint32_t i = 0; i < n; ++i) fields.push_back(field(i));
  Any tuple = Any::Tuple(std::move(fields));
  if (slot != nullptr) {
    if (slot->is_none()) CurrentCallState()->release_sites.push_back({function, offset});
    *slot = tuple;
  }
  return tuple;
}

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_FRAME_H_
