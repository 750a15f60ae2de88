#include "tools/common/inline_tensor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/npy.h"

namespace kiln {
namespace tools {
namespace {

TEST(InlineTensorTest, ParsesMatrix) {
  Result<Tensor> t = ParseInlineTensor("2x3xf32=1,2,3,4,5,6.5");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->dtype(), DType::Float32());
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->data<float>()[0], 1.0f);
  EXPECT_EQ(t->data<float>()[5], 6.5f);
}

TEST(InlineTensorTest, ParsesScalarsAndLongNames) {
  Result<Tensor> s = ParseInlineTensor("f32=1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->ndim(), 0);
  EXPECT_EQ(*s->data<float>(), 1.0f);
  Result<Tensor> d = ParseInlineTensor("float64=-2.25e3");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d->data<double>(), -2250.0);
  Result<Tensor> i = ParseInlineTensor("3xint64=-9000000000, 0, 7");
  ASSERT_TRUE(i.ok()) << i.status().ToString();
  EXPECT_EQ(i->data<int64_t>()[0], -9000000000LL);
  EXPECT_EQ(i->data<int64_t>()[2], 7);
}

TEST(InlineTensorTest, ParsesEveryIntegerTypeAndBool) {
  Result<Tensor> i32 = ParseInlineTensor("2xi32=-2147483648,2147483647");
  ASSERT_TRUE(i32.ok());
  EXPECT_EQ(i32->data<int32_t>()[0], -2147483647 - 1);
  Result<Tensor> i8 = ParseInlineTensor("2xi8=-128,127");
  ASSERT_TRUE(i8.ok());
  EXPECT_EQ(i8->data<int8_t>()[0], -128);
  Result<Tensor> u8 = ParseInlineTensor("2xu8=0,255");
  ASSERT_TRUE(u8.ok());
  EXPECT_EQ(u8->data<uint8_t>()[1], 255);
  Result<Tensor> b = ParseInlineTensor("4xbool=1,0,true,false");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->dtype(), DType::Bool());
  EXPECT_EQ(b->data<uint8_t>()[2], 1);
  EXPECT_EQ(b->data<uint8_t>()[3], 0);
}

TEST(InlineTensorTest, EmptyTensorTakesEmptyList) {
  Result<Tensor> t = ParseInlineTensor("0x4xf32=");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->NumElements(), 0);
}

TEST(InlineTensorTest, RandomIsDeterministicAndInRange) {
  Result<Tensor> a = ParseInlineTensor("128x784xf32=random:42");
  Result<Tensor> b = ParseInlineTensor("128x784xf32=random:42");
  Result<Tensor> c = ParseInlineTensor("128x784xf32=random:43");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  int differ = 0;
  float lo = 1, hi = -1;
  for (int64_t i = 0; i < a->NumElements(); ++i) {
    float v = a->data<float>()[i];
    ASSERT_EQ(v, b->data<float>()[i]);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    if (v != c->data<float>()[i]) ++differ;
  }
  EXPECT_GT(differ, 100000);
  EXPECT_LT(lo, -0.99f);  // the values cover the range
  EXPECT_GT(hi, 0.99f);
}

TEST(InlineTensorTest, RandomMatchesTheDocumentedGenerator) {
  // Pinned values: the sequence must be identical on every machine and build.
  uint64_t state = 0;
  EXPECT_EQ(SplitMix64Next(&state), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(SplitMix64Next(&state), 0x6E789E6AA1B965F4ull);
  Result<Tensor> t = ParseInlineTensor("2xf32=random:0");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->data<float>()[0], static_cast<float>(0xE220A8397B1DCDAFull >> 40) * 0x1p-24f * 2 - 1);
  EXPECT_EQ(t->data<float>()[1], static_cast<float>(0x6E789E6AA1B965F4ull >> 40) * 0x1p-24f * 2 - 1);
  Result<Tensor> d = ParseInlineTensor("f64=random:0");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d->data<double>(), static_cast<double>(0xE220A8397B1DCDAFull >> 11) * 0x1p-53 * 2 - 1);
  Result<Tensor> i = ParseInlineTensor("2xi32=random:0");
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->data<int32_t>()[0], 0xE - 8);
  EXPECT_EQ(i->data<int32_t>()[1], 0x6 - 8);
  Result<Tensor> u = ParseInlineTensor("2xu8=random:0");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->data<uint8_t>()[0], 0xE);
  Result<Tensor> b = ParseInlineTensor("2xbool=random:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data<uint8_t>()[0], 1);
  EXPECT_EQ(b->data<uint8_t>()[1], 0);
}

std::string ErrorOf(const std::string& text) {
  Result<Tensor> t = ParseInlineTensor(text);
  EXPECT_FALSE(t.ok()) << text;
  if (t.ok()) return "";
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  return t.status().message();
}

TEST(InlineTensorTest, RawBinaryFile) {
  std::string path = ::testing::TempDir() + "kiln_inline_raw_" + std::to_string(getpid()) + ".bin";
  int32_t values[4] = {1, -2, 3, 40000};
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(values, sizeof(values), 1, f), 1u);
  std::fclose(f);
  Result<Tensor> t = ParseInlineTensor("2x2xi32=@" + path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t->data<int32_t>()[i], values[i]);
  Result<Tensor> wrong = ParseInlineTensor("3xi32=@" + path);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "inline tensor '3xi32=@" + path + "': '" + path + "' has 16 bytes, shape [3] of int32 needs 12");
  std::remove(path.c_str());
  Result<Tensor> missing = ParseInlineTensor("3xi32=@/nonexistent/x.bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "inline tensor '3xi32=@/nonexistent/x.bin': cannot read '/nonexistent/x.bin'");
  Result<Tensor> empty = ParseInlineTensor("3xi32=@");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "inline tensor '3xi32=@': '@' needs a file name");
}

// The dtypes added for issue 19 §4: values in, bits stored, text out.
TEST(InlineTensorTest, HalfAndWideTypes) {
  Tensor h = ParseInlineTensor("3xf16=1.5,-2,65504").value();
  EXPECT_EQ(h.dtype(), DType::Float16());
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3E00);
  EXPECT_EQ(h.data<uint16_t>()[1], 0xC000);
  EXPECT_EQ(h.data<uint16_t>()[2], 0x7BFF);
  EXPECT_EQ(FormatTensor(h), "float16[3]\n[1.5, -2, 65504]");
  Tensor b = ParseInlineTensor("2xbf16=1,-0.5").value();
  EXPECT_EQ(DTypeToString(b.dtype()), "bfloat16");
  EXPECT_EQ(b.data<uint16_t>()[0], 0x3F80);
  EXPECT_EQ(b.data<uint16_t>()[1], 0xBF00);
  EXPECT_EQ(FormatTensor(b), "bfloat16[2]\n[1, -0.5]");
  Tensor u = ParseInlineTensor("2xu64=18446744073709551615,7").value();
  EXPECT_EQ(u.data<uint64_t>()[0], UINT64_MAX);
  EXPECT_EQ(FormatTensor(u), "uint64[2]\n[18446744073709551615, 7]");
  Tensor s = ParseInlineTensor("2xi16=-32768,32767").value();
  EXPECT_EQ(FormatTensor(s), "int16[2]\n[-32768, 32767]");
  EXPECT_EQ(FormatTensor(ParseInlineTensor("2xu16=65535,0").value()), "uint16[2]\n[65535, 0]");
  EXPECT_EQ(FormatTensor(ParseInlineTensor("u32=4294967295").value()), "uint32[]\n4294967295");
  // Random float16 values are float32's, rounded: in [-1, 1].
  Tensor r = ParseInlineTensor("64xf16=random:3").value();
  Tensor r32 = ParseInlineTensor("64xf32=random:3").value();
  for (int i = 0; i < 64; ++i) {
    std::string v = StrFormat("%.9g", static_cast<double>(r32.data<float>()[i]));  // exact
    EXPECT_EQ(r.data<uint16_t>()[i], ParseInlineTensor("f16=" + v).value().data<uint16_t>()[0]) << v;
  }
  Tensor ru = ParseInlineTensor("64xu32=random:3").value();
  for (int i = 0; i < 64; ++i) EXPECT_LT(ru.data<uint32_t>()[i], 16u);
}

TEST(InlineTensorErrorTest, Messages) {
  EXPECT_EQ(ErrorOf("2x3xf32"),
            "inline tensor '2x3xf32' has no values: write 2x3xf32=v1,v2,... or 2x3xf32=random:SEED");
  EXPECT_EQ(ErrorOf("2x3xf32=1,2,3,4,5"), "inline tensor '2x3xf32=1,2,3,4,5': shape [2, 3] needs 6 values, got 5");
  EXPECT_EQ(ErrorOf("2xf32=1,2,3"), "inline tensor '2xf32=1,2,3': shape [2] needs 2 values, got 3");
  EXPECT_EQ(ErrorOf("2xf32="), "inline tensor '2xf32=': shape [2] needs 2 values, got 0");
  EXPECT_EQ(ErrorOf("2x3xq7=1"), "inline tensor '2x3xq7=1': unknown dtype 'q7' (expected f16, bf16, f32, f64, i8, "
                                 "i16, i32, i64, u8, u16, u32, u64 or bool)");
  EXPECT_EQ(ErrorOf("u64=-1"), "inline tensor 'u64=-1': value 1 '-1' is out of range for uint64");
  EXPECT_EQ(ErrorOf("2xi16=1,40000"), "inline tensor '2xi16=1,40000': value 2 '40000' is out of range for int16");
  EXPECT_EQ(ErrorOf("2xaxf32=1"), "inline tensor '2xaxf32=1': dimension 'a' is not a non-negative integer");
  EXPECT_EQ(ErrorOf("-2xf32=1"), "inline tensor '-2xf32=1': dimension '-2' is not a non-negative integer");
  EXPECT_EQ(ErrorOf("2xxf32=1"), "inline tensor '2xxf32=1': dimension '' is not a non-negative integer");
  EXPECT_EQ(ErrorOf("=1"), "inline tensor '=1': expected DIMSxDTYPE=VALUES, e.g. 2x3xf32=1,2,3,4,5,6");
  EXPECT_EQ(ErrorOf("2xf32=1,abc"), "inline tensor '2xf32=1,abc': value 2 'abc' is not a valid float32");
  EXPECT_EQ(ErrorOf("2xi32=1,2.5"), "inline tensor '2xi32=1,2.5': value 2 '2.5' is not a valid int32");
  EXPECT_EQ(ErrorOf("2xi8=1,128"), "inline tensor '2xi8=1,128': value 2 '128' is out of range for int8");
  EXPECT_EQ(ErrorOf("u8=-1"), "inline tensor 'u8=-1': value 1 '-1' is out of range for uint8");
  EXPECT_EQ(ErrorOf("2xbool=1,2"), "inline tensor '2xbool=1,2': value 2 '2' is not a valid bool");
  EXPECT_EQ(ErrorOf("2xf32=1,"), "inline tensor '2xf32=1,': value 2 '' is not a valid float32");
  EXPECT_EQ(ErrorOf("2xf32=random:x"), "inline tensor '2xf32=random:x': random seed 'x' is not a non-negative integer");
  EXPECT_EQ(ErrorOf("2xf32=random:"), "inline tensor '2xf32=random:': random seed '' is not a non-negative integer");
  // Long text is shortened in messages.
  std::string long_text = "1000xf32=" + std::string(200, '1');
  EXPECT_NE(ErrorOf(long_text).find("...': shape [1000] needs 1000 values, got 1"), std::string::npos);
}

TEST(TensorArgumentTest, ReadsNpyWithAt) {
  std::string path = ::testing::TempDir() + "kiln_inline_arg.npy";
  std::vector<int64_t> data = {4, 5};
  std::vector<int64_t> shape = {2};
  ASSERT_TRUE(WriteNpyFile(Tensor::Borrow(data.data(), shape, DType::Int64()), path).ok());
  Result<Tensor> t = ParseTensorArgument("@" + path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->data<int64_t>()[1], 5);
  std::remove(path.c_str());
  Result<Tensor> missing = ParseTensorArgument("@" + path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  Result<Tensor> inline_t = ParseTensorArgument("i64=3");
  ASSERT_TRUE(inline_t.ok());
}

TEST(FormatTest, SmallTensors) {
  EXPECT_EQ(FormatTensor(*ParseInlineTensor("2x3xf32=1,2,3,4,5,6.5")),
            "float32[2, 3]\n[[1, 2, 3],\n [4, 5, 6.5]]");
  EXPECT_EQ(FormatTensor(*ParseInlineTensor("i64=-3")), "int64[]\n-3");
  EXPECT_EQ(FormatTensor(*ParseInlineTensor("2xbool=1,0")), "bool[2]\n[true, false]");
  EXPECT_EQ(FormatTensor(*ParseInlineTensor("0xf32=")), "float32[0]\n[]");
  EXPECT_EQ(FormatTensor(*ParseInlineTensor("2x1x2xi8=1,2,3,4")), "int8[2, 1, 2]\n[[[1, 2]],\n [[3, 4]]]");
}

TEST(FormatTest, LongTensorsAreAbbreviated) {
  Result<Tensor> t = ParseInlineTensor("100xi32=random:1");
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 100; ++i) t->data<int32_t>()[i] = i;
  EXPECT_EQ(FormatTensor(*t), "int32[100]\n[0, 1, 2, ..., 97, 98, 99]");
  Result<Tensor> m = ParseInlineTensor("10x10xi32=random:1");
  ASSERT_TRUE(m.ok());
  for (int i = 0; i < 100; ++i) m->data<int32_t>()[i] = i;
  EXPECT_EQ(FormatTensor(*m),
            "int32[10, 10]\n[[0, 1, 2, ..., 7, 8, 9],\n [10, 11, 12, ..., 17, 18, 19],\n [20, 21, 22, ..., 27, 28, 29],\n"
            " ...,\n [70, 71, 72, ..., 77, 78, 79],\n [80, 81, 82, ..., 87, 88, 89],\n [90, 91, 92, ..., 97, 98, 99]]");
}

TEST(FormatTest, Values) {
  EXPECT_EQ(FormatValue(Any(int64_t{3})), "int 3");
  EXPECT_EQ(FormatValue(Any::Shape({1, 2})), "shape [1, 2]");
  Any tuple = Any::Tuple({Any(*ParseInlineTensor("f32=2")), Any(int64_t{1})});
  EXPECT_EQ(FormatValue(tuple), "tuple of 2\n[0] float32[]\n2\n[1] int 1");
}

}  // namespace
}  // namespace tools
}  // namespace kiln
