// relax.tensor_to_shape and relax.shape_to_tensor compiled from the text form
// and run on the VM, and the struct-info errors of tensor_to_shape.
#include <gtest/gtest.h>

#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {
namespace {

std::string Module(const std::string& param, const std::string& body) {
  return "@I.ir_module\n"
         "class Module:\n"
         "    @R.function\n"
         "    def main(x: " + param + "):\n"
         "        a = T.int64()\n"
         "        b = T.int64()\n"
         "        with R.dataflow():\n" + body +
         "            R.output(r)\n"
         "        return r\n";
}

TEST(OpShapeValue, TensorToShapeBindsVariablesThatSizeLaterTensors) {
  // The values read from x size a tensor and come back as data.
  const std::string body =
      "            s = R.tensor_to_shape(x)\n"
      "            m = R.match_cast(s, R.Shape([a, b]))\n"
      "            z = R.ones(R.shape([a, b]), dtype=\"float32\")\n"
      "            c = R.sum(z)\n"
      "            t = R.shape_to_tensor(R.shape([b * 2, a + 1]))\n"
      "            r = (c, t)\n";
  const std::string src = Module("R.Tensor((2,), \"int64\")", body);
  for (auto [a, b] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {5, 1}}) {
    auto out = RunMain(src, {MakeTensor({2}, DType::Int64(), {double(a), double(b)})});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(AllClose(out->at(0), {double(a * b)}, {}));
    EXPECT_TRUE(AllClose(out->at(1), {double(b * 2), double(a + 1)}, {2}));
  }
}

TEST(OpShapeValue, TensorToShapeNeedsA1dIntegerTensorOfStaticLength) {
  const std::string body = "            r = R.tensor_to_shape(x)\n";
  struct Case {
    const char* param;
    const char* message;
  } cases[] = {
      {"R.Tensor((2,), \"float32\")", "R.tensor_to_shape: the tensor must be int64 or int32 to become a shape"},
      {"R.Tensor((2, 2), \"int64\")", "R.tensor_to_shape: the tensor must be 1-d to become a shape"},
      {"R.Tensor((\"n\",), \"int64\")", "R.tensor_to_shape: the tensor's length must be static"},
  };
  for (const Case& c : cases) {
    auto out = RunMain(Module(c.param, body), {});
    ASSERT_FALSE(out.ok()) << c.param;
    EXPECT_NE(out.status().message().find(c.message), std::string::npos) << out.status().message();
  }
}

}  // namespace
}  // namespace optest
}  // namespace kiln
