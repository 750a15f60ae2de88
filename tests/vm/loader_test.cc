// The .vmfb loader: every bad file gives a clear Status (never a crash), names
// are resolved once with one error listing all missing, versions are checked,
// constants are zero-copy.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "compiler/writer/vmfb_writer.h"
#include "runtime/registry.h"
#include "runtime/vmfb_loader.h"
#include "schemas/vmfb_generated.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

using compiler::CallableKind;
using compiler::ConstantKind;
using compiler::ConstantValue;
using compiler::VmfbProgram;
using testing::F32;
using testing::Load;
using testing::Serialize;
using testing::Values;

// AddProgram plus a weights tensor constant, so the file has a weights segment.
VmfbProgram ProgramWithWeights() {
  VmfbProgram p = testing::AddProgram();
  ConstantValue w;
  w.kind = ConstantKind::kTensor;
  w.name = "weight";
  w.tensor = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  p.constants.push_back(w);
  ConstantValue w2 = w;
  w2.name = "bias";
  w2.tensor = F32({3}, {7, 8, 9});
  p.constants.push_back(w2);
  return p;
}

TEST(LoaderTest, ConstantsBorrowTheFileBytes) {
  std::vector<uint8_t> bytes = Serialize(ProgramWithWeights());
  FileBytes fb;
  fb.data = bytes.data();
  fb.size = bytes.size();
  auto program = DecodeVmfb(fb);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  ASSERT_EQ(program->constants.size(), 4u);
  Tensor w = program->constants[2].value.tensor();
  Tensor b = program->constants[3].value.tensor();
  EXPECT_EQ(Values(w), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Values(b), (std::vector<float>{7, 8, 9}));
  const uint8_t* p = static_cast<const uint8_t*>(w.raw_data());
  EXPECT_TRUE(p >= bytes.data() && p < bytes.data() + bytes.size()) << "constants must not be copied";
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, reinterpret_cast<uintptr_t>(bytes.data()) % 64);
  EXPECT_EQ(program->constants[2].name, "weight");
  EXPECT_EQ(program->producer, "kiln 0.1.0");
  EXPECT_EQ(program->format_major, 1);
}

TEST(LoaderTest, OwnedBufferIsReleasedWithTheLastHolder) {
  std::vector<uint8_t> bytes = Serialize(ProgramWithWeights());
  auto* copy = new std::vector<uint8_t>(bytes);
  static int releases = 0;
  releases = 0;
  auto release = [](const void*, void* user) {
    ++releases;
    delete static_cast<std::vector<uint8_t>*>(user);
  };
  Tensor weight;
  {
    auto m = vm::Module::LoadOwnedBuffer(copy->data(), copy->size(), release, copy);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    weight = (*m)->linked_program()->program.constants[2].value.tensor();
  }
  EXPECT_EQ(releases, 0) << "a constant tensor still borrows the buffer";
  EXPECT_EQ(Values(weight)[5], 6.0f);
  weight = Tensor();
  EXPECT_EQ(releases, 1);

  // Released on failure too.
  auto* junk = new std::vector<uint8_t>(100, 0);
  auto m = vm::Module::LoadOwnedBuffer(junk->data(), junk->size(), release, junk);
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(releases, 2);
}

TEST(LoaderTest, LoadFileAndErrorsNameThePath) {
  std::string path = ::testing::TempDir() + "/kiln_loader_test.vmfb";
  ASSERT_TRUE(compiler::WriteVmfbFile(ProgramWithWeights(), path).ok());
  auto m = vm::Module::LoadFile(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Any out;
  std::vector<Any> args = {F32({1, 4}, {1, 2, 3, 4}), F32({1, 4}, {1, 1, 1, 1})};
  ASSERT_TRUE((*m)->CreateContext()->Invoke("main", args, &out).ok());
  EXPECT_EQ(Values(out.tensor()), (std::vector<float>{2, 3, 4, 5}));
  std::remove(path.c_str());

  auto missing = vm::Module::LoadFile(path);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("cannot open '" + path + "'"), std::string::npos);

  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fputs("definitely not a model file", f);
  std::fclose(f);
  auto foreign = vm::Module::LoadFile(path);
  EXPECT_EQ(foreign.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(foreign.status().message(), "loading " + path + ": not a .vmfb file (no 'KILN' identifier)");
  std::remove(path.c_str());
}

TEST(LoaderTest, ForeignAndTinyFiles) {
  std::vector<uint8_t> tiny = {1, 2, 3};
  EXPECT_EQ(Load(tiny).status().message(), "not a .vmfb file: 3 bytes is too small");
  std::vector<uint8_t> elf(64, 0);
  std::memcpy(elf.data(), "\x7f" "ELF", 4);
  EXPECT_EQ(Load(elf).status().message(), "not a .vmfb file (no 'KILN' identifier)");
  EXPECT_EQ(vm::Module::LoadBuffer(nullptr, 0).status().code(), StatusCode::kDataLoss);
}

TEST(LoaderTest, NewerMajorIsRefusedNewerMinorLoads) {
  VmfbProgram p = testing::AddProgram();
  p.format_major = 2;
  p.format_minor = 0;
  auto m = Load(Serialize(p));
  EXPECT_EQ(m.status().code(), StatusCode::kIncompatible);
  EXPECT_EQ(m.status().message(), "file format 2.0 is newer than this runtime's 1.1");
  p.format_major = 0;
  p.format_minor = 9;
  EXPECT_EQ(Load(Serialize(p)).status().message(),
            "file format 0.9 is older than this runtime's 1.1 and no longer supported");
  p.format_major = 1;
  p.format_minor = 7;  // a newer minor only adds fields we may ignore
  EXPECT_TRUE(Load(Serialize(p)).ok());
}

TEST(LoaderTest, OneErrorListsEveryMissingName) {
  VmfbProgram p = testing::AddProgram();
  p.callables.push_back({CallableKind::kPacked, "test.does_not_exist"});
  p.callables.push_back({CallableKind::kKernel, "missing_kernel", 0, 2});
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.nope"});
  auto m = Load(Serialize(p));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.status().message(),
            "cannot resolve 3 callables: packed function 'test.does_not_exist', kernel 'missing_kernel', builtin "
            "'vm.builtin.nope'");
}

TEST(LoaderTest, SemanticChecks) {
  {
    VmfbProgram p = testing::AddProgram();
    p.callables.push_back({CallableKind::kFunction, "ghost", 9});
    EXPECT_EQ(Load(Serialize(p)).status().message(), "corrupt .vmfb: callable 5 names function 9; the module has 1");
  }
  {
    VmfbProgram p = testing::AddProgram();
    p.functions.push_back(p.functions[0]);
    EXPECT_EQ(Load(Serialize(p)).status().message(), "corrupt .vmfb: two functions are named 'main'");
  }
}

TEST(LoaderTest, TruncatedWeightsSegment) {
  std::vector<uint8_t> bytes = Serialize(ProgramWithWeights());
  std::vector<uint8_t> shorter(bytes.begin(), bytes.end() - 4);
  auto m = Load(shorter);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("truncated .vmfb: the weights segment ends at byte"), std::string::npos)
      << m.status().message();
}

// A file with one tensor constant, built with FlatBuffers directly so it can
// say things the writer never would.
std::vector<uint8_t> OneConstantFile(fb::DType dtype, std::vector<int64_t> shape, uint64_t data_size,
                                     uint64_t weights_size) {
  flatbuffers::FlatBufferBuilder b;
  fb::SegmentRef data(0, data_size);
  auto c = fb::CreateConstantDirect(b, fb::ConstantKind::Tensor, &dtype, &shape, &data, 0, 0, nullptr, "w");
  std::vector<flatbuffers::Offset<fb::Constant>> constants = {c};
  fb::FormatVersion version(1, 0);
  fb::SegmentRef weights(0, weights_size);
  auto root = fb::CreateModuleDirect(b, &version, "test", 0, nullptr, nullptr, nullptr, &constants, &weights);
  fb::FinishSizePrefixedModuleBuffer(b, root);
  size_t base = (b.GetSize() + 63) / 64 * 64;
  std::vector<uint8_t> out(base + weights_size, 0);
  std::memcpy(out.data(), b.GetBufferPointer(), b.GetSize());
  return out;
}

TEST(LoaderTest, TensorConstantsAreChecked) {
  FileBytes fb_bytes;
  auto decode = [&](const std::vector<uint8_t>& bytes) {
    fb_bytes.data = bytes.data();
    fb_bytes.size = bytes.size();
    Result<Program> p = DecodeVmfb(fb_bytes);
    return p.ok() ? std::string("OK") : p.status().message();
  };
  EXPECT_EQ(decode(OneConstantFile(fb::DType(2, 32, 1), {2, 3}, 24, 64)), "OK");
  EXPECT_EQ(decode(OneConstantFile(fb::DType(2, 32, 1), {2, 3}, 20, 64)),
            "corrupt .vmfb: constant 0 ('w') holds 20 bytes; a float32[2, 3] tensor needs 24");
  EXPECT_EQ(decode(OneConstantFile(fb::DType(9, 32, 1), {2, 3}, 24, 64)),
            "corrupt .vmfb: constant 0 ('w') has an invalid dtype (code 9, bits 32, lanes 1)");
  EXPECT_EQ(decode(OneConstantFile(fb::DType(2, 32, 1), {2, -3}, 24, 64)),
            "corrupt .vmfb: constant 0 ('w') has a negative dimension in [2, -3]");
  EXPECT_EQ(decode(OneConstantFile(fb::DType(2, 32, 1), {2, 3}, 24, 16)),
            "corrupt .vmfb: constant 0 ('w') lies outside the weights segment (16 bytes)");
  EXPECT_EQ(decode(OneConstantFile(fb::DType(2, 32, 1), {int64_t(1) << 62, 8}, 24, 64)),
            "corrupt .vmfb: constant 0 ('w') is too large");
}

// Loading must fail cleanly (or succeed and run without crashing) for any
// damage; run under ASan this also proves no out-of-bounds read.
void LoadAndMaybeRun(const std::vector<uint8_t>& bytes) {
  auto m = Load(bytes);
  if (!m.ok()) {
    EXPECT_FALSE(m.status().message().empty());
    return;
  }
  for (const std::string& fn : (*m)->FunctionNames()) {
    Any out;
    std::vector<Any> args = {F32({2, 4}, std::vector<float>(8, 1)), F32({2, 4}, std::vector<float>(8, 2))};
    (void)(*m)->CreateContext()->Invoke(fn, args, &out);
  }
}

TEST(LoaderFuzzTest, EveryTruncationFailsCleanly) {
  std::vector<uint8_t> bytes = Serialize(ProgramWithWeights());
  ASSERT_TRUE(Load(bytes).ok());
  for (size_t len = 0; len < bytes.size(); ++len) {
    // A fresh exact-size heap copy, so ASan sees any read past the end.
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len);
    auto m = Load(cut);
    EXPECT_FALSE(m.ok()) << "a file truncated to " << len << " of " << bytes.size() << " bytes loaded";
  }
}

TEST(LoaderFuzzTest, FlippedBytesNeverCrash) {
  std::vector<uint8_t> bytes = Serialize(ProgramWithWeights());
  std::mt19937 rng(1234);
  // Every byte of the FlatBuffer header with several patterns, then random
  // multi-byte damage anywhere.
  for (size_t pos = 0; pos < bytes.size(); ++pos) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> damaged = bytes;
      damaged[pos] ^= mask;
      LoadAndMaybeRun(damaged);
    }
  }
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> damaged = bytes;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) damaged[rng() % damaged.size()] = static_cast<uint8_t>(rng());
    LoadAndMaybeRun(damaged);
  }
}

TEST(LoaderFuzzTest, FlippedBytesOutsideTheNativeLibrary) {
  // With a native library: damage the FlatBuffer (which describes the
  // library) but not the machine code itself, which no loader can vet.
  VmfbProgram p = testing::AddProgram();
  p.native_libraries.push_back(testing::TestKernelLibraryInfo());
  p.callables.push_back({CallableKind::kKernel, "add_f32", 0, 3});
  std::vector<uint8_t> bytes = Serialize(p);
  uint32_t fb_size;
  std::memcpy(&fb_size, bytes.data(), 4);
  std::mt19937 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> damaged = bytes;
    size_t pos = rng() % (fb_size + 4);
    damaged[pos] ^= static_cast<uint8_t>(1 + rng() % 255);
    LoadAndMaybeRun(damaged);
  }
}

}  // namespace
}  // namespace kiln
