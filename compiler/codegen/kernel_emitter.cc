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
// (env, every captured value, min, extent) on its stack.
//
// Errors inside code generation (unsupported TIR) are recorded in `error_`
// and emission continues with poison values; the module is discarded.
#include "compiler/codegen/kernel_emitter.h"

#include "compiler/codegen/vector_loop.h"
#include "compiler/codegen/vector_math.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kernels/kiln_kernel_abi.h"

namespace kiln {
namespace codegen {
namespace {

using namespace ir;  // NOLINT

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

constexpr uint64_t kMaxStackAllocBytes = 64 * 1024;
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

bool IsSigned(DType t) { return t.code == kDLInt; }

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
    for (auto it = st_.workspaces.rbegin(); it != st_.workspaces.rend(); ++it) {
      llvm::Value* free_fn = EnvField(kEnvWsFree);
      b_.CreateCall(llvm::FunctionType::get(b_.getVoidTy(), {mc_.ptr, mc_.ptr}, false), free_fn,
                    {EnvField(kEnvCtx), *it});
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
  llvm::Value* Call(const CallNode* op);
  llvm::Value* IfThenElse(const CallNode* op);
  llvm::Value* Address(const Buffer& buf, const std::vector<PrimExpr>& indices);

  // ------------------------------------------------------------ statements
  void Stmt(const ir::Stmt& s);
  void For(const ForNode* op);
  void ParallelFor(const ForNode* op);
  void Loop(const Var& var, llvm::Value* begin, llvm::Value* end, ForKind kind, const ir::Stmt& body);
  void VectorLoop(const Var& var, llvm::Value* begin, int64_t extent, const ir::Stmt& body);
  llvm::Value* VectorExpr(const PrimExpr& e, const VarNode* var, unsigned lanes);
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
  Status error_;
  bool in_index_ = false;
  int outlined_ = 0;
  int unrolled_depth_ = 0;  // T.unroll loops around the statement being emitted
};

llvm::Value* KernelEmitter::CastValue(llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  llvm::Type* ty = RegType(to);
  if (ty == nullptr || RegType(from) == nullptr) {
    Unsupported("cast from " + DTypeToString(from) + " to " + DTypeToString(to));
    return Poison(to);
  }
  bool from_bool = from.is_int() && from.bits == 1;
  if (to.is_int() && to.bits == 1) {  // to bool: != 0
    if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (from.is_int() && to.is_int()) {
    return (IsSigned(from) && !from_bool) ? b_.CreateSExtOrTrunc(v, ty) : b_.CreateZExtOrTrunc(v, ty);
  }
  if (from.is_int() && to.is_float()) {
    return (IsSigned(from) && !from_bool) ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
  }
  if (from.is_float() && to.is_int()) {
    // Defined for every input (fptosi would be poison out of range): NaN -> 0,
    // saturation at the int32/int64 range, and narrower types (and uint32)
    // wrap from there, as C and numpy do on x86 for in-range values.
    auto sat = [&](llvm::Intrinsic::ID id, llvm::Type* it) {
      return b_.CreateIntrinsic(id, {it, v->getType()}, {v});
    };
    if (to.bits == 64) return sat(IsSigned(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat, ty);
    if (to.bits == 32 && IsSigned(to)) return sat(llvm::Intrinsic::fptosi_sat, ty);
    llvm::Type* wide = to.bits == 32 ? mc_.i64 : mc_.i32;
    return b_.CreateTrunc(sat(llvm::Intrinsic::fptosi_sat, wide), ty);
  }
  if (from.is_float() && to.is_float()) {
    if (from.bits == 64 && to.bits == 16) return DoubleToHalf(v, ty);
    return b_.CreateFPCast(v, ty);
  }
  Unsupported("cast from " + DTypeToString(from) + " to " + DTypeToString(to));
  return Poison(to);
}

// double -> half/bfloat16 without the __truncdfhf2 libcall: round to float
// "to odd" (truncate, then set the last bit when inexact), which the float ->
// half conversion then rounds correctly, as a direct conversion would.
llvm::Value* KernelEmitter::DoubleToHalf(llvm::Value* d, llvm::Type* ty) {
  llvm::Value* f = b_.CreateFPTrunc(d, b_.getFloatTy());
  llvm::Value* fd = b_.CreateFPExt(f, d->getType());
  llvm::Value* inexact = b_.CreateFCmpONE(fd, d);
  llvm::Value* over = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, fd),
                                       b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
  llvm::Value* bits = b_.CreateBitCast(f, mc_.i32);
  bits = b_.CreateSelect(over, b_.CreateSub(bits, b_.getInt32(1)), bits);
  bits = b_.CreateSelect(inexact, b_.CreateOr(bits, b_.getInt32(1)), bits);
  return b_.CreateFPTrunc(b_.CreateBitCast(bits, b_.getFloatTy()), ty);
}

llvm::Value* KernelEmitter::Address(const Buffer& buf, const std::vector<PrimExpr>& indices) {
  auto it = scope_.vars.find(buf->data.get());
  if (it == scope_.vars.end()) {
    Unsupported("buffer " + buf->name + " is used but is neither a parameter nor allocated");
    return llvm::PoisonValue::get(mc_.ptr);
  }
  if (!buf->strides.empty()) {
    Unsupported("buffer " + buf->name + " has explicit strides, which are not supported");
    return llvm::PoisonValue::get(mc_.ptr);
  }
  if (indices.size() != buf->shape.size()) {
    Unsupported(StrFormat("buffer %s accessed with %zu indices but has %zu dimensions", buf->name.c_str(),
                          indices.size(), buf->shape.size()));
    return llvm::PoisonValue::get(mc_.ptr);
  }
  llvm::Type* elem = MemType(buf->dtype);
  if (elem == nullptr) {
    Unsupported("buffer " + buf->name + " has unsupported dtype " + DTypeToString(buf->dtype));
    return llvm::PoisonValue::get(mc_.ptr);
  }
  // Row-major: ((i0 * s1 + i1) * s2 + i2) ...; in bounds, so no signed wrap.
  llvm::Value* offset = b_.getInt64(0);
  for (size_t d = 0; d < indices.size(); ++d) {
    if (d > 0) offset = b_.CreateNSWMul(offset, Index(buf->shape[d]));
    offset = d == 0 ? Index(indices[d]) : b_.CreateNSWAdd(offset, Index(indices[d]));
  }
  return b_.CreateInBoundsGEP(elem, it->second, offset);
}

llvm::Value* KernelEmitter::Binary(const BinaryNode* op) {
  TirKind k = op->kind();
  DType t = op->a.dtype();
  llvm::Value* a = Expr(op->a);
  llvm::Value* c = ExprAs(op->b, t);
  if (RegType(t) == nullptr) {
    Unsupported("arithmetic on dtype " + DTypeToString(t));
    return Poison(op->dtype);
  }
  bool fp = t.is_float();
  bool sgn = IsSigned(t);
  bool nsw = in_index_ && sgn;  // index arithmetic stays in bounds
  switch (k) {
    case TirKind::kAdd:
      return fp ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c, "", false, nsw);
    case TirKind::kSub:
      return fp ? b_.CreateFSub(a, c) : b_.CreateSub(a, c, "", false, nsw);
    case TirKind::kMul:
      return fp ? b_.CreateFMul(a, c) : b_.CreateMul(a, c, "", false, nsw);
    case TirKind::kDiv:
      if (fp) return b_.CreateFDiv(a, c);
      return GuardedIntDiv(a, c, sgn, k);
    case TirKind::kFloorDiv:
    case TirKind::kFloorMod: {
      if (fp) {
        llvm::Value* q = math::Round(b_, b_.CreateFDiv(a, c), math::Rounding::kFloor, mc_.target.native_rounding);
        return k == TirKind::kFloorDiv ? q : b_.CreateFSub(a, b_.CreateFMul(q, c));
      }
      return GuardedIntDiv(a, c, sgn, k);
    }
    case TirKind::kMin:
    case TirKind::kMax: {
      bool is_max = k == TirKind::kMax;
      if (fp) {
        // NaN in either operand gives NaN (numpy's minimum/maximum).
        // Against a constant that is not NaN (ReLU's 0, a clip's bounds):
        // k > x ? k : x gives x when x is NaN, one vmaxps / vminps (whose
        // second operand is what a NaN returns) instead of two compares and
        // two blends.
        auto not_nan_constant = [](llvm::Value* v) {
          auto* k = llvm::dyn_cast<llvm::Constant>(v);
          if (k == nullptr) return false;
          if (auto* splat = k->getSplatValue()) k = splat;
          auto* f = llvm::dyn_cast<llvm::ConstantFP>(k);
          return f != nullptr && !f->isNaN();
        };
        if (not_nan_constant(a) || not_nan_constant(c)) {
          llvm::Value* k = not_nan_constant(c) ? c : a;
          llvm::Value* x = k == c ? a : c;
          llvm::Value* pick_k = is_max ? b_.CreateFCmpOGT(k, x) : b_.CreateFCmpOLT(k, x);
          return b_.CreateSelect(pick_k, k, x);
        }
        llvm::Value* pick_a = is_max ? b_.CreateFCmpOGT(a, c) : b_.CreateFCmpOLT(a, c);
        llvm::Value* r = b_.CreateSelect(pick_a, a, c);
        return b_.CreateSelect(b_.CreateFCmpUNO(a, a), a, r);
      }
      llvm::Intrinsic::ID id = is_max ? (sgn ? llvm::Intrinsic::smax : llvm::Intrinsic::umax)
                                      : (sgn ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
      return b_.CreateBinaryIntrinsic(id, a, c);
    }
    default:
      break;
  }
  return Compare(k, t, a, c, op);
}

// Integer Div (truncating), FloorDiv and FloorMod (toward -inf). A divisor
// that is not a known non-zero, non-minus-one constant is guarded: x / 0 and
// x % 0 give 0, x / -1 gives -x (wrapping), so that a kernel never traps on
// data (LLVM's sdiv by 0 or INT_MIN / -1 is undefined and traps on x86).
llvm::Value* KernelEmitter::GuardedIntDiv(llvm::Value* a, llvm::Value* c, bool sgn, TirKind k) {
  llvm::Type* ty = a->getType();
  llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
  llvm::Value* is_zero = nullptr;
  llvm::Value* is_minus1 = nullptr;
  auto* cc = llvm::dyn_cast<llvm::ConstantInt>(c);
  bool safe = cc != nullptr && !cc->isZero() && !(sgn && cc->isMinusOne());
  if (!safe) {
    is_zero = b_.CreateICmpEQ(c, zero);
    llvm::Value* bad = is_zero;
    if (sgn) {
      is_minus1 = b_.CreateICmpEQ(c, llvm::ConstantInt::getSigned(ty, -1));
      bad = b_.CreateOr(bad, is_minus1);
    }
    c = b_.CreateSelect(bad, llvm::ConstantInt::get(ty, 1), c);
  }
  llvm::Value* result;
  if (!sgn) {
    result = k == TirKind::kFloorMod ? b_.CreateURem(a, c) : b_.CreateUDiv(a, c);
  } else if (k == TirKind::kDiv) {
    result = b_.CreateSDiv(a, c);
  } else {
    // Truncating division, corrected when the remainder's sign differs
    // from the divisor's.
    llvm::Value* q = b_.CreateSDiv(a, c);
    llvm::Value* r = b_.CreateSRem(a, c);
    llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero),
                                       b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(c, zero)));
    result = k == TirKind::kFloorDiv ? b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()))
                                     : b_.CreateSelect(adjust, b_.CreateAdd(r, c), r);
  }
  if (safe) return result;
  if (is_minus1 != nullptr) {
    llvm::Value* neg = k == TirKind::kFloorMod ? zero : b_.CreateSub(zero, a);
    result = b_.CreateSelect(is_minus1, neg, result);
  }
  return b_.CreateSelect(is_zero, zero, result);
}

llvm::Value* KernelEmitter::Compare(TirKind k, DType t, llvm::Value* a, llvm::Value* c, const BinaryNode* op) {
  bool fp = t.is_float();
  bool sgn = IsSigned(t);
  switch (k) {
    case TirKind::kEQ:
      return fp ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
    case TirKind::kNE:
      return fp ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
    case TirKind::kLT:
      return fp ? b_.CreateFCmpOLT(a, c) : sgn ? b_.CreateICmpSLT(a, c) : b_.CreateICmpULT(a, c);
    case TirKind::kLE:
      return fp ? b_.CreateFCmpOLE(a, c) : sgn ? b_.CreateICmpSLE(a, c) : b_.CreateICmpULE(a, c);
    case TirKind::kGT:
      return fp ? b_.CreateFCmpOGT(a, c) : sgn ? b_.CreateICmpSGT(a, c) : b_.CreateICmpUGT(a, c);
    case TirKind::kGE:
      return fp ? b_.CreateFCmpOGE(a, c) : sgn ? b_.CreateICmpSGE(a, c) : b_.CreateICmpUGE(a, c);
    case TirKind::kAnd:
      return b_.CreateAnd(CastValue(a, t, DType::Bool()), CastValue(c, t, DType::Bool()));
    case TirKind::kOr:
      return b_.CreateOr(CastValue(a, t, DType::Bool()), CastValue(c, t, DType::Bool()));
    default:
      break;
  }
  Unsupported(std::string("binary operator ") + TirKindName(k));
  return Poison(op->dtype);
}

llvm::Value* KernelEmitter::Call(const CallNode* op) {
  // TVM spells intrinsics "tir.exp" in T.call_intrin; the parser makes "exp".
  std::string name = op->op.compare(0, 4, "tir.") == 0 ? op->op.substr(4) : op->op;
  auto arity = [&](size_t n) {
    if (op->args.size() == n) return true;
    Unsupported(StrFormat("intrinsic '%s' takes %zu argument(s), got %zu", name.c_str(), n, op->args.size()));
    return false;
  };
  if (name == "if_then_else") {
    if (!arity(3)) return Poison(op->dtype);
    return IfThenElse(op);
  }
  if (name == "isnan" || name == "isinf" || name == "isfinite") {
    if (!arity(1)) return Poison(op->dtype);
    DType at = op->args[0].dtype();
    llvm::Value* x = Expr(op->args[0]);
    llvm::Value* r;
    if (!at.is_float()) {
      r = b_.getInt1(name == "isfinite");  // integers are finite numbers
    } else if (name == "isnan") {
      r = b_.CreateFCmpUNO(x, x);
    } else {
      llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
      llvm::Value* inf = llvm::ConstantFP::getInfinity(x->getType());
      r = name == "isinf" ? b_.CreateFCmpOEQ(ax, inf) : b_.CreateFCmpOLT(ax, inf);
    }
    return CastValue(r, DType::Bool(), op->dtype);
  }
  DType t = op->dtype;
  if ((name == "abs" || name == "fabs") && t.is_int() && t.bits > 1) {
    if (!arity(1)) return Poison(t);
    llvm::Value* x = ExprAs(op->args[0], t);
    if (!IsSigned(t)) return x;
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());  // abs(INT_MIN) wraps
  }
  static const std::set<std::string> kFloatMath = {
      "exp",   "exp2",  "log",  "log2",  "log10", "sqrt",      "rsqrt", "tanh", "sigmoid", "erf",  "sin",
      "cos",   "pow",   "fabs", "abs",   "floor", "ceil",      "trunc", "round", "nearbyint", "rint",
      "roundeven", "fma"};
  if (!kFloatMath.count(name)) {
    Unsupported("unsupported intrinsic '" + op->op +
                "' (supported: if_then_else, isnan, isinf, isfinite, exp, exp2, log, log2, log10, sqrt, rsqrt, "
                "tanh, sigmoid, erf, sin, cos, pow, abs, fabs, floor, ceil, trunc, round, nearbyint, fma)");
    return Poison(t);
  }
  if (!t.is_float() || RegType(t) == nullptr) {
    Unsupported("intrinsic '" + name + "' needs a float dtype, got " + DTypeToString(t));
    return Poison(t);
  }
  size_t n = name == "pow" ? 2 : name == "fma" ? 3 : 1;
  if (!arity(n)) return Poison(t);
  // float16/bfloat16 compute in float32 and round once at the end.
  DType ct = t.bits < 32 ? DType::Float32() : t;
  std::vector<llvm::Value*> x;
  for (const auto& a : op->args) x.push_back(CastValue(ExprAs(a, t), t, ct));
  llvm::Value* r = nullptr;
  bool native = mc_.target.native_rounding;
  if (name == "exp") r = math::Exp(b_, x[0]);
  else if (name == "exp2") r = math::Exp2(b_, x[0]);
  else if (name == "log") r = math::Log(b_, x[0]);
  else if (name == "log2") r = math::Log2(b_, x[0]);
  else if (name == "log10") r = b_.CreateFMul(math::Log2(b_, x[0]), llvm::ConstantFP::get(x[0]->getType(), 0.30102999566398119521));
  else if (name == "tanh") r = math::Tanh(b_, x[0]);
  else if (name == "sigmoid") r = math::Sigmoid(b_, x[0]);
  else if (name == "erf") r = math::Erf(b_, x[0]);
  else if (name == "sin") r = math::Sin(b_, x[0]);
  else if (name == "cos") r = math::Cos(b_, x[0]);
  else if (name == "pow") r = math::Pow(b_, x[0], x[1]);
  else if (name == "sqrt") r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x[0]);
  else if (name == "rsqrt") r = b_.CreateFDiv(llvm::ConstantFP::get(x[0]->getType(), 1.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x[0]));
  else if (name == "fabs" || name == "abs") r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x[0]);
  else if (name == "floor") r = math::Round(b_, x[0], math::Rounding::kFloor, native);
  else if (name == "ceil") r = math::Round(b_, x[0], math::Rounding::kCeil, native);
  else if (name == "trunc") r = math::Round(b_, x[0], math::Rounding::kTrunc, native);
  else if (name == "fma") r = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x[0]->getType()}, {x[0], x[1], x[2]});
  else r = math::Round(b_, x[0], math::Rounding::kHalfToEven, native);  // round, nearbyint, rint, roundeven
  return CastValue(r, ct, t);
}

// Lazy: only the taken side is evaluated (it may read out of bounds
// otherwise, e.g. padding).
llvm::Value* KernelEmitter::IfThenElse(const CallNode* op) {
  llvm::Value* cond = ExprAs(op->args[0], DType::Bool());
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "ite.then", st_.fn);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "ite.else", st_.fn);
  auto* join = llvm::BasicBlock::Create(ctx_, "ite.join", st_.fn);
  b_.CreateCondBr(cond, then_bb, else_bb);
  b_.SetInsertPoint(then_bb);
  llvm::Value* tv = ExprAs(op->args[1], op->dtype);
  llvm::BasicBlock* then_end = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(else_bb);
  llvm::Value* fv = ExprAs(op->args[2], op->dtype);
  llvm::BasicBlock* else_end = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  auto* phi = b_.CreatePHI(tv->getType(), 2);
  phi->addIncoming(tv, then_end);
  phi->addIncoming(fv, else_end);
  return phi;
}

llvm::Value* KernelEmitter::Expr(const PrimExpr& e) {
  if (!e.defined()) {
    Unsupported("an expression is missing");
    return llvm::PoisonValue::get(mc_.i64);
  }
  DType t = e.dtype();
  if (IsBinary(e->kind())) return Binary(static_cast<const BinaryNode*>(e.get()));
  switch (e->kind()) {
    case TirKind::kIntImm: {
      llvm::Type* ty = RegTypeOrFail(t);
      if (!ty->isIntegerTy()) {
        Unsupported("integer literal of dtype " + DTypeToString(t));
        return Poison(t);
      }
      return llvm::ConstantInt::get(ty, static_cast<uint64_t>(e.as<IntImmNode>()->value), IsSigned(t));
    }
    case TirKind::kFloatImm: {
      llvm::Type* ty = RegTypeOrFail(t);
      if (!ty->isFloatingPointTy()) {
        Unsupported("float literal of dtype " + DTypeToString(t));
        return Poison(t);
      }
      return llvm::ConstantFP::get(ty, e.as<FloatImmNode>()->value);
    }
    case TirKind::kVar: {
      auto it = scope_.vars.find(e.as<VarNode>());
      if (it == scope_.vars.end()) {
        Unsupported("variable '" + e.as<VarNode>()->name + "' is used outside its definition");
        return Poison(t);
      }
      return it->second;
    }
    case TirKind::kNot:
      return b_.CreateNot(ExprAs(e.as<NotNode>()->a, DType::Bool()));
    case TirKind::kCast:
      return ExprAs(e.as<CastNode>()->value, t);
    case TirKind::kSelect: {
      const auto* s = e.as<SelectNode>();
      llvm::Value* c = ExprAs(s->cond, DType::Bool());
      return b_.CreateSelect(c, ExprAs(s->true_value, t), ExprAs(s->false_value, t));
    }
    case TirKind::kBufferLoad: {
      const auto* l = e.as<BufferLoadNode>();
      llvm::Value* addr = Address(l->buffer, l->indices);
      llvm::Type* mem = MemType(l->buffer->dtype);
      if (mem == nullptr) return Poison(t);
      auto* load = b_.CreateAlignedLoad(mem, addr, llvm::Align(l->buffer->dtype.bytes() ? l->buffer->dtype.bytes() : 1));
      if (mem != RegType(t)) return b_.CreateICmpNE(load, llvm::ConstantInt::get(mem, 0));  // bool byte
      return load;
    }
    case TirKind::kCall:
      return Call(e.as<CallNode>());
    default:
      Unsupported(std::string("expression ") + TirKindName(e->kind()) + " is not supported");
      return Poison(t);
  }
}

void KernelEmitter::Loop(const Var& var, llvm::Value* begin, llvm::Value* end, ForKind kind, const ir::Stmt& body) {
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
  if (kind == ForKind::kVectorized) {
    md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                          llvm::ConstantAsMetadata::get(b_.getTrue())}));
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

// Vectorized loops inside unrolled ones whose width is not whole 16-float
// vectors, up to this many lanes, are emitted as explicit vectors
// (vector_loop.h says why).
constexpr int64_t kMaxExplicitVectorLanes = 64;

void KernelEmitter::For(const ForNode* op) {
  if (op->for_kind == ForKind::kParallel) return ParallelFor(op);
  llvm::Value* begin = Index(op->min);
  if (op->for_kind == ForKind::kVectorized && unrolled_depth_ > 0) {
    const auto* n = op->extent.as<IntImmNode>();
    if (n != nullptr && n->value > 0 && n->value % 16 != 0 && n->value <= kMaxExplicitVectorLanes &&
        codegen::EmitsAsVectors(op->body, op->loop_var.get())) {
      return VectorLoop(op->loop_var, begin, n->value, op->body);
    }
  }
  llvm::Value* end = b_.CreateAdd(begin, Index(op->extent));
  Loop(op->loop_var, begin, end, op->for_kind, op->body);
}

// The loop's iterations in chunks of 16 lanes (the last one narrower), each
// store of the body one vector store per chunk; EmitsAsVectors checked the
// body.
void KernelEmitter::VectorLoop(const Var& var, llvm::Value* begin, int64_t extent, const ir::Stmt& body) {
  llvm::Type* ty = RegTypeOrFail(var->dtype);
  if (!ty->isIntegerTy()) {
    Unsupported("loop variable " + var->name + " is not an integer");
    return;
  }
  begin = b_.CreateSExtOrTrunc(begin, ty);
  std::vector<const BufferStoreNode*> stores;
  std::function<void(const ir::Stmt&)> collect = [&](const ir::Stmt& s) {
    if (const auto* st = As<BufferStoreNode>(s)) stores.push_back(st);
    if (const auto* seq = As<SeqStmtNode>(s))
      for (const auto& c : seq->seq) collect(c);
  };
  collect(body);
  for (int64_t s = 0; s < extent; s += 16) {
    unsigned lanes = static_cast<unsigned>(std::min<int64_t>(16, extent - s));
    Bind(var.get(), b_.CreateAdd(begin, llvm::ConstantInt::get(ty, s), "", false, true));
    for (const BufferStoreNode* st : stores) {
      llvm::Value* v = VectorExpr(st->value, var.get(), lanes);
      llvm::Value* addr = Address(st->buffer, st->indices);
      b_.CreateAlignedStore(v, addr, llvm::Align(4));
    }
    Unbind(var.get());
  }
}

llvm::Value* KernelEmitter::VectorExpr(const PrimExpr& e, const VarNode* var, unsigned lanes) {
  if (!tir::nest::Uses(e, {var})) return b_.CreateVectorSplat(lanes, ExprAs(e, DType::Float32()));
  auto* vty = llvm::FixedVectorType::get(b_.getFloatTy(), lanes);
  switch (e->kind()) {
    case TirKind::kBufferLoad: {
      const auto* l = e.as<BufferLoadNode>();
      return b_.CreateAlignedLoad(vty, Address(l->buffer, l->indices), llvm::Align(4));
    }
    case TirKind::kAdd:
    case TirKind::kSub:
    case TirKind::kMul:
    case TirKind::kDiv: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      llvm::Value* a = VectorExpr(op->a, var, lanes);
      llvm::Value* c = VectorExpr(op->b, var, lanes);
      if (e->kind() == TirKind::kAdd) return b_.CreateFAdd(a, c);
      if (e->kind() == TirKind::kSub) return b_.CreateFSub(a, c);
      if (e->kind() == TirKind::kMul) return b_.CreateFMul(a, c);
      return b_.CreateFDiv(a, c);
    }
    case TirKind::kCall: {
      const auto* op = e.as<CallNode>();
      std::vector<llvm::Value*> x;
      for (const auto& a : op->args) x.push_back(VectorExpr(a, var, lanes));
      return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vty}, x);
    }
    default:
      Unsupported(std::string("expression ") + TirKindName(e->kind()) + " in an explicit vector loop");
      return llvm::PoisonValue::get(vty);
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

  // The launch: skipped when the loop is empty.
  auto* launch = llvm::BasicBlock::Create(ctx_, name + ".launch", st_.fn);
  auto* done = llvm::BasicBlock::Create(ctx_, name + ".done", st_.fn);
  b_.CreateCondBr(b_.CreateICmpSGT(extent, b_.getInt64(0)), launch, done);
  b_.SetInsertPoint(launch);
  llvm::Value* threads = b_.CreateSExt(EnvField(kEnvNumThreads), mc_.i64);
  threads = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, threads, b_.getInt64(1));
  // With several threads the range is cut into kChunksPerThread chunks per
  // thread, which the pool's workers claim one at a time (runtime/thread_pool.h):
  // a thread whose core is busy with something else takes fewer chunks instead
  // of holding up the call with a fixed share. Chunks stay contiguous, so
  // neighbouring iterations (e.g. tiles sharing a panel) stay on one thread.
  constexpr int64_t kChunksPerThread = 4;
  llvm::Value* chunks = b_.CreateSelect(b_.CreateICmpSGT(threads, b_.getInt64(1)),
                                        b_.CreateNSWMul(threads, b_.getInt64(kChunksPerThread)), threads);
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
    Bind(data, p);
    Stmt(op->body);
    Unbind(data);
    return;
  }
  llvm::Value* count = b_.getInt64(1);
  for (const auto& d : buf->shape) count = b_.CreateMul(count, Index(d));
  llvm::Value* nbytes = b_.CreateMul(count, b_.getInt64(elem_bytes));
  auto* alloc_ty = llvm::FunctionType::get(mc_.ptr, {mc_.ptr, mc_.i64, mc_.i64}, false);
  llvm::Value* p = b_.CreateCall(alloc_ty, EnvField(kEnvWsAlloc), {EnvField(kEnvCtx), nbytes, b_.getInt64(kDataAlign)});
  FailIf(b_.CreateICmpEQ(p, llvm::ConstantPointerNull::get(mc_.ptr)),
         {func_.name + ": workspace allocation of ", nbytes, " bytes for buffer " + buf->name + " failed"});
  st_.workspaces.push_back(p);
  memory_vars_.insert(data);
  Bind(data, p);
  Stmt(op->body);
  Unbind(data);
  st_.workspaces.pop_back();
  b_.CreateCall(llvm::FunctionType::get(b_.getVoidTy(), {mc_.ptr, mc_.ptr}, false), EnvField(kEnvWsFree),
                {EnvField(kEnvCtx), p});
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
      // A bound variable or an expression of bound variables.
      llvm::Value* expected = Index(dim);
      if (!error_.ok()) {
        error_ = Unimplemented(StrFormat("PrimFunc %s: buffer %s, dimension %lld: the shape must be a constant, a "
                                         "variable, or an expression of variables bound by earlier dimensions",
                                         fname.c_str(), buf->name.c_str(), static_cast<long long>(d)));
        return;
      }
      std::string label = var ? " (" + var->name + ")" : "";
      FailIf(b_.CreateICmpNE(got, expected), {where, expected, label + ", got ", got});
    }
    memory_vars_.insert(buf->data.get());
    Bind(buf->data.get(), data);
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

Status EmitKernelModule(const std::vector<ir::PrimFunc>& funcs, const TargetDesc& target, llvm::Module* module) {
  if (module->getDataLayout().getPointerSize() != 8) {
    return Unimplemented("target " + target.triple + ": only 64-bit targets are supported by the kernel ABI");
  }
  ModuleContext mc(module, target);
  // Reserve the query symbol so that a kernel cannot take it.
  std::vector<llvm::Function*> fns;
  for (const auto& f : funcs) {
    if (f == nullptr) return InvalidArgument("null PrimFunc passed to code generation");
    if (f->name.empty()) return InvalidArgument("a PrimFunc has no name (kernel names must be non-empty)");
    if (f->name == KILN_KERNEL_QUERY_SYMBOL) {
      return InvalidArgument(std::string("PrimFunc name '") + KILN_KERNEL_QUERY_SYMBOL + "' is reserved");
    }
    KernelEmitter emitter(mc, *f);
    KILN_ASSIGN_OR_RETURN(llvm::Function * fn, emitter.Emit());
    fns.push_back(fn);
  }
  EmitQuery(mc, funcs, fns);
  return Status::Ok();
}

}  // namespace codegen
}  // namespace kiln
