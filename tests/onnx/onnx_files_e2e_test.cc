// ONNX files on disk: external-data weights, driver::CompileFile on .onnx
// with fixed dims, and the kiln-compile tool on a generated model.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "tests/onnx/onnx_e2e_util.h"

namespace kiln {
namespace onnx {
namespace testing {
namespace {

using ::onnx::TensorProto;
using B = OnnxModelBuilder;

// A fresh folder under TMPDIR, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/kiln_onnx_XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    path_ = mkdtemp(buf.data()) ? std::string(buf.data()) : "";
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

// y = x @ w + b with w, b in an external data file (b after 16 bytes of padding).
B ExternalModel(const std::string& location) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {"n", 3});
  auto add_external = [&](const std::string& name, std::vector<int64_t> dims, int64_t offset, int64_t length) {
    TensorProto t;
    t.set_name(name);
    t.set_data_type(TensorProto::FLOAT);
    for (int64_t d : dims) t.add_dims(d);
    t.set_data_location(TensorProto::EXTERNAL);
    auto* loc = t.add_external_data();
    loc->set_key("location");
    loc->set_value(location);
    auto* off = t.add_external_data();
    off->set_key("offset");
    off->set_value(std::to_string(offset));
    auto* len = t.add_external_data();
    len->set_key("length");
    len->set_value(std::to_string(length));
    m.Initializer(t);
  };
  add_external("w", {3, 2}, 0, 24);
  add_external("b", {2}, 40, 8);
  m.Node("MatMul", {"x", "w"}, {"xw"});
  m.Node("Add", {"xw", "b"}, {"y"});
  m.Output("y");
  return m;
}

std::string ExternalBytes() {
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, pad = {0, 0, 0, 0}, b = {0.5f, -1};
  std::string s(reinterpret_cast<const char*>(w.data()), 24);
  s += std::string(reinterpret_cast<const char*>(pad.data()), 16);
  s += std::string(reinterpret_cast<const char*>(b.data()), 8);
  return s;
}

TEST(OnnxFilesE2E, ExternalDataIsReadRelativeToTheModel) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  WriteFile(dir.path() + "/weights.bin", ExternalBytes());
  WriteFile(dir.path() + "/model.onnx", ExternalModel("weights.bin").Serialize());
  driver::CompileOptions options;
  options.fixed_dims["n"] = 2;
  ASSERT_TRUE(driver::CompileFile(dir.path() + "/model.onnx", dir.path() + "/model.vmfb", options).ok());
  auto module = vm::Module::LoadFile(dir.path() + "/model.vmfb");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({2, 3}, {1, 0, 0, 1, 1, 1})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Values((*out)[0]), (std::vector<float>{1.5f, 1, 9.5f, 11}));
  // The fixed dim made the input static.
  auto wrong = RunMain(*module, {F32({3, 3}, std::vector<float>(9, 0))});
  EXPECT_FALSE(wrong.ok());
}

TEST(OnnxFilesE2E, ExternalDataErrorsNameTheInitializer) {
  TempDir dir;
  WriteFile(dir.path() + "/short.bin", std::string(44, '\0'));
  WriteFile(dir.path() + "/tiny.bin", std::string(30, '\0'));
  WriteFile(dir.path() + "/d.onnx", ExternalModel("tiny.bin").Serialize());
  WriteFile(dir.path() + "/a.onnx", ExternalModel("short.bin").Serialize());
  WriteFile(dir.path() + "/b.onnx", ExternalModel("missing.bin").Serialize());
  WriteFile(dir.path() + "/c.onnx", ExternalModel("../escape.bin").Serialize());
  auto a = ImportFile(dir.path() + "/a.onnx", {});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("initializer \"b\": external data of 8 bytes at offset 40 is past the end"), std::string::npos)
      << a.status().message();
  auto b = ImportFile(dir.path() + "/b.onnx", {});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("initializer \"w\": cannot open external data file"), std::string::npos) << b.status().message();
  EXPECT_NE(b.status().message().find("2 problems"), std::string::npos) << b.status().message();
  auto d = ImportFile(dir.path() + "/d.onnx", {});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("initializer \"b\": external data offset 40 is past the end"), std::string::npos)
      << d.status().message();
  auto c = ImportFile(dir.path() + "/c.onnx", {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("must be a relative path inside the model's folder"), std::string::npos) << c.status().message();
}

TEST(OnnxFilesE2E, InitializerWithTooFewValuesIsAnError) {
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2});
  m.Initializer("w", {3}, {1, 2});
  m.Node("Add", {"x", "x"}, {"y"});
  m.Output("y");
  std::string bytes = m.Serialize();
  auto mod = ImportBuffer(bytes.data(), bytes.size(), ".", {});
  ASSERT_FALSE(mod.ok());
  EXPECT_NE(mod.status().message().find("initializer \"w\": holds 2 values, its shape needs 3"), std::string::npos)
      << mod.status().message();
}

#ifdef KILN_COMPILE_TOOL
TEST(OnnxFilesE2E, KilnCompileToolCompilesAnOnnxFile) {
  TempDir dir;
  B m(13);
  m.Input("x", TensorProto::FLOAT, {2, 2});
  m.Initializer("w", {2, 2}, {1, 2, 3, 4});
  m.Node("MatMul", {"x", "w"}, {"xw"});
  m.Node("Relu", {"xw"}, {"y"});
  m.Output("y");
  WriteFile(dir.path() + "/tool.onnx", m.Serialize());
  std::string cmd = std::string(KILN_COMPILE_TOOL) + " '" + dir.path() + "/tool.onnx' -o '" + dir.path() + "/tool.vmfb'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto module = vm::Module::LoadFile(dir.path() + "/tool.vmfb");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto out = RunMain(*module, {F32({2, 2}, {1, -1, -1, 0})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Values((*out)[0]), (std::vector<float>{0, 0, 0, 0}));
  auto out2 = RunMain(*module, {F32({2, 2}, {1, 1, 0, 1})});
  ASSERT_TRUE(out2.ok());
  EXPECT_EQ(Values((*out2)[0]), (std::vector<float>{4, 6, 3, 4}));
  // An unsupported model: the tool fails and names the operator.
  B bad(13);
  bad.Input("x", TensorProto::FLOAT, {2});
  bad.Node("NoSuchOp", {"x"}, {"y"});
  bad.Output("y");
  WriteFile(dir.path() + "/bad.onnx", bad.Serialize());
  std::string bad_cmd = std::string(KILN_COMPILE_TOOL) + " '" + dir.path() + "/bad.onnx' -o '" + dir.path() +
                        "/bad.vmfb' 2> '" + dir.path() + "/err.txt'";
  EXPECT_NE(std::system(bad_cmd.c_str()), 0);
  std::ifstream err(dir.path() + "/err.txt");
  std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("NoSuchOp (opset 13): unsupported operator"), std::string::npos) << text;
}

TEST(OnnxFilesE2E, KilnCompilePinsAnUnknownDimensionByInputAndPosition) {
  // x: (-1, ?) -> y = x + 1: `--dim x:1=3` pins the second dimension, the
  // first (x_dim0) stays symbolic and runs at two batch sizes.
  TempDir dir;
  B m(13);
  m.Input("x", TensorProto::FLOAT, {-1, OnnxDim::Unknown()});
  m.Initializer("one", {}, {1});
  m.Node("Add", {"x", "one"}, {"y"});
  m.Output("y");
  WriteFile(dir.path() + "/dims.onnx", m.Serialize());
  std::string cmd = std::string(KILN_COMPILE_TOOL) + " '" + dir.path() + "/dims.onnx' --dim x:1=3 -o '" + dir.path() +
                    "/dims.vmfb'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto module = vm::Module::LoadFile(dir.path() + "/dims.vmfb");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t n : {1, 4}) {
    std::vector<float> xv(static_cast<size_t>(n * 3)), expected;
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i) * 0.5f;
    for (float v : xv) expected.push_back(v + 1);
    auto out = RunMain(*module, {F32({n, 3}, xv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(Values((*out)[0]), expected) << n;
  }
  auto wrong = RunMain(*module, {F32({2, 4}, std::vector<float>(8, 0))});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("dimension 1: expected 3, got 4"), std::string::npos) << wrong.status().message();
}
#endif

}  // namespace
}  // namespace testing
}  // namespace onnx
}  // namespace kiln
