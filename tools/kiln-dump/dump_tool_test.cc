// kiln-dump's command line: flags and their errors, the full dump of a
// compiled example (segments, imports, constants with bytes), --info, -o,
// and --dot on the examples (parsed and lowered).
#include "tools/kiln-dump/dump_tool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifdef KILN_DUMP_WITH_DOT
#include "compiler/driver/compile.h"
#endif

namespace kiln {
namespace tools {
namespace {

struct ToolRun {
  int rc;
  std::string out, err;
};

ToolRun Main(std::vector<std::string> args) {
  args.insert(args.begin(), "kiln-dump");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int rc = DumpToolMain(static_cast<int>(argv.size()), argv.data(), out, err);
  return {rc, out.str(), err.str()};
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string Example(const std::string& name) { return std::string(KILN_SOURCE_DIR) + "/examples/" + name; }

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(DumpToolTest, Help) {
  for (const char* h : {"--help", "-h"}) {
    ToolRun r = Main({h});
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, kDumpToolUsage);
    EXPECT_EQ(r.err, "");
  }
}

TEST(DumpToolTest, UsageErrors) {
  auto error = [](std::vector<std::string> args) {
    ToolRun r = Main(std::move(args));
    EXPECT_EQ(r.rc, 2);
    EXPECT_EQ(r.out, "");
    return r.err;
  };
  EXPECT_EQ(error({}), "kiln-dump: error: no input file (see --help)\n");
  EXPECT_EQ(error({"a.vmfb", "b.vmfb"}), "kiln-dump: error: more than one input file: 'a.vmfb' and 'b.vmfb'\n");
  EXPECT_EQ(error({"a.vmfb", "--bogus"}), "kiln-dump: error: unknown flag '--bogus' (see --help)\n");
  EXPECT_EQ(error({"a.relax", "--dot", "--info"}), "kiln-dump: error: --info and --dot exclude each other\n");
  EXPECT_EQ(error({"a.vmfb", "--info", "--verify"}),
            "kiln-dump: error: --verify checks a whole .vmfb; it does not apply to --info\n");
  EXPECT_EQ(error({"a.relax", "--dot", "--verify"}),
            "kiln-dump: error: --verify checks a whole .vmfb; it does not apply to --dot\n");
  EXPECT_EQ(error({"a.vmfb", "--function=f"}), "kiln-dump: error: --function only applies to --dot\n");
  EXPECT_EQ(error({"a.vmfb", "--lower"}), "kiln-dump: error: --lower only applies to --dot\n");
  EXPECT_EQ(error({"a.relax", "--dot", "--function="}), "kiln-dump: error: --function: empty function name\n");
  EXPECT_EQ(error({"a.vmfb", "-o"}), "kiln-dump: error: -o needs a value\n");
  EXPECT_EQ(error({"m.vmfb", "--dot"}),
            "kiln-dump: error: --dot draws a .relax file: a .vmfb keeps no dataflow graph; give the .relax "
            "'m.vmfb' was compiled from\n");
}

TEST(DumpToolTest, MissingFile) {
  ToolRun r = Main({"/nonexistent/m.vmfb"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind("kiln-dump: error: ", 0), 0u) << r.err;
  EXPECT_TRUE(Contains(r.err, "/nonexistent/m.vmfb")) << r.err;
  r = Main({"/nonexistent/m.vmfb", "--info"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "/nonexistent/m.vmfb")) << r.err;
}

#ifdef KILN_DUMP_WITH_DOT

class DumpCompiledTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    vmfb_ = new std::string(::testing::TempDir() + "kiln_dump_test_" + std::to_string(getpid()) + ".vmfb");
    driver::CompileOptions options;
    options.opt_level = 1;
    Status s = driver::CompileFile(Example("mlp.relax"), *vmfb_, options);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  static void TearDownTestSuite() {
    std::remove(vmfb_->c_str());
    delete vmfb_;
  }
  static std::string* vmfb_;
};
std::string* DumpCompiledTest::vmfb_ = nullptr;

TEST_F(DumpCompiledTest, EverySection) {
  ToolRun r = Main({*vmfb_});
  ASSERT_EQ(r.rc, 0) << r.err;
  size_t size = ReadAll(*vmfb_).size();
  for (const std::string& part :
       {std::string("format: 1."), std::string("\nproducer: kiln "), std::string("\ntarget: triple '"),
        std::string("\nfunctions (1):\n  main(x: Tensor((n, 784), \"float32\"), w0: Tensor((128, 784), \"float32\")"),
        std::string("\ncallables ("), std::string("\nimports ("), std::string("\nconstants ("),
        std::string("\nnative libraries (1):\n"), std::string("    kernels: "),
        "\nsegments (file " + std::to_string(size) + " bytes):\n", std::string("flatbuffer (size prefix"),
        std::string("native library 0 (")}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << r.out.substr(0, 3000);
  }
}

TEST_F(DumpCompiledTest, WeightsSegmentAndConstantBytes) {
  // The MLP with its weights bound (--params): they become constants in the
  // weights segment.
  std::string vmfb = *vmfb_ + ".weights.vmfb";
  driver::CompileOptions options;
  options.opt_level = 1;
  auto weight = [](const std::string& name, std::vector<int64_t> shape) {
    params::NamedTensor t;
    t.name = name;
    t.tensor = Tensor::Empty(shape, DType::Float32()).value();
    for (int64_t i = 0; i < t.tensor.NumElements(); ++i) t.tensor.data<float>()[i] = 0.5f;
    return t;
  };
  options.params = {weight("w0", {128, 784}), weight("b0", {128}), weight("w1", {10, 128}), weight("b1", {10})};
  Status s = driver::CompileFile(Example("mlp.relax"), vmfb, options);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ToolRun r = Main({vmfb});
  ASSERT_EQ(r.rc, 0) << r.err;
  // b1 keeps its name and shape; 10 floats are 40 bytes.
  EXPECT_TRUE(Contains(r.out, " tensor float32[10] at weights+")) << r.out;
  EXPECT_TRUE(Contains(r.out, " (40 bytes)\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "  weights (")) << r.out;
  EXPECT_TRUE(Contains(r.out, " tensor constants), xxh3-64 ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "checksums: xxh3-64 on every segment; native libraries verified, weights not verified "
                              "(--verify)\n"))
      << r.out;

  // --verify hashes the weights too: it passes here, and fails once a byte
  // of them changes (which the plain dump does not notice).
  r = Main({vmfb, "--verify"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "native libraries verified, weights verified\n")) << r.out;
  std::string bytes = ReadAll(vmfb);
  size_t at = r.out.find("  weights (");
  ASSERT_NE(at, std::string::npos);
  // "  offset      12345  size ...  weights (": the offset is the line's first number.
  size_t line = r.out.rfind('\n', at) + 1;
  size_t offset = std::stoull(r.out.substr(line + std::string("  offset").size()));
  bytes[offset + 100] ^= 0x01;
  std::string damaged = vmfb + ".damaged.vmfb";
  std::ofstream(damaged, std::ios::binary) << bytes;
  EXPECT_EQ(Main({damaged}).rc, 0);
  r = Main({damaged, "--verify"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, "kiln-dump: error: " + damaged + ": damaged .vmfb: the weights segment (")) << r.err;
  std::remove(damaged.c_str());
  std::remove(vmfb.c_str());
}

TEST_F(DumpCompiledTest, InfoAndOutputFile) {
  ToolRun r = Main({*vmfb_, "--info"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("format: 1.", 0), 0u) << r.out;
  EXPECT_TRUE(Contains(r.out, "\nsize: " + std::to_string(ReadAll(*vmfb_).size()) + " bytes\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "functions")) << r.out;
  std::string text = *vmfb_ + ".txt";
  r = Main({*vmfb_, "-o", text});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(ReadAll(text), Main({*vmfb_}).out);
  std::remove(text.c_str());
  r = Main({*vmfb_, "--output=/nonexistent/dir/x.txt"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "kiln-dump: error: cannot write '/nonexistent/dir/x.txt'\n");
}

TEST(DotTest, MlpDataflowGraph) {
  ToolRun r = Main({Example("mlp.relax"), "--dot"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* part : {"digraph \"main\" {\n", "[label=\"x\\nR.Tensor((n, 784), dtype=\\\"float32\\\")\", shape=ellipse]",
                           "[label=\"lv1 = matmul\\nR.Tensor((n, 128), dtype=\\\"float32\\\")\"]",
                           "[label=\"gv = add\\n", "[label=\"result\\n"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << r.out;
  }
  // x (n0) and lv0 feed lv1; gv feeds the result.
  EXPECT_TRUE(Contains(r.out, "  n0 -> ")) << r.out;
  EXPECT_TRUE(Contains(r.out, " -> result;\n")) << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - 2), "}\n");
  size_t edges = 0;
  for (size_t at = 0; (at = r.out.find(" -> ", at)) != std::string::npos; ++at) ++edges;
  // permute(w0), matmul(x, lv0), add(lv1, b0), relu, permute(w1), matmul, add, result.
  EXPECT_EQ(edges, 1u + 2 + 2 + 1 + 1 + 2 + 2 + 1) << r.out;
}

TEST(DotTest, LoweredShowsFusedKernels) {
  ToolRun r = Main({Example("mlp.relax"), "--dot", "--lower", "--function", "main"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "= call_tir fused_")) << r.out;
  EXPECT_FALSE(Contains(r.out, "= matmul\\n")) << r.out;
}

TEST(DotTest, OnnxModel) {
  // Debian's libonnx-testdata (scripts/setup.sh): a one-node Add model.
  const std::string model = "/usr/share/libonnx-testdata/data/node/test_add/model.onnx";
  if (!std::ifstream(model).good()) GTEST_SKIP() << model << " is not installed";
  ToolRun r = Main({model, "--dot"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "= add\\nR.Tensor((3, 4, 5), dtype=\\\"float32\\\")\"]")) << r.out;
}

TEST(DotTest, Errors) {
  ToolRun r = Main({Example("mlp.relax"), "--dot", "--function=nope"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "kiln-dump: error: no Relax function 'nope' (the module has: main)\n");
  std::string bad = ::testing::TempDir() + "kiln_dump_bad_" + std::to_string(getpid()) + ".relax";
  std::ofstream(bad) << "not a module\n";
  r = Main({bad, "--dot"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind("kiln-dump: error: " + bad + ":1:", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  std::remove(bad.c_str());
}

#else

TEST(DotTest, NeedsTheCompiler) {
  ToolRun r = Main({"m.relax", "--dot"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "kiln-dump: error: --dot needs the compiler; this kiln-dump was built without it (KILN_WITH_LLVM=OFF)\n");
}

#endif  // KILN_DUMP_WITH_DOT

}  // namespace
}  // namespace tools
}  // namespace kiln
