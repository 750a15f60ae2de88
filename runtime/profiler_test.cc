#include "runtime/profiler.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/tensor.h"
#include "tests/e2e/json_check.h"

namespace kiln {
namespace {

using testing_json::Value;

TEST(ProfilerTest, TableAggregatesByNameAndShapesSortedByTotal) {
  Profiler p;
  p.Record(kProfileInvoke, "main", "", "", 0, 1000);
  p.Record(kProfileKernel, "matmul", "float32[1, 784]", "main@10", 0, 300);
  p.Record(kProfileKernel, "matmul", "float32[1, 784]", "main@10", 0, 500);
  p.Record(kProfileKernel, "matmul", "float32[8, 784]", "main@10", 0, 100);
  p.Record(kProfileBuiltin, "vm.builtin.alloc_tensor", "-> float32[1, 10]", "main@3", 0, 50);
  std::vector<ProfileRow> rows = p.Summary();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_STREQ(rows[0].category, kProfileInvoke);
  EXPECT_EQ(rows[1].name, "matmul");
  EXPECT_EQ(rows[1].shapes, "float32[1, 784]");
  EXPECT_EQ(rows[1].count, 2);
  EXPECT_EQ(rows[1].total_ns, 800);
  EXPECT_EQ(rows[1].min_ns, 300);
  EXPECT_EQ(rows[1].max_ns, 500);
  EXPECT_EQ(rows[2].shapes, "float32[8, 784]");
  EXPECT_EQ(rows[3].name, "vm.builtin.alloc_tensor");

  std::string table = p.FormatTable();
  EXPECT_NE(table.find("profile: 1 invocation, 1.000 us in total"), std::string::npos) << table;
  // 800 of 1000 ns: 80%, mean 0.4 us.
  EXPECT_NE(table.find("   0.800   80.0%        2      0.400  kernel    matmul"), std::string::npos) << table;
  EXPECT_NE(table.find("float32[1, 784]"), std::string::npos) << table;
}

TEST(ProfilerTest, TraceIsChromeJsonWithOneEventPerRecord) {
  Profiler p;
  int64_t t0 = Profiler::Now();
  p.Record(kProfileKernel, "k\"quoted\\name\n", "float32[2]", "main@0", t0, t0 + 1500);
  p.Record(kProfilePacked, "env.linear", "", "main node 1", t0 + 2000, t0 + 2250);
  std::string json = p.ChromeTraceJson();
  Value doc;
  std::string error;
  ASSERT_TRUE(testing_json::ParseJson(json, &doc, &error)) << error << "\n" << json;
  const Value* events = doc.Get("traceEvents");
  ASSERT_NE(events, nullptr);
  ASSERT_EQ(events->kind, Value::kArray);
  ASSERT_EQ(events->array.size(), 2u);
  const Value& e = events->array[0];
  EXPECT_EQ(e.Get("name")->string, "k\"quoted\\name\n");
  EXPECT_EQ(e.Get("ph")->string, "X");
  EXPECT_EQ(e.Get("cat")->string, "kernel");
  EXPECT_DOUBLE_EQ(e.Get("dur")->number, 1.5);  // microseconds
  EXPECT_EQ(e.Get("pid")->kind, Value::kNumber);
  EXPECT_EQ(e.Get("tid")->kind, Value::kNumber);
  EXPECT_EQ(e.Get("args")->Get("shapes")->string, "float32[2]");
  EXPECT_EQ(e.Get("args")->Get("at")->string, "main@0");
  EXPECT_NEAR(events->array[1].Get("ts")->number - e.Get("ts")->number, 2.0, 1e-9);
  std::vector<ProfileEvent> recorded = p.Events();
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded[1].name, "env.linear");
  EXPECT_STREQ(recorded[1].category, kProfilePacked);
  EXPECT_EQ(recorded[1].at, "main node 1");
  EXPECT_EQ(recorded[1].duration_ns, 250);
}

TEST(ProfilerTest, EventsPastTheCapAreCountedNotTraced) {
  Profiler p(/*max_events=*/2);
  for (int i = 0; i < 5; ++i) p.Record(kProfileKernel, "k", "", "", 0, 10);
  EXPECT_EQ(p.num_events(), 2u);
  EXPECT_EQ(p.dropped_events(), 3u);
  EXPECT_EQ(p.Summary()[0].count, 5);
  EXPECT_NE(p.FormatTable().find("3 events past the trace's cap"), std::string::npos);
  p.Clear();
  EXPECT_EQ(p.num_events(), 0u);
  EXPECT_TRUE(p.Summary().empty());
  EXPECT_EQ(p.dropped_events(), 0u);
}

TEST(ProfilerTest, WritesTheTraceAndNamesAPathItCannotWrite) {
  Profiler p;
  p.Record(kProfileKernel, "k", "", "", 0, 10);
  std::string path = ::testing::TempDir() + "kiln_profiler_test.json";
  ASSERT_TRUE(p.WriteChromeTrace(path).ok());
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), p.ChromeTraceJson());
  std::remove(path.c_str());

  Status s = p.WriteChromeTrace("/nonexistent-dir/trace.json");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cannot write the trace to '/nonexistent-dir/trace.json'"), std::string::npos)
      << s.message();
}

TEST(ProfilerTest, DescribesArgumentsByType) {
  Tensor t = Tensor::Empty({1, 784}, DType::Float32()).value();
  std::vector<Any> args = {Any(t), Any::Shape({2, 3}), Any(int64_t{7}), Any(std::string("main: argument x")),
                           Any(0.5)};
  EXPECT_EQ(DescribeProfileArgs(args), "float32[1, 784], shape(2, 3), 7, 0.5");
}

}  // namespace
}  // namespace kiln
