// ONNX tensors and types to Kiln's: element types, TensorProto (typed fields,
// raw_data, external data files) to a host Tensor.
#ifndef KILN_COMPILER_ONNX_ONNX_TENSOR_H_
#define KILN_COMPILER_ONNX_ONNX_TENSOR_H_

#include <string>

#include "runtime/dtype.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace onnx {
class TensorProto;
}

namespace kiln {
namespace onnx {

// The Kiln dtype of an ONNX TensorProto::DataType: every float, int, uint and
// bool type Kiln computes in (float16/32/64, bfloat16, int8..64, uint8..64,
// bool); kUnimplemented for the rest (strings, complex, float8, 4-bit).
Result<DType> DTypeFromOnnx(int elem_type);
// "FLOAT", "DOUBLE", ... for messages.
std::string OnnxTypeName(int elem_type);

// The tensor's data as a compact host tensor. External data is read from
// `base_dir`/location (offset, length honoured); a location that leaves the
// folder ("..", absolute) is refused.
Result<Tensor> TensorFromProto(const ::onnx::TensorProto& proto, const std::string& base_dir);

}  // namespace onnx
}  // namespace kiln

#endif  // KILN_COMPILER_ONNX_ONNX_TENSOR_H_
