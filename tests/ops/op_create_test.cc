// Creation operators (compiler/relax/op_create.cc) against plain C++
// references.
#include <cmath>
#include <string>
#include <vector>

#include "tests/ops/op_elem_test_util.h"

namespace kiln {
namespace optest {
namespace {

TEST(OpCreate, FillsAndLikes) {
  Tensor x = RandomTensor({2, 1, 3}, DType::Float32(), 51);
  Tensor v = MakeTensor({}, DType::Float32(), {2.5});
  auto r = RunMain(OneOpModule({"x: " + TensorType({2, 1, 3}), "v: R.Tensor((), \"float32\")"},
                               "(R.zeros(R.shape([2, 3]), dtype=\"float32\"), R.ones(R.shape([4]), dtype=\"int32\"), "
                               "R.full(R.shape([3, 1]), v), R.full(R.shape([2]), v, dtype=\"int64\"), "
                               "R.zeros_like(x), R.ones_like(x, dtype=\"float16\"), R.full_like(x, v), "
                               "R.full(R.shape([2, 2]), R.const(7, \"int32\"), dtype=\"float32\"), "
                               "R.ones(R.shape([3]), dtype=\"bool\"))"),
                   {x, v});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 9u);
  EXPECT_TRUE(AllClose(r->at(0), std::vector<double>(6, 0.0), {2, 3}));
  EXPECT_EQ(r->at(1).dtype(), DType::Int32());
  EXPECT_TRUE(AllClose(r->at(1), std::vector<double>(4, 1.0), {4}));
  EXPECT_TRUE(AllClose(r->at(2), std::vector<double>(3, 2.5), {3, 1}));
  EXPECT_EQ(r->at(3).dtype(), DType::Int64());
  EXPECT_TRUE(AllClose(r->at(3), {2, 2}, {2}));  // 2.5 truncated
  EXPECT_TRUE(AllClose(r->at(4), std::vector<double>(6, 0.0), {2, 1, 3}));
  EXPECT_EQ(r->at(5).dtype(), DType::Float16());
  EXPECT_TRUE(AllClose(r->at(5), std::vector<double>(6, 1.0), {2, 1, 3}));
  EXPECT_TRUE(AllClose(r->at(6), std::vector<double>(6, 2.5), {2, 1, 3}));
  EXPECT_TRUE(AllClose(r->at(7), std::vector<double>(4, 7.0), {2, 2}));
  EXPECT_EQ(r->at(8).dtype(), DType::Bool());
  EXPECT_TRUE(AllClose(r->at(8), {1, 1, 1}, {3}));
}

TEST(OpCreate, Arange) {
  auto r = RunMain(OneOpModule({"x: " + TensorType({1})},
                               "(R.arange(R.prim_value(5)), R.arange(R.prim_value(1), R.prim_value(10), R.prim_value(3)), "
                               "R.arange(R.prim_value(10), R.prim_value(0), R.prim_value(-3), dtype=\"int32\"), "
                               "R.arange(R.prim_value(T.float32(0.5)), R.prim_value(T.float32(2.0)), "
                               "R.prim_value(T.float32(0.25))), "
                               "R.arange(R.prim_value(0), R.prim_value(4), R.prim_value(1), dtype=\"float16\"))"),
                   {RandomTensor({1}, DType::Float32(), 52)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).dtype(), DType::Int64());
  EXPECT_TRUE(AllClose(r->at(0), {0, 1, 2, 3, 4}, {5}));
  EXPECT_TRUE(AllClose(r->at(1), {1, 4, 7}, {3}));
  EXPECT_EQ(r->at(2).dtype(), DType::Int32());
  EXPECT_TRUE(AllClose(r->at(2), {10, 7, 4, 1}, {4}));
  EXPECT_EQ(r->at(3).dtype(), DType::Float32());
  EXPECT_TRUE(AllClose(r->at(3), {0.5, 0.75, 1.0, 1.25, 1.5, 1.75}, {6}));
  EXPECT_TRUE(AllClose(r->at(4), {0, 1, 2, 3}, {4}));
}

TEST(OpCreate, TrilTriu) {
  Tensor x = RandomTensor({2, 3, 4}, DType::Float32(), 53);
  auto r = RunMain(OneOpModule({"x: " + TensorType({2, 3, 4})},
                               "(R.tril(x), R.tril(x, R.prim_value(1)), R.triu(x, R.prim_value(-1)), R.triu(x, k=2))"),
                   {x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> xv = ToDoubles(x);
  struct Want {
    bool lower;
    int k;
  };
  std::vector<Want> wants = {{true, 0}, {true, 1}, {false, -1}, {false, 2}};
  for (size_t c = 0; c < wants.size(); ++c) {
    std::vector<double> want;
    ForEachIndex({2, 3, 4}, [&](const Shape& i) {
      int64_t diag = i[2] - i[1];
      bool keep = wants[c].lower ? diag <= wants[c].k : diag >= wants[c].k;
      want.push_back(keep ? xv[Offset({2, 3, 4}, i)] : 0.0);
    });
    EXPECT_TRUE(AllClose(r->at(c), want, {2, 3, 4})) << c;
  }
}

TEST(OpCreate, OneHot) {
  // -1 and 5 are outside [0, depth): all off.
  Tensor idx = MakeTensor({2, 3}, DType::Int32(), {0, 3, -1, 2, 5, 1});
  auto r = RunMain(OneOpModule({"i: " + TensorType({2, 3}, "int32")},
                               "(R.one_hot(i, R.prim_value(T.float32(1.5)), R.prim_value(T.float32(-1)), depth=4), "
                               "R.one_hot(i, R.prim_value(1), R.prim_value(0), depth=4, axis=0))"),
                   {idx});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> iv = ToDoubles(idx), last, first;
  ForEachIndex({2, 3, 4}, [&](const Shape& i) { last.push_back(iv[i[0] * 3 + i[1]] == i[2] ? 1.5 : -1.0); });
  ForEachIndex({4, 2, 3}, [&](const Shape& i) { first.push_back(iv[i[1] * 3 + i[2]] == i[0] ? 1.0 : 0.0); });
  EXPECT_EQ(r->at(0).dtype(), DType::Float32());
  EXPECT_TRUE(AllClose(r->at(0), last, {2, 3, 4}));
  EXPECT_EQ(r->at(1).dtype(), DType::Int64());
  EXPECT_TRUE(AllClose(r->at(1), first, {4, 2, 3}));
}

TEST(OpCreate, SymbolicShapes) {
  std::vector<std::string> params = {"x: R.Tensor((\"n\", 2), \"float32\")"};
  EXPECT_EQ(InferredType(params, "R.zeros(R.shape([n, 3]), dtype=\"float32\")"), "R.Tensor((n, 3), dtype=\"float32\")");
  EXPECT_EQ(InferredType(params, "R.arange(R.prim_value(n))"), "R.Tensor((n,), dtype=\"int64\")");
  EXPECT_EQ(InferredType(params, "R.arange(R.prim_value(1), R.prim_value(n), R.prim_value(2))"),
            "R.Tensor((n // 2,), dtype=\"int64\")");
  auto r = RunEach(OneOpModule(params, "(R.ones(R.shape([n, 3]), dtype=\"float32\"), R.arange(R.prim_value(n)), "
                                       "R.tril(R.ones_like(x)))"),
                   {{RandomTensor({1, 2}, DType::Float32(), 54)}, {RandomTensor({4, 2}, DType::Float32(), 55)}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0).at(0), std::vector<double>(3, 1.0), {1, 3}));
  EXPECT_TRUE(AllClose(r->at(0).at(1), {0}, {1}));
  EXPECT_TRUE(AllClose(r->at(0).at(2), {1, 0}, {1, 2}));
  EXPECT_TRUE(AllClose(r->at(1).at(0), std::vector<double>(12, 1.0), {4, 3}));
  EXPECT_TRUE(AllClose(r->at(1).at(1), {0, 1, 2, 3}, {4}));
  EXPECT_TRUE(AllClose(r->at(1).at(2), {1, 0, 1, 1, 1, 1, 1, 1}, {4, 2}));
}

TEST(OpCreate, Diagnostics) {
  const std::string x = "x: R.Tensor((2, 3), \"float32\")";
  const std::string v = "v: R.Tensor((2,), \"float32\")";
  const std::string i = "i: R.Tensor((2, 3), \"int32\")";
  const std::string n = "y: R.Tensor((\"n\",), \"float32\")";
  auto inv = StatusCode::kInvalidArgument;
  ExpectErrors({
      {{x, v}, "R.full(R.shape([2]), v)", inv, "R.full: the fill value must be a scalar tensor, got R.Tensor((2,), \"float32\")"},
      {{x}, "R.full_like(x, R.shape([2]))", inv, "R.full_like: the fill value must be a tensor, got R.Shape((2,))"},
      {{x}, "R.zeros(x)", inv, "R.zeros: the shape must be an R.shape([...]), got R.Tensor((2, 3), \"float32\")"},
      {{x}, "R.ones(R.shape([2, -1]))", inv, "R.ones: negative dimension -1 in shape (2, -1)"},
      {{x}, "R.zeros(R.shape([2]), dtype=\"nope\")", inv, "R.zeros: dtype \"nope\" is not a dtype"},
      {{x}, "R.arange(x)", inv, "R.arange: end must be an R.prim_value, got R.Tensor((2, 3), \"float32\")"},
      {{x}, "R.arange(R.prim_value(0), R.prim_value(1), R.prim_value(1), R.prim_value(1))", inv,
       "R.arange: takes (end), (start, end) or (start, end, step), got 4 arguments"},
      {{n}, "R.arange(R.prim_value(n), R.prim_value(8))", inv, "R.arange: start and step must be constants, got n"},
      {{n}, "R.arange(R.prim_value(T.float32(0.5)), R.prim_value(n))", inv,
       "R.arange: a float range needs a constant end, got n"},
      {{x}, "R.arange(R.prim_value(0), R.prim_value(4), R.prim_value(0))", inv, "R.arange: step must not be 0"},
      {{"y: R.Tensor((3,), \"float32\")"}, "R.tril(y)", inv, "R.tril: needs a tensor of rank >= 2, got rank 1"},
      {{x}, "R.triu(x, R.prim_value(T.float32(0.5)))", inv, "R.triu: k must be an integer"},
      {{x}, "R.tril(x, R.prim_value(0), R.prim_value(1))", inv, "R.tril: takes x and k, got 3 arguments"},
      {{x}, "R.tril(x, k=\"diag\")", inv, "R.tril: k must be a number, got a string"},
      {{i}, "R.one_hot(i, R.prim_value(1), R.prim_value(0))", inv, "R.one_hot: depth must be a positive integer, got -1"},
      {{i}, "R.one_hot(i, R.prim_value(1), R.prim_value(0), depth=2.5)", inv,
       "R.one_hot: depth must be an integer, got a float"},
      {{i}, "R.one_hot(i, R.prim_value(1), R.prim_value(T.float32(0)), depth=3)", inv,
       "R.one_hot: on_value and off_value have different dtypes: int64 and float32"},
      {{i}, "R.one_hot(i, R.prim_value(1), depth=3)", inv, "R.one_hot: takes indices, on_value and off_value, got 2 arguments"},
      {{i}, "R.one_hot(i, R.prim_value(1), R.prim_value(0), depth=3, axis=3)", inv,
       "R.one_hot: axis 3 is out of range for a tensor of rank 3"},
      {{x}, "R.one_hot(x, R.prim_value(1), R.prim_value(0), depth=3)", inv,
       "R.one_hot: indices must be an integer tensor, got float32"},
      {{"s: R.Shape(ndim=2)"}, "R.zeros(s, dtype=\"float32\")", StatusCode::kUnimplemented,
       "R.zeros: legalization needs a known result shape, got R.Tensor(ndim=2, dtype=\"float32\")"},
  });
}

}  // namespace
}  // namespace optest
}  // namespace kiln
