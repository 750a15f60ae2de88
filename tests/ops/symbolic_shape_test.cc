// Symbolic shapes end to end (issue 3 §2): modules that mix the shape
// operators over a symbolic n and run for two values of it; symbols that
// R.match_cast introduces at run time; and a data-dependent length produced
// by a packed function and matched afterwards.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/registry.h"
#include "tests/ops/op_shape_test_util.h"

namespace kiln {
namespace optest {
namespace {

// y = x[x > 0] for a 1-D float32 x: the length is known only at run time.
Status PositiveElements(Span<const Any> args, Any* ret) {
  if (args.size() != 1) return InvalidArgument("test.positive_elements takes one tensor");
  KILN_ASSIGN_OR_RETURN(Tensor x, args[0].AsTensor());
  if (x.dtype() != DType::Float32() || x.shape().size() != 1) {
    return InvalidArgument("test.positive_elements takes a 1-D float32 tensor");
  }
  const float* xv = static_cast<const float*>(x.raw_data());
  std::vector<float> keep;
  for (int64_t i = 0; i < x.shape()[0]; ++i)
    if (xv[i] > 0) keep.push_back(xv[i]);
  int64_t n = static_cast<int64_t>(keep.size());
  KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::Empty(Span<const int64_t>(&n, 1), DType::Float32()));
  if (n) std::memcpy(y.raw_data(), keep.data(), keep.size() * sizeof(float));
  *ret = Any(y);
  return Status::Ok();
}
KILN_REGISTER_GLOBAL("test.positive_elements", PositiveElements);

// A transformer-style head split and merge over a sequence of n tokens:
// (n, 8) -> (n, 2, 4) (+ bias) -> (2, n, 4) -> concat with itself -> slice
// off the first token -> split the heads and squeeze -> concat them back ->
// expand, flatten, take. Every intermediate shape is a formula of n.
// (Elementwise kernels on a composite shape such as (n * 2 - 1, 4) cannot be
// built yet: n is then no plain dimension of any kernel argument.)
constexpr const char* kHeads = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 8), dtype="float32"), b: R.Tensor((4,), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            h = R.reshape(x, R.shape([n, 2, 4]))
            t = R.permute_dims(R.add(h, b), axes=[1, 0, 2])
            c = R.concat((t, t), axis=1)
            s = R.strided_slice(c, axes=[1], begin=[1], end=[2147483647])
            parts = R.split(s, indices_or_sections=2, axis=0)
            p0 = R.squeeze(parts[0], axis=[0])
            p1 = R.squeeze(parts[1], axis=[0])
            m = R.concat((p0, p1), axis=1)
            e = R.expand_dims(m, axis=[0])
            f = R.flatten(e)
            g = R.take(m, R.const([0, -1], "int64"), axis=0)
            R.output(m, f, g)
        return (m, f, g)
)";

TEST(SymbolicShape, HeadsSplitAndMergeForTwoLengths) {
  auto mod = text::ParseModule(kHeads, "heads.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  auto inferred = relax::InferStructInfo(*mod);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(text::PrintStructInfo(inferred->FindRelax("main")->ret_sinfo),
            "R.Tuple(R.Tensor((n * 2 - 1, 8), dtype=\"float32\"), R.Tensor((n * 16 - 8,), dtype=\"float32\"), "
            "R.Tensor((2, 8), dtype=\"float32\"))");
  Tensor b = RandomTensor({4}, DType::Float32(), 71);
  std::vector<double> bv = ToDoubles(b);
  for (int64_t n : {3, 1}) {
    Tensor x = RandomTensor({n, 8}, DType::Float32(), 72 + n);
    auto r = RunMain(kHeads, {x, b});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<double> xv = ToDoubles(x);
    // t[h, i, d] = x[i, h * 4 + d] + b[d]; c doubles the token axis; s drops token 0.
    auto c = [&](int64_t h, int64_t i, int64_t d) { return xv[(i % n) * 8 + h * 4 + d] + bv[d]; };
    int64_t len = 2 * n - 1;
    std::vector<double> m;
    for (int64_t i = 0; i < len; ++i) {
      for (int64_t d = 0; d < 4; ++d) m.push_back(c(0, i + 1, d));
      for (int64_t d = 0; d < 4; ++d) m.push_back(c(1, i + 1, d));
    }
    EXPECT_TRUE(AllClose(r->at(0), m, {len, 8})) << "n=" << n;
    EXPECT_TRUE(AllClose(r->at(1), m, {len * 8})) << "n=" << n;
    std::vector<double> g(m.begin(), m.begin() + 8);
    g.insert(g.end(), m.end() - 8, m.end());
    EXPECT_TRUE(AllClose(r->at(2), g, {2, 8})) << "n=" << n;
  }
}

// R.match_cast gives names to the dimensions of a tensor known only by rank;
// later operators use them (m * k, k * 2) and run for two shapes.
constexpr const char* kMatchCast = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")):
        m = T.int64()
        k = T.int64()
        with R.dataflow():
            y = R.match_cast(x, R.Tensor((m, k), dtype="float32"))
            f = R.reshape(y, R.shape([-1]))
            w = R.concat((y, y), axis=1)
            v = R.reshape(w, R.shape([m, 2, k]))
            s = R.strided_slice(v, axes=[1], begin=[1], end=[2])
            r = R.tile(R.squeeze(s, axis=[1]), repeats=[1, 2])
            R.output(f, w, r)
        return (f, w, r)
)";

TEST(SymbolicShape, MatchCastIntroducesSymbols) {
  auto mod = text::ParseModule(kMatchCast, "match.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  auto inferred = relax::InferStructInfo(*mod);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(text::PrintStructInfo(inferred->FindRelax("main")->ret_sinfo),
            "R.Tuple(R.Tensor((k * m,), dtype=\"float32\"), R.Tensor((m, k * 2), dtype=\"float32\"), "
            "R.Tensor((m, k * 2), dtype=\"float32\"))");
  for (Shape s : {Shape{2, 3}, Shape{4, 1}}) {
    Tensor x = RandomTensor(s, DType::Float32(), 80 + s[0]);
    auto r = RunMain(kMatchCast, {x});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<double> xv = ToDoubles(x), w;
    int64_t m = s[0], k = s[1];
    for (int64_t i = 0; i < m; ++i)
      for (int rep = 0; rep < 2; ++rep)
        for (int64_t j = 0; j < k; ++j) w.push_back(xv[i * k + j]);
    EXPECT_TRUE(AllClose(r->at(0), xv, {m * k}));
    EXPECT_TRUE(AllClose(r->at(1), w, {m, 2 * k}));
    // v[i, 1, :] is the second copy of row i; tiling it twice is w again.
    EXPECT_TRUE(AllClose(r->at(2), w, {m, 2 * k}));
  }
}

// A packed function returns a tensor whose length depends on the data; the
// program matches it to a new symbol p and keeps computing with p.
constexpr const char* kDataDependent = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")):
        n = T.int64()
        p = T.int64()
        y = R.call_packed("test.positive_elements", x, sinfo_args=R.Tensor(ndim=1, dtype="float32"))
        z = R.match_cast(y, R.Tensor((p,), dtype="float32"))
        with R.dataflow():
            c = R.concat((z, x), axis=0)
            h = R.reshape(R.concat((z, z), axis=0), R.shape([2, p]))
            t = R.permute_dims(h)
            R.output(c, t)
        return (c, t)
)";

TEST(SymbolicShape, DataDependentLengthThroughPackedCall) {
  auto mod = text::ParseModule(kDataDependent, "dd.relax");
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  auto inferred = relax::InferStructInfo(*mod);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(text::PrintStructInfo(inferred->FindRelax("main")->ret_sinfo),
            "R.Tuple(R.Tensor((n + p,), dtype=\"float32\"), R.Tensor((p, 2), dtype=\"float32\"))");
  for (const std::vector<double>& values : {std::vector<double>{1, -2, 3, 0.5, -1}, std::vector<double>{-1, -2}}) {
    int64_t n = static_cast<int64_t>(values.size());
    Tensor x = MakeTensor({n}, DType::Float32(), values);
    auto r = RunMain(kDataDependent, {x});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<double> pos;
    for (double v : values)
      if (v > 0) pos.push_back(v);
    int64_t p = static_cast<int64_t>(pos.size());
    std::vector<double> c = pos, t;
    c.insert(c.end(), values.begin(), values.end());
    for (double v : pos) t.insert(t.end(), {v, v});
    EXPECT_TRUE(AllClose(r->at(0), c, {n + p}));
    EXPECT_TRUE(AllClose(r->at(1), t, {p, 2}));
  }
}

}  // namespace
}  // namespace optest
}  // namespace kiln
