// Struct-info inference (normalize): what it infers for each construct, with
// symbolic dimensions flowing through, and every user-facing error of
// infer_struct_info.cc and of the operators' inference functions (op_*.cc),
// each checked with its file:line:col prefix.
#include "compiler/relax/infer_struct_info.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "compiler/text/text.h"

namespace kiln {
namespace relax {
namespace {

ir::IRModule Parse(const std::string& src) {
  Result<ir::IRModule> r = text::ParseModule(src, "t.relax");
  EXPECT_TRUE(r.ok()) << r.status().message() << "\n" << src;
  return r.ok() ? *r : ir::IRModule();
}

const ir::Binding* FindBinding(const ir::Function& f, const std::string& var) {
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(f->body);
  if (!seq) return nullptr;
  for (const auto& block : seq->blocks)
    for (const auto& b : block.bindings)
      if (b.var->name == var) return &b;
  return nullptr;
}

// The printed struct info of `var` in `main` after normalization.
std::string SInfoOf(const ir::IRModule& mod, const std::string& var) {
  ir::Function f = mod.FindRelax("main");
  if (!f) return "<no main>";
  const ir::Binding* b = FindBinding(f, var);
  if (!b) return "<no binding " + var + ">";
  return text::PrintStructInfo(b->var->struct_info);
}

ir::IRModule Normalize(const std::string& src) {
  Result<ir::IRModule> r = InferStructInfo(Parse(src));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ir::IRModule();
}

// ----------------------------------------------------------------- inference

TEST(InferStructInfo, SymbolicDimsFlowThroughMatmulAddAndRelu) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 784), dtype="float32"), w: R.Tensor((784, 128), dtype="float32"), b: R.Tensor((128,), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            lv0 = R.matmul(x, w)
            lv1 = R.add(lv0, b)
            lv2 = R.nn.relu(lv1)
            R.output(lv2)
        return lv2
)");
  EXPECT_EQ(SInfoOf(mod, "lv0"), "R.Tensor((n, 128), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "lv1"), "R.Tensor((n, 128), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "lv2"), "R.Tensor((n, 128), dtype=\"float32\")");
  // The result's dimension 0 is the parameter's variable n itself, not a copy.
  ir::Function main = mod.FindRelax("main");
  const auto* x = ir::SInfoAs<ir::TensorSInfo>(main->params[0]->struct_info);
  const auto* lv2 = ir::SInfoAs<ir::TensorSInfo>(FindBinding(main, "lv2")->var->struct_info);
  ASSERT_NE(x, nullptr);
  ASSERT_NE(lv2, nullptr);
  EXPECT_TRUE(lv2->shape[0].same_as(x->shape[0]));
  // With no declared result, the function's result is the inferred one.
  EXPECT_EQ(text::PrintStructInfo(main->ret_sinfo), "R.Tensor((n, 128), dtype=\"float32\")");
  ASSERT_NE(ir::SInfoAs<ir::FuncSInfo>(main->struct_info), nullptr);
}

// An if's value satisfies both branches: where they may differ, only what
// they share (rank, dtype, tuple arity) is kept. (Branches of different
// dtypes are refused: CheckCompatible.)
TEST(InferStructInfo, IfTakesWhatBothBranchesShare) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor(("n", 2), dtype="float32"), y: R.Tensor(("m", 2), dtype="float32")):
        n = T.int64()
        m = T.int64()
        if c:
            a = R.concat((x, x), axis=0)
            r = (a, x, x)
        else:
            r = (x, x, y)
        s = r[0]
        t = r[1]
        u = r[2]
        return s
)");
  EXPECT_EQ(SInfoOf(mod, "s"), "R.Tensor(ndim=2, dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "t"), "R.Tensor((n, 2), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "u"), "R.Tensor(ndim=2, dtype=\"float32\")");
}

TEST(InferStructInfo, BroadcastingRightAlignsAndTakesTheNonOneDimension) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(("n", 128), dtype="float32"), b: R.Tensor((128,), dtype="float32"), c: R.Tensor(("n", 1), dtype="float32"), d: R.Tensor((1, 128), dtype="float32"), e: R.Tensor((2, 1, 3), dtype="float32"), f: R.Tensor((4, 1), dtype="float32")):
        n = T.int64()
        r0 = R.add(a, b)
        r1 = R.subtract(b, a)
        r2 = R.multiply(c, d)
        r3 = R.divide(e, f)
        r4 = R.add(a, a)
        return r0
)");
  EXPECT_EQ(SInfoOf(mod, "r0"), "R.Tensor((n, 128), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "r1"), "R.Tensor((n, 128), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "r2"), "R.Tensor((n, 128), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "r3"), "R.Tensor((2, 4, 3), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "r4"), "R.Tensor((n, 128), dtype=\"float32\")");
}

TEST(InferStructInfo, PermuteDimsWithAndWithoutAxes) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3, 4), dtype="float32"), u: R.Tensor(ndim=3, dtype="float32")):
        n = T.int64()
        r0 = R.permute_dims(x)
        r1 = R.permute_dims(x, axes=None)
        r2 = R.permute_dims(x, axes=[1, 0, 2])
        r3 = R.permute_dims(x, axes=[-1, 0, 1])
        r4 = R.permute_dims(u, axes=[1, 0, 2])
        return r0
)");
  EXPECT_EQ(SInfoOf(mod, "r0"), "R.Tensor((4, 3, n), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "r1"), "R.Tensor((4, 3, n), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "r2"), "R.Tensor((3, n, 4), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "r3"), "R.Tensor((4, n, 3), dtype=\"float32\")");
  // Unknown shape: only the rank is known.
  EXPECT_EQ(SInfoOf(mod, "r4"), "R.Tensor(ndim=3, dtype=\"float32\")");
}

TEST(InferStructInfo, MatmulBatchedAndUnknownShapes) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("b", "n", 8), dtype="float32"), w: R.Tensor((8, "k"), dtype="float32"), u: R.Tensor(ndim=2, dtype="float32")):
        b = T.int64()
        n = T.int64()
        k = T.int64()
        r0 = R.matmul(x, w)
        r1 = R.matmul(u, w)
        return r0
)");
  EXPECT_EQ(SInfoOf(mod, "r0"), "R.Tensor((b, n, k), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "r1"), "R.Tensor(ndim=2, dtype=\"float32\")");
}

TEST(InferStructInfo, TuplesAndIndexing) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), s: R.Shape([2, 3])):
        n = T.int64()
        t = (x, s)
        a = t[1]
        b = t[0]
        return t
)");
  EXPECT_EQ(SInfoOf(mod, "t"), "R.Tuple(R.Tensor((n, 4), dtype=\"float32\"), R.Shape([2, 3]))");
  EXPECT_EQ(SInfoOf(mod, "a"), "R.Shape([2, 3])");
  EXPECT_EQ(SInfoOf(mod, "b"), "R.Tensor((n, 4), dtype=\"float32\")");
  EXPECT_EQ(text::PrintStructInfo(mod.FindRelax("main")->ret_sinfo),
            "R.Tuple(R.Tensor((n, 4), dtype=\"float32\"), R.Shape([2, 3]))");
}

TEST(InferStructInfo, MatchCastBindsNewSymbolsThatFlowOn) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32"), w: R.Tensor((16, 8), dtype="float32")):
        m = T.int64()
        a = R.match_cast(x, R.Tensor((m, 16), dtype="float32"))
        b = R.matmul(a, w)
        return b
)");
  EXPECT_EQ(SInfoOf(mod, "a"), "R.Tensor((m, 16), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "b"), "R.Tensor((m, 8), dtype=\"float32\")");
}

TEST(InferStructInfo, AnnotationsAreKeptEvenWhenLessPrecise) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(ndim=2, dtype="float32"):
        n = T.int64()
        a: R.Tensor(ndim=2, dtype="float32") = R.add(x, x)
        b: R.Tensor(("n", 4), dtype="float32") = R.nn.relu(x)
        c: R.Object = R.nn.relu(x)
        return a
)");
  EXPECT_EQ(SInfoOf(mod, "a"), "R.Tensor(ndim=2, dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "b"), "R.Tensor((n, 4), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "c"), "R.Object");
  EXPECT_EQ(text::PrintStructInfo(mod.FindRelax("main")->ret_sinfo), "R.Tensor(ndim=2, dtype=\"float32\")");
}

TEST(InferStructInfo, CallsOfFunctionsKernelsAndPackedFunctions) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @T.prim_func
    def copy(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            B[i, j] = A[i, j]

    @R.function
    def g(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        return x

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        cls = Module
        a = cls.g(x)
        b = R.call_tir(cls.copy, (a,), out_sinfo=R.Tensor((2, 3), dtype="float32"))
        c = R.call_dps_packed("p", (b,), out_sinfo=[R.Tensor((2, 3), dtype="float32"), R.Tensor((6,), dtype="int32")])
        d = R.call_packed("q", b, sinfo_args=R.Tensor((3,), dtype="float32"))
        return b
)");
  EXPECT_EQ(SInfoOf(mod, "a"), "R.Tensor((2, 3), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "b"), "R.Tensor((2, 3), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "c"), "R.Tuple(R.Tensor((2, 3), dtype=\"float32\"), R.Tensor((6,), dtype=\"int32\"))");
  EXPECT_EQ(SInfoOf(mod, "d"), "R.Tensor((3,), dtype=\"float32\")");
}

TEST(InferStructInfo, CalleesLaterInTheModuleAreInferredFirst) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        cls = Module
        y = cls.g(x)
        z = R.add(y, y)
        return z

    @R.function
    def g(a: R.Tensor((2, 3), dtype="float32")):
        return a
)");
  EXPECT_EQ(SInfoOf(mod, "y"), "R.Tensor((2, 3), dtype=\"float32\")");
  EXPECT_EQ(SInfoOf(mod, "z"), "R.Tensor((2, 3), dtype=\"float32\")");
  EXPECT_EQ(mod.entries[0].name, "main");  // the order is kept
}

TEST(InferStructInfo, RecursiveCallSeesOnlyTheDeclaredResult) {
  ir::IRModule mod = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        cls = Module
        y = cls.main(x)
        return x
)");
  EXPECT_EQ(SInfoOf(mod, "y"), "R.Object");
}

TEST(InferStructInfo, IsIdempotent) {
  ir::IRModule once = Normalize(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 784), dtype="float32"), w: R.Tensor((128, 784), dtype="float32")):
        n = T.int64()
        lv0 = R.permute_dims(w)
        lv1 = R.matmul(x, lv0)
        return lv1
)");
  std::string first = text::PrintModule(once);
  Result<ir::IRModule> twice = InferStructInfo(once);
  ASSERT_TRUE(twice.ok()) << twice.status().message();
  EXPECT_EQ(text::PrintModule(*twice), first);
  EXPECT_NE(first.find("lv1: R.Tensor((n, 128), dtype=\"float32\") = R.matmul"), std::string::npos) << first;
}

// -------------------------------------------------------- errors from text

// Every case is the body of `main` below; the error is at the first
// occurrence of `marker` in the body (or at `def main` when it is empty).
const char* kHead = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            B[i, j] = A[i, j]

    @R.function
    def g(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        return x

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((4, 5), dtype="float32"), i: R.Tensor((2, 3), dtype="int32"), v: R.Tensor((3,), dtype="float32"), s: R.Shape([2, 3]), b: R.Tensor((2, "n"), dtype="float32"), b2: R.Tensor((2, "m"), dtype="float32")):
        n = T.int64()
        m = T.int64()
        cls = Module
)";

struct ErrorCase {
  const char* body;     // lines of main's body, 8-space indented
  const char* marker;   // where the error points
  StatusCode code;
  const char* message;  // after "t.relax:line:col: "
};

std::string LineCol(const std::string& src, size_t at) {
  int line = 1, col = 1;
  for (size_t k = 0; k < at; ++k) {
    if (src[k] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

class InferErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(InferErrorTest, FiresWithLocation) {
  const ErrorCase& c = GetParam();
  std::string src = std::string(kHead) + c.body;
  size_t at = src.find(c.marker, std::string(kHead).size());
  ASSERT_NE(at, std::string::npos) << c.marker;
  Result<ir::IRModule> r = InferStructInfo(Parse(src));
  ASSERT_FALSE(r.ok()) << "normalized without error:\n" << c.body;
  EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "t.relax:" + LineCol(src, at) + ": " + c.message);
}

const ErrorCase kErrorCases[] = {
    // infer_struct_info.cc
    // An operator the parser accepts (TVM has it) but Kiln does not implement.
    {"        r = R.unique(x)\n        return r\n", "R.unique", StatusCode::kNotFound, "unknown operator 'relax.unique'"},
    {"        r = R.add(x, x, x)\n        return r\n", "R.add", StatusCode::kInvalidArgument,
     "relax.add takes 2 arguments, got 3"},
    {"        r = x[1]\n        return r\n", "x[1]", StatusCode::kInvalidArgument,
     "indexing [1] into R.Tensor((2, 3), \"float32\"), which is not a tuple"},
    {"        t = (x, x)\n        r = t[2]\n        return r\n", "t[2]", StatusCode::kInvalidArgument,
     "tuple index 2 out of range for a tuple of 2"},
    {"        r = cls.f(x)\n        return r\n", "cls.f", StatusCode::kNotFound,
     "no Relax function named 'f' in the module (it is a PrimFunc: call it with R.call_tir)"},
    {"        r = cls.g(x, x)\n        return r\n", "cls.g", StatusCode::kInvalidArgument, "'g' takes 1 arguments, got 2"},
    {"        r = R.call_tir(cls.g, (x,), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n        return r\n", "R.call_tir",
     StatusCode::kNotFound, "R.call_tir: no PrimFunc named 'g' in the module"},
    {"        r = R.call_tir(cls.f, (x, x), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n        return r\n",
     "R.call_tir", StatusCode::kInvalidArgument,
     "R.call_tir: 'f' has 2 parameters but the call passes 2 inputs and 1 outputs"},
    {"        r = R.match_cast(x, R.Tensor((2, 4), dtype=\"float32\"))\n        return r\n", "r =",
     StatusCode::kInvalidArgument, "R.match_cast of 'r' can never succeed: dimension 1: declared 4, inferred 3"},
    {"        r = R.match_cast(x, R.Tensor((m, 3), dtype=\"int32\"))\n        return r\n", "r =",
     StatusCode::kInvalidArgument, "R.match_cast of 'r' can never succeed: dtype int32 was declared but the value is float32"},
    {"        r: R.Tensor((2, 3), dtype=\"int32\") = R.add(x, x)\n        return r\n", "r:", StatusCode::kInvalidArgument,
     "'r' is annotated R.Tensor((2, 3), \"int32\") but its value is R.Tensor((2, 3), \"float32\"): "
     "dtype int32 was declared but the value is float32"},
    {"        r: R.Tensor(ndim=3, dtype=\"float32\") = R.add(x, x)\n        return r\n", "r:", StatusCode::kInvalidArgument,
     "'r' is annotated R.Tensor(ndim=3, dtype=\"float32\") but its value is R.Tensor((2, 3), \"float32\"): "
     "rank 3 was declared but the value has rank 2"},
    {"        r: R.Shape([2, 3]) = R.add(x, x)\n        return r\n", "r:", StatusCode::kInvalidArgument,
     "'r' is annotated R.Shape((2, 3)) but its value is R.Tensor((2, 3), \"float32\"): "
     "expected R.Shape((2, 3)), got R.Tensor((2, 3), \"float32\")"},
    {"        t = (x, s)\n        r: R.Tuple(R.Tensor((2, 3), dtype=\"float32\")) = t\n        return r\n", "r:",
     StatusCode::kInvalidArgument,
     "'r' is annotated R.Tuple(R.Tensor((2, 3), \"float32\")) but its value is "
     "R.Tuple(R.Tensor((2, 3), \"float32\"), R.Shape((2, 3))): a tuple of 1 was declared, the value has 2"},
    {"        t = (x, s)\n        r: R.Tuple(R.Tensor((2, 3), dtype=\"float32\"), R.Shape([2, 3])) = (y, s)\n        return r\n",
     "r:", StatusCode::kInvalidArgument,
     "'r' is annotated R.Tuple(R.Tensor((2, 3), \"float32\"), R.Shape((2, 3))) but its value is "
     "R.Tuple(R.Tensor((4, 5), \"float32\"), R.Shape((2, 3))): field 0: dimension 0: declared 2, inferred 4"},
    // op_matmul.cc
    {"        r = R.matmul(x, s)\n        return r\n", "R.matmul", StatusCode::kInvalidArgument, "R.matmul expects two tensors"},
    {"        r = R.matmul(x, i)\n        return r\n", "R.matmul", StatusCode::kInvalidArgument,
     "R.matmul: operand dtypes differ: float32 and int32"},
    {"        r = R.matmul(v, x)\n        return r\n", "R.matmul", StatusCode::kInvalidArgument,
     "R.matmul: reduction dimensions differ: x (3,) has K=3 but y (2, 3) has K=2"},
    {"        r = R.matmul(x, x)\n        return r\n", "R.matmul", StatusCode::kInvalidArgument,
     "R.matmul: reduction dimensions differ: x (2, 3) has K=3 but y (2, 3) has K=2"},
    // op_permute_dims.cc
    {"        r = R.permute_dims(s)\n        return r\n", "R.permute_dims", StatusCode::kInvalidArgument,
     "R.permute_dims expects a tensor"},
    {"        r = R.permute_dims(x, axes=[0])\n        return r\n", "R.permute_dims", StatusCode::kInvalidArgument,
     "R.permute_dims: 1 axes given for a tensor of rank 2"},
    {"        r = R.permute_dims(x, axes=[0, 0])\n        return r\n", "R.permute_dims", StatusCode::kInvalidArgument,
     "R.permute_dims: axes are not a permutation of 0..1"},
    {"        r = R.permute_dims(x, axes=[0, -3])\n        return r\n", "R.permute_dims", StatusCode::kInvalidArgument,
     "R.permute_dims: axes are not a permutation of 0..1"},
    {"        r = R.permute_dims(x, axes=1)\n        return r\n", "R.permute_dims", StatusCode::kInvalidArgument,
     "R.permute_dims: axes must be a list of integers or None"},
    // op_elementwise.cc
    {"        r = R.add(x, s)\n        return r\n", "R.add", StatusCode::kInvalidArgument, "R.add expects two tensors"},
    {"        r = R.add(x, i)\n        return r\n", "R.add", StatusCode::kInvalidArgument,
     "R.add: operand dtypes differ: float32 and int32"},
    {"        r = R.subtract(x, y)\n        return r\n", "R.subtract", StatusCode::kInvalidArgument,
     "R.subtract: shapes (2, 3) and (4, 5) do not broadcast (3 vs 5)"},
    {"        r = R.multiply(b, b2)\n        return r\n", "R.multiply", StatusCode::kUnimplemented,
     "R.multiply: cannot prove that dimensions n and m are equal or 1"},
    {"        r = R.nn.relu(s)\n        return r\n", "R.nn.relu", StatusCode::kInvalidArgument, "R.nn.relu expects a tensor"},
};

INSTANTIATE_TEST_SUITE_P(Messages, InferErrorTest, ::testing::ValuesIn(kErrorCases));

TEST(InferStructInfoError, DeclaredResultContradictsTheBody) {
  const char* src = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((3, 2), dtype="float32"):
        return x
)";
  Result<ir::IRModule> r = InferStructInfo(Parse(src));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "t.relax:4:5: function 'main' returns R.Tensor((2, 3), \"float32\") but declares "
            "R.Tensor((3, 2), \"float32\"): dimension 0: declared 3, inferred 2");
}

// ------------------------------------------------ errors from built IR
// The parser refuses these inputs itself, so the IR is built directly; the
// nodes get a span so the location prefix is still checked.

ir::SourceSpan At(int line, int col) {
  ir::SourceSpan s;
  s.file = std::make_shared<const std::string>("built.relax");
  s.line = line;
  s.col = col;
  return s;
}

ir::StructInfo F32(std::vector<ir::PrimExpr> shape) { return ir::MakeTensorSInfo(std::move(shape), DType::Float32()); }

// A module with PrimFunc f(A, B) and main(x: (2, 3)) { r = make(x); return r }.
ir::IRModule ModuleWithMain(const std::function<ir::Expr(const ir::RVar& x)>& make) {
  ir::IRModule mod = Parse(R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            B[i, j] = A[i, j]
)");
  ir::RVar x = ir::MakeRVar("x", F32({2, 3}));
  ir::RVar r = ir::MakeRVar("r");
  ir::BindingBlock block;
  block.bindings.push_back(ir::Binding{r, make(x), nullptr, At(3, 9)});
  auto f = std::make_shared<ir::FunctionExpr>();
  f->name = "main";
  f->params = {x};
  f->body = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{block}, r);
  f->span = At(2, 5);
  mod.Add("main", ir::Function(f));
  return mod;
}

template <typename T>
std::shared_ptr<T> WithSpan(std::shared_ptr<T> e, int line, int col) {
  e->span = At(line, col);
  return e;
}

void ExpectError(const ir::IRModule& mod, StatusCode code, const std::string& message) {
  Result<ir::IRModule> r = InferStructInfo(mod);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), message);
}

TEST(InferStructInfoError, GlobalVarOfNoFunction) {
  ExpectError(ModuleWithMain([](const ir::RVar&) {
                return WithSpan(std::make_shared<ir::GlobalVarExpr>("nowhere"), 3, 13);
              }),
              StatusCode::kNotFound, "built.relax:3:13: no function named 'nowhere' in the module");
}

TEST(InferStructInfoError, CallOfAMissingFunction) {
  ExpectError(ModuleWithMain([](const ir::RVar& x) {
                auto callee = std::make_shared<ir::GlobalVarExpr>("nowhere");
                return WithSpan(std::make_shared<ir::CallExpr>(callee, std::vector<ir::Expr>{x}), 3, 13);
              }),
              StatusCode::kNotFound, "built.relax:3:13: no Relax function named 'nowhere' in the module");
}

TEST(InferStructInfoError, IfBranchesOfDifferentTypes) {
  ExpectError(ModuleWithMain([](const ir::RVar& x) {
                auto cond = std::make_shared<ir::PrimValueExpr>(ir::IntImm(DType::Bool(), 1));
                auto then_branch = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{}, x);
                auto t = std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{x});
                auto else_branch = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{}, t);
                return WithSpan(std::make_shared<ir::IfExpr>(cond, then_branch, else_branch), 3, 13);
              }),
              StatusCode::kInvalidArgument,
              "built.relax:3:13: the branches of if return different types: expected R.Tensor((2, 3), \"float32\"), "
              "got R.Tuple(R.Tensor((2, 3), \"float32\"))");
}

TEST(InferStructInfoError, NestedFunction) {
  ExpectError(ModuleWithMain([](const ir::RVar& x) {
                auto inner = std::make_shared<ir::FunctionExpr>();
                inner->name = "inner";
                inner->body = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{}, x);
                return WithSpan(inner, 3, 13);
              }),
              StatusCode::kUnimplemented, "built.relax:3:13: nested functions are not supported");
}

TEST(InferStructInfoError, CallingAValue) {
  ExpectError(ModuleWithMain([](const ir::RVar& x) {
                return WithSpan(std::make_shared<ir::CallExpr>(x, std::vector<ir::Expr>{x}), 3, 13);
              }),
              StatusCode::kUnimplemented,
              "built.relax:3:13: calling a value that is not an operator, a module function or a packed function");
}

TEST(InferStructInfoError, CallTirOfANonFunction) {
  ExpectError(ModuleWithMain([](const ir::RVar& x) {
                auto args = std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{x});
                auto call = ir::MakeOpCall("relax.call_tir", {std::make_shared<ir::ExternFuncExpr>("f"), args}, {},
                                           {F32({2, 3})});
                return WithSpan(std::const_pointer_cast<ir::ExprNode>(call), 3, 13);
              }),
              StatusCode::kInvalidArgument,
              "built.relax:3:13: R.call_tir expects a PrimFunc of the module as its first argument");
}

TEST(InferStructInfoError, DpsCallWithoutOutSinfo) {
  ExpectError(ModuleWithMain([](const ir::RVar& x) {
                auto args = std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{x});
                auto call = ir::MakeOpCall("relax.call_dps_packed", {std::make_shared<ir::ExternFuncExpr>("p"), args});
                return WithSpan(std::const_pointer_cast<ir::ExprNode>(call), 3, 13);
              }),
              StatusCode::kInvalidArgument, "built.relax:3:13: R.call_dps_packed needs out_sinfo");
}

TEST(InferStructInfoError, DpsCallWithoutArgumentTuple) {
  ExpectError(ModuleWithMain([](const ir::RVar& x) {
                auto call = ir::MakeOpCall("relax.call_dps_packed", {std::make_shared<ir::ExternFuncExpr>("p"), x}, {},
                                           {F32({2, 3})});
                return WithSpan(std::const_pointer_cast<ir::ExprNode>(call), 3, 13);
              }),
              StatusCode::kInvalidArgument,
              "built.relax:3:13: R.call_dps_packed expects a callee and a tuple of arguments");
}

TEST(InferStructInfoError, MatchCastOfATupleLength) {
  // CheckCompatible's tuple-length reason through match_cast, on built IR so
  // both sides are tuples of struct info the parser cannot write directly.
  ir::IRModule mod = ModuleWithMain([](const ir::RVar& x) { return std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{x, x}); });
  ir::Function main = mod.FindRelax("main");
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(main->body);
  std::vector<ir::BindingBlock> blocks = seq->blocks;
  blocks[0].bindings[0].match_cast = std::make_shared<ir::TupleSInfo>(std::vector<ir::StructInfo>{F32({2, 3})});
  auto f = std::make_shared<ir::FunctionExpr>(*main);
  f->body = std::make_shared<ir::SeqExprNode>(blocks, seq->body);
  mod.Add("main", ir::Function(f));
  ExpectError(mod, StatusCode::kInvalidArgument,
              "built.relax:3:9: R.match_cast of 'r' can never succeed: a tuple of 1 was declared, the value has 2");
}

}  // namespace
}  // namespace relax
}  // namespace kiln
