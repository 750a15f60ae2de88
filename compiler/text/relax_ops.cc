#include "compiler/text/relax_ops.h"

namespace kiln {
namespace text {

bool IsKnownRelaxOp(const std::string& name) {
  static const char* kOps[] = {
      // arithmetic and comparison
      "add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum", "negative",
      "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "where",
      // unary math
      "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "erf", "clip",
      // linear algebra and layout
      "matmul", "permute_dims", "reshape", "flatten", "expand_dims", "squeeze", "concat", "split",
      "broadcast_to", "take", "strided_slice", "astype",
      // reductions
      "sum", "mean", "max", "min", "argmax", "argmin",
      // creation
      "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
      // neural network
      "nn.relu", "nn.gelu", "nn.gelu_tanh", "nn.silu", "nn.softmax", "nn.log_softmax", "nn.conv2d",
      "nn.max_pool2d", "nn.avg_pool2d", "nn.adaptive_avg_pool2d", "nn.layer_norm", "nn.batch_norm",
      "nn.rms_norm", "nn.dropout", "nn.pad",
  };
  for (const char* op : kOps)
    if (name == op) return true;
  return false;
}

}  // namespace text
}  // namespace kiln
