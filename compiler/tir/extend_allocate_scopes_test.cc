#include "compiler/tir/extend_allocate_scopes.h"

#include <gtest/gtest.h>

namespace kiln {
namespace tir {
namespace {

ir::PrimFunc Func(ir::Stmt body) {
  auto f = std::make_shared<ir::PrimFuncNode>();
  f->name = "f";
  f->body = std::move(body);
  return f;
}

TEST(ExtendAllocateScopes, TrailingStatementsMoveIntoTheAllocation) {
  ir::Buffer y = ir::MakeBuffer("Y", {1}, DType::Float32());
  ir::Buffer acc = ir::MakeBuffer("acc", {4}, DType::Float32());
  ir::Buffer z = ir::MakeBuffer("Z", {1}, DType::Float32());
  ir::Stmt init = ir::Store(y, ir::FloatImm(DType::Float32(), 0), {0});
  ir::Stmt fill = ir::Store(acc, ir::FloatImm(DType::Float32(), 1), {0});
  ir::Stmt sum = ir::Store(y, ir::Load(acc, {0}), {0});
  ir::Stmt out = ir::Store(z, ir::Load(y, {0}), {0});
  // seq(Allocate(Y, init), Allocate(acc, fill), sum, out)
  ir::Stmt body = ir::Seq({std::make_shared<ir::AllocateNode>(y, init), std::make_shared<ir::AllocateNode>(acc, fill),
                           sum, out});
  ir::PrimFunc f = ExtendAllocateScopes(Func(body));
  const auto* a = ir::As<ir::AllocateNode>(f->body);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->buffer, y);
  const auto* seq = ir::As<ir::SeqStmtNode>(a->body);
  ASSERT_TRUE(seq);
  ASSERT_EQ(seq->seq.size(), 2u);  // init, Allocate(acc, ...)
  EXPECT_EQ(seq->seq[0], init);
  const auto* inner = ir::As<ir::AllocateNode>(seq->seq[1]);
  ASSERT_TRUE(inner);
  const auto* inner_seq = ir::As<ir::SeqStmtNode>(inner->body);
  ASSERT_TRUE(inner_seq);
  EXPECT_EQ(inner_seq->seq, (std::vector<ir::Stmt>{fill, sum, out}));
}

// A sequence inside a sequence is spliced (the text form has no way to write
// it, so a lowered kernel must not contain one), and an Allocate that was
// last in the inner sequence then takes the outer statements that follow.
TEST(ExtendAllocateScopes, NestedSequencesAreSplicedFirst) {
  ir::Buffer y = ir::MakeBuffer("Y", {1}, DType::Float32());
  ir::Buffer z = ir::MakeBuffer("Z", {1}, DType::Float32());
  ir::Stmt init = ir::Store(z, ir::FloatImm(DType::Float32(), 0), {0});
  ir::Stmt fill = ir::Store(y, ir::FloatImm(DType::Float32(), 1), {0});
  ir::Stmt out = ir::Store(z, ir::Load(y, {0}), {0});
  // Built directly: ir::Seq would flatten them already.
  auto inner = std::make_shared<ir::SeqStmtNode>(std::vector<ir::Stmt>{init, std::make_shared<ir::AllocateNode>(y, fill)});
  auto outer = std::make_shared<ir::SeqStmtNode>(std::vector<ir::Stmt>{inner, out});
  ir::PrimFunc f = ExtendAllocateScopes(Func(outer));
  const auto* seq = ir::As<ir::SeqStmtNode>(f->body);
  ASSERT_TRUE(seq);
  ASSERT_EQ(seq->seq.size(), 2u);  // init, Allocate(Y, seq(fill, out))
  EXPECT_EQ(seq->seq[0], init);
  const auto* a = ir::As<ir::AllocateNode>(seq->seq[1]);
  ASSERT_TRUE(a);
  const auto* body = ir::As<ir::SeqStmtNode>(a->body);
  ASSERT_TRUE(body);
  EXPECT_EQ(body->seq, (std::vector<ir::Stmt>{fill, out}));
}

// seq(Allocate(A, Allocate(B, x)), y) -> Allocate(A, Allocate(B, seq(x, y))):
// what the lane trees of a row reduction look like before extension.
TEST(ExtendAllocateScopes, MovedStatementsReachTheInnermostOfNestedAllocates) {
  ir::Buffer a = ir::MakeBuffer("A", {1}, DType::Float32());
  ir::Buffer b = ir::MakeBuffer("B", {1}, DType::Float32());
  ir::Stmt x = ir::Store(b, ir::FloatImm(DType::Float32(), 1), {0});
  ir::Stmt y = ir::Store(a, ir::Load(b, {0}), {0});
  ir::Stmt nested = std::make_shared<ir::AllocateNode>(a, std::make_shared<ir::AllocateNode>(b, x));
  ir::PrimFunc f = ExtendAllocateScopes(Func(ir::Seq({nested, y})));
  const auto* outer = ir::As<ir::AllocateNode>(f->body);
  ASSERT_TRUE(outer);
  const auto* inner = ir::As<ir::AllocateNode>(outer->body);
  ASSERT_TRUE(inner);
  const auto* seq = ir::As<ir::SeqStmtNode>(inner->body);
  ASSERT_TRUE(seq);
  EXPECT_EQ(seq->seq, (std::vector<ir::Stmt>{x, y}));
}

TEST(ExtendAllocateScopes, NothingToDoReturnsTheSameFunction) {
  ir::Buffer y = ir::MakeBuffer("Y", {1}, DType::Float32());
  ir::Stmt init = ir::Store(y, ir::FloatImm(DType::Float32(), 0), {0});
  ir::PrimFunc f = Func(ir::Seq({init, std::make_shared<ir::AllocateNode>(y, init)}));
  EXPECT_EQ(ExtendAllocateScopes(f), f);
}

}  // namespace
}  // namespace tir
}  // namespace kiln
