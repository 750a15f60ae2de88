// relax.matmul (numpy semantics: batched, broadcast batch dims, 1-D operands,
// out_dtype) and relax.linear against plain C++ references.
#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

// numpy.matmul on doubles; returns the values and sets *out_shape.
std::vector<double> RefMatmul(const Shape& xs, const Shape& ys, const std::vector<double>& xv,
                              const std::vector<double>& yv, Shape* out_shape) {
  Shape x2 = xs.size() == 1 ? Shape{1, xs[0]} : xs;
  Shape y2 = ys.size() == 1 ? Shape{ys[0], 1} : ys;
  Shape bx(x2.begin(), x2.end() - 2), by(y2.begin(), y2.end() - 2);
  Shape batch = BroadcastShape(bx, by);
  int64_t M = x2[x2.size() - 2], K = x2.back(), N = y2.back();
  Shape full = batch;
  full.push_back(M);
  full.push_back(N);
  std::vector<double> out;
  ForEachIndex(full, [&](const Shape& i) {
    Shape b(i.begin(), i.end() - 2);
    double s = 0;
    for (int64_t k = 0; k < K; ++k) {
      Shape xi = b, yi = b;
      xi.push_back(i[i.size() - 2]);
      xi.push_back(k);
      yi.push_back(k);
      yi.push_back(i.back());
      // Batch offsets: broadcast over the matrix-less prefix, then add the
      // matrix offset.
      int64_t xo = BroadcastOffset(bx, b) * M * K + xi[xi.size() - 2] * K + k;
      int64_t yo = BroadcastOffset(by, b) * K * N + k * N + yi.back();
      s += xv[xo] * yv[yo];
    }
    out.push_back(s);
  });
  *out_shape = batch;
  if (xs.size() > 1) out_shape->push_back(M);
  if (ys.size() > 1) out_shape->push_back(N);
  return out;
}

TEST(OpMatmul, NumpySemanticsMatchReference) {
  struct Case {
    Shape x, y;
  };
  const Case cases[] = {
      {{3, 4}, {4, 5}},          {{2, 3, 4}, {4, 5}},     {{2, 1, 3, 4}, {5, 4, 2}}, {{4}, {4, 5}},
      {{2, 3, 4}, {4}},          {{4}, {4}},              {{1, 3, 4}, {2, 4, 1}},    {{1, 1}, {1, 1}},
      {{3, 2, 1, 4}, {1, 2, 4, 3}},
  };
  uint64_t seed = 10;
  for (const Case& c : cases) {
    Tensor x = RandomTensor(c.x, DType::Float32(), seed++);
    Tensor y = RandomTensor(c.y, DType::Float32(), seed++);
    Shape out_shape;
    std::vector<double> want = RefMatmul(c.x, c.y, ToDoubles(x), ToDoubles(y), &out_shape);
    auto r = RunMain(OneOpModule({"x: " + TensorType(c.x), "y: " + TensorType(c.y)}, "R.matmul(x, y)"), {x, y});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, out_shape, 1e-5, 1e-5)) << "x " << c.x.size() << "-D, y " << c.y.size() << "-D";
  }
}

TEST(OpMatmul, SymbolicBatchAndRows) {
  std::string src = OneOpModule({"x: R.Tensor((\"b\", \"n\", 4), \"float32\")", "y: R.Tensor((4, 3), \"float32\")"},
                                "R.matmul(x, y)");
  for (Shape xs : {Shape{1, 1, 4}, Shape{2, 5, 4}}) {
    Tensor x = RandomTensor(xs, DType::Float32(), 1);
    Tensor y = RandomTensor({4, 3}, DType::Float32(), 2);
    Shape out_shape;
    std::vector<double> want = RefMatmul(xs, {4, 3}, ToDoubles(x), ToDoubles(y), &out_shape);
    auto r = RunMain(src, {x, y});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, out_shape));
  }
}

TEST(OpMatmul, OutDtypeAndIntegers) {
  // float16 operands accumulated in float32 (out_dtype).
  DType f16{kDLFloat, 16, 1};
  Tensor x = RandomTensor({2, 3}, f16, 5), y = RandomTensor({3, 4}, f16, 6);
  Shape out_shape;
  std::vector<double> want = RefMatmul({2, 3}, {3, 4}, ToDoubles(x), ToDoubles(y), &out_shape);
  auto r = RunMain(OneOpModule({"x: " + TensorType({2, 3}, "float16"), "y: " + TensorType({3, 4}, "float16")},
                               "R.matmul(x, y, out_dtype=\"float32\")"),
                   {x, y});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).dtype(), DType::Float32());
  EXPECT_TRUE(AllClose(r->at(0), want, out_shape, 1e-5, 1e-5));

  // float16 result (accumulated in float16).
  auto h = RunMain(OneOpModule({"x: " + TensorType({2, 3}, "float16"), "y: " + TensorType({3, 4}, "float16")},
                               "R.matmul(x, y)"),
                   {x, y});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(AllClose(h->at(0), want, out_shape, 1e-2, 1e-2));

  // Batched int32 matmul: exact.
  Tensor a = RandomTensor({2, 2, 3}, DType::Int32(), 7, -5, 5), b = RandomTensor({3, 2}, DType::Int32(), 8, -5, 5);
  std::vector<double> iwant = RefMatmul({2, 2, 3}, {3, 2}, ToDoubles(a), ToDoubles(b), &out_shape);
  auto ir = RunMain(OneOpModule({"a: " + TensorType({2, 2, 3}, "int32"), "b: " + TensorType({3, 2}, "int32")},
                                "R.matmul(a, b)"),
                    {a, b});
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  EXPECT_TRUE(AllClose(ir->at(0), iwant, out_shape, 0, 0));
}

// x @ w^T + b, with w (N, K).
std::vector<double> RefLinear(const Shape& xs, int64_t N, const std::vector<double>& xv, const std::vector<double>& wv,
                              const std::vector<double>* bv, Shape* out_shape) {
  int64_t K = xs.back();
  *out_shape = Shape(xs.begin(), xs.end() - 1);
  out_shape->push_back(N);
  std::vector<double> out;
  ForEachIndex(*out_shape, [&](const Shape& i) {
    int64_t row = Offset(*out_shape, i) / N;
    double s = bv ? (*bv)[i.back()] : 0.0;
    for (int64_t k = 0; k < K; ++k) s += xv[row * K + k] * wv[i.back() * K + k];
    out.push_back(s);
  });
  return out;
}

TEST(OpLinear, WithAndWithoutBias) {
  Tensor x = RandomTensor({2, 3, 4}, DType::Float32(), 11);
  Tensor w = RandomTensor({5, 4}, DType::Float32(), 12);
  Tensor b = RandomTensor({5}, DType::Float32(), 13);
  std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), bv = ToDoubles(b);
  Shape out_shape;
  std::vector<double> want = RefLinear({2, 3, 4}, 5, xv, wv, &bv, &out_shape);
  auto r = RunMain(OneOpModule({"x: " + TensorType({2, 3, 4}), "w: " + TensorType({5, 4}), "b: " + TensorType({5})},
                               "R.linear(x, w, b)"),
                   {x, w, b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, out_shape));

  want = RefLinear({2, 3, 4}, 5, xv, wv, nullptr, &out_shape);
  r = RunMain(OneOpModule({"x: " + TensorType({2, 3, 4}), "w: " + TensorType({5, 4})}, "R.linear(x, w)"), {x, w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, out_shape));
}

TEST(OpLinear, SymbolicRowsAndSizeOneBias) {
  std::string src = OneOpModule(
      {"x: R.Tensor((\"n\", 3), \"float32\")", "w: " + TensorType({2, 3}), "b: " + TensorType({1})}, "R.linear(x, w, b)");
  for (int64_t n : {1, 6}) {
    Tensor x = RandomTensor({n, 3}, DType::Float32(), 20 + n);
    Tensor w = RandomTensor({2, 3}, DType::Float32(), 21);
    Tensor b = RandomTensor({1}, DType::Float32(), 22);
    std::vector<double> bv = ToDoubles(b);
    std::vector<double> bb{bv[0], bv[0]};
    Shape out_shape;
    std::vector<double> want = RefLinear({n, 3}, 2, ToDoubles(x), ToDoubles(w), &bb, &out_shape);
    auto r = RunMain(src, {x, w, b});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(AllClose(r->at(0), want, out_shape));
  }
}

// Errors point at the call: line 6, column 17 of OneOpModule's text.
void ExpectOpError(const std::vector<std::string>& params, const std::string& expr, StatusCode code,
                   const std::string& msg) {
  auto r = RunMain(OneOpModule(params, expr), {});
  ASSERT_FALSE(r.ok()) << expr;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "op.relax:6:17: " + msg);
}

TEST(OpMatmulError, EveryMessageFires) {
  const std::string x = "x: " + TensorType({2, 3, 4}), y = "y: " + TensorType({3, 4, 5});
  const std::string s = "s: R.Tensor((), \"float32\")", w = "w: " + TensorType({5, 4});
  ExpectOpError({x, "z: " + TensorType({5, 4, 6})}, "R.matmul(x, z)", StatusCode::kInvalidArgument,
                "R.matmul: batch shapes (2,) and (5,) do not broadcast (2 vs 5)");
  ExpectOpError({x, "z: " + TensorType({3, 5})}, "R.matmul(x, z)", StatusCode::kInvalidArgument,
                "R.matmul: reduction dimensions differ: x (2, 3, 4) has K=4 but y (3, 5) has K=3");
  ExpectOpError({x, s}, "R.matmul(x, s)", StatusCode::kInvalidArgument,
                "R.matmul: operands must have rank >= 1, got ranks 3 and 0");
  ExpectOpError({x, y}, "R.matmul(x, y, out_dtype=\"float7\")", StatusCode::kInvalidArgument,
                "R.matmul: out_dtype: unknown dtype \"float7\"");
  ExpectOpError({x, y}, "R.matmul(x, y, out_dtype=1)", StatusCode::kInvalidArgument,
                "R.matmul: out_dtype must be a dtype string");
  ExpectOpError({x, y}, "R.matmul(x, y, axis=1)", StatusCode::kInvalidArgument,
                "R.matmul: unknown attribute 'axis' (known: out_dtype, weight_layout, weight_columns)");
  ExpectOpError({x, "b: R.Tensor((\"n\", 4, 5), \"float32\")"}, "R.matmul(x, b)", StatusCode::kUnimplemented,
                "R.matmul: cannot prove that dimensions 2 and n are equal or 1");
  // linear
  ExpectOpError({x}, "R.linear(x)", StatusCode::kInvalidArgument,
                "R.linear: takes 2 or 3 arguments (x, weight, bias), got 1");
  ExpectOpError({x, w, "v: R.Shape([5])"}, "R.linear(x, w, v)", StatusCode::kInvalidArgument,
                "R.linear: expects a tensor as argument 3 (bias)");
  ExpectOpError({x, "v: " + TensorType({4})}, "R.linear(x, v)", StatusCode::kInvalidArgument,
                "R.linear: weight must have rank 2 (out_features, in_features), got rank 1");
  ExpectOpError({x, "v: " + TensorType({4, 5})}, "R.linear(x, v)", StatusCode::kInvalidArgument,
                "R.linear: x (2, 3, 4) has 4 features but weight (4, 5) expects 5");
  ExpectOpError({x, w, "b: " + TensorType({5}, "float16")}, "R.linear(x, w, b)", StatusCode::kInvalidArgument,
                "R.linear: bias dtype float16 differs from the result's float32");
  ExpectOpError({x, w, "b: " + TensorType({2, 2, 3, 5})}, "R.linear(x, w, b)", StatusCode::kInvalidArgument,
                "R.linear: bias (2, 2, 3, 5) has more dimensions than the result");
  ExpectOpError({x, "v: " + TensorType({5, 4}, "float16")}, "R.linear(x, v)", StatusCode::kInvalidArgument,
                "R.linear: operand dtypes differ: float32 and float16");
  ExpectOpError({s, w}, "R.linear(s, w)", StatusCode::kInvalidArgument, "R.linear: x must have rank >= 1");
}

// R.matmul_integer (ONNX MatMulInteger): every message of its inference.
TEST(OpMatmulIntegerError, EveryMessageFires) {
  const std::string a = "a: " + TensorType({2, 3, 4}, "uint8"), b = "b: " + TensorType({4, 5}, "int8");
  const std::string za = "za: " + TensorType({}, "uint8"), zb = "zb: " + TensorType({5}, "int8");
  const std::string args = "R.matmul_integer(a, b, za, zb)";
  ExpectOpError({a, b, za}, "R.matmul_integer(a, b, za)", StatusCode::kInvalidArgument,
                "relax.matmul_integer takes 4 arguments, got 3");
  ExpectOpError({"a: " + TensorType({2, 3, 4}), b, za, zb}, args, StatusCode::kInvalidArgument,
                "R.matmul_integer: a must be uint8 or int8, not float32");
  ExpectOpError({"a: " + TensorType({4}, "uint8"), b, za, zb}, args, StatusCode::kInvalidArgument,
                "R.matmul_integer: a must have rank >= 2 ([..., M, K]), got rank 1");
  ExpectOpError({a, "b: " + TensorType({2, 4, 5}, "int8"), za, zb}, args, StatusCode::kInvalidArgument,
                "R.matmul_integer: b must have rank 2 ([K, N]), got rank 3");
  ExpectOpError({a, b, "za: " + TensorType({}, "int8"), zb}, args, StatusCode::kInvalidArgument,
                "R.matmul_integer: a_zero_point must have its operand's type uint8, not int8");
  ExpectOpError({a, b, za, "zb: " + TensorType({1, 5}, "int8")}, args, StatusCode::kInvalidArgument,
                "R.matmul_integer: b_zero_point must be a scalar or 1-D, got rank 2");
  ExpectOpError({a, b, "za: " + TensorType({2}, "uint8"), zb}, args, StatusCode::kInvalidArgument,
                "R.matmul_integer: a_zero_point has 2 elements, expected 1 or M=3");
  ExpectOpError({a, "b: " + TensorType({3, 5}, "int8"), za, zb}, args, StatusCode::kInvalidArgument,
                "R.matmul_integer: reduction dimensions differ: a (2, 3, 4) has K=4 but b (3, 5) has K=3");
}

}  // namespace
}  // namespace optest
}  // namespace kiln
