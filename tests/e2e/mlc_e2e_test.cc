// The modules of the MLC course's end-to-end lesson (tests/data/mlc_e2e*.relax):
// TIR functions through R.call_tir, registered C++ functions (env.linear,
// env.relu) through R.call_dps_packed, and a mixture — all against the same
// C++ reference MLP.
#include <gtest/gtest.h>

#include "runtime/registry.h"
#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

// env.linear(x, w, b, out): out = x @ w^T + b, as in the lesson.
Status EnvLinear(Span<const Any> args, Any*) {
  if (args.size() != 4) return InvalidArgument("env.linear takes 4 tensors");
  KILN_ASSIGN_OR_RETURN(Tensor x, args[0].AsTensor());
  KILN_ASSIGN_OR_RETURN(Tensor w, args[1].AsTensor());
  KILN_ASSIGN_OR_RETURN(Tensor b, args[2].AsTensor());
  KILN_ASSIGN_OR_RETURN(Tensor out, args[3].AsTensor());
  int64_t n = x.shape()[0], k = x.shape()[1], o = w.shape()[0];
  if (w.shape()[1] != k || out.shape()[0] != n || out.shape()[1] != o) return InvalidArgument("env.linear: shapes");
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < o; ++j) {
      float acc = b.data<float>()[j];
      for (int64_t t = 0; t < k; ++t) acc += x.data<float>()[i * k + t] * w.data<float>()[j * k + t];
      out.data<float>()[i * o + j] = acc;
    }
  return Status::Ok();
}

// env.relu(x, out)
Status EnvRelu(Span<const Any> args, Any*) {
  if (args.size() != 2) return InvalidArgument("env.relu takes 2 tensors");
  KILN_ASSIGN_OR_RETURN(Tensor x, args[0].AsTensor());
  KILN_ASSIGN_OR_RETURN(Tensor out, args[1].AsTensor());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    float v = x.data<float>()[i];
    out.data<float>()[i] = v > 0 ? v : 0;
  }
  return Status::Ok();
}

class MlcE2E : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    (void)RegisterGlobalFunction("env.linear", EnvLinear, /*allow_override=*/true);
    (void)RegisterGlobalFunction("env.relu", EnvRelu, /*allow_override=*/true);
  }
};

TEST_P(MlcE2E, MatchesReference) {
  std::string path = std::string("tests/data/") + GetParam();
  std::string src = ReadFile(path);
  ASSERT_FALSE(src.empty()) << path;
  auto module = CompileAndLoad(src, path);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto sig = (*module)->GetSignature("main");
  ASSERT_TRUE(sig.ok()) << sig.status().ToString();
  ASSERT_EQ(sig->params.size(), 5u);
  // Batch 1, as in the lesson; the dynamic module also takes other batches.
  bool dynamic = sig->params[0].dims.size() == 2 && sig->params[0].dims[0] != "1";
  std::vector<int64_t> batches = dynamic ? std::vector<int64_t>{1, 7, 64} : std::vector<int64_t>{1};
  Tensor w0 = RandomTensor({128, 784}, 2), b0 = RandomTensor({128}, 3);
  Tensor w1 = RandomTensor({10, 128}, 4), b1 = RandomTensor({10}, 5);
  auto ctx = (*module)->CreateContext();
  for (int64_t n : batches) {
    Tensor x = RandomTensor({n, 784}, 11 + n);
    Any result;
    std::vector<Any> args = {x, w0, b0, w1, b1};
    Status s = ctx->Invoke("main", args, &result);
    ASSERT_TRUE(s.ok()) << path << ": " << s.ToString();
    ASSERT_TRUE(result.is_tensor());
    EXPECT_LE(MaxAbsDiff(result.tensor(), ReferenceMlp(x, w0, b0, w1, b1)), 1e-4f) << path << " n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Lesson, MlcE2E,
                         ::testing::Values("mlc_e2e.relax", "mlc_e2e_dynamic.relax", "mlc_e2e_packed.relax",
                                           "mlc_e2e_mixture.relax"));

}  // namespace
}  // namespace e2e
}  // namespace kiln
