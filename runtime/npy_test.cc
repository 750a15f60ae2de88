#include "runtime/npy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace kiln {
namespace {

// Builds a .npy image by hand, independent of SerializeNpy, so reader bugs and
// writer bugs cannot cancel out.
std::string MakeNpy(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  size_t len = header.size();
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  return out + header + data;
}

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST(NpyTest, ReadsVersion1Float32) {
  std::string npy = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                            Bytes(std::vector<float>{1, 2, 3, 4, 5, 6}));
  Result<Tensor> t = ParseNpy(npy.data(), npy.size());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->dtype(), DType::Float32());
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->data<float>()[5], 6.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % 64, 0u);
}

TEST(NpyTest, ReadsVersion2AndOtherKeyOrder) {
  std::string npy = MakeNpy("{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i8\"}",
                            Bytes(std::vector<int64_t>{-1, 0, 1LL << 40}), 2);
  Result<Tensor> t = ParseNpy(npy.data(), npy.size());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->dtype(), DType::Int64());
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(t->data<int64_t>()[2], 1LL << 40);
}

TEST(NpyTest, ReadsScalarAndEmpty) {
  std::string scalar = MakeNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                               Bytes(std::vector<double>{2.5}));
  Result<Tensor> s = ParseNpy(scalar.data(), scalar.size());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->ndim(), 0);
  EXPECT_EQ(*s->data<double>(), 2.5);

  std::string empty = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }", "");
  Result<Tensor> e = ParseNpy(empty.data(), empty.size());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->NumElements(), 0);
}

TEST(NpyTest, SingleByteTypesAcceptAnyByteOrderMark) {
  for (const char* descr : {"|u1", "<u1", "=u1"}) {
    std::string npy = MakeNpy(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,), }",
                              std::string("\x05\xff", 2));
    Result<Tensor> t = ParseNpy(npy.data(), npy.size());
    ASSERT_TRUE(t.ok()) << descr << ": " << t.status().ToString();
    EXPECT_EQ(t->dtype(), DType::UInt8());
    EXPECT_EQ(t->data<uint8_t>()[1], 255);
  }
  std::string b = MakeNpy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x00", 2));
  Result<Tensor> t = ParseNpy(b.data(), b.size());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->dtype(), DType::Bool());
}

// Every dtype Kiln computes in (runtime/dtype.h's ParseDType accepts no other
// scalar widths).
const DType kEveryDType[] = {
    DType::Float16(),    DType::Float32(),    DType::Float64(),    DType::Int8(),       DType{kDLInt, 16, 1},
    DType::Int32(),      DType::Int64(),      DType::UInt8(),      DType{kDLUInt, 16, 1}, DType{kDLUInt, 32, 1},
    DType{kDLUInt, 64, 1}, DType::Bool(),     DType{kDLBfloat, 16, 1},
};

TEST(NpyTest, RoundTripEveryDtype) {
  std::vector<int64_t> shape = {3, 5};
  for (DType dtype : kEveryDType) {
    Result<Tensor> t = Tensor::Empty(shape, dtype);
    ASSERT_TRUE(t.ok());
    auto* bytes = static_cast<uint8_t*>(t->raw_data());
    for (size_t i = 0; i < t->NumBytes(); ++i) bytes[i] = static_cast<uint8_t>(dtype == DType::Bool() ? i % 2 : i * 7);
    Result<std::string> npy = SerializeNpy(*t);
    ASSERT_TRUE(npy.ok()) << npy.status().ToString();
    // The data starts at a multiple of 64 bytes, as numpy does it.
    EXPECT_EQ((npy->size() - t->NumBytes()) % 64, 0u);
    EXPECT_EQ((*npy)[6], 1);  // version 1.0
    Result<Tensor> back = ParseNpy(npy->data(), npy->size());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->dtype(), dtype);
    EXPECT_EQ(back->shape(), shape);
    EXPECT_EQ(std::memcmp(back->raw_data(), t->raw_data(), t->NumBytes()), 0) << DTypeToString(dtype);
  }
}

// The descriptors NumPy writes for each dtype (np.dtype(...).str; '<V2' is
// np.save of an ml_dtypes.bfloat16 array), read by hand-made files.
TEST(NpyTest, ReadsNumpyDescriptorsOfEveryDtype) {
  struct Case { const char* descr; DType dtype; };
  const Case cases[] = {
      {"<f2", DType::Float16()},       {"<f4", DType::Float32()},       {"<f8", DType::Float64()},
      {"|i1", DType::Int8()},          {"<i2", DType{kDLInt, 16, 1}},   {"<i4", DType::Int32()},
      {"<i8", DType::Int64()},         {"|u1", DType::UInt8()},         {"<u2", DType{kDLUInt, 16, 1}},
      {"<u4", DType{kDLUInt, 32, 1}},  {"<u8", DType{kDLUInt, 64, 1}},  {"|b1", DType::Bool()},
      {"<V2", DType{kDLBfloat, 16, 1}}, {"|V2", DType{kDLBfloat, 16, 1}}, {"=f2", DType::Float16()},
      {"=u8", DType{kDLUInt, 64, 1}},
  };
  for (const Case& c : cases) {
    std::string data(2 * c.dtype.bytes(), '\x01');
    std::string npy = MakeNpy(std::string("{'descr': '") + c.descr + "', 'fortran_order': False, 'shape': (2,), }", data);
    Result<Tensor> t = ParseNpy(npy.data(), npy.size());
    ASSERT_TRUE(t.ok()) << c.descr << ": " << t.status().ToString();
    EXPECT_EQ(t->dtype(), c.dtype) << c.descr;
    EXPECT_EQ(std::string(static_cast<const char*>(t->raw_data()), t->NumBytes()), data) << c.descr;
  }
  // What the writer says for the dtypes NumPy lacks or names specially.
  EXPECT_EQ(NpyDescriptor(DType{kDLBfloat, 16, 1}).value(), "<V2");
  EXPECT_EQ(NpyDescriptor(DType::Float16()).value(), "<f2");
  EXPECT_EQ(NpyDescriptor(DType{kDLUInt, 64, 1}).value(), "<u8");
}

TEST(NpyTest, WriterHeaderText) {
  std::vector<float> data = {1, 2, 3};
  std::vector<int64_t> shape = {3};
  Result<std::string> npy = SerializeNpy(Tensor::Borrow(data.data(), shape, DType::Float32()));
  ASSERT_TRUE(npy.ok());
  EXPECT_NE(npy->find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
  Result<std::string> scalar = SerializeNpy(Tensor::Borrow(data.data(), {}, DType::Float32()));
  ASSERT_TRUE(scalar.ok());
  EXPECT_NE(scalar->find("'shape': ()"), std::string::npos);
}

TEST(NpyTest, WriterUsesVersion2ForHugeHeaders) {
  // 30000 dimensions ("1, " is 3 bytes each) pass the 65535-byte limit of v1.
  std::vector<int64_t> shape(30000, 1);
  float v = 4;
  Result<std::string> npy = SerializeNpy(Tensor::Borrow(&v, shape, DType::Float32()));
  ASSERT_TRUE(npy.ok());
  EXPECT_EQ((*npy)[6], 2);
  Result<Tensor> back = ParseNpy(npy->data(), npy->size());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ndim(), 30000);
  EXPECT_EQ(*back->data<float>(), 4.0f);
}

TEST(NpyTest, FileRoundTrip) {
  std::string path = ::testing::TempDir() + "kiln_npy_test.npy";
  std::vector<int32_t> data = {1, -2, 3, -4};
  std::vector<int64_t> shape = {2, 2};
  ASSERT_TRUE(WriteNpyFile(Tensor::Borrow(data.data(), shape, DType::Int32()), path).ok());
  Result<Tensor> back = ReadNpyFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->data<int32_t>()[3], -4);
  std::remove(path.c_str());
}

// --- errors -----------------------------------------------------------------

std::string ErrorOf(const std::string& npy) {
  Result<Tensor> t = ParseNpy(npy.data(), npy.size(), "x.npy");
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.status().ToString();
}

TEST(NpyErrorTest, MissingFile) {
  Result<Tensor> t = ReadNpyFile("/nonexistent/dir/x.npy");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.status().message(), "cannot open '/nonexistent/dir/x.npy'");
}

TEST(NpyErrorTest, BadMagic) {
  EXPECT_EQ(ErrorOf("PK\x03\x04 not numpy at all"), "DataLoss: x.npy: not a .npy file (bad magic)");
  EXPECT_EQ(ErrorOf(""), "DataLoss: x.npy: not a .npy file (bad magic)");
}

TEST(NpyErrorTest, UnsupportedVersion) {
  std::string npy = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "abcd");
  npy[6] = 3;
  EXPECT_EQ(ErrorOf(npy), "Unimplemented: x.npy: .npy format version 3.0 is not supported (only 1.0 and 2.0)");
}

TEST(NpyErrorTest, FortranOrder) {
  std::string npy = MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\0'));
  EXPECT_EQ(ErrorOf(npy),
            "Unimplemented: x.npy: Fortran-order arrays are not supported; save a C-order array "
            "(numpy.ascontiguousarray)");
}

TEST(NpyErrorTest, TruncatedData) {
  std::string npy = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", std::string(20, '\0'));
  EXPECT_EQ(ErrorOf(npy), "DataLoss: x.npy: truncated data: float32[2, 3] needs 24 bytes, file has 20");
}

TEST(NpyErrorTest, TruncatedHeader) {
  std::string npy = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", "");
  EXPECT_NE(ErrorOf(npy.substr(0, 40)).find("DataLoss: x.npy: truncated .npy header (needs 128 bytes, file has 40)"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(npy.substr(0, 9)), "DataLoss: x.npy: truncated .npy header");
}

TEST(NpyErrorTest, BigEndianAndUnsupportedDtypes) {
  std::string be = MakeNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "abcd");
  EXPECT_EQ(ErrorOf(be), "Unimplemented: x.npy: big-endian data ('>f4') is not supported");
  std::string c = MakeNpy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "abcdefgh");
  EXPECT_EQ(ErrorOf(c),
            "Unimplemented: x.npy: unsupported dtype '<c8' (supported: float16, float32, float64, int8, int16, int32, "
            "int64, uint8, uint16, uint32, uint64, bool, bfloat16 (as '<V2'))");
  // A 2-byte void is bfloat16 only little-endian or without byte order.
  std::string v = MakeNpy("{'descr': '>V2', 'fortran_order': False, 'shape': (1,), }", "ab");
  EXPECT_EQ(ErrorOf(v), "Unimplemented: x.npy: big-endian data ('>V2') is not supported");
  std::string v4 = MakeNpy("{'descr': '|V4', 'fortran_order': False, 'shape': (1,), }", "abcd");
  EXPECT_NE(ErrorOf(v4).find("unsupported dtype '|V4'"), std::string::npos);
}

TEST(NpyErrorTest, MalformedHeaders) {
  struct Case { const char* dict; const char* why; };
  const Case cases[] = {
      {"'descr': '<f4'", "expected '{'"},
      {"{descr: '<f4'}", "expected a quoted key"},
      {"{'descr' '<f4'}", "expected ':' after 'descr'"},
      {"{'descr': 4, 'fortran_order': False, 'shape': (1,)}", "'descr' is not a string"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", "'fortran_order' is not True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, x)}", "'shape' is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "'shape' is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'shape': (1,)}", "it needs 'descr', 'fortran_order' and 'shape'"},
      {"{'descr': '<f4' 'shape': (1,)}", "expected ',' or '}'"},
  };
  for (const Case& c : cases) {
    std::string err = ErrorOf(MakeNpy(c.dict, "abcd"));
    EXPECT_NE(err.find(std::string("DataLoss: x.npy: malformed .npy header (") + c.why + ")"), std::string::npos)
        << c.dict << " -> " << err;
  }
}

TEST(NpyErrorTest, WritingUnsupportedDtype) {
  uint16_t h = 0;
  // Vector dtypes (lanes > 1) have no .npy form.
  Result<std::string> npy = SerializeNpy(Tensor::Borrow(&h, {}, DType{kDLInt, 8, 2}));
  ASSERT_FALSE(npy.ok());
  EXPECT_EQ(npy.status().message(),
            "cannot write dtype int8x2 as .npy (supported: float16, float32, float64, int8, int16, int32, int64, "
            "uint8, uint16, uint32, uint64, bool, bfloat16 (as '<V2'))");
  EXPECT_FALSE(SerializeNpy(Tensor()).ok());
  Status s = WriteNpyFile(Tensor::Borrow(&h, {}, DType::Int8()), "/nonexistent/dir/y.npy");
  EXPECT_EQ(s.message(), "cannot open '/nonexistent/dir/y.npy' for writing");
}

}  // namespace
}  // namespace kiln
