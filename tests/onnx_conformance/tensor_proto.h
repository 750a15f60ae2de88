// ONNX TensorProto <-> Kiln tensors, for the backend node tests' input_N.pb and
// output_N.pb files (serialized TensorProto messages).
//
// Supported element types are the ones the Kiln runtime has: float32, float64,
// float16, int64, int32, int8, uint8 and bool. Others fail with kUnimplemented
// naming the type; a malformed message or a payload whose size does not match
// its dims fails with kDataLoss; a missing file with kNotFound. Messages start
// with the file path or tensor name.
//
// Thread-safe: no state.
#ifndef KILN_TESTS_ONNX_CONFORMANCE_TENSOR_PROTO_H_
#define KILN_TESTS_ONNX_CONFORMANCE_TENSOR_PROTO_H_

#include <cstdint>
#include <string>

#include "onnx/onnx_pb.h"
#include "runtime/dtype.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace conformance {

// "FLOAT", "INT64", ... for a TensorProto::DataType value; "type N" otherwise.
std::string OnnxDataTypeName(int32_t elem_type);

// The Kiln dtype of an ONNX element type; kUnimplemented when the runtime has none.
Result<DType> DTypeFromOnnx(int32_t elem_type);

// A new owned tensor holding the proto's data (raw_data or the typed field).
Result<Tensor> TensorFromProto(const ::onnx::TensorProto& proto, const std::string& name);

// Parses a file holding one serialized TensorProto.
Result<Tensor> ReadTensorProtoFile(const std::string& path);

}  // namespace conformance
}  // namespace kiln

#endif  // KILN_TESTS_ONNX_CONFORMANCE_TENSOR_PROTO_H_
