#include "compiler/text/relax_ops.h"

#include <set>

namespace kiln {
namespace text {

// TVM's names (python/tvm/relax/op): the parser accepts them all; whether an
// operator can be compiled is decided by compiler/relax/op_registry.cc, which
// reports an unknown one with its source location.
bool IsKnownRelaxOp(const std::string& name) {
  static const std::set<std::string> kOps = {
      // binary arithmetic and comparison, numpy broadcasting
      "add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum", "mod", "floor_mod",
      "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
      "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "where",
      // unary
      "negative", "abs", "exp", "log", "sqrt", "rsqrt", "square", "tanh", "sigmoid", "erf", "floor", "ceil", "round",
      "trunc", "sign", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "sin", "cos", "tan", "clip",
      // linear algebra
      "matmul", "linear", "einsum", "outer",
      // Kiln's own: ONNX MatMulInteger (compiler/relax/op_quantized.cc)
      "matmul_integer",
      // shape and data movement
      "permute_dims", "reshape", "flatten", "expand_dims", "squeeze", "concat", "split", "stack", "broadcast_to",
      "take", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "strided_slice", "dynamic_strided_slice", "astype",
      "tile", "repeat", "flip", "collapse_sum_like", "collapse_sum_to", "layout_transform", "shape_of",
      "tensor_to_shape", "shape_to_tensor",
      // reductions and scans
      "sum", "mean", "max", "min", "prod", "variance", "std", "argmax", "argmin", "cumsum", "cumprod",
      // sorting and search
      "sort", "argsort", "topk", "nonzero", "unique",
      // creation
      "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "tril", "triu", "eye", "eye_like",
      "one_hot",
      // neural network
      "nn.relu", "nn.leaky_relu", "nn.gelu", "nn.gelu_tanh", "nn.silu", "nn.selu", "nn.softplus", "nn.prelu",
      "nn.hard_sigmoid", "nn.hard_swish", "nn.softmax", "nn.log_softmax", "nn.conv1d", "nn.conv2d",
      "nn.conv1d_transpose", "nn.conv2d_transpose", "nn.max_pool1d", "nn.max_pool2d", "nn.avg_pool1d",
      "nn.avg_pool2d", "nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool2d", "nn.batch_norm", "nn.layer_norm",
      "nn.group_norm", "nn.instance_norm", "nn.rms_norm", "nn.dropout", "nn.pad", "nn.attention",
      "nn.cross_entropy_with_logits", "nn.nll_loss", "nn.lstm", "nn.gru", "nn.rnn",
      // image
      "image.resize2d", "image.grid_sample",
      // other spellings compiled by op_unary.cc (TVM's own is nn.leakyrelu)
      "nn.leakyrelu", "hard_sigmoid", "hard_swish", "nn.hardswish",
  };
  return kOps.count(name) != 0;
}

}  // namespace text
}  // namespace kiln
