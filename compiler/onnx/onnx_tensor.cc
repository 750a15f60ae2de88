#include "compiler/onnx/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>

namespace kiln {
namespace onnx {

using ::onnx::TensorProto;

Result<DType> DTypeFromOnnx(int elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT: return DType::Float32();
    case TensorProto::FLOAT16: return DType::Float16();
    case TensorProto::BFLOAT16: return DType{kDLBfloat, 16, 1};
    case TensorProto::DOUBLE: return DType::Float64();
    case TensorProto::INT64: return DType::Int64();
    case TensorProto::INT32: return DType::Int32();
    case TensorProto::INT16: return DType{kDLInt, 16, 1};
    case TensorProto::INT8: return DType::Int8();
    case TensorProto::UINT64: return DType{kDLUInt, 64, 1};
    case TensorProto::UINT32: return DType{kDLUInt, 32, 1};
    case TensorProto::UINT16: return DType{kDLUInt, 16, 1};
    case TensorProto::UINT8: return DType::UInt8();
    case TensorProto::BOOL: return DType::Bool();
    default: return Unimplemented("element type " + OnnxTypeName(elem_type) + " is not supported");
  }
}

std::string OnnxTypeName(int elem_type) {
  if (TensorProto::DataType_IsValid(elem_type)) return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type));
  return "type " + std::to_string(elem_type);
}

namespace {

// Reads `length` bytes (all when negative) at `offset` of base_dir/location.
Result<std::string> ReadExternal(const std::string& base_dir, const std::string& location, int64_t offset,
                                 int64_t length) {
  if (location.empty() || location[0] == '/' || location.find("..") != std::string::npos) {
    return InvalidArgument("external data location \"" + location + "\" must be a relative path inside the model's folder");
  }
  std::string path = base_dir.empty() ? location : base_dir + "/" + location;
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open external data file " + path);
  f.seekg(0, std::ios::end);
  int64_t size = static_cast<int64_t>(f.tellg());
  if (offset < 0 || offset > size) return InvalidArgument("external data offset " + std::to_string(offset) + " is past the end of " + path);
  if (length < 0) length = size - offset;
  if (offset + length > size) {
    return InvalidArgument("external data of " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                           " is past the end of " + path + " (" + std::to_string(size) + " bytes)");
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(&bytes[0], length);
  if (!f) return DataLoss("cannot read external data from " + path);
  return bytes;
}

template <typename T, typename Field>
void CopyField(const Field& field, Tensor* t) {
  T* out = t->data<T>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
}

}  // namespace

Result<Tensor> TensorFromProto(const TensorProto& proto, const std::string& base_dir) {
  std::string what = "initializer \"" + proto.name() + "\"";
  auto dt = DTypeFromOnnx(proto.data_type());
  if (!dt.ok()) return Unimplemented(what + ": " + dt.status().message());
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgument(what + ": negative dimension " + std::to_string(d));
    if (__builtin_mul_overflow(count, d, &count) || count > (int64_t{1} << 50)) {
      return InvalidArgument(what + ": its shape holds too many elements");
    }
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(shape, *dt));
  size_t bytes = t.NumBytes();
  auto check_count = [&](int64_t n) -> Status {
    if (n != count) {
      return InvalidArgument(what + ": holds " + std::to_string(n) + " values, its shape needs " + std::to_string(count));
    }
    return Status::Ok();
  };
  const std::string* raw = nullptr;
  std::string external;
  if (proto.data_location() == TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : proto.external_data()) {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::atoll(kv.value().c_str());
      if (kv.key() == "length") length = std::atoll(kv.value().c_str());
    }
    auto data = ReadExternal(base_dir, location, offset, length);
    if (!data.ok()) return Status(data.status().code(), what + ": " + data.status().message());
    external = std::move(*data);
    raw = &external;
  } else if (proto.has_raw_data()) {
    raw = &proto.raw_data();
  }
  if (raw) {
    if (raw->size() != bytes) {
      return InvalidArgument(what + ": holds " + std::to_string(raw->size()) + " bytes of data, its shape needs " +
                             std::to_string(bytes));
    }
    if (bytes) std::memcpy(t.raw_data(), raw->data(), bytes);  // little-endian, as ONNX stores it
    return t;
  }
  switch (proto.data_type()) {
    case TensorProto::FLOAT:
      KILN_RETURN_IF_ERROR(check_count(proto.float_data_size()));
      CopyField<float>(proto.float_data(), &t);
      break;
    case TensorProto::DOUBLE:
      KILN_RETURN_IF_ERROR(check_count(proto.double_data_size()));
      CopyField<double>(proto.double_data(), &t);
      break;
    case TensorProto::INT64:
      KILN_RETURN_IF_ERROR(check_count(proto.int64_data_size()));
      CopyField<int64_t>(proto.int64_data(), &t);
      break;
    case TensorProto::INT32:
      KILN_RETURN_IF_ERROR(check_count(proto.int32_data_size()));
      CopyField<int32_t>(proto.int32_data(), &t);
      break;
    case TensorProto::INT8:
      KILN_RETURN_IF_ERROR(check_count(proto.int32_data_size()));
      CopyField<int8_t>(proto.int32_data(), &t);
      break;
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      KILN_RETURN_IF_ERROR(check_count(proto.int32_data_size()));
      CopyField<uint8_t>(proto.int32_data(), &t);
      break;
    case TensorProto::INT16:
      KILN_RETURN_IF_ERROR(check_count(proto.int32_data_size()));
      CopyField<int16_t>(proto.int32_data(), &t);
      break;
    case TensorProto::UINT16:
    case TensorProto::FLOAT16:   // int32_data holds the 16-bit patterns
    case TensorProto::BFLOAT16:  // likewise
      KILN_RETURN_IF_ERROR(check_count(proto.int32_data_size()));
      CopyField<uint16_t>(proto.int32_data(), &t);
      break;
    case TensorProto::UINT32:  // the unsigned types wider than 16 bits use uint64_data
      KILN_RETURN_IF_ERROR(check_count(proto.uint64_data_size()));
      CopyField<uint32_t>(proto.uint64_data(), &t);
      break;
    case TensorProto::UINT64:
      KILN_RETURN_IF_ERROR(check_count(proto.uint64_data_size()));
      CopyField<uint64_t>(proto.uint64_data(), &t);
      break;
    default: return Unimplemented(what + ": element type " + OnnxTypeName(proto.data_type()) + " is not supported");
  }
  return t;
}

}  // namespace onnx
}  // namespace kiln
