#include "tests/onnx_conformance/tensor_proto.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

namespace kiln {
namespace conformance {

namespace {

using Proto = ::onnx::TensorProto;

// Copies a typed repeated field into `out`, converting each element to T.
template <typename T, typename Field>
void CopyField(const Field& field, Tensor& out) {
  T* dst = out.data<T>();
  for (int i = 0; i < field.size(); ++i) dst[i] = static_cast<T>(field.Get(i));
}

}  // namespace

std::string OnnxDataTypeName(int32_t elem_type) {
  if (Proto::DataType_IsValid(elem_type)) return Proto::DataType_Name(static_cast<Proto::DataType>(elem_type));
  return "type " + std::to_string(elem_type);
}

Result<DType> DTypeFromOnnx(int32_t elem_type) {
  switch (elem_type) {
    case Proto::FLOAT: return DType::Float32();
    case Proto::DOUBLE: return DType::Float64();
    case Proto::FLOAT16: return DType::Float16();
    case Proto::INT64: return DType::Int64();
    case Proto::INT32: return DType::Int32();
    case Proto::INT8: return DType::Int8();
    case Proto::UINT8: return DType::UInt8();
    case Proto::BOOL: return DType::Bool();
    default:
      return Unimplemented("element type " + OnnxDataTypeName(elem_type) + " has no Kiln runtime dtype");
  }
}

Result<Tensor> TensorFromProto(const Proto& proto, const std::string& name) {
  if (proto.data_location() == Proto::EXTERNAL) {
    return Unimplemented(name + ": external data in a test tensor is not read");
  }
  Result<DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype.ok()) return Status(dtype.status()).Annotate(name);
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && count > std::numeric_limits<int64_t>::max() / d)) {
      return DataLoss(name + ": bad dims in TensorProto");
    }
    count *= d;
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(shape, dtype.value()));
  const size_t elem_bytes = dtype.value().bytes();
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() != static_cast<size_t>(count) * elem_bytes) {
      return DataLoss(StrFormat("%s: raw_data holds %zu bytes, dims need %lld", name.c_str(), raw.size(),
                                static_cast<long long>(count * static_cast<int64_t>(elem_bytes))));
    }
    if (!raw.empty()) std::memcpy(t.raw_data(), raw.data(), raw.size());
    return t;
  }
  int64_t have = 0;
  switch (proto.data_type()) {
    case Proto::FLOAT: have = proto.float_data_size(); break;
    case Proto::DOUBLE: have = proto.double_data_size(); break;
    case Proto::INT64: have = proto.int64_data_size(); break;
    default: have = proto.int32_data_size(); break;  // int32, int8, uint8, bool, float16 bits
  }
  if (have != count) {
    return DataLoss(StrFormat("%s: TensorProto has %lld values, dims need %lld", name.c_str(),
                              static_cast<long long>(have), static_cast<long long>(count)));
  }
  switch (proto.data_type()) {
    case Proto::FLOAT: CopyField<float>(proto.float_data(), t); break;
    case Proto::DOUBLE: CopyField<double>(proto.double_data(), t); break;
    case Proto::INT64: CopyField<int64_t>(proto.int64_data(), t); break;
    case Proto::INT32: CopyField<int32_t>(proto.int32_data(), t); break;
    case Proto::INT8: CopyField<int8_t>(proto.int32_data(), t); break;
    case Proto::UINT8: CopyField<uint8_t>(proto.int32_data(), t); break;
    case Proto::BOOL:  // any non-zero int32 is true; Kiln bools are bytes of 0 or 1
      for (int i = 0; i < proto.int32_data_size(); ++i) t.data<uint8_t>()[i] = proto.int32_data(i) != 0;
      break;
    case Proto::FLOAT16: CopyField<uint16_t>(proto.int32_data(), t); break;  // the bits, as ONNX stores them
    default: return Internal(name + ": unhandled element type");
  }
  return t;
}

Result<Tensor> ReadTensorProtoFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound(path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  Proto proto;
  if (!proto.ParseFromString(bytes)) return DataLoss(path + ": not a serialized TensorProto");
  return TensorFromProto(proto, path);
}

}  // namespace conformance
}  // namespace kiln
