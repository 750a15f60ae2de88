// Parameter-file readers: well-formed .npz (stored, deflated, zip64) and
// .safetensors files written by the test itself, and one case per error.
#include "compiler/params/param_file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/npy.h"

namespace kiln {
namespace params {
namespace {

Tensor MakeF32(std::vector<int64_t> shape, float start) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

std::string Npy(const Tensor& t) { return SerializeNpy(t).value(); }

void Put(std::string* s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::string RawDeflate(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, in.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A minimal zip writer, with knobs to produce each malformation.
struct ZipEntry {
  std::string name;
  std::string data;  // uncompressed
  uint16_t method = 0;
  bool zip64 = false;       // sizes in a zip64 extra field, as numpy writes them
  uint16_t flags = 0;
  bool bad_crc = false;
  std::string raw;          // if set: the bytes stored instead of compressing `data`
};

std::string MakeZip(const std::vector<ZipEntry>& entries) {
  std::string file, cd;
  for (const auto& e : entries) {
    std::string stored = !e.raw.empty() ? e.raw : e.method == 8 ? RawDeflate(e.data) : e.data;
    uint32_t crc = static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size())));
    if (e.bad_crc) crc ^= 1;
    uint64_t offset = file.size();
    std::string extra;
    if (e.zip64) {
      Put(&extra, 1, 2);
      Put(&extra, 24, 2);
      Put(&extra, e.data.size(), 8);
      Put(&extra, stored.size(), 8);
      Put(&extra, offset, 8);
    }
    uint32_t c32 = e.zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(stored.size());
    uint32_t u32 = e.zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(e.data.size());
    uint32_t o32 = e.zip64 ? 0xFFFFFFFFu : static_cast<uint32_t>(offset);
    // Local header (sizes as the central directory says; zip64 extra omitted here).
    Put(&file, 0x04034b50, 4);
    Put(&file, 20, 2);
    Put(&file, e.flags, 2);
    Put(&file, e.method, 2);
    Put(&file, 0, 4);
    Put(&file, crc, 4);
    Put(&file, c32, 4);
    Put(&file, u32, 4);
    Put(&file, e.name.size(), 2);
    Put(&file, 0, 2);
    file += e.name + stored;
    Put(&cd, 0x02014b50, 4);
    Put(&cd, 45, 2);
    Put(&cd, 45, 2);
    Put(&cd, e.flags, 2);
    Put(&cd, e.method, 2);
    Put(&cd, 0, 4);
    Put(&cd, crc, 4);
    Put(&cd, c32, 4);
    Put(&cd, u32, 4);
    Put(&cd, e.name.size(), 2);
    Put(&cd, extra.size(), 2);
    Put(&cd, 0, 2);
    Put(&cd, 0, 2);
    Put(&cd, 0, 2);
    Put(&cd, 0, 4);
    Put(&cd, o32, 4);
    cd += e.name + extra;
  }
  uint64_t cd_offset = file.size();
  file += cd;
  Put(&file, 0x06054b50, 4);
  Put(&file, 0, 4);
  Put(&file, entries.size(), 2);
  Put(&file, entries.size(), 2);
  Put(&file, cd.size(), 4);
  Put(&file, cd_offset, 4);
  Put(&file, 0, 2);
  return file;
}

Result<ParamList> Npz(const std::string& bytes) { return ParseNpz(bytes.data(), bytes.size(), "w.npz"); }

void ExpectError(const Result<ParamList>& r, StatusCode code, const std::string& fragment) {
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << fragment;
  EXPECT_EQ(r.status().code(), code) << r.status().message();
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(NpzTest, StoredAndDeflatedEntriesInOrder) {
  for (bool zip64 : {false, true}) {
    std::vector<ZipEntry> entries(2);
    entries[0].name = "w1.npy";
    entries[0].data = Npy(MakeF32({2, 3}, 1));
    entries[0].zip64 = zip64;
    entries[1].name = "b0.npy";
    entries[1].data = Npy(MakeF32({4}, 10));
    entries[1].method = 8;
    entries[1].zip64 = zip64;
    Result<ParamList> r = Npz(MakeZip(entries));
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].name, "w1");
    EXPECT_EQ((*r)[0].tensor.TypeString(), "float32[2, 3]");
    EXPECT_EQ((*r)[0].tensor.data<float>()[5], 6.0f);
    EXPECT_EQ((*r)[1].name, "b0");
    EXPECT_EQ((*r)[1].tensor.TypeString(), "float32[4]");
    EXPECT_EQ((*r)[1].tensor.data<float>()[3], 13.0f);
  }
}

TEST(NpzTest, EmptyArchive) {
  Result<ParamList> r = Npz(MakeZip({}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->empty());
}

ZipEntry GoodEntry() {
  ZipEntry e;
  e.name = "w.npy";
  e.data = Npy(MakeF32({3}, 0));
  return e;
}

TEST(NpzTest, Errors) {
  ExpectError(Npz("PK"), StatusCode::kDataLoss, "w.npz: not a zip (.npz) archive: too short");
  ExpectError(Npz(std::string(100, 'x')), StatusCode::kDataLoss, "no end-of-central-directory record");
  std::string good = MakeZip({GoodEntry()});
  // Cut in the middle of the data: the end record is gone.
  ExpectError(Npz(good.substr(0, good.size() - 30)), StatusCode::kDataLoss, "no end-of-central-directory record (truncated?)");

  ZipEntry e = GoodEntry();
  e.bad_crc = true;
  ExpectError(Npz(MakeZip({e})), StatusCode::kDataLoss, "w.npz: entry 'w.npy': CRC-32 mismatch");
  e = GoodEntry();
  e.method = 12;
  ExpectError(Npz(MakeZip({e})), StatusCode::kUnimplemented, "entry 'w.npy': compression method 12 is not supported");
  e = GoodEntry();
  e.flags = 1;
  ExpectError(Npz(MakeZip({e})), StatusCode::kUnimplemented, "entry 'w.npy': encrypted zip entries");
  e = GoodEntry();
  e.name = "readme.txt";
  ExpectError(Npz(MakeZip({e})), StatusCode::kInvalidArgument, "entry 'readme.txt': not a .npy entry");
  ExpectError(Npz(MakeZip({GoodEntry(), GoodEntry()})), StatusCode::kInvalidArgument, "the name 'w' appears twice");
  e = GoodEntry();
  e.method = 8;
  e.raw = "\xff\xff\xff garbage";
  ExpectError(Npz(MakeZip({e})), StatusCode::kDataLoss, "entry 'w.npy': corrupt DEFLATE data");
  // An entry whose .npy is Fortran order: the .npy reader's message, named by entry.
  e = GoodEntry();
  size_t pos = e.data.find("'fortran_order': False");
  ASSERT_NE(pos, std::string::npos);
  e.data.replace(pos, 22, "'fortran_order': True ");
  ExpectError(Npz(MakeZip({e})), StatusCode::kUnimplemented, "w.npz: entry 'w.npy': Fortran-order arrays are not supported");
  // An .npy of an unsupported dtype.
  e = GoodEntry();
  pos = e.data.find("<f4");
  e.data.replace(pos, 3, "<c8");
  ExpectError(Npz(MakeZip({e})), StatusCode::kUnimplemented, "entry 'w.npy': unsupported dtype '<c8'");
  // An .npy whose magic is wrong.
  e = GoodEntry();
  e.data[1] = 'X';
  ExpectError(Npz(MakeZip({e})), StatusCode::kDataLoss, "entry 'w.npy': not a .npy file (bad magic)");
}

TEST(NpzTest, RecordsOutOfRange) {
  std::string z = MakeZip({GoodEntry()});
  // The end record's central-directory offset points past the file.
  std::string bad = z;
  size_t end = bad.size() - 22;
  bad[end + 16] = '\xff';
  bad[end + 17] = '\xff';
  bad[end + 18] = '\x00';
  ExpectError(Npz(bad), StatusCode::kDataLoss, "central directory offset");
  // The central directory's compressed size runs past the end of the file.
  bad = z;
  size_t cd = bad.find("PK\x01\x02");
  ASSERT_NE(cd, std::string::npos);
  bad[cd + 20] = '\xff';
  bad[cd + 21] = '\xff';
  bad[cd + 22] = '\x0f';
  ExpectError(Npz(bad), StatusCode::kDataLoss, "entry 'w.npy': data (");
  // The local header offset is wrong.
  bad = z;
  bad[cd + 42] = 5;
  ExpectError(Npz(bad), StatusCode::kDataLoss, "entry 'w.npy': local header at offset 5");
  // The entry count claims more records than the directory holds.
  bad = z;
  bad[end + 10] = 2;
  ExpectError(Npz(bad), StatusCode::kDataLoss, "central directory record 1 is truncated");
}

std::string Safetensors(const std::string& header, const std::string& data) {
  std::string s;
  Put(&s, header.size(), 8);
  return s + header + data;
}

std::string FloatBytes(std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

Result<ParamList> Safe(const std::string& bytes) { return ParseSafetensors(bytes.data(), bytes.size(), "m.safetensors"); }

TEST(SafetensorsTest, ReadsTensorsInHeaderOrder) {
  int64_t idx[2] = {7, -3};
  std::string data = FloatBytes({1, 2, 3, 4, 5, 6}) + std::string(reinterpret_cast<const char*>(idx), 16);
  std::string header =
      R"({"__metadata__": {"format": "pt", "nested": [1, {"a": null}]}, "w": {"dtype": "F32", "shape": [2, 3], )"
      R"("data_offsets": [0, 24]}, "ids": {"dtype":"I64","shape":[2],"data_offsets":[24,40]}, )"
      R"("s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}})";
  Result<ParamList> r = Safe(Safetensors(header, data));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].name, "w");
  EXPECT_EQ((*r)[0].tensor.TypeString(), "float32[2, 3]");
  EXPECT_EQ((*r)[0].tensor.data<float>()[4], 5.0f);
  EXPECT_EQ((*r)[1].name, "ids");
  EXPECT_EQ((*r)[1].tensor.data<int64_t>()[1], -3);
  EXPECT_EQ((*r)[2].tensor.ndim(), 0);
  EXPECT_EQ(*(*r)[2].tensor.data<float>(), 1.0f);
}

// Every dtype Kiln computes in, in both formats: the bytes come through as
// they are (the half-precision and 16-bit types were refused before).
TEST(ParamFileTest, EveryDtype) {
  struct Case { const char* safe_name; DType dtype; };
  const Case cases[] = {
      {"F16", DType::Float16()},       {"BF16", DType{kDLBfloat, 16, 1}}, {"F32", DType::Float32()},
      {"F64", DType::Float64()},       {"I8", DType::Int8()},             {"I16", DType{kDLInt, 16, 1}},
      {"I32", DType::Int32()},         {"I64", DType::Int64()},           {"U8", DType::UInt8()},
      {"U16", DType{kDLUInt, 16, 1}},  {"U32", DType{kDLUInt, 32, 1}},    {"U64", DType{kDLUInt, 64, 1}},
      {"BOOL", DType::Bool()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.safe_name);
    Tensor t = Tensor::Empty({3}, c.dtype).value();
    auto* bytes = static_cast<uint8_t*>(t.raw_data());
    for (size_t i = 0; i < t.NumBytes(); ++i) {
      bytes[i] = static_cast<uint8_t>(c.dtype == DType::Bool() ? i % 2 : 3 * i + 1);
    }
    std::string data(static_cast<const char*>(t.raw_data()), t.NumBytes());

    Result<ParamList> npz = Npz(MakeZip({{"w.npy", Npy(t)}}));
    ASSERT_TRUE(npz.ok()) << npz.status().message();
    EXPECT_EQ((*npz)[0].tensor.dtype(), c.dtype);
    EXPECT_EQ(std::string(static_cast<const char*>((*npz)[0].tensor.raw_data()), t.NumBytes()), data);

    std::string header = std::string(R"({"w": {"dtype": ")") + c.safe_name + R"(", "shape": [3], "data_offsets": [0, )" +
                         std::to_string(t.NumBytes()) + "]}}";
    Result<ParamList> safe = Safe(Safetensors(header, data));
    ASSERT_TRUE(safe.ok()) << safe.status().message();
    EXPECT_EQ((*safe)[0].tensor.dtype(), c.dtype);
    EXPECT_EQ(std::string(static_cast<const char*>((*safe)[0].tensor.raw_data()), t.NumBytes()), data);
  }
}

TEST(SafetensorsTest, Errors) {
  std::string data = FloatBytes({1, 2, 3, 4});
  ExpectError(Safe("abc"), StatusCode::kDataLoss, "m.safetensors: not a .safetensors file: shorter than its 8-byte header");
  std::string s = Safetensors(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", data);
  ExpectError(Safe(s.substr(0, 20)), StatusCode::kDataLoss, "runs past the end of the file");
  ExpectError(Safe(Safetensors("[1, 2]", "")), StatusCode::kDataLoss, "the header is not a JSON object");
  ExpectError(Safe(Safetensors(R"({"w": {"dtype": "F32",)", "")), StatusCode::kDataLoss, "malformed JSON header: ");
  ExpectError(Safe(Safetensors(R"({"w": {"shape": [4], "data_offsets": [0, 16]}})", data)), StatusCode::kDataLoss,
              "tensor 'w': missing or non-string \"dtype\"");
  ExpectError(Safe(Safetensors(R"({"w": {"dtype": "F32", "data_offsets": [0, 16]}})", data)), StatusCode::kDataLoss,
              "tensor 'w': missing or non-array \"shape\"");
  ExpectError(Safe(Safetensors(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0]}})", data)),
              StatusCode::kDataLoss, "tensor 'w': \"data_offsets\" must be [begin, end]");
  ExpectError(Safe(Safetensors(R"({"w": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}})", data)),
              StatusCode::kUnimplemented,
              "m.safetensors: tensor 'w': unsupported dtype 'F8_E4M3' (supported: F64, F32, F16, BF16, I64, I32, I16, "
              "I8, U64, U32, U16, U8, BOOL)");
  ExpectError(Safe(Safetensors(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 32]}})", data)),
              StatusCode::kDataLoss, "tensor 'w': data_offsets [0, 32] out of range");
  ExpectError(Safe(Safetensors(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 4]}})", data)),
              StatusCode::kDataLoss, "tensor 'w': data_offsets [8, 4] out of range");
  ExpectError(Safe(Safetensors(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})", data)),
              StatusCode::kDataLoss, "tensor 'w': data_offsets span 16 bytes but F32[3] needs 12");
  ExpectError(Safe(Safetensors(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 16]}})", data)),
              StatusCode::kDataLoss, "shape entries must be non-negative integers");
  ExpectError(Safe(Safetensors(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                               R"( "w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", data)),
              StatusCode::kInvalidArgument, "tensor 'w': the name appears twice");
  ExpectError(Safe(Safetensors(R"({"b": {"dtype": "BOOL", "shape": [1], "data_offsets": [0, 1]}})", "\x07")),
              StatusCode::kDataLoss, "BOOL value other than 0 or 1");
}

TEST(ParamFileTest, ReadsByContent) {
  std::string dir = ::testing::TempDir();
  std::string npz = dir + "/kiln_params_test.npz", st = dir + "/kiln_params_test.bin";
  std::ofstream(npz, std::ios::binary) << MakeZip({GoodEntry()});
  std::ofstream(st, std::ios::binary) << Safetensors(R"({"v": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                                                     FloatBytes({2}));
  Result<ParamList> a = ReadParamFile(npz);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)[0].name, "w");
  Result<ParamList> b = ReadParamFile(st);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ((*b)[0].name, "v");
  Result<ParamList> missing = ReadParamFile(dir + "/does_not_exist.npz");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("does_not_exist.npz: cannot open the parameter file"), std::string::npos);
  std::remove(npz.c_str());
  std::remove(st.c_str());
}

}  // namespace
}  // namespace params
}  // namespace kiln
