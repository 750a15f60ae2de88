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

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_FRAME_H_
