// SimplifySymbolicDivisions: a pixel shuffle (reshape, transpose, reshape)
// and a nearest resize by 4 (its o // 4 written by resize2d's legalization,
// NearestFactor), compiled once for symbolic N, H and W, index
// without run-time divisions or float scales (structure of the lowered TIR)
// and give the right numbers at several sizes (driver + VM).
#include "compiler/tir/symbolic_divisions.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/writer/vmfb_writer.h"
#include "runtime/tensor.h"
#include "vm/module.h"

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT

const char* kModule = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4, "h", "w"), dtype="float32")) -> R.Tuple(R.Tensor(dtype="float32", ndim=4), R.Tensor(dtype="float32", ndim=4)):
        n = T.int64()
        h = T.int64()
        w = T.int64()
        with R.dataflow():
            y = R.image.resize2d(x, R.shape([h * 4, w * 4]), method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor")
            r = R.reshape(x, R.shape([n, 2, 2, 1, h, w]))
            p = R.permute_dims(r, axes=[0, 3, 4, 1, 5, 2])
            z = R.reshape(p, R.shape([n, 1, h * 2, w * 2]))
            gv = (y, z)
            R.output(gv)
        return gv
)";

// Divisions and remainders by non-constants, and float floors, in a function.
struct Census : StmtExprVisitor {
  int symbolic_divisions = 0, floors = 0;
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* d = e.as<FloorDivNode>()) symbolic_divisions += nest::ConstInt(d->b) == nullptr;
    if (const auto* m = e.as<FloorModNode>()) symbolic_divisions += nest::ConstInt(m->b) == nullptr;
    if (const auto* c = e.as<CallNode>()) floors += c->op == "floor";
    StmtExprVisitor::VisitExpr(e);
  }
};

TEST(SymbolicDivisionsTest, NoRunTimeDivisions) {
  Result<IRModule> mod = text::ParseModule(kModule, "divisions.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  driver::CompileOptions options;
  Result<IRModule> lowered = driver::LowerModule(*mod, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  int funcs = 0;
  for (const ModuleEntry& e : lowered->entries) {
    if (!e.prim) continue;
    ++funcs;
    Census c;
    c.VisitStmt(e.prim->body);
    EXPECT_EQ(c.symbolic_divisions, 0) << e.name;
    EXPECT_EQ(c.floors, 0) << e.name;
  }
  EXPECT_GE(funcs, 1);
}

TEST(SymbolicDivisionsTest, Numbers) {
  Result<IRModule> mod = text::ParseModule(kModule, "divisions.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  driver::CompileOptions options;
  Result<compiler::VmfbProgram> program = driver::CompileModule(*mod, options);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  Result<std::vector<uint8_t>> bytes = compiler::SerializeVmfb(*program);
  ASSERT_TRUE(bytes.ok());
  void* owned = std::aligned_alloc(64, (bytes->size() + 63) / 64 * 64);
  std::memcpy(owned, bytes->data(), bytes->size());
  auto loaded = vm::Module::LoadOwnedBuffer(
      owned, bytes->size(), [](const void*, void* user) { std::free(user); }, owned, vm::LoadOptions());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  for (const std::vector<int64_t>& s : std::vector<std::vector<int64_t>>{{1, 4, 1, 1}, {2, 4, 3, 5}, {1, 4, 7, 9}}) {
    int64_t n = s[0], h = s[2], w = s[3];
    SCOPED_TRACE(std::to_string(n) + "x4x" + std::to_string(h) + "x" + std::to_string(w));
    Tensor x = Tensor::Empty(s, DType::Float32()).value();
    float* xv = x.data<float>();
    for (int64_t i = 0; i < n * 4 * h * w; ++i) xv[i] = static_cast<float>(i % 1000) * 0.5f;
    std::vector<Any> args = {x};
    Any ret;
    std::unique_ptr<vm::Context> ctx = (*loaded)->CreateContext();
    Status st = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(ret.is_tuple());
    const std::vector<Any>& outs = ret.tuple_fields();
    ASSERT_EQ(outs.size(), 2u);
    Result<Tensor> y = outs[0].AsTensor(), z = outs[1].AsTensor();
    ASSERT_TRUE(y.ok() && z.ok());
    ASSERT_EQ(y->shape(), (std::vector<int64_t>{n, 4, h * 4, w * 4}));
    ASSERT_EQ(z->shape(), (std::vector<int64_t>{n, 1, h * 2, w * 2}));
    auto at = [&](int64_t b, int64_t c, int64_t i, int64_t j) { return xv[((b * 4 + c) * h + i) * w + j]; };
    int bad = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t c = 0; c < 4; ++c)
        for (int64_t i = 0; i < h * 4; ++i)
          for (int64_t j = 0; j < w * 4; ++j)
            bad += y->data<float>()[((b * 4 + c) * h * 4 + i) * w * 4 + j] != at(b, c, i / 4, j / 4);
    // Pixel shuffle: z[b, 0, 2i + a, 2j + d] = x[b, 2a + d, i, j].
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < h * 2; ++i)
        for (int64_t j = 0; j < w * 2; ++j)
          bad += z->data<float>()[(b * h * 2 + i) * w * 2 + j] != at(b, (i % 2) * 2 + j % 2, i / 2, j / 2);
    EXPECT_EQ(bad, 0);
  }
}


// The function `name` of `source` (a module's text) rewritten by
// SimplifySymbolicDivisions, printed as a module of that one function.
std::string Rewritten(const std::string& source) {
  Result<IRModule> mod = text::ParseModule(source, "before.relax");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return "";
  for (ModuleEntry& e : mod->entries)
    if (e.prim) e.prim = SimplifySymbolicDivisions(e.prim);
  return text::PrintModule(*mod);
}

std::string Printed(const std::string& source) {
  Result<IRModule> mod = text::ParseModule(source, "after.relax");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  return mod.ok() ? text::PrintModule(*mod) : "";
}

// A concatenation along channels reshaped to (n, 5, h * w), as legalize
// writes it: every index goes through the flat position and divides it by
// w, h and 5 again. After: the division by h * w of the flat index leaves
// the channel, the flat loop is split into rows and columns, and no
// division is left.
TEST(SymbolicDivisionsTest, ConcatReshapeBeforeAfter) {
  const std::string before = R"(@I.ir_module
class Module:
    @T.prim_func
    def concat_reshape(a_handle: T.handle, b_handle: T.handle, y_handle: T.handle):
        n = T.int64()
        h = T.int64()
        w = T.int64()
        a = T.match_buffer(a_handle, (n, 3, h, w), "float32")
        b = T.match_buffer(b_handle, (n, 2, h, w), "float32")
        y = T.match_buffer(y_handle, (n, 5, h * w), "float32")
        for i0, i1, i2 in T.grid(n, T.int64(5), h * w):
            y[i0, i1, i2] = T.if_then_else((i0 * (h * w * 5) + i1 * (h * w) + i2) // w // h % 5 < 3, a[(i0 * (h * w * 5) + i1 * (h * w) + i2) // w // h // 5, (i0 * (h * w * 5) + i1 * (h * w) + i2) // w // h % 5, (i0 * (h * w * 5) + i1 * (h * w) + i2) // w % h, (i0 * (h * w * 5) + i1 * (h * w) + i2) % w], b[(i0 * (h * w * 5) + i1 * (h * w) + i2) // w // h // 5, (i0 * (h * w * 5) + i1 * (h * w) + i2) // w // h % 5 - 3, (i0 * (h * w * 5) + i1 * (h * w) + i2) // w % h, (i0 * (h * w * 5) + i1 * (h * w) + i2) % w])
)";
  const std::string after = R"(@I.ir_module
class Module:
    @T.prim_func
    def concat_reshape(a_handle: T.handle, b_handle: T.handle, y_handle: T.handle):
        n = T.int64()
        h = T.int64()
        w = T.int64()
        a = T.match_buffer(a_handle, (n, 3, h, w), "float32")
        b = T.match_buffer(b_handle, (n, 2, h, w), "float32")
        y = T.match_buffer(y_handle, (n, 5, h * w), "float32")
        for i0, i1 in T.grid(n, T.int64(5)):
            for i2_o, i2_i in T.grid(h, w):
                y[i0, i1, i2_o * w + i2_i] = T.if_then_else(i1 < 3, a[i0, i1, i2_o, i2_i], b[i0, i1 - 3, i2_o, i2_i])
)";
  EXPECT_EQ(Rewritten(before), Printed(after));
}

// floordiv(Q * d + r, d) with r not known to lie in [0, d): Q plus the
// division of r alone (exact for every r); a loop whose body also divides
// its variable by another divisor is not split.
TEST(SymbolicDivisionsTest, RemainderKeepsItsDivisionBeforeAfter) {
  const std::string before = R"(@I.ir_module
class Module:
    @T.prim_func
    def shifted(x_handle: T.handle, y_handle: T.handle):
        n = T.int64()
        w = T.int64()
        x = T.match_buffer(x_handle, (n * w + 7,), "float32")
        y = T.match_buffer(y_handle, (n, w * 2), "float32")
        for i0, i1 in T.grid(n, w * 2):
            y[i0, i1] = x[(i0 * w + i1 + 7) // w * w + (i0 * w + i1 + 7) % w] + x[i1 // w + i1 % 2]
)";
  const std::string after = R"(@I.ir_module
class Module:
    @T.prim_func
    def shifted(x_handle: T.handle, y_handle: T.handle):
        n = T.int64()
        w = T.int64()
        x = T.match_buffer(x_handle, (n * w + 7,), "float32")
        y = T.match_buffer(y_handle, (n, w * 2), "float32")
        for i0, i1 in T.grid(n, w * 2):
            y[i0, i1] = x[(i0 + (i1 + 7) // w) * w + (i1 + 7) % w] + x[i1 // w + i1 % 2]
)";
  EXPECT_EQ(Rewritten(before), Printed(after));
}

// Concatenations of symbolic parts, reshaped, then concatenated again along
// the flat axis (YOLOv8's detection head), at sizes that are and are not
// multiples of each other.
TEST(SymbolicDivisionsTest, ConcatReshapeConcatNumbers) {
  const char* src = R"(@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("n", 3, "h", "w"), dtype="float32"), b: R.Tensor(("n", 2, "h", "w"), dtype="float32"), c: R.Tensor(("n", 5, "k"), dtype="float32")) -> R.Tensor(dtype="float32", ndim=3):
        n = T.int64()
        h = T.int64()
        w = T.int64()
        k = T.int64()
        with R.dataflow():
            x = R.concat((a, b), axis=1)
            y = R.reshape(x, R.shape([n, 5, h * w]))
            z = R.concat((y, c), axis=2)
            R.output(z)
        return z
)";
  Result<IRModule> mod = text::ParseModule(src, "head.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  Result<IRModule> lowered = driver::LowerModule(*mod, driver::CompileOptions());
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  for (const ModuleEntry& e : lowered->entries) {
    if (!e.prim) continue;
    Census census;
    census.VisitStmt(e.prim->body);
    EXPECT_EQ(census.symbolic_divisions, 0) << e.name;
  }
  Result<compiler::VmfbProgram> program = driver::CompileModule(*mod, driver::CompileOptions());
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  Result<std::vector<uint8_t>> bytes = compiler::SerializeVmfb(*program);
  ASSERT_TRUE(bytes.ok());
  void* owned = std::aligned_alloc(64, (bytes->size() + 63) / 64 * 64);
  std::memcpy(owned, bytes->data(), bytes->size());
  auto loaded = vm::Module::LoadOwnedBuffer(
      owned, bytes->size(), [](const void*, void* user) { std::free(user); }, owned, vm::LoadOptions());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  for (const std::vector<int64_t>& s :
       std::vector<std::vector<int64_t>>{{1, 1, 1, 1}, {2, 3, 5, 4}, {1, 40, 40, 21}, {2, 7, 33, 0}}) {
    const int64_t n = s[0], h = s[1], w = s[2], k = s[3];
    SCOPED_TRACE(std::to_string(n) + " " + std::to_string(h) + "x" + std::to_string(w) + " k " + std::to_string(k));
    auto fill = [](const std::vector<int64_t>& shape, float base) {
      Tensor t = Tensor::Empty(shape, DType::Float32()).value();
      int64_t count = 1;
      for (int64_t d : shape) count *= d;
      for (int64_t i = 0; i < count; ++i) t.data<float>()[i] = base + static_cast<float>(i);
      return t;
    };
    Tensor a = fill({n, 3, h, w}, 0.0f), b = fill({n, 2, h, w}, 100000.0f), c = fill({n, 5, k}, 200000.0f);
    std::vector<Any> args = {a, b, c};
    Any ret;
    std::unique_ptr<vm::Context> ctx = (*loaded)->CreateContext();
    Status st = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
    ASSERT_TRUE(st.ok()) << st.ToString();
    Result<Tensor> z = ret.AsTensor();
    ASSERT_TRUE(z.ok());
    const int64_t row = h * w + k;
    ASSERT_EQ(z->shape(), (std::vector<int64_t>{n, 5, row}));
    int bad = 0;
    for (int64_t i0 = 0; i0 < n; ++i0)
      for (int64_t ch = 0; ch < 5; ++ch)
        for (int64_t j = 0; j < row; ++j) {
          float want = j >= h * w ? c.data<float>()[(i0 * 5 + ch) * k + j - h * w]
                       : ch < 3   ? a.data<float>()[(i0 * 3 + ch) * h * w + j]
                                  : b.data<float>()[(i0 * 2 + ch - 3) * h * w + j];
          bad += z->data<float>()[(i0 * 5 + ch) * row + j] != want;
        }
    EXPECT_EQ(bad, 0);
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
