#include "tests/e2e/e2e_util.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"

namespace kiln {
namespace e2e {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<std::vector<uint8_t>> CompileToBytes(const std::string& source, const std::string& file_name,
                                            const driver::CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(source, file_name));
  KILN_ASSIGN_OR_RETURN(compiler::VmfbProgram program, driver::CompileModule(mod, options));
  return compiler::SerializeVmfb(program);
}

Result<std::shared_ptr<const vm::Module>> CompileAndLoad(const std::string& source, const std::string& file_name,
                                                         const driver::CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(source, file_name));
  return CompileAndLoad(mod, options);
}

Result<std::shared_ptr<const vm::Module>> CompileAndLoad(const ir::IRModule& mod, const driver::CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(compiler::VmfbProgram program, driver::CompileModule(mod, options));
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, compiler::SerializeVmfb(program));
  // The loader borrows constants in place, which needs the 64-byte alignment
  // a memory-mapped file has; a std::vector's storage does not promise it.
  void* owned = std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64);
  if (!owned) return ResourceExhausted("CompileAndLoad: out of memory");
  std::memcpy(owned, bytes.data(), bytes.size());
  return vm::Module::LoadOwnedBuffer(
      owned, bytes.size(), [](const void*, void* user) { std::free(user); }, owned);
}

Tensor RandomTensor(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>((state >> 40) & 0xFFFFFF) / static_cast<float>(1 << 23) - 1.0f;
  }
  return t;
}

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<float>::infinity();
  float m = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) m = std::fmax(m, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return m;
}

namespace {

// out[n, o] = sum_k in[n, k] * w[o, k] + b[o]
Tensor Linear(const Tensor& in, const Tensor& w, const Tensor& b, bool relu) {
  int64_t n = in.shape()[0], k = in.shape()[1], o = w.shape()[0];
  Tensor out = Tensor::Empty({n, o}, DType::Float32()).value();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < o; ++j) {
      double acc = b.data<float>()[j];
      for (int64_t t = 0; t < k; ++t) acc += double(in.data<float>()[i * k + t]) * w.data<float>()[j * k + t];
      float v = static_cast<float>(acc);
      out.data<float>()[i * o + j] = relu && v < 0 ? 0.0f : v;
    }
  }
  return out;
}

}  // namespace

Tensor ReferenceMlp(const Tensor& x, const Tensor& w0, const Tensor& b0, const Tensor& w1, const Tensor& b1) {
  return Linear(Linear(x, w0, b0, true), w1, b1, false);
}

}  // namespace e2e
}  // namespace kiln
