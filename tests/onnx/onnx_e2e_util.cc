#include "tests/onnx/onnx_e2e_util.h"

#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"

namespace kiln {
namespace onnx {
namespace testing {

Result<std::shared_ptr<const vm::Module>> LoadVmfb(const std::vector<uint8_t>& bytes) {
  void* owned = std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64);
  if (!owned) return ResourceExhausted("LoadVmfb: out of memory");
  std::memcpy(owned, bytes.data(), bytes.size());
  return vm::Module::LoadOwnedBuffer(
      owned, bytes.size(), [](const void*, void* user) { std::free(user); }, owned);
}

Result<std::shared_ptr<const vm::Module>> CompileOnnx(const OnnxModelBuilder& m, const ImportOptions& import,
                                                      const driver::CompileOptions& options) {
  std::string bytes = m.Serialize();
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, ImportBuffer(bytes.data(), bytes.size(), ".", import));
  KILN_ASSIGN_OR_RETURN(compiler::VmfbProgram program, driver::CompileModule(mod, options));
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> vmfb, compiler::SerializeVmfb(program));
  return LoadVmfb(vmfb);
}

Result<std::vector<Tensor>> RunMain(const std::shared_ptr<const vm::Module>& module, std::vector<Tensor> args) {
  auto ctx = module->CreateContext();
  std::vector<Any> in(args.begin(), args.end());
  Any result;
  KILN_RETURN_IF_ERROR(ctx->Invoke("main", in, &result));
  std::vector<Tensor> out;
  if (result.is_tensor()) {
    out.push_back(result.tensor());
    return out;
  }
  for (const Any& f : result.tuple_fields()) {
    KILN_ASSIGN_OR_RETURN(Tensor t, f.AsTensor());
    out.push_back(t);
  }
  return out;
}

Tensor F32(std::vector<int64_t> shape, const std::vector<float>& v) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  if (!v.empty()) std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(float));
  return t;
}

Tensor I64(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  Tensor t = Tensor::Empty(shape, DType::Int64()).value();
  if (!v.empty()) std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

std::vector<float> Ramp(int64_t n, float lo, float hi, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 7;
  for (auto& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * static_cast<float>((state >> 40) & 0xFFFFFF) / static_cast<float>(1 << 24);
  }
  return v;
}

std::vector<float> Values(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.NumElements()));
  DType d = t.dtype();
  for (size_t i = 0; i < v.size(); ++i) {
    if (d == DType::Float32()) v[i] = t.data<float>()[i];
    else if (d == DType::Int64()) v[i] = static_cast<float>(t.data<int64_t>()[i]);
    else if (d == DType::Int32()) v[i] = static_cast<float>(t.data<int32_t>()[i]);
    else if (d == DType::Int8()) v[i] = static_cast<float>(t.data<int8_t>()[i]);
    else v[i] = static_cast<float>(t.data<uint8_t>()[i]);
  }
  return v;
}

Tensor Bool(bool v) {
  Result<Tensor> t = Tensor::Empty({}, DType::Bool());
  EXPECT_TRUE(t.ok());
  t->data<uint8_t>()[0] = v ? 1 : 0;
  return *t;
}

std::vector<float> Zeros(int64_t n) { return std::vector<float>(static_cast<size_t>(n), 0.0f); }

std::string ImportText(const OnnxModelBuilder& m, const ImportOptions& options, std::string* error) {
  std::string bytes = m.Serialize();
  Result<ir::IRModule> mod = ImportBuffer(bytes.data(), bytes.size(), ".", options);
  if (!mod.ok()) {
    if (error) *error = mod.status().message();
    return "";
  }
  return text::PrintModule(*mod);
}

std::string ImportError(const OnnxModelBuilder& m) {
  std::string bytes = m.Serialize();
  Result<ir::IRModule> mod = ImportBuffer(bytes.data(), bytes.size(), ".", {});
  return mod.ok() ? "" : mod.status().message();
}

std::string RunError(const OnnxModelBuilder& m, std::vector<Tensor> args) {
  auto module = CompileOnnx(m);
  if (!module.ok()) return "compile failed: " + module.status().ToString();
  auto r = RunMain(module.value(), std::move(args));
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  return r.status().message();
}

}  // namespace testing
}  // namespace onnx
}  // namespace kiln
