// mixed-precision: the module before and after the pass (which operators
// take half operands, where the casts go, the constants converted at compile
// time, the float32 signature), the --precision values, and the numbers of a
// small network compiled at fp16 and bf16 against its float32 build through
// the driver and the VM, with its matmul kernel still vectorized.
#include "compiler/transform/mixed_precision.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"
#include "compiler/tir/compiled_test_util.h"

namespace kiln {
namespace {

using tir::test_util::FloatTensor;

std::string Module(const std::string& params, const std::string& body, const std::string& result = "gv") {
  return "@I.ir_module\nclass Module:\n    @R.function\n    def main(" + params +
         "):\n        with R.dataflow():\n" + body + "            R.output(" + result + ")\n        return " + result +
         "\n";
}

Result<ir::IRModule> Normalized(const std::string& source) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule m, text::ParseModule(source, "mixed.relax"));
  return relax::InferStructInfo(m);
}

// The module after the pass, printed; its constant table in `constants`.
std::string Convert(const std::string& source, transform::Precision p, std::vector<ir::Expr>* constants = nullptr) {
  Result<ir::IRModule> n = Normalized(source);
  EXPECT_TRUE(n.ok()) << n.status().message();
  if (!n.ok()) return "";
  Result<ir::IRModule> out = transform::ToMixedPrecision(*n, p);
  EXPECT_TRUE(out.ok()) << out.status().message();
  std::vector<ir::Expr> table;
  std::string text = out.ok() ? text::PrintModule(*out, &table) : "";
  if (constants) *constants = table;
  return text;
}

// Constant `e`'s dtype and elements as float32.
std::string ConstantText(const ir::Expr& e) {
  const auto* k = ir::ExprAs<ir::ConstantExpr>(e);
  if (!k) return "not a constant";
  const Tensor& t = k->data;
  std::string s = DTypeToString(t.dtype()) + ":";
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    float v = 0;
    uint16_t bits = t.dtype().bits == 16 ? t.data<uint16_t>()[i] : 0;
    if (t.dtype() == DType::Float32()) {
      v = t.data<float>()[i];
    } else if (t.dtype().code == kDLBfloat) {
      uint32_t w = static_cast<uint32_t>(bits) << 16;
      std::memcpy(&v, &w, 4);
    } else {  // float16, normal numbers and zero only (what the tests use)
      int exp = (bits >> 10) & 31;
      double m = exp == 0 ? 0.0 : std::ldexp(1.0 + (bits & 1023) / 1024.0, exp - 15);
      v = static_cast<float>((bits & 0x8000) ? -m : m);
    }
    char buf[40];
    std::snprintf(buf, sizeof(buf), " %.9g", v);
    s += buf;
  }
  return s;
}

std::string Printed(const std::string& source) {
  Result<ir::IRModule> n = Normalized(source);
  EXPECT_TRUE(n.ok()) << n.status().message();
  return n.ok() ? text::PrintModule(*n) : "";
}

// The binding lines of the printed module's dataflow block, trimmed.
std::vector<std::string> Bindings(const std::string& printed) {
  std::vector<std::string> lines;
  size_t start = 0;
  bool in_block = false;
  while (start < printed.size()) {
    size_t end = printed.find('\n', start);
    if (end == std::string::npos) end = printed.size();
    std::string line = printed.substr(start, end - start);
    start = end + 1;
    size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    line = line.substr(first);
    if (line.rfind("with R.dataflow()", 0) == 0) {
      in_block = true;
    } else if (line.rfind("R.output(", 0) == 0) {
      in_block = false;
    } else if (in_block) {
      lines.push_back(line);
    }
  }
  return lines;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

const char* kMlpParams = "x: R.Tensor((2, 3), dtype=\"float32\")";
const char* kMlp =
    "            lv = R.matmul(x, R.const([[1, 2], [3, 4], [5, 6]], \"float32\"))\n"
    "            lv1 = R.add(lv, R.const([0.5, -0.5], \"float32\"))\n"
    "            lv2 = R.nn.relu(lv1)\n"
    "            lv3 = R.matmul(lv2, R.const([[1, 0.1], [0.2, 3]], \"float32\"))\n"
    "            gv = R.nn.softmax(lv3, axis=-1)\n";

TEST(MixedPrecision, MatmulChainTakesHalfAndAccumulatesInFloat32) {
  std::vector<ir::Expr> constants;
  std::string after = Convert(Module(kMlpParams, kMlp), transform::Precision::kBFloat16, &constants);
  EXPECT_EQ(Joined(Bindings(after)),
            "x_bf16: R.Tensor((2, 3), dtype=\"bfloat16\") = R.astype(x, dtype=\"bfloat16\")\n"
            "lv: R.Tensor((2, 2), dtype=\"float32\") = R.matmul(x_bf16, metadata[\"relax.expr.Constant\"][0], "
            "out_dtype=\"float32\")\n"
            "lv_bf16: R.Tensor((2, 2), dtype=\"bfloat16\") = R.astype(lv, dtype=\"bfloat16\")\n"
            "lv1_bf16: R.Tensor((2, 2), dtype=\"bfloat16\") = R.add(lv_bf16, metadata[\"relax.expr.Constant\"][1])\n"
            "lv2_bf16: R.Tensor((2, 2), dtype=\"bfloat16\") = R.nn.relu(lv1_bf16)\n"
            "lv3: R.Tensor((2, 2), dtype=\"float32\") = R.matmul(lv2_bf16, metadata[\"relax.expr.Constant\"][2], "
            "out_dtype=\"float32\")\n"
            "gv: R.Tensor((2, 2), dtype=\"float32\") = R.nn.softmax(lv3, axis=-1)\n")
      << after;
  // Every weight converted (0.1 and 0.2 round to bfloat16's 8 bits); no
  // float32 copy is left.
  ASSERT_EQ(constants.size(), 3u);
  EXPECT_EQ(ConstantText(constants[0]), "bfloat16: 1 2 3 4 5 6");
  EXPECT_EQ(ConstantText(constants[1]), "bfloat16: 0.5 -0.5");
  EXPECT_EQ(ConstantText(constants[2]), "bfloat16: 1 0.100097656 0.200195312 3");
  // The signature is unchanged.
  EXPECT_NE(after.find("def main(x: R.Tensor((2, 3), dtype=\"float32\")) -> R.Tensor((2, 2), dtype=\"float32\")"),
            std::string::npos)
      << after;
}

TEST(MixedPrecision, Float16RoundsConstantsToNearestEven) {
  std::vector<ir::Expr> constants;
  std::string after = Convert(Module(kMlpParams, kMlp), transform::Precision::kFloat16, &constants);
  EXPECT_NE(after.find("x_f16: R.Tensor((2, 3), dtype=\"float16\") = R.astype(x, dtype=\"float16\")"),
            std::string::npos)
      << after;
  ASSERT_EQ(constants.size(), 3u);
  // 0.1 and 0.2 are not halves: the nearest float16 values (11 bits).
  EXPECT_EQ(ConstantText(constants[2]), "float16: 1 0.0999755859 0.199951172 3");
}

TEST(MixedPrecision, Float32IsTheIdentity) {
  Result<ir::IRModule> n = Normalized(Module(kMlpParams, kMlp));
  ASSERT_TRUE(n.ok()) << n.status().message();
  Result<ir::IRModule> out = transform::ToMixedPrecision(*n, transform::Precision::kFloat32);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(text::PrintModule(*out), text::PrintModule(*n));
}

TEST(MixedPrecision, SensitiveOperatorsAndOutputsStayFloat32) {
  // A layer norm, a mean and exp after a matmul take its float32 result
  // (no rounding to half and back); a residual add of a float32 parameter
  // and a matmul's result is float32; a relu that feeds a matmul is half; a
  // scaling that only a softmax reads stays float32.
  std::string params = "x: R.Tensor((4, 8), dtype=\"float32\"), g: R.Tensor((8,), dtype=\"float32\")";
  // (the weight is built by an operator, not a constant: cast at run time)
  std::string body =
      "            w = R.ones(R.shape([8, 8]), dtype=\"float32\")\n"
      "            lv = R.matmul(x, w)\n"
      "            ln = R.nn.layer_norm(lv, g, g, axes=[-1])\n"
      "            m = R.mean(lv, axis=[-1], keepdims=True)\n"
      "            e = R.exp(lv)\n"
      "            r = R.add(x, lv)\n"
      "            h = R.nn.relu(lv)\n"
      "            o = R.matmul(h, w)\n"
      "            sc = R.multiply(o, R.const(0.25, \"float32\"))\n"
      "            sm = R.nn.softmax(sc, axis=-1)\n"
      "            gv = (ln, m, e, r, h, sm)\n";
  std::string after = Convert(Module(params, body), transform::Precision::kFloat16);
  std::vector<std::string> lines = Bindings(after);
  ASSERT_FALSE(lines.empty()) << after;
  lines.pop_back();  // the tuple
  EXPECT_EQ(Joined(lines),
            "w: R.Tensor((8, 8), dtype=\"float32\") = R.ones(R.shape([8, 8]), dtype=\"float32\")\n"
            "x_f16: R.Tensor((4, 8), dtype=\"float16\") = R.astype(x, dtype=\"float16\")\n"
            "w_f16: R.Tensor((8, 8), dtype=\"float16\") = R.astype(w, dtype=\"float16\")\n"
            "lv: R.Tensor((4, 8), dtype=\"float32\") = R.matmul(x_f16, w_f16, out_dtype=\"float32\")\n"
            "ln: R.Tensor((4, 8), dtype=\"float32\") = R.nn.layer_norm(lv, g, g, axes=[-1])\n"
            "m: R.Tensor((4, 1), dtype=\"float32\") = R.mean(lv, axis=[-1], keepdims=True)\n"
            "e: R.Tensor((4, 8), dtype=\"float32\") = R.exp(lv)\n"
            "r: R.Tensor((4, 8), dtype=\"float32\") = R.add(x, lv)\n"
            "lv_f16: R.Tensor((4, 8), dtype=\"float16\") = R.astype(lv, dtype=\"float16\")\n"
            "h_f16: R.Tensor((4, 8), dtype=\"float16\") = R.nn.relu(lv_f16)\n"
            "o: R.Tensor((4, 8), dtype=\"float32\") = R.matmul(h_f16, w_f16, out_dtype=\"float32\")\n"
            "sc: R.Tensor((4, 8), dtype=\"float32\") = R.multiply(o, R.const(0.25, \"float32\"))\n"
            "sm: R.Tensor((4, 8), dtype=\"float32\") = R.nn.softmax(sc, axis=-1)\n"
            "h: R.Tensor((4, 8), dtype=\"float32\") = R.astype(h_f16, dtype=\"float32\")\n")
      << after;
}

TEST(MixedPrecision, ValuesLeavingTheBlockAreFloat32) {
  // gv feeds a matmul (half) and leaves the block (float32 again).
  std::string body =
      "            lv = R.matmul(x, R.const([[1, 2], [3, 4], [5, 6]], \"float32\"))\n"
      "            gv = R.nn.relu(lv)\n"
      "            o = R.matmul(gv, R.const([[1, 2], [3, 4]], \"float32\"))\n";
  std::string after = Convert(Module(kMlpParams, body), transform::Precision::kBFloat16);
  EXPECT_NE(after.find("gv_bf16: R.Tensor((2, 2), dtype=\"bfloat16\") = R.nn.relu(lv_bf16)\n"), std::string::npos)
      << after;
  EXPECT_NE(after.find("o: R.Tensor((2, 2), dtype=\"float32\") = R.matmul(gv_bf16, "), std::string::npos) << after;
  EXPECT_NE(after.find("gv: R.Tensor((2, 2), dtype=\"float32\") = R.astype(gv_bf16, dtype=\"float32\")\n"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("-> R.Tensor((2, 2), dtype=\"float32\")"), std::string::npos) << after;
}

TEST(MixedPrecision, ConvolutionsAndTheirEpiloguesAndEmbeddings) {
  std::string params = "x: R.Tensor((1, 2, 4, 4), dtype=\"float32\"), i: R.Tensor((3,), dtype=\"int64\")";
  std::string body =
      "            c = R.nn.conv2d(x, R.const([[[[1]], [[2]]], [[[3]], [[4]]]], \"float32\"))\n"
      "            s = R.multiply(c, R.const([[[2]], [[3]]], \"float32\"))\n"
      "            r = R.nn.relu(s)\n"
      "            c2 = R.nn.conv2d(r, R.const([[[[5]], [[6]]], [[[7]], [[8]]]], \"float32\"))\n"
      "            a = R.nn.avg_pool2d(r, pool_size=[2, 2], strides=[2, 2])\n"
      "            t = R.take(R.const([[1, 2], [3, 4], [5, 6]], \"float32\"), i, axis=0)\n"
      "            gv = (c2, a, t)\n";
  std::vector<ir::Expr> constants;
  std::string after = Convert(Module(params, body), transform::Precision::kFloat16, &constants);
  std::string all = Joined(Bindings(after));
  EXPECT_EQ(all,
            "x_f16: R.Tensor((1, 2, 4, 4), dtype=\"float16\") = R.astype(x, dtype=\"float16\")\n"
            // conv2d: half data and weight, float32 sums ...
            "c: R.Tensor((1, 2, 4, 4), dtype=\"float32\") = R.nn.conv2d(x_f16, metadata[\"relax.expr.Constant\"][0], "
            "out_dtype=\"float32\")\n"
            // ... and a half output for the chain to the next convolution
            // (a batch norm's scale, relu; max pooling: MaxPoolStaysFloat32).
            "c_f16: R.Tensor((1, 2, 4, 4), dtype=\"float16\") = R.astype(c, dtype=\"float16\")\n"
            "s_f16: R.Tensor((1, 2, 4, 4), dtype=\"float16\") = R.multiply(c_f16, metadata[\"relax.expr.Constant\"][1])\n"
            "r_f16: R.Tensor((1, 2, 4, 4), dtype=\"float16\") = R.nn.relu(s_f16)\n"
            "c2: R.Tensor((1, 2, 4, 4), dtype=\"float32\") = R.nn.conv2d(r_f16, metadata[\"relax.expr.Constant\"][2], "
            "out_dtype=\"float32\")\n"
            // Average pooling accumulates: float32, from r widened.
            "r: R.Tensor((1, 2, 4, 4), dtype=\"float32\") = R.astype(r_f16, dtype=\"float32\")\n"
            "a: R.Tensor((1, 2, 2, 2), dtype=\"float32\") = R.nn.avg_pool2d(r, pool_size=[2, 2], strides=[2, 2])\n"
            // The embedding table is gathered from half.
            "t_f16: R.Tensor((3, 2), dtype=\"float16\") = R.take(metadata[\"relax.expr.Constant\"][3], i, axis=0)\n"
            "t: R.Tensor((3, 2), dtype=\"float32\") = R.astype(t_f16, dtype=\"float32\")\n"
            "gv: R.Tuple(R.Tensor((1, 2, 4, 4), dtype=\"float32\"), R.Tensor((1, 2, 2, 2), dtype=\"float32\"), "
            "R.Tensor((3, 2), dtype=\"float32\")) = (c2, a, t)\n");
  ASSERT_EQ(constants.size(), 4u);
  EXPECT_EQ(ConstantText(constants[0]), "float16: 1 2 3 4");
  EXPECT_EQ(ConstantText(constants[1]), "float16: 2 3");
  EXPECT_EQ(ConstantText(constants[3]), "float16: 1 2 3 4 5 6");
}

// Max pooling stays float32 (mixed_precision.cc: LLVM narrows the window
// schedule's compares of widened halves to half compares, one lane at a
// time on x86): the chain before it stays half for the convolution that
// also reads it, the pool takes that chain widened, and its result is
// rounded for the convolution after it.
TEST(MixedPrecision, MaxPoolStaysFloat32) {
  std::string params = "x: R.Tensor((1, 2, 4, 4), dtype=\"float32\")";
  std::string body =
      "            c = R.nn.conv2d(x, R.const([[[[1]], [[2]]], [[[3]], [[4]]]], \"float32\"))\n"
      "            r = R.nn.relu(c)\n"
      "            p = R.nn.max_pool2d(r, pool_size=[2, 2], strides=[2, 2])\n"
      "            c2 = R.nn.conv2d(p, R.const([[[[5]], [[6]]], [[[7]], [[8]]]], \"float32\"))\n"
      "            c3 = R.nn.conv2d(r, R.const([[[[1]], [[0]]], [[[0]], [[1]]]], \"float32\"))\n"
      "            gv = (c2, c3)\n";
  std::string all = Joined(Bindings(Convert(Module(params, body), transform::Precision::kFloat16)));
  EXPECT_EQ(all,
            "x_f16: R.Tensor((1, 2, 4, 4), dtype=\"float16\") = R.astype(x, dtype=\"float16\")\n"
            "c: R.Tensor((1, 2, 4, 4), dtype=\"float32\") = R.nn.conv2d(x_f16, metadata[\"relax.expr.Constant\"][0], "
            "out_dtype=\"float32\")\n"
            "c_f16: R.Tensor((1, 2, 4, 4), dtype=\"float16\") = R.astype(c, dtype=\"float16\")\n"
            "r_f16: R.Tensor((1, 2, 4, 4), dtype=\"float16\") = R.nn.relu(c_f16)\n"
            "r: R.Tensor((1, 2, 4, 4), dtype=\"float32\") = R.astype(r_f16, dtype=\"float32\")\n"
            "p: R.Tensor((1, 2, 2, 2), dtype=\"float32\") = R.nn.max_pool2d(r, pool_size=[2, 2], strides=[2, 2])\n"
            "p_f16: R.Tensor((1, 2, 2, 2), dtype=\"float16\") = R.astype(p, dtype=\"float16\")\n"
            "c2: R.Tensor((1, 2, 2, 2), dtype=\"float32\") = R.nn.conv2d(p_f16, metadata[\"relax.expr.Constant\"][1], "
            "out_dtype=\"float32\")\n"
            "c3: R.Tensor((1, 2, 4, 4), dtype=\"float32\") = R.nn.conv2d(r_f16, metadata[\"relax.expr.Constant\"][2], "
            "out_dtype=\"float32\")\n"
            "gv: R.Tuple(R.Tensor((1, 2, 2, 2), dtype=\"float32\"), R.Tensor((1, 2, 4, 4), dtype=\"float32\")) = "
            "(c2, c3)\n");
}

// A matmul of a kernel call's result (Winograd's transformed input, a
// call_tir) stays float32, weight included: the rounding cast could only
// fuse into the matmul, which would then round and widen each element it
// reads. The same weight against a function input still goes half.
TEST(MixedPrecision, MatmulOfAKernelCallStaysFloat32) {
  std::string source =
      "@I.ir_module\nclass Module:\n"
      "    @T.prim_func\n"
      "    def twice(a: T.Buffer((2, 2), \"float32\"), b: T.Buffer((2, 2), \"float32\")):\n"
      "        for i, j in T.grid(2, 2):\n"
      "            b[i, j] = a[i, j] * T.float32(2)\n"
      "    @R.function\n"
      "    def main(x: R.Tensor((2, 2), dtype=\"float32\")):\n"
      "        cls = Module\n"
      "        with R.dataflow():\n"
      "            t = R.call_tir(cls.twice, (x,), out_sinfo=R.Tensor((2, 2), dtype=\"float32\"))\n"
      "            y = R.matmul(R.const([[1, 2], [3, 4]], \"float32\"), t)\n"
      "            z = R.matmul(R.const([[1, 2], [3, 4]], \"float32\"), x)\n"
      "            gv = (y, z)\n"
      "            R.output(gv)\n"
      "        return gv\n";
  std::vector<ir::Expr> constants;
  std::string all = Joined(Bindings(Convert(source, transform::Precision::kFloat16, &constants)));
  EXPECT_NE(all.find("y: R.Tensor((2, 2), dtype=\"float32\") = R.matmul(metadata[\"relax.expr.Constant\"][0], t)\n"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("t_f16"), std::string::npos) << all;
  EXPECT_NE(all.find("z: R.Tensor((2, 2), dtype=\"float32\") = R.matmul(metadata[\"relax.expr.Constant\"][1], x_f16, "
                     "out_dtype=\"float32\")\n"),
            std::string::npos)
      << all;
  ASSERT_EQ(constants.size(), 2u);
  EXPECT_EQ(ConstantText(constants[0]), "float32: 1 2 3 4");
  EXPECT_EQ(ConstantText(constants[1]), "float16: 1 2 3 4");
}

TEST(MixedPrecision, ParsePrecision) {
  EXPECT_EQ(transform::ParsePrecision("fp32").value(), transform::Precision::kFloat32);
  EXPECT_EQ(transform::ParsePrecision("fp16").value(), transform::Precision::kFloat16);
  EXPECT_EQ(transform::ParsePrecision("bf16").value(), transform::Precision::kBFloat16);
  Result<transform::Precision> bad = transform::ParsePrecision("int4");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--precision must be fp32, fp16 or bf16, got 'int4'");
}

// ---------------------------------------------------------------- numbers

// A conv -> scale/shift -> relu -> global pool -> matmul -> softmax network
// (the shapes of a small classifier) with random weights.
std::string Network(const std::vector<float>& conv_w, const std::vector<float>& fc_w) {
  auto list = [](const std::vector<float>& v, const std::vector<int>& shape) {
    std::string s;
    size_t i = 0;
    std::function<void(size_t)> rec = [&](size_t d) {
      s += "[";
      for (int j = 0; j < shape[d]; ++j) {
        if (j) s += ", ";
        if (d + 1 == shape.size()) {
          s += std::to_string(v[i++]);
        } else {
          rec(d + 1);
        }
      }
      s += "]";
    };
    rec(0);
    return s;
  };
  return Module("x: R.Tensor((1, 16, 12, 12), dtype=\"float32\")",
                "            c = R.nn.conv2d(x, R.const(" + list(conv_w, {32, 16, 3, 3}) +
                    ", \"float32\"), padding=[1, 1])\n"
                    "            s = R.multiply(c, R.const(0.5, \"float32\"))\n"
                    "            r = R.nn.relu(s)\n"
                    "            m = R.mean(r, axis=[2, 3])\n"
                    "            lv = R.matmul(m, R.const(" +
                    list(fc_w, {32, 80}) +
                    ", \"float32\"))\n"
                    "            gv = R.nn.softmax(lv, axis=-1)\n");
}

std::vector<float> RunAt(const std::string& source, transform::Precision p, const Tensor& x) {
  driver::CompileOptions o = tir::test_util::ThreadsOptions(1);
  o.precision = p;
  auto mod = tir::test_util::CompileAndLoad(source, o, 1);
  if (!mod) return {};
  Result<Tensor> y = tir::test_util::InvokeMain(*mod, {Any(x)});
  EXPECT_TRUE(y.ok()) << y.status().message();
  if (!y.ok()) return {};
  return std::vector<float>(y->data<float>(), y->data<float>() + y->NumElements());
}

TEST(MixedPrecision, NetworkNumbersAgainstFloat32) {
  std::vector<float> conv_w = tir::test_util::RandomFloats(32 * 16 * 9, 7, 0.2f);
  std::vector<float> fc_w = tir::test_util::RandomFloats(32 * 80, 8, 2.0f);
  std::string source = Network(conv_w, fc_w);
  Tensor x = FloatTensor({1, 16, 12, 12}, tir::test_util::RandomFloats(16 * 144, 9, 1.0f));
  std::vector<float> ref = RunAt(source, transform::Precision::kFloat32, x);
  ASSERT_EQ(ref.size(), 80u);
  // Bounds twice the errors measured when the pass was written (fp16
  // 5.2e-4, bf16 2.2e-3, relative to the largest probability); no error at
  // all means nothing ran in half.
  for (auto [p, bound] : {std::pair{transform::Precision::kFloat16, 1.1e-3}, std::pair{transform::Precision::kBFloat16, 4.5e-3}}) {
    std::vector<float> got = RunAt(source, p, x);
    ASSERT_EQ(got.size(), ref.size());
    double peak = *std::max_element(ref.begin(), ref.end()), worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - ref[i]) / peak);
    EXPECT_LT(worst, bound) << "precision " << static_cast<int>(p);
    EXPECT_GT(worst, 0.0) << "half precision changes nothing: did the pass run?";
    std::cout << "precision " << static_cast<int>(p) << ": max error / max " << worst << "\n";
  }
}

TEST(MixedPrecision, WeightsAreStoredHalf) {
  // A 512 x 512 float32 weight (1 MiB) bound as a constant: at fp16 and
  // bf16 the .vmfb holds it in 512 KiB (kernels and bytecode differ by a
  // few KiB either way).
  std::string dir = ::testing::TempDir() + "kiln_mixed_" + std::to_string(getpid());
  std::string source = dir + ".relax";
  std::ofstream(source) << Module("x: R.Tensor((4, 512), dtype=\"float32\"), w: R.Tensor((512, 512), dtype=\"float32\")",
                                  "            gv = R.matmul(x, w)\n");
  std::vector<float> w = tir::test_util::RandomFloats(512 * 512, 5, 1.0f);
  auto size_at = [&](transform::Precision p) -> long {
    driver::CompileOptions o = tir::test_util::ThreadsOptions(1);
    o.precision = p;
    o.params = {{"w", FloatTensor({512, 512}, w)}};
    std::string out = dir + ".vmfb";
    Status st = driver::CompileFile(source, out, o);
    EXPECT_TRUE(st.ok()) << st.message();
    std::ifstream f(out, std::ios::binary | std::ios::ate);
    long size = f ? static_cast<long>(f.tellg()) : -1;
    std::remove(out.c_str());
    return size;
  };
  long fp32 = size_at(transform::Precision::kFloat32);
  for (transform::Precision p : {transform::Precision::kFloat16, transform::Precision::kBFloat16}) {
    long half = size_at(p);
    EXPECT_LT(half, fp32 - 500 * 1024) << "fp32 " << fp32 << " bytes, half " << half;
    EXPECT_GT(half, fp32 - 540 * 1024) << "fp32 " << fp32 << " bytes, half " << half;
  }
  std::remove(source.c_str());
}

TEST(MixedPrecision, HalfMatmulStaysVectorized) {
  std::vector<float> fc_w = tir::test_util::RandomFloats(64 * 128, 3, 1.0f);
  std::string w;
  for (int k = 0; k < 64; ++k) {
    w += k ? ", [" : "[";
    for (int n = 0; n < 128; ++n) w += (n ? ", " : "") + std::to_string(fc_w[k * 128 + n]);
    w += "]";
  }
  std::string source = Module("x: R.Tensor((32, 64), dtype=\"float32\")",
                              "            gv = R.matmul(x, R.const([" + w + "], \"float32\"))\n");
  for (transform::Precision p : {transform::Precision::kFloat16, transform::Precision::kBFloat16}) {
    driver::CompileOptions o = tir::test_util::ThreadsOptions(1);
    o.precision = p;
    ir::PrimFunc f = tir::test_util::LowerPrimFunc(source, o, "matmul");
    ASSERT_TRUE(f);
    tir::test_util::TileCensus c = tir::test_util::CountTiles(f);
    EXPECT_FALSE(c.fma_widths.empty()) << "the half matmul lost its vector tiles";
    EXPECT_EQ(c.global_updates, 0);
  }
}

TEST(MixedPrecision, DepthwiseConvolutionsStayFloat32) {
  // The depthwise schedules take float32 operands only
  // (tir::conv::ScheduledWithHalfOperands): the depthwise conv and the
  // relu between it and the pointwise conv stay float32; the pointwise conv
  // and a grouped conv of 2 channels per group take half.
  std::string source = Module(
      "x: R.Tensor((1, 8, 10, 10), dtype=\"float32\"), d: R.Tensor((8, 1, 3, 3), dtype=\"float32\"), "
      "p: R.Tensor((16, 8, 1, 1), dtype=\"float32\"), g: R.Tensor((16, 2, 3, 3), dtype=\"float32\")",
      "            c = R.nn.conv2d(x, d, padding=[1, 1], groups=8)\n"
      "            r = R.nn.relu(c)\n"
      "            e = R.nn.conv2d(r, p)\n"
      "            gv = R.nn.conv2d(e, g, padding=[1, 1], groups=8)\n");
  for (transform::Precision p : {transform::Precision::kFloat16, transform::Precision::kBFloat16}) {
    std::string h = p == transform::Precision::kFloat16 ? "float16" : "bfloat16";
    std::string out = Convert(source, p);
    auto line_of = [&](const std::string& var) {
      size_t at = out.find("            " + var + ": ");
      return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
    };
    EXPECT_EQ(line_of("c").find("out_dtype"), std::string::npos) << out;
    EXPECT_NE(line_of("c").find("R.nn.conv2d(x, d,"), std::string::npos) << out;
    EXPECT_NE(line_of("r").find("dtype=\"float32\""), std::string::npos) << out;
    EXPECT_NE(line_of("e").find("out_dtype=\"float32\""), std::string::npos) << out;
    EXPECT_NE(line_of("e").find("r_" + std::string(p == transform::Precision::kFloat16 ? "f16" : "bf16")), std::string::npos) << out;
    EXPECT_NE(line_of("gv").find("out_dtype=\"float32\""), std::string::npos) << out;
    EXPECT_NE(out.find("dtype=\"" + h + "\""), std::string::npos) << out;
  }
}

TEST(MixedPrecision, HalfConvStaysTiled) {
  // The network's 3x3 convolution at fp16 / bf16 reads half data and
  // weights widened, in the float32 build's register tiles (fma vectors;
  // the generic 7-deep nest it ran before has none).
  std::vector<float> conv_w = tir::test_util::RandomFloats(32 * 16 * 9, 7, 0.2f);
  std::vector<float> fc_w = tir::test_util::RandomFloats(32 * 80, 8, 2.0f);
  std::string source = Network(conv_w, fc_w);
  for (transform::Precision p : {transform::Precision::kFloat16, transform::Precision::kBFloat16}) {
    driver::CompileOptions o = tir::test_util::ThreadsOptions(1);
    o.precision = p;
    ir::PrimFunc f = tir::test_util::LowerPrimFunc(source, o, "conv2d");
    ASSERT_TRUE(f);
    tir::test_util::TileCensus c = tir::test_util::CountTiles(f);
    EXPECT_FALSE(c.fma_widths.empty()) << "the half convolution lost its vector tiles";
  }
}

}  // namespace
}  // namespace kiln
