// relax.tensor_to_shape and relax.shape_to_tensor: values that cross between
// tensors and shapes when the program runs.
//
// tensor_to_shape(x): x is a 1-d int64 (or int32) tensor of static length n;
//   the result is a shape of n dimensions whose values only the running
//   program knows (R.Shape(ndim=n)). A later R.match_cast to
//   R.Shape([a, b, ...]) with fresh symbolic variables names them, so the
//   kernels that take the shape are generic over its values. This is how an
//   ONNX shape operand fed as a tensor (a Reshape's shape, Pad's pads given
//   as a graph input) reaches the operators that need shapes.
// shape_to_tensor(s): a shape of n dimensions (values known or not) as a 1-d
//   int64 tensor of n elements: a shape value a model uses as data.
//
// Neither is legalized into TIR: the VM runs them as the builtins
// vm.builtin.tensor_to_shape / vm.builtin.shape_to_tensor (relax/vm_codegen.cc,
// vm/builtins_shape_value.cc), reading or writing host memory.
#include "compiler/relax/op_defs.h"

#include "compiler/relax/op_elem_util.h"
#include "compiler/relax/struct_info_util.h"

namespace kiln {
namespace relax {
namespace {

Result<ir::StructInfo> InferTensorToShape(const ir::CallExpr& call) {
  if (call.args.size() != 1) return elem::Error(call, "takes one tensor");
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* x, elem::TensorArg(call, 0, "the tensor"));
  if (x->ndim != 1) {
    return elem::Error(call, "the tensor must be 1-d to become a shape, got " + SInfoString(call.args[0]->struct_info));
  }
  if (x->has_dtype && x->dtype != DType::Int64() && x->dtype != DType::Int32()) {
    return elem::Error(call, "the tensor must be int64 or int32 to become a shape, got " +
                                 SInfoString(call.args[0]->struct_info));
  }
  std::optional<int64_t> n = x->has_shape ? ConstDim(x->shape[0]) : std::nullopt;
  if (!n) {
    return elem::Error(call, "the tensor's length must be static (it is the rank of the shape), got " +
                                 SInfoString(call.args[0]->struct_info));
  }
  return ir::StructInfo(std::make_shared<ir::ShapeSInfo>(false, std::vector<ir::PrimExpr>{}, static_cast<int>(*n)));
}

Result<ir::StructInfo> InferShapeToTensor(const ir::CallExpr& call) {
  if (call.args.size() != 1) return elem::Error(call, "takes one shape");
  const auto* s = ir::SInfoAs<ir::ShapeSInfo>(call.args[0]->struct_info);
  if (!s) return elem::Error(call, "expects a shape, got " + SInfoString(call.args[0]->struct_info));
  if (s->ndim < 0) return ir::MakeTensorSInfoNdim(1, DType::Int64());
  return ir::MakeTensorSInfo({ir::PrimExpr(static_cast<int64_t>(s->ndim))}, DType::Int64());
}

}  // namespace

void AddShapeValueOps(std::vector<OpInfo>* t) {
  t->push_back({"relax.tensor_to_shape", "tensor_to_shape", 1, InferTensorToShape, nullptr, OpPattern::kOpaque});
  t->push_back({"relax.shape_to_tensor", "shape_to_tensor", 1, InferShapeToTensor, nullptr, OpPattern::kOpaque});
}

}  // namespace relax
}  // namespace kiln
