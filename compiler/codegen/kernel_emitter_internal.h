// The kernel emitter's classes, shared by kernel_emitter.cc (statements,
// parameters, the module's kernels and query table) and
// kernel_emitter_expr.cc (expressions, including the explicit vector loops'
// bodies). Internal to compiler/codegen: it includes LLVM headers.
#ifndef KILN_COMPILER_CODEGEN_KERNEL_EMITTER_INTERNAL_H_
#define KILN_COMPILER_CODEGEN_KERNEL_EMITTER_INTERNAL_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/codegen/kernel_emitter.h"
#include "kernels/kiln_kernel_abi.h"

namespace kiln {
namespace codegen {
namespace emitter {

using namespace ir;  // NOLINT

constexpr uint64_t kMaxStackAllocBytes = 64 * 1024;
// Run-time sized allocations of one function take up to this much stack
// between them, each one block that serves the sizes that fit (Allocate).
constexpr uint64_t kSmallDynamicStackBytes = 32 * 1024;
constexpr uint64_t kSmallDynamicBlockBytes = 16 * 1024;
constexpr uint64_t kDataAlign = 64;
constexpr int64_t kMsgCap = 512;  // bytes of the error message buffer

// Field indices of kiln_kernel_env and kiln_dltensor in their LLVM struct types.
enum EnvField { kEnvAbi, kEnvNumThreads, kEnvCtx, kEnvParallelFor, kEnvWsAlloc, kEnvWsFree, kEnvSetError };
enum TensorField { kTData, kTDevType, kTDevId, kTNdim, kTCode, kTBits, kTLanes, kTShape, kTStrides, kTOffset };

// A piece of a runtime error message: literal text, or an integer value.
struct MsgPart {
  MsgPart(std::string t) : text(std::move(t)) {}  // NOLINT
  MsgPart(const char* t) : text(t) {}              // NOLINT
  MsgPart(llvm::Value* v) : value(v) {}           // NOLINT
  std::string text;
  llvm::Value* value = nullptr;
};

// Types, strings and helper functions shared by every kernel of a module.
class ModuleContext {
 public:
  ModuleContext(llvm::Module* m, const TargetDesc& target)
      : ctx(m->getContext()), mod(m), target(target), b(m->getContext()) {
    ptr = llvm::PointerType::get(ctx, 0);
    i8 = llvm::Type::getInt8Ty(ctx);
    i16 = llvm::Type::getInt16Ty(ctx);
    i32 = llvm::Type::getInt32Ty(ctx);
    i64 = llvm::Type::getInt64Ty(ctx);
    env_ty = llvm::StructType::create(ctx, {i32, i32, ptr, ptr, ptr, ptr, ptr}, "kiln_kernel_env");
    tensor_ty = llvm::StructType::create(ctx, {ptr, i32, i32, i32, i8, i8, i16, ptr, ptr, i64}, "kiln_dltensor");
    kernel_fn_ty = llvm::FunctionType::get(i32, {ptr, ptr, i32}, false);
    task_fn_ty = llvm::FunctionType::get(i32, {i32, i32, ptr}, false);
  }

  // Target attributes on every function, so that inlining and the vectorizer
  // see one consistent CPU.
  void SetAttributes(llvm::Function* fn) {
    if (!target.cpu.empty()) fn->addFnAttr("target-cpu", target.cpu);
    if (!target.features.empty()) fn->addFnAttr("target-features", target.features);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
  }

  llvm::Constant* GlobalString(const std::string& s) {
    auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    auto* init = llvm::ConstantDataArray::getString(ctx, s, true);
    auto* gv = new llvm::GlobalVariable(*mod, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, ".str");
    gv->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    gv->setAlignment(llvm::Align(1));
    strings_[s] = gv;
    return gv;
  }

  // i64 kiln.append_str(ptr buf, i64 pos, ptr s): copies s while it fits.
  llvm::Function* AppendStr() {
    if (append_str_) return append_str_;
    auto* fn = NewHelper("kiln.append_str", {ptr, i64, ptr});
    auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
    auto* loop = llvm::BasicBlock::Create(ctx, "loop", fn);
    auto* body = llvm::BasicBlock::Create(ctx, "body", fn);
    auto* exit = llvm::BasicBlock::Create(ctx, "exit", fn);
    llvm::Value* buf = fn->getArg(0);
    b.SetInsertPoint(entry);
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    auto* p = b.CreatePHI(i64, 2);
    auto* k = b.CreatePHI(i64, 2);
    p->addIncoming(fn->getArg(1), entry);
    k->addIncoming(b.getInt64(0), entry);
    llvm::Value* c = b.CreateLoad(i8, b.CreateGEP(i8, fn->getArg(2), k));
    llvm::Value* done = b.CreateOr(b.CreateICmpEQ(c, b.getInt8(0)), b.CreateICmpSGE(p, b.getInt64(kMsgCap - 1)));
    b.CreateCondBr(done, exit, body);
    b.SetInsertPoint(body);
    b.CreateStore(c, b.CreateGEP(i8, buf, p));
    p->addIncoming(b.CreateAdd(p, b.getInt64(1)), body);
    k->addIncoming(b.CreateAdd(k, b.getInt64(1)), body);
    b.CreateBr(loop);
    b.SetInsertPoint(exit);
    b.CreateRet(p);
    append_str_ = fn;
    return fn;
  }

  // i64 kiln.append_i64(ptr buf, i64 pos, i64 v): decimal, while it fits.
  llvm::Function* AppendI64() {
    if (append_i64_) return append_i64_;
    auto* fn = NewHelper("kiln.append_i64", {ptr, i64, i64});
    auto* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
    auto* digits = llvm::BasicBlock::Create(ctx, "digits", fn);
    auto* copy = llvm::BasicBlock::Create(ctx, "copy", fn);
    auto* copy_body = llvm::BasicBlock::Create(ctx, "copy.body", fn);
    auto* exit = llvm::BasicBlock::Create(ctx, "exit", fn);
    llvm::Value* buf = fn->getArg(0);
    llvm::Value* v = fn->getArg(2);
    llvm::Value* cap1 = b.getInt64(kMsgCap - 1);
    b.SetInsertPoint(entry);
    auto* tmp = b.CreateAlloca(llvm::ArrayType::get(i8, 24));
    llvm::Value* neg = b.CreateICmpSLT(v, b.getInt64(0));
    llvm::Value* mag = b.CreateSelect(neg, b.CreateSub(b.getInt64(0), v), v);  // unsigned magnitude
    llvm::Value* room = b.CreateICmpSLT(fn->getArg(1), cap1);
    llvm::Value* put_minus = b.CreateAnd(neg, room);
    // Writes '-' unconditionally at a position that is in bounds, then
    // advances only when it was wanted.
    llvm::Value* minus_at = b.CreateSelect(room, fn->getArg(1), cap1);
    b.CreateStore(b.CreateSelect(put_minus, b.getInt8('-'), b.CreateLoad(i8, b.CreateGEP(i8, buf, minus_at))),
                  b.CreateGEP(i8, buf, minus_at));
    llvm::Value* pos0 = b.CreateAdd(fn->getArg(1), b.CreateZExt(put_minus, i64));
    b.CreateBr(digits);
    b.SetInsertPoint(digits);
    auto* n = b.CreatePHI(i64, 2);
    auto* u = b.CreatePHI(i64, 2);
    n->addIncoming(b.getInt64(0), entry);
    u->addIncoming(mag, entry);
    llvm::Value* digit = b.CreateAdd(b.CreateTrunc(b.CreateURem(u, b.getInt64(10)), i8), b.getInt8('0'));
    b.CreateStore(digit, b.CreateGEP(i8, tmp, n));
    llvm::Value* u2 = b.CreateUDiv(u, b.getInt64(10));
    llvm::Value* n2 = b.CreateAdd(n, b.getInt64(1));
    n->addIncoming(n2, digits);
    u->addIncoming(u2, digits);
    b.CreateCondBr(b.CreateICmpNE(u2, b.getInt64(0)), digits, copy);
    b.SetInsertPoint(copy);
    auto* cn = b.CreatePHI(i64, 2);
    auto* cp = b.CreatePHI(i64, 2);
    cn->addIncoming(n2, digits);
    cp->addIncoming(pos0, digits);
    llvm::Value* more = b.CreateAnd(b.CreateICmpSGT(cn, b.getInt64(0)), b.CreateICmpSLT(cp, cap1));
    b.CreateCondBr(more, copy_body, exit);
    b.SetInsertPoint(copy_body);
    llvm::Value* cn1 = b.CreateSub(cn, b.getInt64(1));
    b.CreateStore(b.CreateLoad(i8, b.CreateGEP(i8, tmp, cn1)), b.CreateGEP(i8, buf, cp));
    cn->addIncoming(cn1, copy_body);
    cp->addIncoming(b.CreateAdd(cp, b.getInt64(1)), copy_body);
    b.CreateBr(copy);
    b.SetInsertPoint(exit);
    b.CreateRet(cp);
    append_i64_ = fn;
    return fn;
  }

  llvm::LLVMContext& ctx;
  llvm::Module* mod;
  TargetDesc target;
  llvm::IRBuilder<> b;  // for helpers only
  llvm::PointerType* ptr;
  llvm::IntegerType *i8, *i16, *i32, *i64;
  llvm::StructType* env_ty;
  llvm::StructType* tensor_ty;
  llvm::FunctionType* kernel_fn_ty;
  llvm::FunctionType* task_fn_ty;

 private:
  llvm::Function* NewHelper(const char* name, std::vector<llvm::Type*> params) {
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(i64, params, false), llvm::GlobalValue::InternalLinkage,
                                      name, mod);
    SetAttributes(fn);
    fn->addFnAttr(llvm::Attribute::NoInline);  // cold paths only
    fn->addFnAttr(llvm::Attribute::Cold);
    return fn;
  }

  std::map<std::string, llvm::Constant*> strings_;
  llvm::Function* append_str_ = nullptr;
  llvm::Function* append_i64_ = nullptr;
};

inline bool IsSigned(DType t) { return t.code == kDLInt; }

class KernelEmitter {
 public:
  KernelEmitter(ModuleContext& mc, const PrimFuncNode& func) : mc_(mc), ctx_(mc.ctx), b_(mc.ctx), func_(func) {}

  Result<llvm::Function*> Emit();

 private:
  // ------------------------------------------------------------ state
  struct FnState {
    llvm::Function* fn = nullptr;
    llvm::Value* env = nullptr;
    llvm::BasicBlock* entry = nullptr;
    llvm::Value* msg_buf = nullptr;
    std::vector<llvm::Value*> workspaces;  // live env->workspace_alloc results
    std::unordered_set<llvm::Value*> maybe_null_workspaces;  // null when a stack block served (Allocate)
    uint64_t small_stack_bytes = 0;        // stack blocks of run-time sized allocations
  };
  struct Scope {
    std::unordered_map<const VarNode*, llvm::Value*> vars;
    std::vector<const VarNode*> order;  // binding order, for captures
  };

  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
  }
  void Unsupported(const std::string& what) {
    Fail(Unimplemented(StrFormat("PrimFunc %s: %s", func_.name.c_str(), what.c_str())));
  }

  void Bind(const VarNode* v, llvm::Value* value) {
    if (!scope_.vars.count(v)) scope_.order.push_back(v);
    scope_.vars[v] = value;
  }
  void Unbind(const VarNode* v) {
    scope_.vars.erase(v);
    for (auto it = scope_.order.begin(); it != scope_.order.end(); ++it) {
      if (*it == v) {
        scope_.order.erase(it);
        break;
      }
    }
  }

  // ------------------------------------------------------------ types
  llvm::Type* RegType(DType t) {
    if (t.lanes != 1) return nullptr;
    switch (t.code) {
      case kDLInt:
      case kDLUInt:
        return llvm::IntegerType::get(ctx_, t.bits);
      case kDLFloat:
        if (t.bits == 16) return llvm::Type::getHalfTy(ctx_);
        if (t.bits == 32) return llvm::Type::getFloatTy(ctx_);
        if (t.bits == 64) return llvm::Type::getDoubleTy(ctx_);
        return nullptr;
      case kDLBfloat:
        return t.bits == 16 ? llvm::Type::getBFloatTy(ctx_) : nullptr;
      case kDLOpaqueHandle:
        return mc_.ptr;
      default:
        return nullptr;
    }
  }
  // In memory, bool is a byte.
  llvm::Type* MemType(DType t) {
    if (t.is_int() && t.bits == 1) return mc_.i8;
    return RegType(t);
  }
  llvm::Type* RegTypeOrFail(DType t) {
    llvm::Type* ty = RegType(t);
    if (ty == nullptr) {
      Unsupported("dtype " + DTypeToString(t) + " is not supported by the LLVM code generator");
      return mc_.i64;
    }
    return ty;
  }
  llvm::Value* Poison(DType t) {
    llvm::Type* ty = RegType(t);
    return llvm::PoisonValue::get(ty ? ty : mc_.i64);
  }

  // ------------------------------------------------------------ env access
  llvm::Value* EnvField(EnvField f) {
    llvm::Type* ty = (f == kEnvAbi || f == kEnvNumThreads) ? static_cast<llvm::Type*>(mc_.i32) : mc_.ptr;
    return b_.CreateLoad(ty, b_.CreateStructGEP(mc_.env_ty, st_.env, f));
  }

  llvm::AllocaInst* EntryAlloca(llvm::Type* ty, llvm::Value* count, uint64_t align, const std::string& name) {
    llvm::IRBuilder<> eb(st_.entry, st_.entry->begin());
    auto* a = eb.CreateAlloca(ty, count, name);
    a->setAlignment(llvm::Align(align));
    return a;
  }

  void FreeWorkspaces() {
    for (auto it = st_.workspaces.rbegin(); it != st_.workspaces.rend(); ++it) FreeWorkspace(*it);
  }

  void FreeWorkspace(llvm::Value* ws) {
    llvm::BasicBlock* done = nullptr;
    if (st_.maybe_null_workspaces.count(ws)) {
      auto* free_bb = llvm::BasicBlock::Create(ctx_, "ws.free", st_.fn);
      done = llvm::BasicBlock::Create(ctx_, "ws.freed", st_.fn);
      b_.CreateCondBr(b_.CreateICmpEQ(ws, llvm::ConstantPointerNull::get(mc_.ptr)), done, free_bb);
      b_.SetInsertPoint(free_bb);
    }
    b_.CreateCall(llvm::FunctionType::get(b_.getVoidTy(), {mc_.ptr, mc_.ptr}, false), EnvField(kEnvWsFree),
                  {EnvField(kEnvCtx), ws});
    if (done) {
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
    }
  }

  void EmitSetError(const std::vector<MsgPart>& parts) {
    if (st_.msg_buf == nullptr) st_.msg_buf = EntryAlloca(mc_.i8, b_.getInt64(kMsgCap), 1, "msg");
    llvm::Value* pos = b_.getInt64(0);
    for (const auto& part : parts) {
      if (part.value != nullptr) {
        llvm::Value* v = part.value;
        if (v->getType() != mc_.i64) v = b_.CreateSExtOrTrunc(v, mc_.i64);
        pos = b_.CreateCall(mc_.AppendI64(), {st_.msg_buf, pos, v});
      } else {
        pos = b_.CreateCall(mc_.AppendStr(), {st_.msg_buf, pos, mc_.GlobalString(part.text)});
      }
    }
    b_.CreateStore(b_.getInt8(0), b_.CreateGEP(mc_.i8, st_.msg_buf, pos));
    llvm::Value* set_error = EnvField(kEnvSetError);
    b_.CreateCall(llvm::FunctionType::get(b_.getVoidTy(), {mc_.ptr, mc_.ptr}, false), set_error,
                  {EnvField(kEnvCtx), st_.msg_buf});
  }

  // if (cond) { set_error(parts); free workspaces; return 1; }
  void FailIf(llvm::Value* cond, const std::vector<MsgPart>& parts) {
    auto* fail = llvm::BasicBlock::Create(ctx_, "fail", st_.fn);
    auto* ok = llvm::BasicBlock::Create(ctx_, "ok", st_.fn);
    b_.CreateCondBr(cond, fail, ok, llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(fail);
    EmitSetError(parts);
    FreeWorkspaces();
    b_.CreateRet(b_.getInt32(1));
    b_.SetInsertPoint(ok);
  }

  // if (rc != 0) { free workspaces; return rc; }
  void PropagateError(llvm::Value* rc) {
    auto* fail = llvm::BasicBlock::Create(ctx_, "propagate", st_.fn);
    auto* ok = llvm::BasicBlock::Create(ctx_, "ok", st_.fn);
    b_.CreateCondBr(b_.CreateICmpNE(rc, b_.getInt32(0)), fail, ok,
                    llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(fail);
    FreeWorkspaces();
    b_.CreateRet(rc);
    b_.SetInsertPoint(ok);
  }

  // ------------------------------------------------------------ outlining
  // Creates `i32 name(ptr env, <every bound var>, extra...)`, emits its body
  // with `emit_body(extra args)` and returns it; `captured` receives the
  // caller-side values, in parameter order after env.
  llvm::Function* Outline(const std::string& name, const std::vector<llvm::Type*>& extra,
                          const std::function<void(const std::vector<llvm::Value*>&)>& emit_body,
                          std::vector<llvm::Value*>* captured) {
    std::vector<const VarNode*> vars = scope_.order;
    std::vector<llvm::Type*> params{mc_.ptr};
    captured->clear();
    for (const VarNode* v : vars) {
      llvm::Value* val = scope_.vars.at(v);
      captured->push_back(val);
      params.push_back(val->getType());
    }
    for (llvm::Type* t : extra) params.push_back(t);
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(mc_.i32, params, false),
                                      llvm::GlobalValue::InternalLinkage, name, mc_.mod);
    mc_.SetAttributes(fn);
    fn->addParamAttr(0, llvm::Attribute::NoAlias);
    for (size_t i = 0; i < vars.size(); ++i) {
      fn->getArg(static_cast<unsigned>(i + 1))->setName(vars[i]->name);
      if (memory_vars_.count(vars[i])) {
        fn->addParamAttr(static_cast<unsigned>(i + 1), llvm::Attribute::NoAlias);
        fn->addParamAttr(static_cast<unsigned>(i + 1),
                         llvm::Attribute::getWithAlignment(ctx_, llvm::Align(kDataAlign)));
      }
    }
    // Save the caller's state, emit the callee, restore.
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    FnState saved_st = std::move(st_);
    Scope saved_scope = std::move(scope_);
    st_ = FnState();
    scope_ = Scope();
    st_.fn = fn;
    st_.env = fn->getArg(0);
    st_.entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
    b_.SetInsertPoint(st_.entry);
    for (size_t i = 0; i < vars.size(); ++i) Bind(vars[i], fn->getArg(static_cast<unsigned>(i + 1)));
    std::vector<llvm::Value*> extra_args;
    for (size_t i = 0; i < extra.size(); ++i) extra_args.push_back(fn->getArg(static_cast<unsigned>(1 + vars.size() + i)));
    emit_body(extra_args);
    if (b_.GetInsertBlock()->getTerminator() == nullptr) b_.CreateRet(b_.getInt32(0));
    st_ = std::move(saved_st);
    scope_ = std::move(saved_scope);
    return fn;
  }

  // ------------------------------------------------------------ expressions
  llvm::Value* CastValue(llvm::Value* v, DType from, DType to);
  llvm::Value* DoubleToHalf(llvm::Value* d, llvm::Type* ty);
  llvm::Value* FloatToI32Sat(llvm::Value* v);
  llvm::Value* Expr(const PrimExpr& e);
  llvm::Value* ExprAs(const PrimExpr& e, DType t) { return CastValue(Expr(e), e.dtype(), t); }
  llvm::Value* Index(const PrimExpr& e) {
    bool saved = in_index_;
    in_index_ = true;
    llvm::Value* v = ExprAs(e, DType::Int64());
    in_index_ = saved;
    return v;
  }
  llvm::Value* Binary(const BinaryNode* op);
  llvm::Value* GuardedIntDiv(llvm::Value* a, llvm::Value* c, bool sgn, TirKind k);
  llvm::Value* Compare(TirKind k, DType t, llvm::Value* a, llvm::Value* c, const BinaryNode* op);
  llvm::Value* FloatMinMax(bool is_max, llvm::Value* a, llvm::Value* c);
  llvm::Value* Call(const CallNode* op);
  static bool NonPositiveOperand(const PrimExpr& e);
  llvm::Value* ExpNonPositive(const PrimExpr& e, DType t, DType ct);
  llvm::Value* IfThenElse(const CallNode* op);
  llvm::Value* Address(const Buffer& buf, const std::vector<PrimExpr>& indices);

  // ------------------------------------------------------------ statements
  void Stmt(const ir::Stmt& s);
  void For(const ForNode* op);
  void ParallelFor(const ForNode* op);
  void Loop(const Var& var, llvm::Value* begin, llvm::Value* end, ForKind kind, const ir::Stmt& body,
            bool run_time_extent = false);
  void VectorLoop(const Var& var, llvm::Value* begin, int64_t extent, const ir::Stmt& body);
  void ChunkedVectorLoop(const Var& var, llvm::Value* begin, int64_t extent, const ir::Stmt& body);
  bool OnlyStackBuffers(const ir::Stmt& body) const;
  llvm::Value* VectorExpr(const PrimExpr& e, const VarNode* var, unsigned lanes);
  // A vector of `lanes` elements of `elem` at `addr`, and a store of one, of
  // which only the first vector_used_lanes_ are the loop's
  // (TargetDesc::masked_vectors): masked; on the stack (`on_stack`) plain
  // accesses of those lanes, widened and narrowed in registers. LLVM does
  // not always promote a register tile accessed with masks to registers,
  // and a masked load does not take its data from a masked store still in
  // flight: a batched 40 x 40 x 15 matmul's tile kept on the stack so took
  // 58 us where plain accesses take 2.7.
  llvm::Value* VectorLoad(llvm::Type* elem, llvm::Value* addr, unsigned lanes, llvm::Align align, bool on_stack);
  void VectorStore(llvm::Value* v, llvm::Value* addr, llvm::Align align, bool on_stack);
  void Allocate(const AllocateNode* op);

  // ------------------------------------------------------------ prologue
  void BindParams(llvm::Value* args, llvm::Value* num_args);

  ModuleContext& mc_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const PrimFuncNode& func_;
  FnState st_;
  Scope scope_;
  std::unordered_set<const VarNode*> memory_vars_;  // buffer data handles
  std::unordered_set<const VarNode*> stack_vars_;   // those of them on the stack
  Status error_;
  bool in_index_ = false;
  int outlined_ = 0;
  unsigned vector_used_lanes_ = 0;  // lanes of the explicit vector chunk being emitted that are the loop's
  int unrolled_depth_ = 0;  // T.unroll loops around the statement being emitted
};

}  // namespace emitter
}  // namespace codegen
}  // namespace kiln

#endif  // KILN_COMPILER_CODEGEN_KERNEL_EMITTER_INTERNAL_H_
