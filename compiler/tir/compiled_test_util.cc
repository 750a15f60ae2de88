#include "compiler/tir/compiled_test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "compiler/text/text.h"
#include "compiler/writer/vmfb_writer.h"

namespace kiln {
namespace tir {
namespace test_util {

std::vector<float> RandomFloats(int64_t count, uint64_t seed, float scale) {
  std::vector<float> v(static_cast<size_t>(count));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = scale * (static_cast<float>((s >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f);
  }
  return v;
}

Tensor FloatTensor(const std::vector<int64_t>& shape, const std::vector<float>& data) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  if (!data.empty()) std::memcpy(t.data<float>(), data.data(), data.size() * sizeof(float));
  return t;
}

std::shared_ptr<const vm::Module> CompileAndLoad(const std::string& source, const driver::CompileOptions& options,
                                                 int load_threads) {
  Result<ir::IRModule> mod = text::ParseModule(source, "test.relax");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return nullptr;
  Result<compiler::VmfbProgram> program = driver::CompileModule(*mod, options);
  EXPECT_TRUE(program.ok()) << program.status().ToString();
  if (!program.ok()) return nullptr;
  Result<std::vector<uint8_t>> bytes = compiler::SerializeVmfb(*program);
  EXPECT_TRUE(bytes.ok());
  if (!bytes.ok()) return nullptr;
  void* owned = std::aligned_alloc(64, (bytes->size() + 63) / 64 * 64);
  std::memcpy(owned, bytes->data(), bytes->size());
  vm::LoadOptions load;
  load.num_threads = load_threads;
  auto loaded = vm::Module::LoadOwnedBuffer(
      owned, bytes->size(), [](const void*, void* user) { std::free(user); }, owned, load);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  return loaded.ok() ? *loaded : nullptr;
}

Result<Tensor> InvokeMain(const vm::Module& mod, const std::vector<Any>& args) {
  Any ret;
  std::unique_ptr<vm::Context> ctx = mod.CreateContext();
  Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
  if (!s.ok()) return s;
  return ret.AsTensor();
}

}  // namespace test_util
}  // namespace tir
}  // namespace kiln
