#include "compiler/tir/lower_blocks.h"

#include <gtest/gtest.h>

#include <memory>

namespace kiln {
namespace tir {
namespace {

using namespace ir;  // NOLINT

// for i in 4: for k in 8: block "S" (vi: S <- i, vk: R <- k, where i < 3)
//   init: Y[vi] = 0;  body: Y[vi] = Y[vi] + X[vi, vk]; alloc_buffer T
TEST(LowerBlocksTest, ReductionBlockBecomesGuardedInitAndBody) {
  Var i = MakeVar("i"), k = MakeVar("k"), vi = MakeVar("vi"), vk = MakeVar("vk");
  Buffer x = MakeBuffer("X", {PrimExpr(4), PrimExpr(8)}, DType::Float32());
  Buffer y = MakeBuffer("Y", {PrimExpr(4)}, DType::Float32());
  Buffer tmp = MakeBuffer("T", {PrimExpr(2)}, DType::Float32());
  Block b;
  b.name = "S";
  b.iter_vars = {IterVar{vi, 0, 4, IterKind::kSpatial}, IterVar{vk, 0, 8, IterKind::kReduce}};
  b.init = Store(y, FloatImm(DType::Float32(), 0), {PrimExpr(vi)});
  b.body = Store(y, Load(y, {PrimExpr(vi)}) + Load(x, {PrimExpr(vi), PrimExpr(vk)}), {PrimExpr(vi)});
  b.alloc_buffers = {tmp};
  PrimExpr pred = MakeBinary(TirKind::kLT, PrimExpr(i), PrimExpr(3));
  Stmt realize = std::make_shared<BlockRealizeNode>(std::vector<PrimExpr>{PrimExpr(i), PrimExpr(k)}, pred, b);
  Stmt nest = std::make_shared<ForNode>(i, 0, 4, ForKind::kSerial,
                                        std::make_shared<ForNode>(k, 0, 8, ForKind::kSerial, realize));

  Stmt out = LowerBlocks(nest);
  const auto* fi = As<ForNode>(out);
  ASSERT_NE(fi, nullptr);
  const auto* fk = As<ForNode>(fi->body);
  ASSERT_NE(fk, nullptr);
  // where -> if (i < 3)
  const auto* guard = As<IfThenElseNode>(fk->body);
  ASSERT_NE(guard, nullptr);
  EXPECT_NE(guard->cond.as<LTNode>(), nullptr);
  EXPECT_EQ(guard->else_case, nullptr);
  // alloc_buffer -> Allocate
  const auto* alloc = As<AllocateNode>(guard->then_case);
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc->buffer, tmp);
  // init guarded by k == 0, then the update
  const auto* seq = As<SeqStmtNode>(alloc->body);
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->seq.size(), 2u);
  const auto* init_if = As<IfThenElseNode>(seq->seq[0]);
  ASSERT_NE(init_if, nullptr);
  const auto* eq = init_if->cond.as<EQNode>();
  ASSERT_NE(eq, nullptr);
  EXPECT_EQ(eq->a.get(), k.get());
  ASSERT_NE(eq->b.as<IntImmNode>(), nullptr);
  EXPECT_EQ(eq->b.as<IntImmNode>()->value, 0);
  const auto* init_store = As<BufferStoreNode>(init_if->then_case);
  ASSERT_NE(init_store, nullptr);
  EXPECT_EQ(init_store->indices[0].get(), i.get());  // vi replaced by i
  const auto* update = As<BufferStoreNode>(seq->seq[1]);
  ASSERT_NE(update, nullptr);
  EXPECT_EQ(update->indices[0].get(), i.get());
  const auto* load_x = update->value.as<AddNode>()->b.as<BufferLoadNode>();
  ASSERT_NE(load_x, nullptr);
  EXPECT_EQ(load_x->indices[1].get(), k.get());  // vk replaced by k
}

TEST(LowerBlocksTest, FunctionWithoutBlocksIsReturnedAsIs) {
  auto f = std::make_shared<PrimFuncNode>();
  f->name = "noop";
  Buffer a = MakeBuffer("A", {PrimExpr(4)}, DType::Float32());
  Var i = MakeVar("i");
  f->body = std::make_shared<ForNode>(i, 0, 4, ForKind::kSerial,
                                      Store(a, FloatImm(DType::Float32(), 1), {PrimExpr(i)}));
  PrimFunc pf = f;
  EXPECT_EQ(LowerBlocks(pf), pf);
}

TEST(LowerBlocksTest, NestedRootBlockAllocatesAndSubstitutesInnerBindings) {
  // root block (alloc T) { for i: block "A"(vi <- i) { block "B"(vj <- vi + 1) { T[vj - 1] = 1 } } }
  Var i = MakeVar("i"), vi = MakeVar("vi"), vj = MakeVar("vj");
  Buffer t = MakeBuffer("T", {PrimExpr(4)}, DType::Float32());
  Block inner;
  inner.name = "B";
  inner.iter_vars = {IterVar{vj, 1, 4, IterKind::kSpatial}};
  inner.body = Store(t, FloatImm(DType::Float32(), 1), {PrimExpr(vj) - 1});
  Stmt inner_realize = std::make_shared<BlockRealizeNode>(std::vector<PrimExpr>{PrimExpr(vi) + 1},
                                                          IntImm(DType::Bool(), 1), inner);
  Block outer;
  outer.name = "A";
  outer.iter_vars = {IterVar{vi, 0, 4, IterKind::kSpatial}};
  outer.body = inner_realize;
  Stmt loop = std::make_shared<ForNode>(
      i, 0, 4, ForKind::kSerial,
      std::make_shared<BlockRealizeNode>(std::vector<PrimExpr>{PrimExpr(i)}, IntImm(DType::Bool(), 1), outer));
  Block root;
  root.name = "root";
  root.alloc_buffers = {t};
  root.body = loop;
  Stmt out = LowerBlocks(std::make_shared<BlockRealizeNode>(std::vector<PrimExpr>{}, IntImm(DType::Bool(), 1), root));

  const auto* alloc = As<AllocateNode>(out);
  ASSERT_NE(alloc, nullptr);
  const auto* f = As<ForNode>(alloc->body);
  ASSERT_NE(f, nullptr);
  const auto* store = As<BufferStoreNode>(f->body);
  ASSERT_NE(store, nullptr);
  // (i + 1) - 1
  const auto* sub = store->indices[0].as<SubNode>();
  ASSERT_NE(sub, nullptr);
  const auto* add = sub->a.as<AddNode>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->a.get(), i.get());
}

}  // namespace
}  // namespace tir
}  // namespace kiln
