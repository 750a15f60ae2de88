#include "tests/onnx_conformance/operator_list.h"

#include <algorithm>

namespace kiln {
namespace conformance {

const std::vector<std::string>& Issue7Operators() {
  static const std::vector<std::string> kOps = {
      "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Exp", "Log", "Erf", "Tanh", "Sigmoid",
      "Relu", "LeakyRelu", "Elu", "Gelu", "HardSigmoid", "HardSwish", "Clip", "Neg", "Abs", "Floor",
      "Ceil", "Min", "Max", "Sum", "Mean", "Where", "Equal", "Less", "Greater", "Not", "And", "Or",
      "MatMul", "Gemm", "Conv", "ConvTranspose", "BatchNormalization", "InstanceNormalization",
      "LayerNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Softmax",
      "LogSoftmax", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split",
      "Slice", "Gather", "GatherElements", "Expand", "Tile", "Pad", "Resize", "Cast", "Shape", "Size",
      "ConstantOfShape", "Constant", "Range", "Identity", "Dropout", "ReduceMean", "ReduceSum",
      "ReduceMax", "ReduceMin", "ReduceProd", "ArgMax", "Trilu", "CumSum", "TopK", "Einsum",
      // issue 20 §2: recurrent layers
      "LSTM", "GRU", "RNN",
      // issue 20 §2: control flow
      "If", "Loop", "Scan",
      // issue 20 §1: a data-dependent output size
      "NonZero",
      // issue 20 §3: the integer operators of quantized models
      "MatMulInteger", "DynamicQuantizeLinear", "QLinearMatMul",
      // issue 20 §3: scatters and grid sampling
      "ScatterElements", "Scatter", "ScatterND", "GridSample"};
  return kOps;
}

bool IsIssue7Operator(const std::string& op_type) {
  const auto& ops = Issue7Operators();
  return std::find(ops.begin(), ops.end(), op_type) != ops.end();
}

}  // namespace conformance
}  // namespace kiln
