// Every .relax module we ship parses; printing it and parsing the print gives
// a StructuralEqual module; printing is a fixed point.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/ir/structural_equal.h"
#include "compiler/text/text.h"

namespace kiln {
namespace {

std::vector<std::string> ModuleFiles() {
  std::vector<std::string> files;
  for (const char* dir : {"examples", "tests/data", "tests/data/seeds"}) {
    std::filesystem::path p = std::filesystem::path(KILN_SOURCE_DIR) / dir;
    if (!std::filesystem::exists(p)) continue;
    for (const auto& e : std::filesystem::directory_iterator(p)) {
      if (e.path().extension() != ".relax") continue;
      // A module printed without its constant table (TVM's "Metadata
      // omitted") only parses with one: tests/e2e/mlc_seeds_e2e_test.cc.
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      if (text.str().find("metadata[\"relax.expr.Constant\"]") != std::string::npos) continue;
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, ParsePrintParse) {
  Result<ir::IRModule> m = text::ParseModuleFile(GetParam());
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<ir::Expr> constants;
  std::string printed = text::PrintModule(*m, &constants);
  Result<ir::IRModule> m2 = text::ParseModule(printed, "printed.relax", constants);
  ASSERT_TRUE(m2.ok()) << m2.status().message() << "\n--- printed:\n" << printed;
  std::string why;
  EXPECT_TRUE(ir::StructuralEqual(*m, *m2, &why)) << why << "\n--- printed:\n" << printed;
  std::vector<ir::Expr> constants2;
  EXPECT_EQ(text::PrintModule(*m2, &constants2), printed);
  EXPECT_EQ(constants2.size(), constants.size());
}

// Files written in the printer's canonical form print back to themselves
// (from the `# from tvm.script` line on; comments before it describe the file).
TEST(RoundTripFiles, CanonicalFilesPrintToThemselves) {
  for (const char* name : {"relax_if.relax", "match_cast_messages.relax"}) {
    std::string path = std::string(KILN_SOURCE_DIR) + "/tests/data/" + name;
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    size_t start = text.find("# from tvm.script import");
    ASSERT_NE(start, std::string::npos) << path;
    Result<ir::IRModule> m = text::ParseModule(text, path);
    ASSERT_TRUE(m.ok()) << m.status().message();
    std::vector<ir::Expr> constants;
    EXPECT_EQ(text::PrintModule(*m, &constants), text.substr(start)) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, RoundTripTest, ::testing::ValuesIn(ModuleFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(RoundTripFiles, AllExpectedModulesArePresent) {
  std::vector<std::string> files = ModuleFiles();
  for (const char* want : {"mlp.relax", "mlc_e2e.relax", "mlc_e2e_dynamic.relax", "mlc_e2e_packed.relax",
                           "mlc_e2e_mixture.relax", "syntax_coverage.relax"}) {
    bool found = false;
    for (const auto& f : files) found |= std::filesystem::path(f).filename() == want;
    EXPECT_TRUE(found) << want;
  }
}

}  // namespace
}  // namespace kiln
