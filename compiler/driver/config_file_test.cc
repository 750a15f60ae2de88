// --config YAML files: values, lists, and one case per error.
#include "compiler/driver/config_file.h"

#include <gtest/gtest.h>

namespace kiln {
namespace driver {
namespace {

const std::vector<std::string> kKeys = {"matmul", "dump-ir-after", "O"};

TEST(ConfigFile, ScalarsAndLists) {
  Result<OptionValues> r = ParseConfig("matmul: dnnl\nO: 2\ndump-ir-after: [legalize, lower-tir]\n", "c.yaml", kKeys);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["matmul"], std::vector<std::string>{"dnnl"});
  EXPECT_EQ((*r)["O"], std::vector<std::string>{"2"});
  EXPECT_EQ((*r)["dump-ir-after"], (std::vector<std::string>{"legalize", "lower-tir"}));
  Result<OptionValues> empty = ParseConfig("", "c.yaml", kKeys);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

void ExpectError(const Result<OptionValues>& r, StatusCode code, const std::string& message) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code);
  EXPECT_EQ(r.status().message(), message);
}

TEST(ConfigFile, Errors) {
  ExpectError(ParseConfig("matmul: dnnl\nfast: yes\n", "c.yaml", kKeys), StatusCode::kInvalidArgument,
              "c.yaml:2:1: unknown option 'fast' (options: matmul, dump-ir-after, O)");
  ExpectError(ParseConfig("- a\n- b\n", "c.yaml", kKeys), StatusCode::kInvalidArgument,
              "c.yaml:1:1: the config must be a mapping of option: value");
  ExpectError(ParseConfig("matmul: {a: 1}\n", "c.yaml", kKeys), StatusCode::kInvalidArgument,
              "c.yaml:1:9: 'matmul' takes a value or a list of values");
  ExpectError(ParseConfig("dump-ir-after: [[a]]\n", "c.yaml", kKeys), StatusCode::kInvalidArgument,
              "c.yaml:1:17: 'dump-ir-after' takes a value or a list of values");
  Result<OptionValues> bad = ParseConfig("matmul: [dnnl\n", "c.yaml", kKeys);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("c.yaml:"), std::string::npos);
  EXPECT_NE(bad.status().message().find("invalid YAML: "), std::string::npos) << bad.status().message();
  ExpectError(ReadConfigFile("/nonexistent/c.yaml", kKeys), StatusCode::kNotFound,
              "/nonexistent/c.yaml: cannot open the config file");
}

}  // namespace
}  // namespace driver
}  // namespace kiln
