// Vectorized loops inside unrolled ones, of widths that are not whole
// 16-float vectors, and vectorized loops with stride-2 loads, are emitted as
// explicit vectors (vector_loop.h): which bodies qualify, what the IR holds,
// and that the numbers are right.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
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

// An x86 target without AVX-512: explicit vectors of any width as they are
// (TargetDesc::masked_vectors is off), whatever the host.
const codegen::CodegenOptions kAvx2{"x86_64-unknown-linux-gnu", "haswell", "", 0};

// A register tile as the matmul schedule writes it: 8 rows unrolled,
// `width` columns vectorized, accumulated over k.
std::string TileModule(int width) {
  std::string w = std::to_string(width);
  return R"(@I.ir_module
class Module:
    @T.prim_func
    def tile(A: T.Buffer((8, 64), "float32"), B: T.Buffer((64, )" + w + R"(), "float32"), C: T.Buffer((8, )" + w + R"(), "float32")):
        acc = T.decl_buffer((8, )" + w + R"(), "float32", scope="local")
        for ii in T.unroll(8):
            for jj in T.vectorized()" + w + R"():
                acc[ii, jj] = T.float32(0)
        for k in T.serial(64):
            for ii in T.unroll(8):
                for jj in T.vectorized()" + w + R"():
                    acc[ii, jj] = T.call_intrin("float32", "fma", A[ii, k], B[k, jj], acc[ii, jj])
        for ii in T.unroll(8):
            for jj in T.vectorized()" + w + R"():
                C[ii, jj] = acc[ii, jj] * T.float32(2) - A[ii, 0]
)";
}

std::vector<PrimFunc> Funcs(const std::string& source) {
  Result<IRModule> mod = text::ParseModule(source, "<test>");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  std::vector<PrimFunc> funcs;
  if (!mod.ok()) return funcs;
  for (const auto& e : mod->entries)
    if (e.prim) funcs.push_back(e.prim);
  return funcs;
}

// Builds `funcs` as they are (no schedule applied) and runs kernel `name`
// on `tensors` (test_kernels.h's RunKernel: one thread).
void BuildAndRun(const std::vector<PrimFunc>& funcs, const std::string& name, const std::vector<Tensor>& tensors) {
  auto built = codegen::BuildNativeLibrary(funcs, {});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto lib = LoadedLibrary::Load(built->shared_object);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  std::string error;
  ASSERT_EQ(RunKernel(**lib, name, tensors, &error), 0) << error;
}

// The body of the innermost loop named `name` in `s`.
const ForNode* FindLoop(const Stmt& s, const std::string& name, const ForNode* found = nullptr) {
  if (const auto* f = As<ForNode>(s)) {
    if (f->loop_var->name == name) found = f;
    return FindLoop(f->body, name, found);
  }
  if (const auto* seq = As<SeqStmtNode>(s)) {
    for (const Stmt& c : seq->seq) found = FindLoop(c, name, found);
    return found;
  }
  if (const auto* a = As<AllocateNode>(s)) return FindLoop(a->body, name, found);
  return found;
}

TEST(CodegenVectorLoopTest, TenColumnTileIsExplicitVectorsWithTheRightNumbers) {
  for (int width : {10, 32, 49}) {
    std::vector<PrimFunc> funcs = Funcs(TileModule(width));
    ASSERT_EQ(funcs.size(), 1u);
    // Before LLVM's passes: the tile's FMAs are vector intrinsics of the
    // chunk widths (16 and the rest), not scalar loops; whole 16-float
    // widths too.
    Result<std::string> ir = codegen::EmitLLVMIR(funcs, kAvx2);
    ASSERT_TRUE(ir.ok()) << ir.status().ToString();
    if (width % 16 != 0) {
      std::string tail = "llvm.fmuladd.v" + std::to_string(width % 16) + "f32";
      EXPECT_NE(ir->find(tail), std::string::npos) << width;
    }
    if (width > 16) {
      EXPECT_NE(ir->find("llvm.fmuladd.v16f32"), std::string::npos);
    }
    EXPECT_EQ(ir->find("call float @llvm.fmuladd.f32"), std::string::npos) << width;

    Tensor a = MakeTensor({8, 64}), b = MakeTensor({64, width}), c = MakeTensor({8, width});
    FillRandom(a, 1);
    FillRandom(b, 2);
    BuildAndRun(funcs, "tile", {a, b, c});
    if (HasFatalFailure()) return;
    std::vector<float> ref(8 * width);
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < width; ++j) {
        float acc = 0;
        for (int k = 0; k < 64; ++k) acc += a.data<float>()[i * 64 + k] * b.data<float>()[k * width + j];
        ref[i * width + j] = acc * 2 - a.data<float>()[i * 64];
      }
    EXPECT_LE(MaxAbsDiff(ref.data(), c.data<float>(), 8 * width), 1e-4f) << width;
  }
}

TEST(CodegenVectorLoopTest, WhichBodiesQualify) {
  std::vector<PrimFunc> funcs = Funcs(R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 10), "float32"), B: T.Buffer((4, 10), "float32"), D: T.Buffer((4, 20), "float32"), N: T.Buffer((4, 10), "int32")):
        for i in T.unroll(4):
            for accum in T.vectorized(10):
                B[i, accum] = T.call_intrin("float32", "fma", A[i, accum], A[i, 0], B[i, accum])
            for relu in T.vectorized(10):
                B[i, relu] = T.max(A[i, relu], T.float32(0))
            for strided in T.vectorized(10):
                D[i, strided * 2] = A[i, strided]
            for shifted in T.vectorized(9):
                B[i, shifted] = B[i, shifted + 1] + T.float32(1)
            for pick in T.vectorized(10):
                B[i, pick] = T.Select(A[i, pick] > B[i, pick], A[i, pick], B[i, pick])
            for int_pick in T.vectorized(10):
                B[i, int_pick] = T.Select(N[i, int_pick] > 0, A[i, int_pick], B[i, int_pick])
            for ints in T.vectorized(10):
                N[i, ints] = N[i, ints] + 1
            for outer in T.vectorized(10):
                D[i, outer + 10] = A[i, outer] + B[i, outer] * B[T.int64(0), T.int64(3)]
)");
  ASSERT_EQ(funcs.size(), 1u);
  auto qualifies = [&](const std::string& loop) {
    const ForNode* f = FindLoop(funcs[0]->body, loop);
    EXPECT_NE(f, nullptr) << loop;
    return f != nullptr && codegen::EmitsAsVectors(f->body, f->loop_var.get());
  };
  EXPECT_TRUE(qualifies("accum"));     // an accumulator read at its own lane
  EXPECT_TRUE(qualifies("relu"));      // min / max, as the scalar path computes them
  EXPECT_TRUE(qualifies("pick"));      // a select on a float comparison
  EXPECT_FALSE(qualifies("int_pick"));  // a select on an integer comparison
  EXPECT_FALSE(qualifies("strided"));  // a store that moves 2 elements per iteration
  EXPECT_FALSE(qualifies("shifted"));  // reads the stored buffer one lane on
  EXPECT_FALSE(qualifies("ints"));     // not float32
  // Buffers the body does not store are read at any index; B[0, 3] does
  // not move with the loop and is splat.
  EXPECT_TRUE(qualifies("outer"));
}

// A matmul tile's epilogue with activations (GELU's erf, tanh, sigmoid,
// exp, and softmax's exp(min(x, 0))): explicit 16-lane vectors too (the SLP
// vectorizer made 8-lane ones of the unrolled scalar code), with the same
// numbers as the scalar math (a loop of 5 columns, not vectorized, computes
// the reference with the scalar path of the same functions).
TEST(CodegenVectorLoopTest, ActivationEpilogueIsExplicitVectors) {
  std::vector<PrimFunc> funcs = Funcs(R"(@I.ir_module
class Module:
    @T.prim_func
    def act(A: T.Buffer((2, 37), "float32"), V: T.Buffer((2, 5, 37), "float32"), S: T.Buffer((2, 5, 37), "float32")):
        for ii in T.unroll(2):
            for jj in T.vectorized(37):
                V[ii, 0, jj] = T.float32(0.5) * A[ii, jj] * (T.float32(1) + T.erf(A[ii, jj] * T.float32(0.7071067811865476)))
                V[ii, 1, jj] = T.tanh(A[ii, jj])
                V[ii, 2, jj] = T.sigmoid(A[ii, jj])
                V[ii, 3, jj] = T.exp(A[ii, jj])
                V[ii, 4, jj] = T.exp(T.min(A[ii, jj] - T.float32(3), T.float32(0)))
        for i in T.serial(2):
            for j in T.serial(37):
                S[i, 0, j] = T.float32(0.5) * A[i, j] * (T.float32(1) + T.erf(A[i, j] * T.float32(0.7071067811865476)))
                S[i, 1, j] = T.tanh(A[i, j])
                S[i, 2, j] = T.sigmoid(A[i, j])
                S[i, 3, j] = T.exp(A[i, j])
                S[i, 4, j] = T.exp(T.min(A[i, j] - T.float32(3), T.float32(0)))
)");
  ASSERT_EQ(funcs.size(), 1u);
  const ForNode* jj = FindLoop(funcs[0]->body, "jj");
  ASSERT_NE(jj, nullptr);
  EXPECT_TRUE(codegen::EmitsAsVectors(jj->body, jj->loop_var.get()));
  Result<std::string> ir = codegen::EmitLLVMIR(funcs, kAvx2);
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  // Before LLVM's passes the vector loop's math is on 16-lane (and the
  // 5-lane rest) vectors; the scalar reference loop has its own scalar code.
  EXPECT_NE(ir->find("<16 x float>"), std::string::npos);
  EXPECT_NE(ir->find("<5 x float>"), std::string::npos);

  Tensor a = MakeTensor({2, 37}), v = MakeTensor({2, 5, 37}), s = MakeTensor({2, 5, 37});
  FillRandom(a, 3);
  for (int i = 0; i < 2 * 37; ++i) a.data<float>()[i] *= 6.0f;  // erf's both branches, exp's large values
  BuildAndRun(funcs, "act", {a, v, s});
  if (HasFatalFailure()) return;
  for (int i = 0; i < 2 * 5 * 37; ++i) EXPECT_EQ(v.data<float>()[i], s.data<float>()[i]) << i;
}

// A row's max as the reduction schedule's halving tree writes it
// (reduce_schedule.h): steps between stack buffers, outside any unrolled
// loop. Explicit vectors too (LLVM promotes the arrays to scalars and
// rebuilt softmax's tree from 4-lane pieces), with the right numbers.
TEST(CodegenVectorLoopTest, HalvingTreeOnTheStackIsExplicitVectors) {
  std::vector<PrimFunc> funcs = Funcs(R"(@I.ir_module
class Module:
    @T.prim_func
    def rowmax(A: T.Buffer((3, 64), "float32"), M: T.Buffer((3,), "float32")):
        for r in T.serial(3):
            acc = T.decl_buffer((64,), "float32")
            h32 = T.decl_buffer((32,), "float32")
            h16 = T.decl_buffer((16,), "float32")
            h8 = T.decl_buffer((8,), "float32")
            for k in T.vectorized(64):
                acc[k] = A[r, k]
            for k in T.vectorized(32):
                h32[k] = T.Select(acc[k] > acc[k + 32], acc[k], acc[k + 32])
            for k in T.vectorized(16):
                h16[k] = T.max(h32[k], h32[k + 16])
            for k in T.vectorized(8):
                h8[k] = T.Select(h16[k] > h16[k + 8], h16[k], h16[k + 8])
            M[r] = T.max(T.max(T.max(h8[0], h8[1]), T.max(h8[2], h8[3])), T.max(T.max(h8[4], h8[5]), T.max(h8[6], h8[7])))
)");
  ASSERT_EQ(funcs.size(), 1u);
  Result<std::string> ir = codegen::EmitLLVMIR(funcs, {"", "", "", 0});
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  EXPECT_NE(ir->find("fcmp ogt <16 x float>"), std::string::npos);
  EXPECT_NE(ir->find("fcmp ogt <8 x float>"), std::string::npos);
  // The copy from A (not on the stack) keeps the scalar loop.
  EXPECT_EQ(ir->find("load <16 x float>, ptr %A"), std::string::npos);
  Tensor a = MakeTensor({3, 64}), m = MakeTensor({3});
  FillRandom(a, 5);
  a.data<float>()[64 + 37] = 9.0f;
  BuildAndRun(funcs, "rowmax", {a, m});
  if (HasFatalFailure()) return;
  for (int r = 0; r < 3; ++r) {
    float want = a.data<float>()[r * 64];
    for (int k = 1; k < 64; ++k) want = std::max(want, a.data<float>()[r * 64 + k]);
    EXPECT_EQ(m.data<float>()[r], want) << r;
  }
  EXPECT_EQ(m.data<float>()[1], 9.0f);
}

// A row split into its even and odd columns, as the stride-2 window
// schedules write it (window_deinterleave.h), outside any unrolled loop.
std::string DeinterleaveModule(int width) {
  std::string w = std::to_string(width), n = std::to_string(2 * width);
  return R"(@I.ir_module
class Module:
    @T.prim_func
    def split(X: T.Buffer((3, )" + n + R"(), "float32"), E: T.Buffer((3, )" + w + R"(), "float32"), O: T.Buffer((3, )" + w + R"(), "float32")):
        for r in T.serial(3):
            for j in T.vectorized()" + w + R"():
                E[r, j] = X[r, j * 2]
                O[r, j] = X[r, j * 2 + 1] * T.float32(2) + X[r, j * 2]
)";
}

TEST(CodegenVectorLoopTest, StrideTwoLoadsAreOneMaskedLoadAndAShuffle) {
  for (int width : {6, 13, 16, 27, 40}) {
    std::vector<PrimFunc> funcs = Funcs(DeinterleaveModule(width));
    ASSERT_EQ(funcs.size(), 1u);
    const ForNode* j = FindLoop(funcs[0]->body, "j");
    ASSERT_NE(j, nullptr);
    bool strided = false;
    EXPECT_TRUE(codegen::EmitsAsVectors(j->body, j->loop_var.get(), &strided));
    EXPECT_TRUE(strided);
    Result<std::string> ir = codegen::EmitLLVMIR(funcs, kAvx2);
    ASSERT_TRUE(ir.ok()) << ir.status().ToString();
    // Chunks of 16 lanes read 32 elements; the last chunk 2 * its lanes.
    std::string tail = std::to_string(2 * (width % 16 == 0 ? 16 : width % 16));
    EXPECT_NE(ir->find("llvm.masked.load.v" + tail + "f32"), std::string::npos) << width;
    EXPECT_NE(ir->find("shufflevector"), std::string::npos) << width;
    EXPECT_EQ(ir->find("llvm.masked.gather"), std::string::npos) << width;

    Tensor x = MakeTensor({3, 2 * width}), e = MakeTensor({3, width}), o = MakeTensor({3, width});
    FillRandom(x, 3);
    BuildAndRun(funcs, "split", {x, e, o});
    if (HasFatalFailure()) return;
    std::vector<float> re(3 * width), ro(3 * width);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < width; ++c) {
        const float* row = x.data<float>() + r * 2 * width;
        re[r * width + c] = row[2 * c];
        ro[r * width + c] = row[2 * c + 1] * 2 + row[2 * c];
      }
    EXPECT_EQ(MaxAbsDiff(re.data(), e.data<float>(), 3 * width), 0.0f) << width;
    EXPECT_LE(MaxAbsDiff(ro.data(), o.data<float>(), 3 * width), 1e-6f) << width;
  }
}

// Three interleaved channels split into planes (deinterleave_channels.h's
// chunks): stride-3 loads are explicit vectors only in whole 16-lane chunks;
// other widths stay with LLVM as before.
std::string ChannelsModule(int width) {
  std::string w = std::to_string(width), n = std::to_string(3 * width);
  return R"(@I.ir_module
class Module:
    @T.prim_func
    def planes(X: T.Buffer((2, )" + n + R"(), "float32"), P: T.Buffer((2, 3, )" + w + R"(), "float32")):
        for r in T.serial(2):
            for j in T.vectorized()" + w + R"():
                P[r, 0, j] = X[r, j * 3]
                P[r, 1, j] = X[r, j * 3 + 1]
                P[r, 2, j] = X[r, j * 3 + 2]
)";
}

TEST(CodegenVectorLoopTest, StrideThreeLoadsInWholeChunksAreOneMaskedLoadAndAShuffle) {
  for (int width : {12, 16, 48}) {
    std::vector<PrimFunc> funcs = Funcs(ChannelsModule(width));
    ASSERT_EQ(funcs.size(), 1u);
    const ForNode* j = FindLoop(funcs[0]->body, "j");
    ASSERT_NE(j, nullptr);
    bool strided = false;
    EXPECT_FALSE(codegen::EmitsAsVectors(j->body, j->loop_var.get(), &strided));
    EXPECT_TRUE(codegen::EmitsAsVectors(j->body, j->loop_var.get(), &strided, nullptr, /*stride3=*/true));
    EXPECT_TRUE(strided);
    Result<std::string> ir = codegen::EmitLLVMIR(funcs, kAvx2);
    ASSERT_TRUE(ir.ok()) << ir.status().ToString();
    // 16 lanes read 46 elements (48 loaded, the last two masked off).
    EXPECT_EQ(ir->find("llvm.masked.load.v48f32") != std::string::npos, width % 16 == 0) << width;

    Tensor x = MakeTensor({2, 3 * width}), pl = MakeTensor({2, 3, width});
    FillRandom(x, 5);
    BuildAndRun(funcs, "planes", {x, pl});
    if (HasFatalFailure()) return;
    std::vector<float> want(2 * 3 * width);
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c)
        for (int k = 0; k < width; ++k) want[(r * 3 + c) * width + k] = x.data<float>()[r * 3 * width + 3 * k + c];
    EXPECT_EQ(MaxAbsDiff(want.data(), pl.data<float>(), 2 * 3 * width), 0.0f) << width;
  }
}

// The window schedules' stride-2 rows: "any tap is NaN" (x != x or ...)
// and a row's bounds test (free of the loop variable: splat) as select
// conditions. Explicit vectors too (before, such a body was left to LLVM,
// which unrolled the 16-column loop and assembled its vectors lane by
// lane), with the numbers of the scalar path, NaN included.
TEST(CodegenVectorLoopTest, NaNTestsAndRowTestsAreExplicitVectors) {
  std::vector<PrimFunc> funcs = Funcs(R"(@I.ir_module
class Module:
    @T.prim_func
    def pick(X: T.Buffer((3, 64), "float32"), Y: T.Buffer((3, 32), "float32")):
        for r in T.serial(3):
            for j in T.vectorized(32):
                Y[r, j] = T.Select(X[r, j * 2] != X[r, j * 2] or X[r, j * 2 + 1] != X[r, j * 2 + 1], T.float32("nan"), T.Select(r >= 1 and r < 2, T.Select(X[r, j * 2] > X[r, j * 2 + 1], X[r, j * 2], X[r, j * 2 + 1]), T.float32(-1)))
)");
  ASSERT_EQ(funcs.size(), 1u);
  const ForNode* j = FindLoop(funcs[0]->body, "j");
  ASSERT_NE(j, nullptr);
  EXPECT_TRUE(codegen::EmitsAsVectors(j->body, j->loop_var.get()));
  Result<std::string> ir = codegen::EmitLLVMIR(funcs, {"", "", "", 0});
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  EXPECT_NE(ir->find("fcmp une <16 x float>"), std::string::npos) << *ir;
  EXPECT_EQ(ir->find("llvm.masked.gather"), std::string::npos);

  Tensor x = MakeTensor({3, 64}), y = MakeTensor({3, 32});
  FillRandom(x, 5);
  float* xs = x.data<float>();
  for (int i = 0; i < 3 * 64; i += 11) xs[i] = std::numeric_limits<float>::quiet_NaN();
  BuildAndRun(funcs, "pick", {x, y});
  if (HasFatalFailure()) return;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 32; ++c) {
      float a = xs[r * 64 + 2 * c], b = xs[r * 64 + 2 * c + 1];
      float want = std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN()
                   : r == 1                      ? (a > b ? a : b)
                                                 : -1.0f;
      float got = y.data<float>()[r * 32 + c];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << r << ", " << c;
      } else {
        EXPECT_EQ(got, want) << r << ", " << c;
      }
    }
  }
}

TEST(CodegenVectorLoopTest, FlatCoefficientOfAccesses) {
  std::vector<PrimFunc> funcs = Funcs(R"(@I.ir_module
class Module:
    @T.prim_func
    def g(A: T.Buffer((4, 6, 10), "float32"), B: T.Buffer((4, 60), "float32")):
        for i in T.serial(4):
            for j in T.vectorized(6):
                B[i, j * 10 + 3] = A[i, j, 3] + A[i, 0, j] + A[i, j // 2, 0]
)");
  ASSERT_EQ(funcs.size(), 1u);
  const ForNode* j = FindLoop(funcs[0]->body, "j");
  ASSERT_NE(j, nullptr);
  const auto* store = As<BufferStoreNode>(j->body);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(codegen::FlatCoefficient(store->buffer, store->indices, j->loop_var.get()), 10);
  // Walk the loads of A in the sum (a + b) + c.
  const auto* outer = static_cast<const BinaryNode*>(store->value.get());
  const auto* inner = static_cast<const BinaryNode*>(outer->a.get());
  const auto* l0 = inner->a.as<BufferLoadNode>();
  const auto* l1 = inner->b.as<BufferLoadNode>();
  const auto* l2 = outer->b.as<BufferLoadNode>();
  ASSERT_TRUE(l0 && l1 && l2);
  EXPECT_EQ(codegen::FlatCoefficient(l0->buffer, l0->indices, j->loop_var.get()), 10);
  EXPECT_EQ(codegen::FlatCoefficient(l1->buffer, l1->indices, j->loop_var.get()), 1);
  EXPECT_FALSE(codegen::FlatCoefficient(l2->buffer, l2->indices, j->loop_var.get()).has_value());
}

// A row of `width` columns outside any unrolled loop, into rows 2 wider
// (the 2 columns after each row must keep their values), in float32 and
// float16, beside the same computation as scalar loops.
std::string RowModule(int width) {
  std::string w = std::to_string(width), w2 = std::to_string(width + 2);
  return R"(@I.ir_module
class Module:
    @T.prim_func
    def row(A: T.Buffer((3, )" + w + R"(), "float32"), G: T.Buffer((3, )" + w + R"(), "float16"), Y: T.Buffer((3, )" + w2 + R"(), "float32"), H: T.Buffer((3, )" + w2 + R"(), "float16"), S: T.Buffer((3, )" + w2 + R"(), "float32"), SH: T.Buffer((3, )" + w2 + R"(), "float16")):
        for r in T.serial(3):
            for j in T.vectorized()" + w + R"():
                Y[r, j] = T.call_intrin("float32", "fma", T.exp(A[r, j]), T.float32(0.5), T.Cast("float32", G[r, j]))
                H[r, j] = T.Cast("float16", A[r, j] * T.float32(3) - T.Cast("float32", G[r, j]))
        for r in T.serial(3):
            for j in T.serial()" + w + R"():
                S[r, j] = T.call_intrin("float32", "fma", T.exp(A[r, j]), T.float32(0.5), T.Cast("float32", G[r, j]))
                SH[r, j] = T.Cast("float16", A[r, j] * T.float32(3) - T.Cast("float32", G[r, j]))
)";
}

// TargetDesc::masked_vectors: on x86 with AVX-512 (any vendor: the feature
// decides) a row of 14 or 29 columns (last chunk 14, 13 lanes) is explicit
// vectors, the last one masked 16 lanes per access; a row of 7 stays with
// LLVM (no explicit vectors), and a tile's 3 or 7 columns inside an
// unrolled loop are masked 4 or 8 lanes. Without AVX-512, or on AArch64, no
// masked accesses.
TEST(CodegenVectorLoopTest, OddWidthRowsAreMaskedVectorsWhereTheTargetMasks) {
  struct Case {
    std::string source, lanes;  // lanes: "" for no masked access
    bool half;                  // the row module's float16 accesses too
  };
  std::vector<Case> cases = {{RowModule(14), "16", true}, {RowModule(29), "16", true}, {RowModule(7), "", false},
                             {TileModule(3), "4", false}, {TileModule(7), "8", false}};
  for (const Case& c : cases) {
    std::vector<PrimFunc> funcs = Funcs(c.source);
    ASSERT_EQ(funcs.size(), 1u);
    for (const char* cpu : {"znver4", "skylake-avx512"}) {
      Result<std::string> ir = codegen::EmitLLVMIR(funcs, {"x86_64-unknown-linux-gnu", cpu, "", 0});
      ASSERT_TRUE(ir.ok()) << ir.status().ToString();
      if (c.lanes.empty()) {
        EXPECT_EQ(ir->find("llvm.masked.store"), std::string::npos) << cpu << " " << funcs[0]->name;
        continue;
      }
      EXPECT_NE(ir->find("llvm.masked.store.v" + c.lanes + "f32"), std::string::npos) << cpu << " " << c.lanes;
      if (c.half) {
        EXPECT_NE(ir->find("llvm.masked.load.v" + c.lanes + "f32"), std::string::npos) << cpu;
        EXPECT_NE(ir->find("llvm.masked.load.v" + c.lanes + "i16"), std::string::npos) << cpu;
        EXPECT_NE(ir->find("llvm.masked.store.v" + c.lanes + "i16"), std::string::npos) << cpu;
      }
    }
    Result<std::string> avx2 = codegen::EmitLLVMIR(funcs, kAvx2);
    ASSERT_TRUE(avx2.ok()) << avx2.status().ToString();
    EXPECT_EQ(avx2->find("llvm.masked.store"), std::string::npos) << c.lanes;
    Result<std::string> arm = codegen::EmitLLVMIR(funcs, {"aarch64-unknown-linux-gnu", "neoverse-v1", "", 0});
    ASSERT_TRUE(arm.ok()) << arm.status().ToString();
    EXPECT_EQ(arm->find("llvm.masked.store"), std::string::npos) << c.lanes;
  }
}

// The numbers of the host's code for rows of odd widths (masked where the
// host has AVX-512) equal the scalar loops', and the columns after each row
// keep their values (a masked store writes only the row's lanes).
TEST(CodegenVectorLoopTest, OddWidthRowsKeepTheNumbersAndTheNeighbours) {
  const DType f16{kDLFloat, 16, 1};
  for (int width : {3, 7, 14, 29, 61}) {
    std::vector<PrimFunc> funcs = Funcs(RowModule(width));
    ASSERT_EQ(funcs.size(), 1u);
    int w2 = width + 2;
    Tensor a = MakeTensor({3, width}), g = MakeTensor({3, width}, f16);
    Tensor y = MakeTensor({3, w2}), h = MakeTensor({3, w2}, f16), s = MakeTensor({3, w2}), sh = MakeTensor({3, w2}, f16);
    FillRandom(a, 7);
    const uint16_t halves[] = {0x3C00, 0xBC00, 0x3800, 0x4200, 0xB555};  // 1, -1, 0.5, 3, -0.333
    for (int i = 0; i < 3 * width; ++i) g.data<uint16_t>()[i] = halves[i % 5];
    for (int i = 0; i < 3 * w2; ++i) {
      y.data<float>()[i] = s.data<float>()[i] = 1234.0f;
      h.data<uint16_t>()[i] = sh.data<uint16_t>()[i] = 0x7BFF;  // 65504
    }
    BuildAndRun(funcs, "row", {a, g, y, h, s, sh});
    if (HasFatalFailure()) return;
    for (int i = 0; i < 3 * w2; ++i) {
      EXPECT_EQ(y.data<float>()[i], s.data<float>()[i]) << width << " " << i;
      EXPECT_EQ(h.data<uint16_t>()[i], sh.data<uint16_t>()[i]) << width << " " << i;
    }
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(y.data<float>()[r * w2 + width], 1234.0f) << width << " " << r;
      EXPECT_EQ(h.data<uint16_t>()[r * w2 + width + 1], 0x7BFF) << width << " " << r;
    }
  }
}

// A register tile of 10 or 15 columns on a target that masks: the
// accumulator (on the stack) is read and written with plain accesses of its
// lanes, so that LLVM keeps it in registers as it does without masks (no
// stack array more than on an AVX2 target after -O3). Masked, a 15-column
// tile stayed on the stack, every FMA waiting on a masked store.
size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(CodegenVectorLoopTest, StackTileOfOddWidthStaysInRegisters) {
  for (int width : {10, 15}) {
    std::vector<PrimFunc> funcs = Funcs(TileModule(width));
    ASSERT_EQ(funcs.size(), 1u);
    Result<std::string> masked = codegen::EmitLLVMIR(funcs, {"x86_64-unknown-linux-gnu", "znver4", "", 3});
    ASSERT_TRUE(masked.ok()) << masked.status().ToString();
    codegen::CodegenOptions avx2 = kAvx2;
    avx2.opt_level = 3;
    Result<std::string> plain = codegen::EmitLLVMIR(funcs, avx2);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    EXPECT_EQ(Count(*masked, " = alloca"), Count(*plain, " = alloca")) << width;
    EXPECT_NE(masked->find("llvm.masked.store.v16f32"), std::string::npos) << width;
  }
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln
