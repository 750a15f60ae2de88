// relax.einsum against a plain C++ reference: the attention patterns, matrix
// products, implicit output, a diagonal, and every error message.
#include <map>
#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

// Generic einsum on doubles: `out` letters index the result; the rest are
// summed.
std::vector<double> RefEinsum(const std::vector<std::string>& terms, const std::string& out,
                              const std::vector<Shape>& shapes, const std::vector<std::vector<double>>& vals,
                              Shape* out_shape) {
  std::map<char, int64_t> size;
  for (size_t n = 0; n < terms.size(); ++n)
    for (size_t d = 0; d < terms[n].size(); ++d) size[terms[n][d]] = shapes[n][d];
  std::string all;
  for (const auto& kv : size) all += kv.first;
  out_shape->clear();
  for (char c : out) out_shape->push_back(size[c]);
  std::string red;
  for (char c : all)
    if (out.find(c) == std::string::npos) red += c;
  Shape red_shape;
  for (char c : red) red_shape.push_back(size[c]);
  std::vector<double> res;
  ForEachIndex(*out_shape, [&](const Shape& oi) {
    double s = 0;
    ForEachIndex(red_shape, [&](const Shape& ri) {
      std::map<char, int64_t> at;
      for (size_t d = 0; d < out.size(); ++d) at[out[d]] = oi[d];
      for (size_t d = 0; d < red.size(); ++d) at[red[d]] = ri[d];
      double p = 1;
      for (size_t n = 0; n < terms.size(); ++n) {
        Shape idx;
        for (char c : terms[n]) idx.push_back(at[c]);
        p *= vals[n][Offset(shapes[n], idx)];
      }
      s += p;
    });
    res.push_back(s);
  });
  return res;
}

struct Case {
  std::string subscripts;
  std::vector<std::string> terms;
  std::string out;
  std::vector<Shape> shapes;
};

void CheckEinsum(const Case& c, bool tuple_form) {
  std::vector<std::string> params;
  std::vector<Tensor> inputs;
  std::vector<std::vector<double>> vals;
  std::string ops;
  for (size_t n = 0; n < c.shapes.size(); ++n) {
    std::string name = "a" + std::to_string(n);
    params.push_back(name + ": " + TensorType(c.shapes[n]));
    inputs.push_back(RandomTensor(c.shapes[n], DType::Float32(), 300 + n));
    vals.push_back(ToDoubles(inputs.back()));
    ops += (n ? ", " : "") + name;
  }
  if (tuple_form) ops = "(" + ops + (c.shapes.size() == 1 ? ",)" : ")");
  Shape out_shape;
  std::vector<double> want = RefEinsum(c.terms, c.out, c.shapes, vals, &out_shape);
  std::string expr = "R.einsum(" + ops + ", subscripts=\"" + c.subscripts + "\")";
  auto r = RunMain(OneOpModule(params, expr), inputs);
  ASSERT_TRUE(r.ok()) << expr << ": " << r.status().ToString();
  EXPECT_TRUE(AllClose(r->at(0), want, out_shape, 1e-5, 1e-5)) << expr;
}

TEST(OpEinsum, AttentionPatternsTupleForm) {
  CheckEinsum({"bij,bjk->bik", {"bij", "bjk"}, "bik", {{2, 3, 4}, {2, 4, 5}}}, true);
  CheckEinsum({"bhqd,bhkd->bhqk", {"bhqd", "bhkd"}, "bhqk", {{1, 2, 3, 4}, {1, 2, 5, 4}}}, true);
  CheckEinsum({"bhqk,bhkd->bhqd", {"bhqk", "bhkd"}, "bhqd", {{2, 1, 3, 5}, {2, 1, 5, 4}}}, true);
}

TEST(OpEinsum, SeparateOperandsImplicitOutputAndDiagonal) {
  CheckEinsum({"ij,jk->ik", {"ij", "jk"}, "ik", {{3, 1}, {1, 4}}}, false);
  CheckEinsum({"ij,jk", {"ij", "jk"}, "ik", {{2, 3}, {3, 2}}}, false);  // implicit: ik
  CheckEinsum({"ii->i", {"ii"}, "i", {{3, 3}}}, false);
  CheckEinsum({"i,j->ij", {"i", "j"}, "ij", {{3}, {4}}}, false);  // outer product, nothing summed
  CheckEinsum({"ij->", {"ij"}, "", {{2, 3}}}, false);             // total sum
}

void ExpectOpError(const std::vector<std::string>& params, const std::string& expr, StatusCode code,
                   const std::string& msg) {
  auto r = RunMain(OneOpModule(params, expr), {});
  ASSERT_FALSE(r.ok()) << expr;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "op.relax:6:17: " + msg);
}

TEST(OpEinsumError, EveryMessageFires) {
  const std::string a = "a: " + TensorType({2, 3}), b = "b: " + TensorType({4, 5});
  ExpectOpError({a, b}, "R.einsum((a, b))", StatusCode::kInvalidArgument,
                "R.einsum: subscripts is required, as in subscripts=\"ij,jk->ik\"");
  ExpectOpError({a, b}, "R.einsum((a, b), subscripts=\"ij,jk->ik\")", StatusCode::kInvalidArgument,
                "R.einsum: subscript 'j' has size 3 in operand 0 but 4 in operand 1");
  ExpectOpError({a, b}, "R.einsum((a, b), subscripts=\"ij->ij\")", StatusCode::kInvalidArgument,
                "R.einsum: subscripts \"ij->ij\" name 1 operands but 2 were given");
  ExpectOpError({a}, "R.einsum((a,), subscripts=\"ijk->i\")", StatusCode::kInvalidArgument,
                "R.einsum: subscripts \"ijk\" have 3 letters but operand 0 has rank 2");
  ExpectOpError({a}, "R.einsum((a,), subscripts=\"ij->k\")", StatusCode::kInvalidArgument,
                "R.einsum: output subscript 'k' appears in no operand");
  ExpectOpError({a}, "R.einsum((a,), subscripts=\"ij->ii\")", StatusCode::kInvalidArgument,
                "R.einsum: output subscript 'i' is repeated");
  ExpectOpError({a}, "R.einsum((a,), subscripts=\"i1->i\")", StatusCode::kInvalidArgument,
                "R.einsum: subscripts \"i1->i\": unexpected character '1'");
  ExpectOpError({a}, "R.einsum((a,), subscripts=\"...j->j\")", StatusCode::kUnimplemented,
                "R.einsum: ellipsis (...) in subscripts is not supported");
  ExpectOpError({a, "h: " + TensorType({3, 2}, "float16")}, "R.einsum((a, h), subscripts=\"ij,jk->ik\")",
                StatusCode::kInvalidArgument, "R.einsum: operand dtypes differ: float32 and float16");
  ExpectOpError({a, "s: R.Shape([2])"}, "R.einsum((a, s), subscripts=\"ij,j->i\")", StatusCode::kInvalidArgument,
                "R.einsum: operand 1 is not a tensor");
  ExpectOpError({a}, "R.einsum((a,), subscripts=\"ij\", axis=1)", StatusCode::kInvalidArgument,
                "R.einsum: unknown attribute 'axis' (known: subscripts)");
}

}  // namespace
}  // namespace optest
}  // namespace kiln
