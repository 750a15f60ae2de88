// Replays every checked-in fuzz regression input (tests/fuzz/regressions/
// <harness>/*) and the seeds (examples/*.relax, tests/data/*.relax) through
// the harness bodies, so a crash found once stays fixed under plain ctest and
// under the sanitizer builds. Also writes the loader's seed corpus when
// KILN_FUZZ_WRITE_SEEDS names a directory (scripts/fuzz.sh does).
#include <gtest/gtest.h>

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/vmfb_loader.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

std::vector<std::string> FilesIn(const std::string& dir, const std::string& suffix = "") {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name[0] == '.' || name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    out.push_back(dir + "/" + name);
  }
  closedir(d);
  return out;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Seeds for the loader: the VM tests' add program, with a weight, with a
// jump, with a graph (these need no native library, so the fuzzer reaches the
// bytecode verifier and linking), and last with the test kernel library, so
// that both kinds of segment are there to damage.
std::vector<std::vector<uint8_t>> LoaderSeeds() {
  std::vector<std::vector<uint8_t>> seeds;
  compiler::VmfbProgram p = testing::AddProgram();
  seeds.push_back(testing::Serialize(p));
  compiler::ConstantValue w;
  w.kind = compiler::ConstantKind::kTensor;
  w.name = "weight";
  w.tensor = testing::F32({2, 3}, {1, 2, 3, 4, 5, 6});
  p.constants.push_back(w);
  p.callables.push_back({compiler::CallableKind::kFunction, "main", 0});
  seeds.push_back(testing::Serialize(p));
  compiler::FunctionInfo f;
  f.name = "jumpy";
  f.params.resize(1);
  f.register_count = 1;
  vm::Assembler a;
  vm::Label l = a.NewLabel();
  a.If(0, l);
  a.Bind(l);
  a.Ret(0);
  f.code = a.Finish();
  p.functions.push_back(f);
  compiler::GraphInfo g;
  g.function = "main";
  compiler::GraphArgInfo in;
  in.kind = compiler::GraphArgKind::kInput;
  in.shape = {2, 4};
  compiler::GraphArgInfo in1 = in;
  in1.index = 1;
  compiler::GraphArgInfo out = in;
  out.kind = compiler::GraphArgKind::kOutput;
  g.inputs = {in, in1};
  g.outputs = {out};
  g.nodes.push_back({testing::kTestAdd, {in, in1, out}});
  p.graphs.push_back(g);
  seeds.push_back(testing::Serialize(p));
  p.native_libraries.push_back(testing::TestKernelLibraryInfo());
  p.callables.push_back({compiler::CallableKind::kKernel, "add_f32", 0, 3});
  seeds.push_back(testing::Serialize(p));
  return seeds;
}

// A segment of a seed: where it lies in the file and its name in messages.
struct SegmentSpan {
  size_t start, size;
  std::string name;
};

std::vector<SegmentSpan> SegmentsOf(const std::vector<uint8_t>& bytes) {
  FileBytes file{bytes.data(), bytes.size(), nullptr};
  Result<Program> p = DecodeVmfb(file);
  KILN_CHECK(p.ok(), "%s", p.status().ToString().c_str());
  std::vector<SegmentSpan> spans;
  for (const ProgramConstant& c : p->constants) {
    if (c.kind != ProgramConstantKind::kTensor) continue;
    const auto* data = static_cast<const uint8_t*>(c.value.tensor().raw_data());
    spans.push_back({static_cast<size_t>(data - bytes.data()) - c.weights_offset, p->weights_size, "weights"});
    break;
  }
  for (size_t i = 0; i < p->native_libraries.size(); ++i) {
    const ProgramNativeLibrary& l = p->native_libraries[i];
    spans.push_back({static_cast<size_t>(l.data - bytes.data()), l.size, "native library " + std::to_string(i)});
  }
  return spans;
}

// Issue 19 §3: changes inside every segment of every seed. The harness must
// survive them, and a verifying decode must refuse each one, naming the
// segment; before checksums such files decoded cleanly.
TEST(FuzzReplayTest, DamageInsideEverySegment) {
  size_t damaged = 0;
  std::vector<std::vector<uint8_t>> seeds = LoaderSeeds();
  for (size_t s = 0; s < seeds.size(); ++s) {
    for (const SegmentSpan& seg : SegmentsOf(seeds[s])) {
      for (size_t at = 0; at < seg.size; at += seg.size / 17 + 1) {
        SCOPED_TRACE(StrFormat("seed %zu, %s byte %zu", s, seg.name.c_str(), at));
        std::vector<uint8_t> bytes = seeds[s];
        bytes[seg.start + at] ^= 0x80;
        EXPECT_EQ(fuzz::FuzzVmfbLoader(bytes.data(), bytes.size()), 0);
        FileBytes file{bytes.data(), bytes.size(), nullptr};
        DecodeOptions verify;
        verify.verify_weights = true;
        Result<Program> p = DecodeVmfb(file, verify);
        ASSERT_FALSE(p.ok()) << "the damaged file decoded";
        EXPECT_EQ(p.status().code(), StatusCode::kDataLoss);
        EXPECT_NE(p.status().message().find("damaged .vmfb: the " + seg.name + " segment"), std::string::npos)
            << p.status().message();
        ++damaged;
      }
    }
  }
  EXPECT_GT(damaged, 40u);
}

TEST(FuzzReplayTest, LoaderRegressionsAndSeeds) {
  std::vector<std::string> files = FilesIn("tests/fuzz/regressions/vmfb_loader");
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    std::vector<uint8_t> bytes = ReadBytes(path);
    EXPECT_EQ(fuzz::FuzzVmfbLoader(bytes.data(), bytes.size()), 0);
  }
  for (const std::vector<uint8_t>& seed : LoaderSeeds()) EXPECT_EQ(fuzz::FuzzVmfbLoader(seed.data(), seed.size()), 0);
  EXPECT_EQ(fuzz::FuzzVmfbLoader(nullptr, 0), 0);
}

TEST(FuzzReplayTest, WriteLoaderSeeds) {
  const char* dir = std::getenv("KILN_FUZZ_WRITE_SEEDS");
  if (dir == nullptr) GTEST_SKIP() << "KILN_FUZZ_WRITE_SEEDS is not set";
  std::vector<std::vector<uint8_t>> seeds = LoaderSeeds();
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(std::string(dir) + "/vm_seed_" + std::to_string(i) + ".vmfb", std::ios::binary);
    out.write(reinterpret_cast<const char*>(seeds[i].data()), static_cast<std::streamsize>(seeds[i].size()));
    ASSERT_TRUE(out.good());
  }
}

#ifdef KILN_FUZZ_HAVE_PARSER
TEST(FuzzReplayTest, ParserRegressionsAndSeeds) {
  std::vector<std::string> files = FilesIn("tests/fuzz/regressions/relax_parser");
  for (const std::string& dir : {"examples", "tests/data"}) {
    for (const std::string& f : FilesIn(dir, ".relax")) files.push_back(f);
  }
  ASSERT_GE(files.size(), 10u) << "run from the source root";
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    std::vector<uint8_t> bytes = ReadBytes(path);
    EXPECT_EQ(fuzz::FuzzRelaxParser(bytes.data(), bytes.size()), 0);
  }
}
#endif

}  // namespace
}  // namespace kiln
