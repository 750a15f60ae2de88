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

// Seeds for the loader that need no native library, so the fuzzer reaches the
// bytecode verifier and linking: the VM tests' add program, with a weight,
// with a jump, with a graph.
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
  return seeds;
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
