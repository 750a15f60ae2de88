// Loading uses the file's bytes in place (issue 5 §1): every tensor constant
// of a module loaded with LoadFile points into the file's read-only mapping
// (found in /proc/self/maps by the file's path), and with LoadBuffer into the
// caller's buffer. And the header (version, producer, target) is readable
// without decoding the code, even for a format this runtime refuses.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/writer/vmfb_writer.h"
#include "runtime/program.h"
#include "runtime/vmfb_loader.h"
#include "tests/vm/test_util.h"
#include "tools/kiln-dump/dump.h"
#include "vm/module.h"

namespace kiln {
namespace {

using testing::F32;

// A file name in the test's temp dir, without "//" (the kernel's map list
// shows normalized paths).
std::string TempPath(const std::string& name) {
  std::string dir = ::testing::TempDir();
  if (!dir.empty() && dir.back() != '/') dir += '/';
  return dir + name;
}

// AddProgram with `count` tensor constants of 1000 floats each.
compiler::VmfbProgram ProgramWithWeights(int count) {
  compiler::VmfbProgram p = testing::AddProgram();
  p.target.cpu = "test-cpu";
  p.target.features = "+sse2";
  for (int i = 0; i < count; ++i) {
    compiler::ConstantValue w;
    w.kind = compiler::ConstantKind::kTensor;
    w.name = "w" + std::to_string(i);
    w.tensor = F32({10, 100}, std::vector<float>(1000, static_cast<float>(i)));
    p.constants.push_back(w);
  }
  return p;
}

struct Range {
  uintptr_t begin = 0, end = 0;
  bool Contains(const void* p, size_t n) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    return a >= begin && a + n <= end;
  }
};

// The address ranges this process has mapped from `path`.
std::vector<Range> MappingsOf(const std::string& path) {
  std::vector<Range> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() < path.size() || line.compare(line.size() - path.size(), path.size(), path) != 0) continue;
    Range r;
    unsigned long long b, e;
    if (std::sscanf(line.c_str(), "%llx-%llx", &b, &e) == 2) {
      r.begin = b;
      r.end = e;
      out.push_back(r);
    }
  }
  return out;
}

// Checks every tensor constant lies inside one of `ranges`; returns how many.
int ExpectConstantsInside(const vm::Module& m, const std::vector<Range>& ranges) {
  int tensors = 0;
  for (const ProgramConstant& c : m.linked_program()->program.constants) {
    if (c.kind != ProgramConstantKind::kTensor) continue;
    ++tensors;
    Tensor t = c.value.tensor();
    size_t n = static_cast<size_t>(t.NumElements()) * t.dtype().bytes();
    bool inside = false;
    for (const Range& r : ranges) inside = inside || r.Contains(t.raw_data(), n);
    EXPECT_TRUE(inside) << "constant '" << c.name << "' at " << t.raw_data() << " was copied";
  }
  return tensors;
}

TEST(LoadInPlaceTest, LoadFileConstantsPointIntoTheMapping) {
  std::string path = TempPath("kiln_load_in_place.vmfb");
  ASSERT_TRUE(compiler::WriteVmfbFile(ProgramWithWeights(8), path).ok());
  ASSERT_TRUE(MappingsOf(path).empty());
  {
    auto m = vm::Module::LoadFile(path);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    std::vector<Range> maps = MappingsOf(path);
    ASSERT_FALSE(maps.empty()) << "LoadFile did not map " << path;
    EXPECT_EQ(ExpectConstantsInside(**m, maps), 8);
    // And the values are right.
    Tensor w7 = (*m)->linked_program()->program.constants[2 + 7].value.tensor();
    EXPECT_EQ(w7.data<float>()[999], 7.0f);
  }
  EXPECT_TRUE(MappingsOf(path).empty()) << "the mapping outlived the module";
  std::remove(path.c_str());
}

TEST(LoadInPlaceTest, LoadBufferConstantsPointIntoTheCallersBuffer) {
  std::vector<uint8_t> bytes = testing::Serialize(ProgramWithWeights(4));
  auto m = vm::Module::LoadBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Range buffer{reinterpret_cast<uintptr_t>(bytes.data()), reinterpret_cast<uintptr_t>(bytes.data() + bytes.size())};
  EXPECT_EQ(ExpectConstantsInside(**m, {buffer}), 4);
}

TEST(FileInfoTest, PeekReadsTheHeader) {
  std::vector<uint8_t> bytes = testing::Serialize(ProgramWithWeights(1));
  FileBytes fb{bytes.data(), bytes.size(), nullptr};
  auto info = PeekVmfbInfo(fb);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->format_major, 1);
  EXPECT_EQ(info->format_minor, kVmfbRuntimeFormatMinor);
  EXPECT_EQ(info->producer, "kiln 0.1.0");
  EXPECT_EQ(info->target.triple, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(info->target.cpu, "test-cpu");
  EXPECT_EQ(info->target.features, "+sse2");
  EXPECT_EQ(info->file_bytes, bytes.size());
  EXPECT_TRUE(info->loadable());
}

TEST(FileInfoTest, PeekReadsANewerMajorThatLoadingRefuses) {
  compiler::VmfbProgram p = ProgramWithWeights(1);
  p.format_major = 7;
  p.format_minor = 3;
  p.producer = "kiln 9.9.9";
  std::string path = TempPath("kiln_file_info_newer.vmfb");
  ASSERT_TRUE(compiler::WriteVmfbFile(p, path).ok());

  auto loaded = vm::Module::LoadFile(path);
  EXPECT_EQ(loaded.status().code(), StatusCode::kIncompatible);
  EXPECT_EQ(loaded.status().message(), "loading " + path + ": file format 7.3 is newer than this runtime's 1.1");

  auto info = PeekVmfbFileInfo(path);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->format_major, 7);
  EXPECT_EQ(info->format_minor, 3);
  EXPECT_EQ(info->producer, "kiln 9.9.9");
  EXPECT_FALSE(info->loadable());

  // kiln-dump --info, and the full dump's error, show the header.
  auto text = tools::DumpVmfbInfoFile(path);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("format: 7.3 (this runtime reads 1.x)\nproducer: kiln 9.9.9\n"), std::string::npos) << *text;
  EXPECT_NE(text->find("cpu 'test-cpu', features '+sse2'"), std::string::npos) << *text;
  auto dump = tools::DumpVmfbFile(path);
  ASSERT_FALSE(dump.ok());
  EXPECT_EQ(dump.status().code(), StatusCode::kIncompatible);
  EXPECT_NE(dump.status().message().find("file format 7.3 is newer than this runtime's 1.1\nheader:\nformat: 7.3"),
            std::string::npos)
      << dump.status().message();
  std::remove(path.c_str());
}

TEST(FileInfoTest, OlderMinorLoadsAndNewerMinorLoads) {
  for (uint16_t minor : {0, 1, 42}) {
    compiler::VmfbProgram p = ProgramWithWeights(1);
    p.format_minor = minor;
    std::vector<uint8_t> bytes = testing::Serialize(p);
    auto m = testing::Load(bytes);
    ASSERT_TRUE(m.ok()) << "minor " << minor << ": " << m.status().ToString();
    EXPECT_EQ((*m)->linked_program()->program.format_minor, minor);
    // kiln-dump says what was checked, or that nothing could be (1.0).
    FileBytes file{bytes.data(), bytes.size(), nullptr};
    DecodeOptions verify;
    verify.verify_weights = true;
    std::string text = tools::DumpVmfbBytes(file).value();
    std::string verified = tools::DumpVmfbBytes(file, verify).value();
    if (minor == 0) {
      std::string note =
          "checksums: none (note: format 1.0 file: its segments carry no checksums (added in 1.1), so damage to its "
          "kernels or weights cannot be detected; recompile it to add them)\n";
      EXPECT_NE(text.find(note), std::string::npos) << text;
      EXPECT_NE(verified.find(note), std::string::npos) << verified;
    } else {
      EXPECT_NE(text.find("checksums: xxh3-64 on every segment; native libraries verified, weights not verified "
                          "(--verify)\n"),
                std::string::npos)
          << text;
      EXPECT_NE(verified.find("checksums: xxh3-64 on every segment; native libraries verified, weights verified\n"),
                std::string::npos)
          << verified;
      EXPECT_NE(text.find("weights (1 tensor constants), xxh3-64 "), std::string::npos) << text;
    }
  }
}

TEST(FileInfoTest, PeekRejectsDamagedHeaders) {
  std::vector<uint8_t> bytes = testing::Serialize(ProgramWithWeights(1));
  auto peek = [](const std::vector<uint8_t>& b) {
    FileBytes fb{b.data(), b.size(), nullptr};
    return PeekVmfbInfo(fb).status();
  };
  EXPECT_EQ(peek({1, 2, 3}).message(), "not a .vmfb file: 3 bytes is too small");
  std::vector<uint8_t> root_out = bytes;
  uint32_t huge = 0x7ffffff0;
  std::memcpy(root_out.data() + 4, &huge, 4);
  EXPECT_EQ(peek(root_out).message(), "corrupt .vmfb: the FlatBuffer root offset is out of range");
  // Every truncation inside the FlatBuffer fails cleanly (or still finds the
  // header fields, which sit early): never a crash or an out-of-bounds read.
  uint32_t fb_size;
  std::memcpy(&fb_size, bytes.data(), 4);
  for (size_t n = 0; n < fb_size + 4u; ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    EXPECT_FALSE(peek(cut).ok()) << n;
  }
  auto missing = PeekVmfbFileInfo("/nonexistent/kiln.vmfb");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln
