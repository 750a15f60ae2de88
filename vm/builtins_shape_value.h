// The builtins that move values between tensors and shapes at run time
// (vm/builtins.def): a shape operand that a model only has as a tensor (a
// Reshape's shape, Pad's pads fed as a graph input) is read on the host into a
// shape value, whose entries R.match_cast then binds to symbolic variables;
// and a shape value that a model uses as data becomes a tensor.
//
// Internal to the VM; thread-compatible like the frame they run on.
#ifndef KILN_VM_BUILTINS_SHAPE_VALUE_H_
#define KILN_VM_BUILTINS_SHAPE_VALUE_H_

#include <memory>
#include <string>

#include "runtime/allocator.h"
#include "runtime/any.h"
#include "runtime/status.h"

namespace kiln {
namespace vm {

// vm.builtin.tensor_to_shape: `value` must be a 1-d int32 or int64 tensor in
// host memory; its elements become the dimensions of a shape. Errors start
// with `ctx` (the value's name, "main: pads of node \"pad0\"").
Status TensorToShape(const Any& value, const std::string& ctx, Any* out);

// vm.builtin.shape_to_tensor: a shape of n dimensions becomes a 1-d int64
// tensor of n elements from `allocator`, holding `keep_alive` (what keeps the
// allocator alive; may be null) as its owner. `function` names the caller.
Status ShapeToTensor(const Any& value, Allocator* allocator, std::shared_ptr<void> keep_alive,
                     const std::string& function, Any* out);

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_BUILTINS_SHAPE_VALUE_H_
