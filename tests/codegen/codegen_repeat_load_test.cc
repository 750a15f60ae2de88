// Vectorized loops whose loads repeat each element k times along the loop
// (a nearest resize's x[.., o // k], vector_loop.h's RepeatFactor): which
// indices qualify, that such a loop is one contiguous load and a shuffle per
// chunk at any width (a loop over chunks past the explicit vectors' limit),
// and that the numbers are the scalar loop's, fused with an add and at odd
// widths, neighbours untouched.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/native_codegen.h"
#include "compiler/codegen/vector_loop.h"
#include "compiler/text/text.h"
#include "tests/codegen/test_kernels.h"

namespace kiln {
namespace codegen_test {
namespace {

using namespace ir;  // NOLINT

const codegen::CodegenOptions kAvx2{"x86_64-unknown-linux-gnu", "haswell", "", 0};

std::vector<PrimFunc> Funcs(const std::string& source) {
  Result<IRModule> mod = text::ParseModule(source, "<test>");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  std::vector<PrimFunc> funcs;
  if (!mod.ok()) return funcs;
  for (const auto& e : mod->entries)
    if (e.prim) funcs.push_back(e.prim);
  return funcs;
}

// Rows of `width` output columns from rows of ceil(width / k) source
// columns: Y = X[r, o // k] + Z (one column wider than the row, so that a
// store past the row would show).
std::string RepeatModule(int width, int k) {
  std::string w = std::to_string(width), src = std::to_string((width + k - 1) / k), ks = std::to_string(k),
              wide = std::to_string(width + 1);
  return R"(@I.ir_module
class Module:
    @T.prim_func
    def up(X: T.Buffer((3, )" + src + R"(), "float32"), Z: T.Buffer((3, )" + wide + R"(), "float32"), Y: T.Buffer((3, )" + wide + R"(), "float32")):
        for r in range(3):
            for o in T.vectorized()" + w + R"():
                Y[r, o] = X[r, o // )" + ks + R"(] + Z[r, o]
)";
}

const ForNode* InnerLoop(const Stmt& s) {
  const auto* f = As<ForNode>(s);
  while (f != nullptr && As<ForNode>(f->body) != nullptr) f = As<ForNode>(f->body);
  return f;
}

TEST(CodegenRepeatLoadTest, WhichIndicesRepeat) {
  std::vector<PrimFunc> funcs = Funcs(R"(@I.ir_module
class Module:
    @T.prim_func
    def f(X: T.Buffer((4, 64), "float32"), Y: T.Buffer((4, 32), "float32")):
        for r in range(4):
            for o in T.vectorized(32):
                Y[r, o] = X[r, o // 2] + X[r, (o + 4) // 4] + X[r, (o + r * 8) // 8] + X[r, (o + 1) // 2] + X[r, o // 3] + X[r, (o * 2) // 4] + X[o // 16, o // 2] + X[r, (o + r) // 2] + X[r, o // 32]
)");
  ASSERT_EQ(funcs.size(), 1u);
  const ForNode* o = InnerLoop(funcs[0]->body);
  ASSERT_NE(o, nullptr);
  std::vector<const BufferStoreNode*> stores;
  ASSERT_TRUE(codegen::CollectStores(o->body, &stores));
  ASSERT_EQ(stores.size(), 1u);
  std::vector<int64_t> k;
  std::function<void(const PrimExpr&)> walk = [&](const PrimExpr& e) {
    if (const auto* l = e.as<BufferLoadNode>()) {
      k.push_back(codegen::RepeatFactor(l->buffer, l->indices, o->loop_var.get()));
      return;
    }
    if (e->kind() == TirKind::kAdd) {
      const auto* b = static_cast<const BinaryNode*>(e.get());
      walk(b->a);
      walk(b->b);
    }
  };
  walk(stores[0]->value);
  // o // 2, (o + 4) // 4, (o + 8r) // 8 repeat; an offset that is not a
  // multiple of k, k = 3, a coefficient of 2, the loop variable in another
  // index, a variable offset and k past 16 do not.
  EXPECT_EQ(k, (std::vector<int64_t>{2, 4, 8, 0, 0, 0, 0, 0, 0}));
  // Those others leave the loop to LLVM.
  EXPECT_FALSE(codegen::EmitsAsVectors(o->body, o->loop_var.get()));
  bool repeated = false;
  std::vector<PrimFunc> ok = Funcs(RepeatModule(32, 2));
  ASSERT_EQ(ok.size(), 1u);
  const ForNode* oo = InnerLoop(ok[0]->body);
  EXPECT_TRUE(codegen::EmitsAsVectors(oo->body, oo->loop_var.get(), nullptr, &repeated));
  EXPECT_TRUE(repeated);
}

TEST(CodegenRepeatLoadTest, ChunksAreOneLoadAndAShuffleAtAnyWidth) {
  for (int width : {16, 40, 160}) {
    for (int k : {2, 4}) {
      std::vector<PrimFunc> funcs = Funcs(RepeatModule(width, k));
      ASSERT_EQ(funcs.size(), 1u);
      Result<std::string> ir = codegen::EmitLLVMIR(funcs, kAvx2);
      ASSERT_TRUE(ir.ok()) << ir.status().ToString();
      // A whole chunk reads 16 / k source elements as one vector.
      std::string narrow = "load <" + std::to_string(16 / k) + " x float>";
      EXPECT_NE(ir->find(narrow), std::string::npos) << width << " " << k;
      EXPECT_NE(ir->find("shufflevector"), std::string::npos) << width << " " << k;
      EXPECT_EQ(ir->find("llvm.masked.gather"), std::string::npos) << width << " " << k;
      // No loop left to LLVM's loop vectorizer.
      EXPECT_EQ(ir->find("!\"llvm.loop.vectorize.enable\", i1 true"), std::string::npos) << width << " " << k;
      // Past the explicit vectors' 64 lanes: a loop over chunks.
      EXPECT_EQ(ir->find("chunks.o") != std::string::npos, width > 64) << width << " " << k;
    }
  }
}

TEST(CodegenRepeatLoadTest, NumbersOfTheScalarLoopAtOddWidths) {
  for (int width : {5, 13, 29, 70, 163}) {
    for (int k : {2, 4, 8}) {
      std::vector<PrimFunc> funcs = Funcs(RepeatModule(width, k));
      ASSERT_EQ(funcs.size(), 1u);
      auto built = codegen::BuildNativeLibrary(funcs, {});
      ASSERT_TRUE(built.ok()) << built.status().ToString();
      auto lib = LoadedLibrary::Load(built->shared_object);
      ASSERT_TRUE(lib.ok()) << lib.status().ToString();
      const int src = (width + k - 1) / k, wide = width + 1;
      Tensor x = MakeTensor({3, src}), z = MakeTensor({3, wide}), y = MakeTensor({3, wide});
      FillRandom(x, 11);
      FillRandom(z, 12);
      for (int i = 0; i < 3 * wide; ++i) y.data<float>()[i] = 1234.0f;
      std::string error;
      ASSERT_EQ(RunKernel(**lib, "up", {x, z, y}, &error), 0) << error;
      for (int r = 0; r < 3; ++r) {
        for (int o = 0; o < width; ++o) {
          float want = x.data<float>()[r * src + o / k] + z.data<float>()[r * wide + o];
          ASSERT_EQ(y.data<float>()[r * wide + o], want) << width << " " << k << " " << r << " " << o;
        }
        EXPECT_EQ(y.data<float>()[r * wide + width], 1234.0f) << width << " " << k << " " << r;
      }
    }
  }
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln
