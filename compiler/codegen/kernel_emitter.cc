// Lowered TIR -> LLVM IR, one kernel at a time.
//
// Shape of what is emitted for a PrimFunc `f`:
//   i32 @f(ptr env, ptr args, i32 num_args)        exported; checks arguments,
//                                                  binds shape variables, then
//   i32 @f.body(ptr env, <captures>)                internal; the statements.
// The body takes buffer pointers as `noalias align 64` parameters, so once the
// inliner folds it back into @f the alias facts survive as scoped metadata.
// A parallel loop becomes
//   i32 @f.parK(ptr env, <captures>, i64 begin, i64 end)   the loop over a chunk
//   i32 @f.parK.task(i32 task, i32 num_tasks, ptr closure) unpacks the closure
// and the enclosing function calls env->parallel_for with the closure struct
// (env, every captured value, min, extent) on its stack, or calls @f.parK on
// the whole range itself when the loop is too small for a launch
// (tir/parallel_work.h) or the pool has one thread.
//
// Errors inside code generation (unsupported TIR) are recorded in `error_`
// and emission continues with poison values; the module is discarded.
#include "compiler/codegen/kernel_emitter.h"

#include <functional>
#include <optional>
#include <vector>

#include "compiler/codegen/kernel_emitter_internal.h"
#include "compiler/codegen/vector_loop.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/parallel_work.h"
#include "compiler/tir/stmt_functor.h"
#include "kernels/kiln_kernel_abi.h"

namespace kiln {
namespace codegen {
namespace emitter {
namespace {

// Whether `s` holds a loop the schedule marked vectorized.
bool ContainsVectorizedLoop(const ir::Stmt& s) {
  struct Finder : tir::StmtExprVisitor {
    bool found = false;
    void VisitStmt(const ir::Stmt& st) override {
      if (found) return;
      if (const auto* f = As<ForNode>(st); f != nullptr && f->for_kind == ForKind::kVectorized) {
        found = true;
        return;
      }
      tir::StmtExprVisitor::VisitStmt(st);
    }
  } finder;
  finder.VisitStmt(s);
  return finder.found;
}

// Whether every store in `s` writes an element of at most 32 bits and
// every access that uses `var` moves by one element per iteration (a
// strided load, a transpose's, became 16 lanes loaded one by one behind a
// branch each when the width was forced).
bool ContiguousAtMost32Bits(const ir::Stmt& s, const VarNode* var) {
  struct Finder : tir::StmtExprVisitor {
    const VarNode* var = nullptr;
    bool bad = false;
    void Check(const ir::Buffer& b, const std::vector<PrimExpr>& idx) {
      std::optional<int64_t> k = codegen::FlatCoefficient(b, idx, var);
      if (!k || (*k != 0 && *k != 1)) bad = true;
    }
    void VisitStmt(const ir::Stmt& st) override {
      if (const auto* b = As<BufferStoreNode>(st)) {
        if (b->buffer->dtype.bits * b->buffer->dtype.lanes > 32) bad = true;
        Check(b->buffer, b->indices);
      }
      if (!bad) tir::StmtExprVisitor::VisitStmt(st);
    }
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) Check(l->buffer, l->indices);
      if (!bad) tir::StmtExprVisitor::VisitExpr(e);
    }
  } finder;
  finder.var = var;
  finder.VisitStmt(s);
  return !finder.bad;
}

// Whether an access in `s` moves by more than two elements per iteration of
// `var`, or by a stride not known at compile time: a gather or a scatter (a
// transpose's strided reads). Vectorized over a run-time extent, LLVM
// loaded such lanes one by one (vinsertps, or behind a branch per lane when
// the loop was tail-folded), slower than the scalar loop: the transpose of
// romanizer's attention memory [4, s, 256] -> [4, 256, s] at s = 23, one
// thread, kiln-bench medians: tail-folded 16.8 us, vector body with a scalar
// tail 8.0 us, scalar 6.0 us (4.2 us with s pinned).
bool GathersOrScatters(const ir::Stmt& s, const VarNode* var) {
  struct Finder : tir::StmtExprVisitor {
    const VarNode* var = nullptr;
    bool found = false;
    void Check(const ir::Buffer& b, const std::vector<PrimExpr>& idx) {
      std::optional<int64_t> k = codegen::FlatCoefficient(b, idx, var);
      if (!k || *k > 2 || *k < -2) found = true;
    }
    void VisitStmt(const ir::Stmt& st) override {
      if (const auto* b = As<BufferStoreNode>(st)) Check(b->buffer, b->indices);
      if (!found) tir::StmtExprVisitor::VisitStmt(st);
    }
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>()) Check(l->buffer, l->indices);
      if (!found) tir::StmtExprVisitor::VisitExpr(e);
    }
  } finder;
  finder.var = var;
  finder.VisitStmt(s);
  return finder.found;
}

// bfloat16 vectors of padded widths stop LLVM 19's x86 legalization ("Do
// not know how to soft promote this operator's operand"): loops that touch
// bfloat16 keep their widths and their emission as before.
bool TouchesBfloat16(const ir::Stmt& body) {
  std::vector<const BufferStoreNode*> stores;
  codegen::CollectStores(body, &stores);
  for (const BufferStoreNode* st : stores)
    if (st->buffer->dtype.code == kDLBfloat) return true;
  for (const BufferLoadNode* l : tir::nest::RefsOf(body).load_nodes)
    if (l->buffer->dtype.code == kDLBfloat) return true;
  return false;
}

}  // namespace

void KernelEmitter::Loop(const Var& var, llvm::Value* begin, llvm::Value* end, ForKind kind, const ir::Stmt& body,
                         bool run_time_extent) {
  llvm::Type* ty = RegTypeOrFail(var->dtype);
  if (!ty->isIntegerTy()) {
    Unsupported("loop variable " + var->name + " is not an integer");
    return;
  }
  begin = b_.CreateSExtOrTrunc(begin, ty);
  end = b_.CreateSExtOrTrunc(end, ty);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "for." + var->name, st_.fn);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "for." + var->name + ".body", st_.fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for." + var->name + ".end", st_.fn);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  auto* iv = b_.CreatePHI(ty, 2, var->name);
  iv->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(iv, end), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  Bind(var.get(), iv);
  if (kind == ForKind::kUnrolled) ++unrolled_depth_;
  Stmt(body);
  if (kind == ForKind::kUnrolled) --unrolled_depth_;
  Unbind(var.get());
  llvm::Value* next = b_.CreateAdd(iv, llvm::ConstantInt::get(ty, 1), "", false, true);
  auto* latch = b_.CreateBr(header);
  iv->addIncoming(next, b_.GetInsertBlock());
  // Loop metadata: the first operand refers to the node itself.
  std::vector<llvm::Metadata*> md{nullptr};
  if (kind == ForKind::kVectorized && run_time_extent && GathersOrScatters(body, var.get())) {
    md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                          llvm::ConstantAsMetadata::get(b_.getFalse())}));
  } else if (kind == ForKind::kVectorized) {
    md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                          llvm::ConstantAsMetadata::get(b_.getTrue())}));
    if (run_time_extent) {
      // A symbolic extent (a row of a model compiled for every image size)
      // is often short: 10 to 80 columns. LLVM's vector loop of 16 lanes x
      // 4 interleaved covered none of 10 or 40 of 60 and ran the rest as a
      // scalar remainder; masked lanes instead (tail folding) and one vector
      // per iteration, so every column runs in vectors.
      md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.predicate.enable"),
                                            llvm::ConstantAsMetadata::get(b_.getTrue())}));
      md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.interleave.count"),
                                            llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
      // 16 lanes (one AVX-512 register of floats), as the explicit vector
      // loops below use: LLVM's cost model picked 8 for these masked loops
      // (softmax over khmersm's 96-column symbolic rows: 88 -> 64 us).
      if (ContiguousAtMost32Bits(body, var.get())) {
        md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.width"),
                                              llvm::ConstantAsMetadata::get(b_.getInt32(16))}));
      }
    }
  } else if (kind == ForKind::kSerial && ContainsVectorizedLoop(body)) {
    // The schedule vectorized a loop inside; once LLVM has unrolled that one,
    // vectorizing this loop too puts a lane per iteration of it and reads
    // the inner loop's rows with gathers (a 49-float row mean per channel:
    // 27 us where the rows alone, one vector chain each, take 6).
    md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                          llvm::ConstantAsMetadata::get(b_.getFalse())}));
  } else if (kind == ForKind::kUnrolled) {
    md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.full")}));
  }
  if (md.size() > 1) {
    llvm::MDNode* node = llvm::MDNode::getDistinct(ctx_, md);
    node->replaceOperandWith(0, node);
    latch->setMetadata(llvm::LLVMContext::MD_loop, node);
  }
  b_.SetInsertPoint(exit);
}

// Vectorized loops inside unrolled ones, and vectorized loops with stride-2
// loads, up to this many lanes, are emitted as explicit vectors
// (vector_loop.h says why). So are, on targets with masked vectors, those
// whose last 16-lane chunk has more than 8 lanes: LLVM ran a 14-column row
// (MobileNetV3's x * scale at 14 x 14) as 8 + 4 + 2, explicitly it is one
// masked 16-lane vector (one thread, kiln-bench CPU medians: 9.0 -> 7.1 us).
// Narrower rests stay with LLVM, which merged 7-column rows into 16-float
// vectors across rows (7 x 7: 2.1 us; one masked 8-lane vector per row 2.3).
constexpr int64_t kMaxExplicitVectorLanes = 64;

void KernelEmitter::For(const ForNode* op) {
  if (op->for_kind == ForKind::kThreadBinding) {
    return Unsupported("loop " + op->loop_var->name + " is bound to " + op->thread_tag +
                       ": GPU kernels are compiled for --target=cuda (nvptx_codegen.h)");
  }
  if (op->for_kind == ForKind::kParallel) return ParallelFor(op);
  llvm::Value* begin = Index(op->min);
  if (op->for_kind == ForKind::kVectorized) {
    // Loops with stride-2 loads qualify wherever they are (vector_loop.h).
    const auto* n = op->extent.as<IntImmNode>();
    bool strided = false, repeated = false;
    // Stride-3 loads only in whole 16-lane chunks (vector_loop.h).
    if (n != nullptr && n->value > 0 &&
        codegen::EmitsAsVectors(op->body, op->loop_var.get(), &strided, &repeated, n->value % 16 == 0)) {
      // Loads that repeat elements (vector_loop.h's RepeatFactor) qualify at
      // any extent, chunks starting at multiples of 16 from a start that is
      // one too; their lanes are one contiguous load and one shuffle.
      const auto* min = op->min.as<IntImmNode>();
      if (repeated && !(min != nullptr && min->value % 16 == 0)) {
        // The chunks' loads would not start at a multiple of k: leave it to LLVM.
      } else if (repeated && n->value > kMaxExplicitVectorLanes) {
        return ChunkedVectorLoop(op->loop_var, begin, n->value, op->body);
      } else if (n->value <= kMaxExplicitVectorLanes &&
                 (strided || repeated || unrolled_depth_ > 0 || OnlyStackBuffers(op->body) ||
                  (mc_.target.masked_vectors && n->value % 16 > 8 && !TouchesBfloat16(op->body)))) {
        return VectorLoop(op->loop_var, begin, n->value, op->body);
      }
    }
  }
  llvm::Value* end = b_.CreateAdd(begin, Index(op->extent));
  Loop(op->loop_var, begin, end, op->for_kind, op->body, op->extent.as<IntImmNode>() == nullptr);
}

// Whether every buffer `body` loads or stores is a stack allocation: the
// halving steps of a row reduction's tree (reduce_schedule.h: acc[k] =
// max(acc[k], acc[k + 32]) down to one lane). LLVM promotes such small
// arrays to scalars, so the loop reaches its SLP vectorizer as straight-line
// scalar code; for softmax's 128-column rows it rebuilt the max tree as 70
// 4-lane shuffles and maxes where explicit vectors take 11.
bool KernelEmitter::OnlyStackBuffers(const ir::Stmt& body) const {
  std::vector<const BufferStoreNode*> stores;
  if (!codegen::CollectStores(body, &stores)) return false;
  for (const BufferStoreNode* st : stores)
    if (!stack_vars_.count(st->buffer->data.get())) return false;
  for (const BufferLoadNode* l : tir::nest::RefsOf(body).load_nodes)
    if (!stack_vars_.count(l->buffer->data.get())) return false;
  return true;
}

// The loop's iterations in chunks of 16 lanes (the last one narrower), each
// store of the body one vector store per chunk; EmitsAsVectors checked the
// body. With TargetDesc::masked_vectors a narrower chunk of 3, 5-7 or 9-15
// lanes is computed at the next power of two with masked loads and stores
// (MobileNetV3's 14-column rows: one masked 16-lane access each instead of
// 8 + 4 + 2).
void KernelEmitter::VectorLoop(const Var& var, llvm::Value* begin, int64_t extent, const ir::Stmt& body) {
  llvm::Type* ty = RegTypeOrFail(var->dtype);
  if (!ty->isIntegerTy()) {
    Unsupported("loop variable " + var->name + " is not an integer");
    return;
  }
  begin = b_.CreateSExtOrTrunc(begin, ty);
  std::vector<const BufferStoreNode*> stores;
  codegen::CollectStores(body, &stores);
  bool bfloat = TouchesBfloat16(body);
  for (int64_t s = 0; s < extent; s += 16) {
    unsigned used = static_cast<unsigned>(std::min<int64_t>(16, extent - s));
    unsigned lanes = used;
    if (mc_.target.masked_vectors && !bfloat && used > 2) lanes = static_cast<unsigned>(llvm::PowerOf2Ceil(used));
    vector_used_lanes_ = used;
    Bind(var.get(), b_.CreateAdd(begin, llvm::ConstantInt::get(ty, s), "", false, true));
    for (const BufferStoreNode* st : stores) {
      llvm::Value* addr = Address(st->buffer, st->indices);
      if (st->buffer->dtype.bits == 16) {
        // A float16 / bfloat16 store of a float32 value (vector_loop.h):
        // computed in float32, rounded once per lane.
        llvm::Value* v = VectorExpr(st->value.as<CastNode>()->value, var.get(), lanes);
        v = b_.CreateFPTrunc(v, llvm::FixedVectorType::get(RegType(st->buffer->dtype), lanes));
        VectorStore(v, addr, llvm::Align(2), stack_vars_.count(st->buffer->data.get()) != 0);
        continue;
      }
      llvm::Value* v = VectorExpr(st->value, var.get(), lanes);
      VectorStore(v, addr, llvm::Align(4), stack_vars_.count(st->buffer->data.get()) != 0);
    }
    Unbind(var.get());
  }
  vector_used_lanes_ = 0;
}

// A vectorized loop longer than the explicit vectors' limit: a loop over
// chunks of 16 lanes, then the rest, each as VectorLoop emits it.
void KernelEmitter::ChunkedVectorLoop(const Var& var, llvm::Value* begin, int64_t extent, const ir::Stmt& body) {
  llvm::Type* ty = RegTypeOrFail(var->dtype);
  if (!ty->isIntegerTy()) {
    Unsupported("loop variable " + var->name + " is not an integer");
    return;
  }
  begin = b_.CreateSExtOrTrunc(begin, ty);
  const int64_t whole = extent / 16;
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "chunks." + var->name, st_.fn);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "chunks." + var->name + ".body", st_.fn);
  auto* exit = llvm::BasicBlock::Create(ctx_, "chunks." + var->name + ".end", st_.fn);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  auto* q = b_.CreatePHI(ty, 2, var->name + ".chunk");
  q->addIncoming(llvm::ConstantInt::get(ty, 0), pre);
  b_.CreateCondBr(b_.CreateICmpSLT(q, llvm::ConstantInt::get(ty, whole)), body_bb, exit);
  b_.SetInsertPoint(body_bb);
  VectorLoop(var, b_.CreateAdd(begin, b_.CreateMul(q, llvm::ConstantInt::get(ty, 16), "", false, true), "", false, true),
             16, body);
  q->addIncoming(b_.CreateAdd(q, llvm::ConstantInt::get(ty, 1), "", false, true), b_.GetInsertBlock());
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
  if (extent % 16 != 0)
    VectorLoop(var, b_.CreateAdd(begin, llvm::ConstantInt::get(ty, whole * 16), "", false, true), extent % 16, body);
}

// The first vector_used_lanes_ lanes of a mask of `lanes`.
static llvm::Constant* FirstLanes(llvm::IRBuilderBase& b, unsigned lanes, unsigned used) {
  std::vector<llvm::Constant*> bits(lanes, b.getFalse());
  for (unsigned i = 0; i < used && i < lanes; ++i) bits[i] = b.getTrue();
  return llvm::ConstantVector::get(bits);
}

llvm::Value* KernelEmitter::VectorLoad(llvm::Type* elem, llvm::Value* addr, unsigned lanes, llvm::Align align,
                                       bool on_stack) {
  auto* vty = llvm::FixedVectorType::get(elem, lanes);
  unsigned used = vector_used_lanes_;
  if (used == 0 || used >= lanes) return b_.CreateAlignedLoad(vty, addr, align);
  if (on_stack) {
    llvm::Value* narrow = b_.CreateAlignedLoad(llvm::FixedVectorType::get(elem, used), addr, align);
    std::vector<int> widen(lanes, -1);
    for (unsigned i = 0; i < used; ++i) widen[i] = static_cast<int>(i);
    return b_.CreateShuffleVector(narrow, widen);
  }
  // Halves as i16 lanes: LLVM 19 cannot legalize a masked load or store of
  // bfloat vectors ("Do not know how to soft promote").
  llvm::Type* mem = elem->isHalfTy() || elem->isBFloatTy() ? llvm::FixedVectorType::get(b_.getInt16Ty(), lanes) : vty;
  llvm::Value* v = b_.CreateMaskedLoad(mem, addr, align, FirstLanes(b_, lanes, used), llvm::PoisonValue::get(mem));
  return mem == vty ? v : b_.CreateBitCast(v, vty);
}

void KernelEmitter::VectorStore(llvm::Value* v, llvm::Value* addr, llvm::Align align, bool on_stack) {
  unsigned lanes = llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements();
  unsigned used = vector_used_lanes_;
  if (used == 0 || used >= lanes) {
    b_.CreateAlignedStore(v, addr, align);
  } else if (on_stack) {
    std::vector<int> first(used);
    for (unsigned i = 0; i < used; ++i) first[i] = static_cast<int>(i);
    b_.CreateAlignedStore(b_.CreateShuffleVector(v, first), addr, align);
  } else {
    llvm::Type* elem = llvm::cast<llvm::FixedVectorType>(v->getType())->getElementType();
    if (elem->isHalfTy() || elem->isBFloatTy()) v = b_.CreateBitCast(v, llvm::FixedVectorType::get(b_.getInt16Ty(), lanes));
    b_.CreateMaskedStore(v, addr, align, FirstLanes(b_, lanes, used));
  }
}

void KernelEmitter::ParallelFor(const ForNode* op) {
  llvm::Value* min = Index(op->min);
  llvm::Value* extent = Index(op->extent);
  std::string name = func_.name + ".par" + std::to_string(outlined_++);
  std::vector<llvm::Value*> captured;
  llvm::Function* range = Outline(
      name, {mc_.i64, mc_.i64},
      [&](const std::vector<llvm::Value*>& be) { Loop(op->loop_var, be[0], be[1], ForKind::kSerial, op->body); },
      &captured);

  // The closure: env, every captured value, min, extent.
  std::vector<llvm::Type*> fields{mc_.ptr};
  for (llvm::Value* v : captured) fields.push_back(v->getType());
  fields.push_back(mc_.i64);
  fields.push_back(mc_.i64);
  auto* closure_ty = llvm::StructType::get(ctx_, fields);
  llvm::AllocaInst* closure = EntryAlloca(closure_ty, nullptr, 8, name + ".closure");
  b_.CreateStore(st_.env, b_.CreateStructGEP(closure_ty, closure, 0));
  for (size_t i = 0; i < captured.size(); ++i) {
    b_.CreateStore(captured[i], b_.CreateStructGEP(closure_ty, closure, static_cast<unsigned>(i + 1)));
  }
  unsigned min_field = static_cast<unsigned>(captured.size() + 1);
  b_.CreateStore(min, b_.CreateStructGEP(closure_ty, closure, min_field));
  b_.CreateStore(extent, b_.CreateStructGEP(closure_ty, closure, min_field + 1));

  // The task: chunk [begin, end) of the iteration space, then the range fn.
  auto* task = llvm::Function::Create(mc_.task_fn_ty, llvm::GlobalValue::InternalLinkage, name + ".task", mc_.mod);
  mc_.SetAttributes(task);
  {
    llvm::IRBuilder<> tb(llvm::BasicBlock::Create(ctx_, "entry", task));
    llvm::Value* tid = tb.CreateSExt(task->getArg(0), mc_.i64);
    llvm::Value* nt = tb.CreateSExt(task->getArg(1), mc_.i64);
    llvm::Value* cl = task->getArg(2);
    std::vector<llvm::Value*> args;
    for (unsigned i = 0; i < fields.size() - 2; ++i) {
      args.push_back(tb.CreateLoad(fields[i], tb.CreateStructGEP(closure_ty, cl, i)));
    }
    llvm::Value* tmin = tb.CreateLoad(mc_.i64, tb.CreateStructGEP(closure_ty, cl, min_field));
    llvm::Value* text = tb.CreateLoad(mc_.i64, tb.CreateStructGEP(closure_ty, cl, min_field + 1));
    // Task t gets [t·extent/n, (t+1)·extent/n): sizes differ by at most one
    // and no task is empty (n <= extent).
    llvm::Value* lo = tb.CreateNSWAdd(tmin, tb.CreateSDiv(tb.CreateNSWMul(tid, text), nt));
    llvm::Value* hi =
        tb.CreateNSWAdd(tmin, tb.CreateSDiv(tb.CreateNSWMul(tb.CreateNSWAdd(tid, tb.getInt64(1)), text), nt));
    args.push_back(lo);
    args.push_back(hi);
    tb.CreateRet(tb.CreateCall(range, args));
  }

  // The whole loop's work (tir/parallel_work.h), where it can be known before
  // the loop runs: a loop too small to pay for waking the workers, and any
  // loop when the pool has one thread, runs on the calling thread as one
  // chunk, without a launch.
  llvm::Value* work = nullptr;
  if (std::optional<PrimExpr> per_iter = tir::ParallelIterationWork(*op)) {
    work = b_.CreateMul(extent, Index(*per_iter), "", /*HasNUW=*/false, /*HasNSW=*/false);
  }
  // A loop whose size is known only at run time (a symbolic extent, or
  // symbolic loops inside) also applies what a static schedule decides at
  // compile time (tir/parallel_work.h, ParallelStaticRuleWork): one
  // iteration, or a nest under the static threshold of its kind, runs on the
  // caller. A static loop has no such check: its schedule already decided.
  llvm::Value* too_small = nullptr;
  std::optional<tir::StaticRuleWork> rule = tir::ParallelStaticRuleWork(*op);
  if (op->extent.as<IntImmNode>() == nullptr || (rule && rule->per_iteration.as<IntImmNode>() == nullptr)) {
    too_small = b_.CreateICmpSLT(extent, b_.getInt64(2));
    if (rule) {
      llvm::Value* total = b_.CreateMul(extent, Index(rule->per_iteration), "", /*HasNUW=*/false, /*HasNSW=*/false);
      too_small = b_.CreateOr(too_small, b_.CreateICmpSLT(total, b_.getInt64(rule->threshold)));
    }
  }
  auto* launch_or_not = llvm::BasicBlock::Create(ctx_, name + ".threads", st_.fn);
  auto* serial = llvm::BasicBlock::Create(ctx_, name + ".serial", st_.fn);
  auto* launch = llvm::BasicBlock::Create(ctx_, name + ".launch", st_.fn);
  auto* done = llvm::BasicBlock::Create(ctx_, name + ".done", st_.fn);
  b_.CreateCondBr(b_.CreateICmpSGT(extent, b_.getInt64(0)), launch_or_not, done);
  b_.SetInsertPoint(launch_or_not);
  llvm::Value* threads = b_.CreateSExt(EnvField(kEnvNumThreads), mc_.i64);
  threads = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, threads, b_.getInt64(1));
  llvm::Value* go_serial = b_.CreateICmpSLE(threads, b_.getInt64(1));
  if (work != nullptr) go_serial = b_.CreateOr(go_serial, b_.CreateICmpSLT(work, b_.getInt64(tir::kMinParallelWork)));
  if (too_small != nullptr) go_serial = b_.CreateOr(go_serial, too_small);
  b_.CreateCondBr(go_serial, serial, launch);

  b_.SetInsertPoint(serial);
  {
    std::vector<llvm::Value*> args{st_.env};
    args.insert(args.end(), captured.begin(), captured.end());
    args.push_back(min);
    args.push_back(b_.CreateNSWAdd(min, extent));
    llvm::CallInst* call = b_.CreateCall(range, args);
    // One copy of the loop, shared with the task: inlining it here would
    // double the kernel's code for a call that costs nothing next to it.
    call->addFnAttr(llvm::Attribute::NoInline);
    PropagateError(call);
    b_.CreateBr(done);
  }

  b_.SetInsertPoint(launch);
  // The range is cut into up to kChunksPerThread chunks per thread (and no
  // chunk smaller than kMinChunkWork where the work is known); the pool
  // deals each thread a contiguous run of them and lets a thread that is done
  // take the others' leftovers one at a time (runtime/thread_pool.h): a thread
  // whose core is busy with something else takes fewer chunks instead of
  // holding up the call with a fixed share. Chunks are whole iterations of
  // this loop, so whatever the schedule vectorized inside it stays whole, and
  // they stay contiguous, so neighbouring iterations (e.g. tiles sharing a
  // panel) stay on one thread.
  constexpr int64_t kChunksPerThread = 8;
  constexpr int64_t kMinChunkWork = tir::kMinParallelWork / 8;
  llvm::Value* chunks = b_.CreateNSWMul(threads, b_.getInt64(kChunksPerThread));
  if (work != nullptr) {
    llvm::Value* by_work = b_.CreateSDiv(work, b_.getInt64(kMinChunkWork));
    by_work = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, by_work, threads);
    chunks = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, chunks, by_work);
  }
  llvm::Value* num_tasks = b_.CreateTrunc(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, extent, chunks), mc_.i32);
  auto* pf_ty = llvm::FunctionType::get(mc_.i32, {mc_.ptr, mc_.i32, mc_.ptr, mc_.ptr}, false);
  llvm::Value* rc = b_.CreateCall(pf_ty, EnvField(kEnvParallelFor), {EnvField(kEnvCtx), num_tasks, task, closure});
  PropagateError(rc);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void KernelEmitter::Allocate(const AllocateNode* op) {
  const Buffer& buf = op->buffer;
  llvm::Type* elem = MemType(buf->dtype);
  if (elem == nullptr) {
    Unsupported("allocation " + buf->name + " has unsupported dtype " + DTypeToString(buf->dtype));
    return;
  }
  uint64_t elem_bytes = buf->dtype.bits == 1 ? 1 : buf->dtype.bytes();
  bool is_static = true;
  uint64_t static_count = 1;
  for (const auto& d : buf->shape) {
    const auto* imm = d.as<IntImmNode>();
    if (imm == nullptr || imm->value < 0) {
      is_static = false;
    } else {
      static_count *= static_cast<uint64_t>(imm->value);
    }
  }
  const VarNode* data = buf->data.get();
  if (is_static && static_count * elem_bytes <= kMaxStackAllocBytes) {
    llvm::Value* p = EntryAlloca(elem, b_.getInt64(static_count ? static_count : 1), kDataAlign, buf->name);
    memory_vars_.insert(data);
    stack_vars_.insert(data);
    Bind(data, p);
    Stmt(op->body);
    Unbind(data);
    return;
  }
  llvm::Value* count = b_.getInt64(1);
  for (const auto& d : buf->shape) count = b_.CreateMul(count, Index(d));
  llvm::Value* nbytes = b_.CreateMul(count, b_.getInt64(elem_bytes));
  auto* alloc_ty = llvm::FunctionType::get(mc_.ptr, {mc_.ptr, mc_.i64, mc_.i64}, false);
  llvm::Value* p = nullptr;
  llvm::Value* ws = nullptr;  // what to free: null when the stack block served
  if (!is_static && st_.small_stack_bytes + kSmallDynamicBlockBytes <= kSmallDynamicStackBytes) {
    // A run-time size (a symbolic batch or width) is often small: a stack
    // block serves it when it fits, the env's workspace otherwise. Small
    // symbolic kernels asked the runtime for a workspace on every call
    // (silero-vad's convolutions: 11 a call against 1 pinned).
    st_.small_stack_bytes += kSmallDynamicBlockBytes;
    llvm::Value* block = EntryAlloca(mc_.i8, b_.getInt64(kSmallDynamicBlockBytes), kDataAlign, buf->name + ".small");
    llvm::BasicBlock* from = b_.GetInsertBlock();
    auto* heap = llvm::BasicBlock::Create(ctx_, "ws.heap", st_.fn);
    auto* join = llvm::BasicBlock::Create(ctx_, "ws.join", st_.fn);
    b_.CreateCondBr(b_.CreateICmpULE(nbytes, b_.getInt64(kSmallDynamicBlockBytes)), join, heap);
    b_.SetInsertPoint(heap);
    llvm::Value* hp = b_.CreateCall(alloc_ty, EnvField(kEnvWsAlloc), {EnvField(kEnvCtx), nbytes, b_.getInt64(kDataAlign)});
    FailIf(b_.CreateICmpEQ(hp, llvm::ConstantPointerNull::get(mc_.ptr)),
           {func_.name + ": workspace allocation of ", nbytes, " bytes for buffer " + buf->name + " failed"});
    llvm::BasicBlock* heap_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    auto* pp = b_.CreatePHI(mc_.ptr, 2, buf->name);
    pp->addIncoming(block, from);
    pp->addIncoming(hp, heap_end);
    auto* wp = b_.CreatePHI(mc_.ptr, 2, buf->name + ".ws");
    wp->addIncoming(llvm::ConstantPointerNull::get(mc_.ptr), from);
    wp->addIncoming(hp, heap_end);
    p = pp;
    ws = wp;
    st_.maybe_null_workspaces.insert(wp);
  } else {
    p = b_.CreateCall(alloc_ty, EnvField(kEnvWsAlloc), {EnvField(kEnvCtx), nbytes, b_.getInt64(kDataAlign)});
    FailIf(b_.CreateICmpEQ(p, llvm::ConstantPointerNull::get(mc_.ptr)),
           {func_.name + ": workspace allocation of ", nbytes, " bytes for buffer " + buf->name + " failed"});
    ws = p;
  }
  st_.workspaces.push_back(ws);
  memory_vars_.insert(data);
  Bind(data, p);
  Stmt(op->body);
  Unbind(data);
  st_.workspaces.pop_back();
  FreeWorkspace(ws);
}

void KernelEmitter::Stmt(const ir::Stmt& s) {
  if (!s || !error_.ok()) return;
  switch (s->kind()) {
    case TirKind::kBufferStore: {
      const auto* op = As<BufferStoreNode>(s);
      llvm::Value* v = ExprAs(op->value, op->buffer->dtype);
      llvm::Value* addr = Address(op->buffer, op->indices);
      llvm::Type* mem = MemType(op->buffer->dtype);
      if (mem == nullptr) return;
      if (mem != v->getType()) v = b_.CreateZExt(v, mem);  // bool byte
      b_.CreateAlignedStore(v, addr, llvm::Align(mem->getPrimitiveSizeInBits() / 8));
      return;
    }
    case TirKind::kFor:
      return For(As<ForNode>(s));
    case TirKind::kSeqStmt:
      for (const auto& c : As<SeqStmtNode>(s)->seq) Stmt(c);
      return;
    case TirKind::kIfThenElse: {
      const auto* op = As<IfThenElseNode>(s);
      llvm::Value* cond = ExprAs(op->cond, DType::Bool());
      auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", st_.fn);
      auto* else_bb = op->else_case ? llvm::BasicBlock::Create(ctx_, "if.else", st_.fn) : nullptr;
      auto* join = llvm::BasicBlock::Create(ctx_, "if.end", st_.fn);
      b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : join);
      b_.SetInsertPoint(then_bb);
      Stmt(op->then_case);
      b_.CreateBr(join);
      if (else_bb) {
        b_.SetInsertPoint(else_bb);
        Stmt(op->else_case);
        b_.CreateBr(join);
      }
      b_.SetInsertPoint(join);
      return;
    }
    case TirKind::kLetStmt: {
      const auto* op = As<LetStmtNode>(s);
      llvm::Value* v = ExprAs(op->value, op->var->dtype);
      Bind(op->var.get(), v);
      Stmt(op->body);
      Unbind(op->var.get());
      return;
    }
    case TirKind::kEvaluate:
      Expr(As<EvaluateNode>(s)->value);
      return;
    case TirKind::kAllocate:
      return Allocate(As<AllocateNode>(s));
    case TirKind::kBlockRealize:
      Unsupported("block '" + As<BlockRealizeNode>(s)->block.name +
                  "' is still in the TIR; run tir::LowerBlocks before code generation");
      return;
    default:
      Unsupported(std::string("statement ") + TirKindName(s->kind()) + " is not supported");
  }
}

void KernelEmitter::BindParams(llvm::Value* args, llvm::Value* num_args) {
  const std::string& fname = func_.name;
  int32_t n = static_cast<int32_t>(func_.params.size());
  FailIf(b_.CreateICmpNE(num_args, b_.getInt32(n)),
         {fname + ": expected " + std::to_string(n) + " arguments, got ", num_args});
  // Scalars first, so that buffer dimensions naming a scalar parameter (the
  // shape variables Relax passes to call_tir) are checked against it.
  for (int32_t i = 0; i < n; ++i) {
    const Var& param = func_.params[i];
    if (func_.BufferOf(param) != nullptr) continue;
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(mc_.i64, args, static_cast<uint64_t>(i));
    DType t = param->dtype;
    if (t.is_int() && t.lanes == 1) {
      Bind(param.get(), CastValue(b_.CreateLoad(mc_.i64, slot, param->name), DType::Int64(), t));
    } else if (t.is_float() && t.lanes == 1 && RegType(t) != nullptr) {
      Bind(param.get(), CastValue(b_.CreateLoad(b_.getDoubleTy(), slot, param->name), DType::Float64(), t));
    } else {
      Unsupported("parameter " + param->name + " of dtype " + DTypeToString(t) +
                  " is neither a buffer nor an int/float scalar");
      return;
    }
  }
  struct DeferredDim {
    PrimExpr dim;
    llvm::Value* got;
    std::string where, label, buffer;
    int64_t axis;
  };
  std::vector<DeferredDim> deferred;
  for (int32_t i = 0; i < n; ++i) {
    const Var& param = func_.params[i];
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(mc_.i64, args, static_cast<uint64_t>(i));
    Buffer buf = func_.BufferOf(param);
    if (buf == nullptr) continue;
    if (MemType(buf->dtype) == nullptr) {
      Unsupported("buffer " + buf->name + " has unsupported dtype " + DTypeToString(buf->dtype));
      return;
    }
    std::string arg = fname + ": argument " + (buf->name.empty() ? param->name : buf->name);
    llvm::Value* t = b_.CreateLoad(mc_.ptr, slot, param->name + ".tensor");
    FailIf(b_.CreateICmpEQ(t, llvm::ConstantPointerNull::get(mc_.ptr)), {arg + " is a null tensor"});
    auto field = [&](TensorField f, llvm::Type* ty) {
      return b_.CreateLoad(ty, b_.CreateStructGEP(mc_.tensor_ty, t, f));
    };
    int64_t ndim = static_cast<int64_t>(buf->shape.size());
    llvm::Value* nd = field(kTNdim, mc_.i32);
    FailIf(b_.CreateICmpNE(nd, b_.getInt32(static_cast<uint32_t>(ndim))),
           {arg + ": expected ndim " + std::to_string(ndim) + ", got ", nd});
    llvm::Value* code = field(kTCode, mc_.i8);
    llvm::Value* bits = field(kTBits, mc_.i8);
    llvm::Value* lanes = field(kTLanes, mc_.i16);
    llvm::Value* dtype_ok = b_.CreateAnd(
        b_.CreateAnd(b_.CreateICmpEQ(code, b_.getInt8(buf->dtype.code)), b_.CreateICmpEQ(bits, b_.getInt8(buf->dtype.bits))),
        b_.CreateICmpEQ(lanes, b_.getInt16(buf->dtype.lanes)));
    FailIf(b_.CreateNot(dtype_ok), {arg + ": expected dtype " + DTypeToString(buf->dtype) + ", got code ",
                                    b_.CreateZExt(code, mc_.i64), " bits ", b_.CreateZExt(bits, mc_.i64), " lanes ",
                                    b_.CreateZExt(lanes, mc_.i64)});
    FailIf(b_.CreateICmpNE(field(kTStrides, mc_.ptr), llvm::ConstantPointerNull::get(mc_.ptr)),
           {arg + ": strides must be NULL (only compact row-major tensors are supported)"});
    llvm::Value* data = b_.CreateGEP(mc_.i8, field(kTData, mc_.ptr), field(kTOffset, mc_.i64), buf->name);
    llvm::Value* misaligned = b_.CreateAnd(b_.CreatePtrToInt(data, mc_.i64), b_.getInt64(kDataAlign - 1));
    FailIf(b_.CreateICmpNE(misaligned, b_.getInt64(0)),
           {arg + ": data is not " + std::to_string(kDataAlign) + "-byte aligned"});
    llvm::Value* shape = field(kTShape, mc_.ptr);
    for (int64_t d = 0; d < ndim; ++d) {
      llvm::Value* got = b_.CreateLoad(mc_.i64, b_.CreateConstInBoundsGEP1_64(mc_.i64, shape, static_cast<uint64_t>(d)));
      const PrimExpr& dim = buf->shape[d];
      std::string where = arg + ", dimension " + std::to_string(d) + ": expected ";
      const auto* var = dim.as<VarNode>();
      if (var != nullptr && !scope_.vars.count(var)) {
        if (!var->dtype.is_int()) {
          Unsupported("shape variable " + var->name + " is not an integer");
          return;
        }
        got->setName(var->name);
        Bind(var, CastValue(got, DType::Int64(), var->dtype));
        continue;
      }
      if (const auto* imm = dim.as<IntImmNode>()) {
        FailIf(b_.CreateICmpNE(got, b_.getInt64(imm->value)), {where + std::to_string(imm->value) + ", got ", got});
        continue;
      }
      // A bound variable or an expression of variables: checked once every
      // buffer's plain variables are bound (a fused kernel's first buffer
      // may be (n + 1, ..) while only a later one has n).
      deferred.push_back({dim, got, where + "", var ? " (" + var->name + ")" : "", buf->name, d});
    }
    memory_vars_.insert(buf->data.get());
    Bind(buf->data.get(), data);
  }
  for (const DeferredDim& dd : deferred) {
    llvm::Value* expected = Index(dd.dim);
    if (!error_.ok()) {
      error_ = Unimplemented(StrFormat("PrimFunc %s: buffer %s, dimension %lld: the shape must be a constant, a "
                                       "variable, or an expression of variables that some dimension or scalar "
                                       "parameter binds",
                                       fname.c_str(), dd.buffer.c_str(), static_cast<long long>(dd.axis)));
      return;
    }
    FailIf(b_.CreateICmpNE(dd.got, expected), {dd.where, expected, dd.label + ", got ", dd.got});
  }
}

Result<llvm::Function*> KernelEmitter::Emit() {
  auto* fn = llvm::Function::Create(mc_.kernel_fn_ty, llvm::GlobalValue::ExternalLinkage, func_.name, mc_.mod);
  if (fn->getName() != func_.name) {
    fn->eraseFromParent();
    return InvalidArgument("two PrimFuncs are named '" + func_.name + "' (kernel names must be unique)");
  }
  mc_.SetAttributes(fn);
  fn->getArg(0)->setName("env");
  fn->getArg(1)->setName("args");
  fn->getArg(2)->setName("num_args");
  st_.fn = fn;
  st_.env = fn->getArg(0);
  st_.entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
  b_.SetInsertPoint(st_.entry);
  BindParams(fn->getArg(1), fn->getArg(2));
  if (!error_.ok()) return error_;

  std::vector<llvm::Value*> captured;
  llvm::Function* body = Outline(func_.name + ".body", {}, [&](const std::vector<llvm::Value*>&) { Stmt(func_.body); },
                                 &captured);
  if (!error_.ok()) return error_;
  std::vector<llvm::Value*> call_args{st_.env};
  call_args.insert(call_args.end(), captured.begin(), captured.end());
  b_.CreateRet(b_.CreateCall(body, call_args));
  return fn;
}

// kiln_kernel_query and the static table it returns.

namespace {

void EmitQuery(ModuleContext& mc, const std::vector<ir::PrimFunc>& funcs, const std::vector<llvm::Function*>& fns) {
  auto* entry_ty = llvm::StructType::get(mc.ctx, {mc.ptr, mc.ptr, mc.i32, mc.i32});
  std::vector<llvm::Constant*> entries;
  for (size_t i = 0; i < funcs.size(); ++i) {
    entries.push_back(llvm::ConstantStruct::get(
        entry_ty, {mc.GlobalString(funcs[i]->name), fns[i],
                   llvm::ConstantInt::get(mc.i32, funcs[i]->params.size()), llvm::ConstantInt::get(mc.i32, 0)}));
  }
  auto* arr_ty = llvm::ArrayType::get(entry_ty, entries.size());
  auto* table = new llvm::GlobalVariable(*mc.mod, arr_ty, true, llvm::GlobalValue::PrivateLinkage,
                                         llvm::ConstantArray::get(arr_ty, entries), "kiln.kernels");
  auto* lib_ty = llvm::StructType::get(mc.ctx, {mc.i32, mc.i32, mc.ptr, mc.ptr, mc.ptr, mc.ptr});
  auto* lib_init = llvm::ConstantStruct::get(
      lib_ty, {llvm::ConstantInt::get(mc.i32, KILN_KERNEL_ABI_VERSION), llvm::ConstantInt::get(mc.i32, entries.size()),
               table, mc.GlobalString(mc.target.triple), mc.GlobalString(mc.target.cpu),
               mc.GlobalString(mc.target.features)});
  auto* lib = new llvm::GlobalVariable(*mc.mod, lib_ty, true, llvm::GlobalValue::PrivateLinkage, lib_init, "kiln.library");
  auto* query = llvm::Function::Create(llvm::FunctionType::get(mc.ptr, {mc.i32}, false),
                                       llvm::GlobalValue::ExternalLinkage, KILN_KERNEL_QUERY_SYMBOL, mc.mod);
  mc.SetAttributes(query);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(mc.ctx, "entry", query));
  llvm::Value* ok = b.CreateICmpEQ(query->getArg(0), b.getInt32(KILN_KERNEL_ABI_VERSION));
  b.CreateRet(b.CreateSelect(ok, lib, llvm::ConstantPointerNull::get(mc.ptr)));
}

}  // namespace
}  // namespace emitter

Status EmitKernelModule(const std::vector<ir::PrimFunc>& funcs, const TargetDesc& target, llvm::Module* module,
                        KernelModuleParts parts) {
  if (module->getDataLayout().getPointerSize() != 8) {
    return Unimplemented("target " + target.triple + ": only 64-bit targets are supported by the kernel ABI");
  }
  emitter::ModuleContext mc(module, target);
  // Reserve the query symbol so that a kernel cannot take it.
  std::vector<llvm::Function*> fns;
  for (const auto& f : funcs) {
    if (f == nullptr) return InvalidArgument("null PrimFunc passed to code generation");
    if (f->name.empty()) return InvalidArgument("a PrimFunc has no name (kernel names must be non-empty)");
    if (f->name == KILN_KERNEL_QUERY_SYMBOL) {
      return InvalidArgument(std::string("PrimFunc name '") + KILN_KERNEL_QUERY_SYMBOL + "' is reserved");
    }
    if (parts == KernelModuleParts::kQuery) {
      // Defined in another module of the same library.
      fns.push_back(llvm::Function::Create(mc.kernel_fn_ty, llvm::GlobalValue::ExternalLinkage, f->name, module));
      continue;
    }
    emitter::KernelEmitter kernel(mc, *f);
    KILN_ASSIGN_OR_RETURN(llvm::Function * fn, kernel.Emit());
    fns.push_back(fn);
  }
  if (parts != KernelModuleParts::kKernels) emitter::EmitQuery(mc, funcs, fns);
  return Status::Ok();
}

}  // namespace codegen
}  // namespace kiln
