// docs/operators.md lists exactly the operators of the registry, so the
// documentation cannot drift from the code: every registered operator appears
// as `name` in a table row, and every name in a table row is registered.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "compiler/relax/op_registry.h"

namespace kiln {
namespace {

TEST(OperatorDocs, ListEveryRegisteredOperatorAndNothingElse) {
  std::ifstream f(std::string(KILN_SOURCE_DIR) + "/docs/operators.md");
  ASSERT_TRUE(f.good()) << "docs/operators.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  std::set<std::string> documented;
  std::string line;
  std::regex name("`([a-z_0-9.]+)`");
  while (std::getline(ss, line)) {
    if (line.rfind("| ", 0) != 0) continue;  // table rows only
    // The first column holds the names.
    std::string first = line.substr(2, line.find(" |", 2) - 2);
    for (std::sregex_iterator it(first.begin(), first.end(), name), end; it != end; ++it) documented.insert((*it)[1]);
  }
  std::set<std::string> registered;
  for (const std::string& op : relax::ListOps()) registered.insert(op.substr(6));  // strip "relax."
  for (const auto& op : registered) EXPECT_TRUE(documented.count(op)) << "undocumented operator: " << op;
  for (const auto& op : documented) EXPECT_TRUE(registered.count(op)) << "documented but not registered: " << op;
  if (std::getenv("KILN_PRINT_OPS")) {
    for (const auto& op : relax::ListOps()) {
      const relax::OpInfo* info = relax::FindOp(op);
      std::cout << op.substr(6) << " " << static_cast<int>(info->pattern) << "\n";
    }
  }
}

}  // namespace
}  // namespace kiln
