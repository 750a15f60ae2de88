#include "compiler/tir/substitute.h"

#include <gtest/gtest.h>

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT

TEST(SubstituteTest, ReplacesUsesAndSharesUnchangedNodes) {
  Var i = MakeVar("i"), j = MakeVar("j");
  Buffer a = MakeBuffer("A", {PrimExpr(8), PrimExpr(8)}, DType::Float32());
  PrimExpr untouched = PrimExpr(j) * 2;
  Stmt s = Store(a, Load(a, {PrimExpr(i), untouched}), {PrimExpr(i), untouched});

  VarMap map{{i.get(), PrimExpr(j) + 1}};
  Stmt out = Substitute(s, map);
  ASSERT_NE(out, s);
  const auto* store = As<BufferStoreNode>(out);
  ASSERT_NE(store, nullptr);
  const auto* add = store->indices[0].as<AddNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->a.get(), j.get());
  EXPECT_TRUE(store->indices[1].same_as(untouched));  // shared, not copied

  VarMap unrelated{{MakeVar("k").get(), PrimExpr(0)}};
  EXPECT_EQ(Substitute(s, unrelated), s);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
