#include "runtime/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace kiln {
namespace {

PackedFunc Returns(int64_t v) {
  return [v](Span<const Any>, Any* ret) {
    *ret = Any(v);
    return Status::Ok();
  };
}

int64_t CallInt(const PackedFunc& fn) {
  Any ret;
  Status s = fn(Span<const Any>(), &ret);
  EXPECT_TRUE(s.ok());
  return ret.int_value();
}

TEST(RegistryTest, RegisterAndLookup) {
  ASSERT_TRUE(RegisterGlobalFunction("test.registry.one", Returns(1)).ok());
  Result<PackedFunc> fn = LookupGlobalFunction("test.registry.one");
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(CallInt(*fn), 1);
  std::vector<std::string> names = ListGlobalFunctions();
  EXPECT_NE(std::find(names.begin(), names.end(), "test.registry.one"), names.end());
  EXPECT_TRUE(RemoveGlobalFunction("test.registry.one"));
}

TEST(RegistryTest, DuplicateIsAnError) {
  ASSERT_TRUE(RegisterGlobalFunction("test.registry.dup", Returns(1)).ok());
  Status s = RegisterGlobalFunction("test.registry.dup", Returns(2));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "global function 'test.registry.dup' is already registered");
  // The first registration is untouched.
  EXPECT_EQ(CallInt(*LookupGlobalFunction("test.registry.dup")), 1);
  EXPECT_TRUE(RemoveGlobalFunction("test.registry.dup"));
}

TEST(RegistryTest, OverrideReplaces) {
  ASSERT_TRUE(RegisterGlobalFunction("test.registry.over", Returns(1)).ok());
  ASSERT_TRUE(RegisterGlobalFunction("test.registry.over", Returns(2), /*allow_override=*/true).ok());
  EXPECT_EQ(CallInt(*LookupGlobalFunction("test.registry.over")), 2);
  EXPECT_TRUE(RemoveGlobalFunction("test.registry.over"));
}

TEST(RegistryTest, LookupCopiesTheFunction) {
  ASSERT_TRUE(RegisterGlobalFunction("test.registry.copy", Returns(1)).ok());
  Result<PackedFunc> held = LookupGlobalFunction("test.registry.copy");
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(RegisterGlobalFunction("test.registry.copy", Returns(9), true).ok());
  EXPECT_EQ(CallInt(*held), 1);  // an earlier lookup is not affected by later changes
  EXPECT_TRUE(RemoveGlobalFunction("test.registry.copy"));
}

TEST(RegistryTest, MissingLookupIsNotFound) {
  Result<PackedFunc> fn = LookupGlobalFunction("test.registry.missing");
  ASSERT_FALSE(fn.ok());
  EXPECT_EQ(fn.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fn.status().message(), "no global function named 'test.registry.missing'");
  EXPECT_FALSE(RemoveGlobalFunction("test.registry.missing"));
}

TEST(RegistryTest, InvalidRegistrations) {
  Status empty_name = RegisterGlobalFunction("", Returns(1));
  EXPECT_EQ(empty_name.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty_name.message(), "cannot register a function with an empty name");
  Status empty_fn = RegisterGlobalFunction("test.registry.null", PackedFunc());
  EXPECT_EQ(empty_fn.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty_fn.message(), "cannot register an empty function as 'test.registry.null'");
  EXPECT_FALSE(LookupGlobalFunction("test.registry.null").ok());
}

KILN_REGISTER_GLOBAL("test.registry.static", Returns(77));

TEST(RegistryTest, StaticRegistration) {
  Result<PackedFunc> fn = LookupGlobalFunction("test.registry.static");
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(CallInt(*fn), 77);
}

TEST(RegistryTest, ConcurrentRegistration) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        std::string name = "test.registry.mt." + std::to_string(t) + "." + std::to_string(i);
        EXPECT_TRUE(RegisterGlobalFunction(name, Returns(i)).ok());
        EXPECT_TRUE(LookupGlobalFunction(name).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 50; ++i) {
      std::string name = "test.registry.mt." + std::to_string(t) + "." + std::to_string(i);
      EXPECT_EQ(CallInt(*LookupGlobalFunction(name)), i);
      EXPECT_TRUE(RemoveGlobalFunction(name));
    }
  }
}

}  // namespace
}  // namespace kiln
