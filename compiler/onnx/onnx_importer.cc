#include "compiler/onnx/onnx_importer.h"

#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {

Result<ir::IRModule> ImportBuffer(const void* data, size_t size, const std::string& base_dir,
                                  const ImportOptions& options) {
  ::onnx::ModelProto model;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Unimplemented("ONNX model of " + std::to_string(size) + " bytes: models over 2 GiB must keep their weights as external data");
  }
  google::protobuf::io::CodedInputStream in(static_cast<const uint8_t*>(data), static_cast<int>(size));
  in.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    return DataLoss("not a valid ONNX model (the ModelProto does not parse)");
  }
  Importer importer(model, base_dir, options.fixed_dims, options.function_name, options.input_values);
  importer.set_if_tail_limit(options.if_tail_limit);
  return importer.Run();
}

Result<ir::IRModule> ImportFile(const std::string& path, const ImportOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open ONNX model " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  size_t slash = path.find_last_of('/');
  std::string base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (base_dir.empty()) base_dir = "/";
  auto mod = ImportBuffer(bytes.data(), bytes.size(), base_dir, options);
  if (!mod.ok()) return Status(mod.status().code(), path + ": " + mod.status().message());
  return mod;
}

}  // namespace onnx
}  // namespace kiln
