#include "compiler/codegen/nvptx_kernel_emitter.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cmath>
#include <string>
#include <unordered_map>

namespace kiln {
namespace codegen {
namespace {

using namespace ir;  // NOLINT

constexpr unsigned kGlobalSpace = 1;  // NVPTX address space of device memory
constexpr unsigned kSharedSpace = 3;  // NVPTX address space of a block's shared memory
// Static shared memory a kernel may declare without opting in to more
// (cuFuncSetAttribute): 48 KiB on every architecture since sm_20.
constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;

// Every thread-binding loop of `s` other than blockIdx.x's (which the
// launch takes from the item's top).
void CollectBindings(const ir::Stmt& s, std::vector<const ForNode*>* out) {
  if (s == nullptr) return;
  switch (s->kind()) {
    case TirKind::kSeqStmt:
      for (const auto& x : As<SeqStmtNode>(s)->seq) CollectBindings(x, out);
      return;
    case TirKind::kFor: {
      const auto* f = As<ForNode>(s);
      if (f->for_kind == ForKind::kThreadBinding) out->push_back(f);
      return CollectBindings(f->body, out);
    }
    case TirKind::kLetStmt:
      return CollectBindings(As<LetStmtNode>(s)->body, out);
    case TirKind::kAllocate:
      return CollectBindings(As<AllocateNode>(s)->body, out);
    case TirKind::kIfThenElse: {
      const auto* i = As<IfThenElseNode>(s);
      CollectBindings(i->then_case, out);
      return CollectBindings(i->else_case, out);
    }
    default:
      return;
  }
}

class GpuEmitter {
 public:
  GpuEmitter(llvm::Module* m, const PrimFuncNode& f) : mod_(m), ctx_(m->getContext()), b_(m->getContext()), func_(f) {
    i8_ = b_.getInt8Ty();
    i32_ = b_.getInt32Ty();
    i64_ = b_.getInt64Ty();
    f32_ = b_.getFloatTy();
    gptr_ = llvm::PointerType::get(ctx_, kGlobalSpace);
  }

  Status Emit(GpuFunction* out);

 private:
  void Unsupported(const std::string& what) {
    if (error_.ok()) error_ = Unimplemented(StrFormat("PrimFunc %s (GPU): %s", func_.name.c_str(), what.c_str()));
  }

  llvm::Type* RegType(DType t) {
    if (t.lanes != 1) return nullptr;
    switch (t.code) {
      case kDLInt:
      case kDLUInt:
        return llvm::IntegerType::get(ctx_, t.bits);
      case kDLFloat:
        return t.bits == 16 ? b_.getHalfTy() : t.bits == 32 ? f32_ : t.bits == 64 ? b_.getDoubleTy() : nullptr;
      case kDLBfloat:
        return t.bits == 16 ? b_.getBFloatTy() : nullptr;
      default:
        return nullptr;
    }
  }
  llvm::Type* RegTypeOrFail(DType t) {
    llvm::Type* ty = RegType(t);
    if (ty == nullptr) {
      Unsupported("dtype " + DTypeToString(t) + " is not supported by the NVPTX code generator");
      return i64_;
    }
    return ty;
  }
  llvm::Type* MemType(DType t) { return t.is_int() && t.bits == 1 ? i8_ : RegTypeOrFail(t); }
  llvm::Value* Poison(DType t) { return llvm::PoisonValue::get(RegType(t) ? RegType(t) : i64_); }

  llvm::Value* Intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Type*> types, llvm::ArrayRef<llvm::Value*> args) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(mod_, id, types), args);
  }
  llvm::Value* ThreadIndex(const std::string& tag);

  // Expressions.
  llvm::Value* Expr(const PrimExpr& e);
  llvm::Value* Cast(llvm::Value* v, DType from, DType to);
  llvm::Value* Binary(const BinaryNode* op);
  llvm::Value* Call(const CallNode* op);
  llvm::Value* WarpShuffleDown(const CallNode* op);
  llvm::Value* Math(const std::string& name, const std::vector<llvm::Value*>& a);
  llvm::Value* Exp2(llvm::Value* x) { return Intrinsic(llvm::Intrinsic::nvvm_ex2_approx_f, {}, {x}); }
  llvm::Value* Log2(llvm::Value* x) { return Intrinsic(llvm::Intrinsic::nvvm_lg2_approx_f, {}, {x}); }
  llvm::Value* F(double v) { return llvm::ConstantFP::get(f32_, v); }
  llvm::Value* Address(const Buffer& buf, const std::vector<PrimExpr>& indices, llvm::Type** elem);

  // Statements.
  void Stmt(const ir::Stmt& s);
  void Loop(const ForNode* op);
  void SharedAllocate(const AllocateNode* op);
  void ThreadPrivateAllocate(const AllocateNode* op);

  llvm::Module* mod_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const PrimFuncNode& func_;
  llvm::Type *i8_, *i32_, *i64_, *f32_;
  llvm::PointerType* gptr_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  std::unordered_map<const VarNode*, llvm::Value*> vars_;     // scalars: dims, loop and let variables
  std::unordered_map<const VarNode*, llvm::Value*> buffers_;  // data handle -> pointer
  std::string kernel_name_;
  int64_t shared_bytes_ = 0;  // the kernel's static shared memory so far
  bool in_thread_loop_ = false;
  const VarNode* thread_var_ = nullptr;  // the enclosing threadIdx loop's variable
  int64_t block_x_ = 0;                  // the kernel's threads per block
  // Thread-private buffers (a block's "local" allocation, first dimension
  // the block's threads): data handle -> the rest of its shape.
  std::unordered_map<const VarNode*, std::vector<PrimExpr>> thread_private_;
  Status error_;
};

llvm::Value* GpuEmitter::ThreadIndex(const std::string& tag) {
  static const std::pair<const char*, llvm::Intrinsic::ID> kRegs[] = {
      {"blockIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x},
      {"blockIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y},
      {"blockIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
      {"threadIdx.x", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
      {"threadIdx.y", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y},
      {"threadIdx.z", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z},
  };
  for (const auto& r : kRegs)
    if (tag == r.first) return Intrinsic(r.second, {}, {});
  Unsupported("unknown thread tag '" + tag + "'");
  return b_.getInt32(0);
}

// ---------------------------------------------------------------- expressions

llvm::Value* GpuEmitter::Cast(llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  llvm::Type* ty = RegTypeOrFail(to);
  bool from_bool = from.is_int() && from.bits == 1;
  if (to.is_int() && to.bits == 1 && (to.code == kDLInt || to.code == kDLUInt)) {
    if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  bool from_float = from.code == kDLFloat || from.code == kDLBfloat;
  bool to_float = to.code == kDLFloat || to.code == kDLBfloat;
  if (!from_float && !to_float) {
    return from.code == kDLInt && !from_bool ? b_.CreateSExtOrTrunc(v, ty) : b_.CreateZExtOrTrunc(v, ty);
  }
  if (!from_float) return from.code == kDLInt && !from_bool ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
  if (!to_float) {
    // Saturating, as the CPU codegen (NaN -> 0).
    return Intrinsic(to.code == kDLInt ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat, {ty, v->getType()},
                     {v});
  }
  if (v->getType() == ty) return v;
  return b_.CreateFPCast(v, ty);
}

llvm::Value* GpuEmitter::Expr(const PrimExpr& e) {
  if (!error_.ok()) return Poison(e.dtype());
  switch (e->kind()) {
    case TirKind::kIntImm: {
      DType t = e.dtype();
      if (t.is_float()) return llvm::ConstantFP::get(RegTypeOrFail(t), static_cast<double>(e.as<IntImmNode>()->value));
      return llvm::ConstantInt::get(RegTypeOrFail(t), static_cast<uint64_t>(e.as<IntImmNode>()->value), true);
    }
    case TirKind::kFloatImm:
      return llvm::ConstantFP::get(RegTypeOrFail(e.dtype()), e.as<FloatImmNode>()->value);
    case TirKind::kVar: {
      auto it = vars_.find(e.as<VarNode>());
      if (it == vars_.end()) {
        Unsupported("variable '" + e.as<VarNode>()->name + "' is not bound in the kernel");
        return Poison(e.dtype());
      }
      return it->second;
    }
    case TirKind::kNot:
      return b_.CreateNot(Expr(e.as<NotNode>()->a));
    case TirKind::kCast: {
      const auto* c = e.as<CastNode>();
      return Cast(Expr(c->value), c->value.dtype(), c->dtype);
    }
    case TirKind::kSelect: {
      const auto* s = e.as<SelectNode>();
      llvm::Value* c = Expr(s->cond);
      llvm::Value* t = Expr(s->true_value);
      llvm::Value* f = Expr(s->false_value);
      return b_.CreateSelect(c, t, f);
    }
    case TirKind::kBufferLoad: {
      const auto* l = e.as<BufferLoadNode>();
      llvm::Type* elem = nullptr;
      llvm::Value* p = Address(l->buffer, l->indices, &elem);
      if (p == nullptr) return Poison(e.dtype());
      llvm::Value* v = b_.CreateLoad(elem, p);
      if (elem == i8_ && l->dtype.is_int() && l->dtype.bits == 1) v = b_.CreateICmpNE(v, b_.getInt8(0));
      return v;
    }
    case TirKind::kCall:
      return Call(e.as<CallNode>());
    default:
      if (IsBinary(e->kind())) return Binary(static_cast<const BinaryNode*>(e.get()));
      Unsupported(std::string("expression ") + TirKindName(e->kind()));
      return Poison(e.dtype());
  }
}

llvm::Value* GpuEmitter::Binary(const BinaryNode* op) {
  DType t = op->a.dtype();
  llvm::Value* a = Expr(op->a);
  llvm::Value* c = Cast(Expr(op->b), op->b.dtype(), t);
  if (!error_.ok()) return Poison(op->dtype);
  bool fl = t.code == kDLFloat || t.code == kDLBfloat;
  bool sgn = t.code == kDLInt;
  switch (op->kind()) {
    case TirKind::kAdd: return fl ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
    case TirKind::kSub: return fl ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
    case TirKind::kMul: return fl ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
    case TirKind::kDiv:
    case TirKind::kFloorDiv:
    case TirKind::kFloorMod: {
      if (fl) {
        llvm::Value* q = b_.CreateFDiv(a, c);
        if (op->kind() == TirKind::kDiv) return q;
        llvm::Value* fq = Intrinsic(llvm::Intrinsic::floor, {q->getType()}, {q});
        return op->kind() == TirKind::kFloorDiv ? fq : b_.CreateFSub(a, b_.CreateFMul(fq, c));
      }
      // x / 0 and x % 0 give 0, as on the CPU (no trap on either).
      llvm::Value* zero = llvm::ConstantInt::get(a->getType(), 0);
      llvm::Value* is_zero = b_.CreateICmpEQ(c, zero);
      llvm::Value* safe = b_.CreateSelect(is_zero, llvm::ConstantInt::get(a->getType(), 1), c);
      llvm::Value* q = sgn ? b_.CreateSDiv(a, safe) : b_.CreateUDiv(a, safe);
      llvm::Value* r = sgn ? b_.CreateSRem(a, safe) : b_.CreateURem(a, safe);
      llvm::Value* out;
      if (op->kind() == TirKind::kDiv || !sgn) {
        out = op->kind() == TirKind::kFloorMod ? r : q;
      } else {
        // Round toward negative infinity: adjust when the remainder is
        // non-zero and its sign differs from the divisor's.
        llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, safe), zero));
        out = op->kind() == TirKind::kFloorDiv
                  ? b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()))
                  : b_.CreateAdd(r, b_.CreateSelect(adjust, safe, zero));
      }
      return b_.CreateSelect(is_zero, zero, out);
    }
    case TirKind::kMin:
    case TirKind::kMax: {
      bool is_max = op->kind() == TirKind::kMax;
      if (fl) {
        // NaN-propagating (numpy): a NaN on either side wins.
        llvm::Value* pick_a = is_max ? b_.CreateFCmpOGT(a, c) : b_.CreateFCmpOLT(a, c);
        pick_a = b_.CreateOr(pick_a, b_.CreateFCmpUNO(a, a));
        return b_.CreateSelect(pick_a, a, c);
      }
      llvm::Value* gt = sgn ? b_.CreateICmpSGT(a, c) : b_.CreateICmpUGT(a, c);
      return is_max ? b_.CreateSelect(gt, a, c) : b_.CreateSelect(gt, c, a);
    }
    case TirKind::kEQ: return fl ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
    case TirKind::kNE: return fl ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
    case TirKind::kLT: return fl ? b_.CreateFCmpOLT(a, c) : sgn ? b_.CreateICmpSLT(a, c) : b_.CreateICmpULT(a, c);
    case TirKind::kLE: return fl ? b_.CreateFCmpOLE(a, c) : sgn ? b_.CreateICmpSLE(a, c) : b_.CreateICmpULE(a, c);
    case TirKind::kGT: return fl ? b_.CreateFCmpOGT(a, c) : sgn ? b_.CreateICmpSGT(a, c) : b_.CreateICmpUGT(a, c);
    case TirKind::kGE: return fl ? b_.CreateFCmpOGE(a, c) : sgn ? b_.CreateICmpSGE(a, c) : b_.CreateICmpUGE(a, c);
    case TirKind::kAnd: return b_.CreateAnd(a, c);
    case TirKind::kOr: return b_.CreateOr(a, c);
    default:
      Unsupported(std::string("binary ") + TirKindName(op->kind()));
      return Poison(op->dtype);
  }
}

// Float32 math; x is a float.
llvm::Value* GpuEmitter::Math(const std::string& name, const std::vector<llvm::Value*>& a) {
  llvm::Value* x = a[0];
  const double kLog2e = 1.4426950408889634, kLn2 = 0.6931471805599453;
  if (name == "exp") return Exp2(b_.CreateFMul(x, F(kLog2e)));
  if (name == "exp2") return Exp2(x);
  if (name == "log") return b_.CreateFMul(Log2(x), F(kLn2));
  if (name == "log2") return Log2(x);
  if (name == "log10") return b_.CreateFMul(Log2(x), F(0.30102999566398120));
  if (name == "sqrt") return Intrinsic(llvm::Intrinsic::sqrt, {f32_}, {x});
  if (name == "rsqrt") return b_.CreateFDiv(F(1.0), Intrinsic(llvm::Intrinsic::sqrt, {f32_}, {x}));
  if (name == "sigmoid") return b_.CreateFDiv(F(1.0), b_.CreateFAdd(F(1.0), Exp2(b_.CreateFMul(x, F(-kLog2e)))));
  if (name == "tanh") {
    // tanh|x| = (1 - e^-2|x|) / (1 + e^-2|x|), with the sign put back; near 0
    // the odd series, where the quotient would cancel.
    llvm::Value* ax = Intrinsic(llvm::Intrinsic::fabs, {f32_}, {x});
    llvm::Value* t = Exp2(b_.CreateFMul(ax, F(-2.0 * kLog2e)));
    llvm::Value* q = b_.CreateFDiv(b_.CreateFSub(F(1.0), t), b_.CreateFAdd(F(1.0), t));
    llvm::Value* x2 = b_.CreateFMul(x, x);
    llvm::Value* series = b_.CreateFMul(x, b_.CreateFAdd(F(1.0), b_.CreateFMul(x2, b_.CreateFAdd(F(-1.0 / 3), b_.CreateFMul(x2, F(2.0 / 15))))));
    llvm::Value* big = Intrinsic(llvm::Intrinsic::copysign, {f32_}, {q, x});
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, F(0.0625)), series, big);
  }
  if (name == "erf") {
    // erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), z = |x| (Chebyshev
    // fit, fractional error below 1.2e-7); erf = sign(x) (1 - erfc |x|).
    static const double kP[] = {-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                                0.27886807,  -1.13520398, 1.48851587, -0.82215223, 0.17087277};
    llvm::Value* z = Intrinsic(llvm::Intrinsic::fabs, {f32_}, {x});
    llvm::Value* t = b_.CreateFDiv(F(1.0), b_.CreateFAdd(F(1.0), b_.CreateFMul(F(0.5), z)));
    llvm::Value* p = F(kP[9]);
    for (int i = 8; i >= 0; --i) p = b_.CreateFAdd(F(kP[i]), b_.CreateFMul(t, p));
    llvm::Value* arg = b_.CreateFSub(p, b_.CreateFMul(z, z));
    llvm::Value* erfc = b_.CreateFMul(t, Exp2(b_.CreateFMul(arg, F(kLog2e))));
    return Intrinsic(llvm::Intrinsic::copysign, {f32_}, {b_.CreateFSub(F(1.0), erfc), x});
  }
  if (name == "pow") return Exp2(b_.CreateFMul(a[1], Log2(x)));
  Unsupported("intrinsic " + name + " has no NVPTX lowering");
  return x;
}

llvm::Value* GpuEmitter::Call(const CallNode* op) {
  std::string name = op->op.compare(0, 4, "tir.") == 0 ? op->op.substr(4) : op->op;
  DType t = op->dtype;
  if (name == "kiln.warp_shuffle_down") return WarpShuffleDown(op);
  if (name == "if_then_else" && op->args.size() == 3) {
    // Lazy: the untaken side may load out of bounds (padding).
    llvm::Value* c = Expr(op->args[0]);
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "ite.then", fn_);
    auto* else_bb = llvm::BasicBlock::Create(ctx_, "ite.else", fn_);
    auto* merge = llvm::BasicBlock::Create(ctx_, "ite.end", fn_);
    b_.CreateCondBr(c, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    llvm::Value* tv = Cast(Expr(op->args[1]), op->args[1].dtype(), t);
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(else_bb);
    llvm::Value* fv = Cast(Expr(op->args[2]), op->args[2].dtype(), t);
    llvm::BasicBlock* else_end = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    if (!error_.ok()) return Poison(t);
    auto* phi = b_.CreatePHI(tv->getType(), 2);
    phi->addIncoming(tv, then_end);
    phi->addIncoming(fv, else_end);
    return phi;
  }
  std::vector<llvm::Value*> args;
  for (const auto& a : op->args) args.push_back(Expr(a));
  if (!error_.ok() || args.empty()) {
    if (args.empty()) Unsupported("intrinsic " + name + " without arguments");
    return Poison(t);
  }
  DType at = op->args[0].dtype();
  bool fl = at.code == kDLFloat || at.code == kDLBfloat;
  if ((name == "abs" || name == "fabs") && !fl) {
    llvm::Value* neg = b_.CreateNeg(args[0]);
    return b_.CreateSelect(b_.CreateICmpSLT(args[0], llvm::ConstantInt::get(args[0]->getType(), 0)), neg, args[0]);
  }
  if (!fl) {
    Unsupported("intrinsic " + name + " on " + DTypeToString(at));
    return Poison(t);
  }
  llvm::Type* ty = args[0]->getType();
  if (name == "isnan") return b_.CreateFCmpUNO(args[0], args[0]);
  llvm::Value* inf = llvm::ConstantFP::getInfinity(ty);
  if (name == "isinf") return b_.CreateFCmpOEQ(Intrinsic(llvm::Intrinsic::fabs, {ty}, {args[0]}), inf);
  if (name == "isfinite") return b_.CreateFCmpOLT(Intrinsic(llvm::Intrinsic::fabs, {ty}, {args[0]}), inf);
  // Exact in hardware at every width.
  static const std::pair<const char*, llvm::Intrinsic::ID> kNative[] = {
      {"fabs", llvm::Intrinsic::fabs},   {"abs", llvm::Intrinsic::fabs},   {"floor", llvm::Intrinsic::floor},
      {"ceil", llvm::Intrinsic::ceil},   {"trunc", llvm::Intrinsic::trunc}, {"round", llvm::Intrinsic::rint},
      {"nearbyint", llvm::Intrinsic::rint}};
  for (const auto& n : kNative)
    if (name == n.first) return Intrinsic(n.second, {ty}, {args[0]});
  if (name == "fma" && args.size() == 3) return Intrinsic(llvm::Intrinsic::fma, {ty}, args);
  if (name == "sqrt" && ty->isDoubleTy()) return Intrinsic(llvm::Intrinsic::sqrt, {ty}, args);
  if (ty->isDoubleTy()) {
    Unsupported("intrinsic " + name + " on float64 (the GPU lowering is float32)");
    return Poison(t);
  }
  for (auto& a : args) a = b_.CreateFPCast(a, f32_);
  llvm::Value* r = Math(name, args);
  return ty == f32_ ? r : b_.CreateFPCast(r, ty);
}

// kiln.warp_shuffle_down(value, delta): lane l gets `value` of lane l +
// delta of its warp (its own where l + delta >= 32), every lane taking part
// (a full mask): the caller keeps the whole warp converged around it.
llvm::Value* GpuEmitter::WarpShuffleDown(const CallNode* op) {
  if (op->args.size() != 2) {
    Unsupported("kiln.warp_shuffle_down takes a value and a lane delta");
    return Poison(op->dtype);
  }
  DType t = op->args[0].dtype();
  bool f32 = t == DType::Float32(), i32 = t == DType::Int32();
  if (!f32 && !i32) {
    Unsupported("kiln.warp_shuffle_down of " + DTypeToString(t) + " (float32 and int32 only)");
    return Poison(op->dtype);
  }
  llvm::Value* v = Expr(op->args[0]);
  llvm::Value* delta = Cast(Expr(op->args[1]), op->args[1].dtype(), DType::Int32());
  if (!error_.ok()) return Poison(op->dtype);
  // The last operand packs the clamp lane (31) and the segment mask (0):
  // one segment of 32 lanes.
  return Intrinsic(f32 ? llvm::Intrinsic::nvvm_shfl_sync_down_f32 : llvm::Intrinsic::nvvm_shfl_sync_down_i32, {},
                   {b_.getInt32(-1), v, delta, b_.getInt32(0x1f)});
}

llvm::Value* GpuEmitter::Address(const Buffer& buf, const std::vector<PrimExpr>& indices, llvm::Type** elem) {
  auto it = buffers_.find(buf->data.get());
  if (it == buffers_.end()) {
    Unsupported("buffer '" + buf->name + "' is not a parameter, workspace or allocation of the kernel");
    return nullptr;
  }
  if (!buf->strides.empty()) {
    Unsupported("buffer '" + buf->name + "' has strides");
    return nullptr;
  }
  if (indices.size() != buf->shape.size() && !(indices.size() == 1 && buf->shape.empty())) {
    Unsupported("buffer '" + buf->name + "' indexed with the wrong number of indices");
    return nullptr;
  }
  size_t first = 0;
  if (thread_private_.count(buf->data.get())) {
    // The thread's own row: the first index must be the thread.
    const PrimExpr& t = indices[0];
    const auto* c = t.as<CastNode>();
    const VarNode* v = c != nullptr ? c->value.as<VarNode>() : t.as<VarNode>();
    if (thread_var_ == nullptr || v != thread_var_) {
      Unsupported("thread-private buffer '" + buf->name + "' indexed with other than the thread's variable first");
      return nullptr;
    }
    first = 1;
  }
  llvm::Value* flat = b_.getInt64(0);
  for (size_t d = first; d < indices.size(); ++d) {
    if (d > first) flat = b_.CreateMul(flat, Cast(Expr(buf->shape[d]), buf->shape[d].dtype(), DType::Int64()));
    flat = b_.CreateAdd(flat, Cast(Expr(indices[d]), indices[d].dtype(), DType::Int64()));
  }
  *elem = MemType(buf->dtype);
  return b_.CreateInBoundsGEP(*elem, it->second, flat);
}

// ---------------------------------------------------------------- statements

void GpuEmitter::Loop(const ForNode* op) {
  llvm::Type* ty = RegTypeOrFail(op->loop_var->dtype);
  llvm::Value* begin = Cast(Expr(op->min), op->min.dtype(), op->loop_var->dtype);
  llvm::Value* end = b_.CreateAdd(begin, Cast(Expr(op->extent), op->extent.dtype(), op->loop_var->dtype));
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, "for.head", fn_);
  auto* body = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for.end", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  auto* i = b_.CreatePHI(ty, 2, op->loop_var->name);
  i->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), body, exit);
  b_.SetInsertPoint(body);
  vars_[op->loop_var.get()] = i;
  Stmt(op->body);
  vars_.erase(op->loop_var.get());
  llvm::Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(ty, 1), "", true, true);
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

// A block's shared buffer: a global of the kernel in address space 3, of a
// static size (dynamic shared memory, sized at launch, is not supported).
void GpuEmitter::SharedAllocate(const AllocateNode* a) {
  if (in_thread_loop_) {
    return Unsupported("shared buffer '" + a->buffer->name +
                       "' is allocated inside a thread loop (allocate it in the block, around the thread loops)");
  }
  int64_t n = 1;
  for (const auto& d : a->buffer->shape) {
    const auto* c = d.as<IntImmNode>();
    if (c == nullptr) {
      return Unsupported("shared buffer '" + a->buffer->name +
                         "' has a symbolic size (dynamic shared memory is not supported)");
    }
    n *= c->value;
  }
  llvm::Type* elem = MemType(a->buffer->dtype);
  shared_bytes_ += n * ((a->buffer->dtype.bits + 7) / 8);
  if (shared_bytes_ > kMaxStaticSharedBytes) {
    return Unsupported(StrFormat("shared buffer '%s' brings the kernel's shared memory to %lld bytes, above the "
                                 "%lld of static shared memory",
                                 a->buffer->name.c_str(), static_cast<long long>(shared_bytes_),
                                 static_cast<long long>(kMaxStaticSharedBytes)));
  }
  auto* ty = llvm::ArrayType::get(elem, static_cast<uint64_t>(n));
  auto* g = new llvm::GlobalVariable(*mod_, ty, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(ty),
                                     kernel_name_ + "_" + a->buffer->name, nullptr,
                                     llvm::GlobalValue::NotThreadLocal, kSharedSpace);
  g->setAlignment(llvm::Align(16));
  buffers_[a->buffer->data.get()] = g;
  Stmt(a->body);
  buffers_.erase(a->buffer->data.get());
}

// A "local" buffer allocated in the block, around its thread loops: values
// a thread keeps from one phase to the next (a matmul's accumulators). Its
// first dimension is the block's threads and every access indexes it with
// the thread loop's variable, so each thread holds only its own row, in
// registers or local memory. (Run with serial thread loops on the CPU, it
// is the whole array.)
void GpuEmitter::ThreadPrivateAllocate(const AllocateNode* a) {
  const auto& shape = a->buffer->shape;
  const auto* threads = shape.empty() ? nullptr : shape[0].as<IntImmNode>();
  if (threads == nullptr || threads->value != block_x_) {
    return Unsupported(StrFormat("local buffer '%s' is allocated outside the thread loops: its first dimension must "
                                 "be the block's %lld threads",
                                 a->buffer->name.c_str(), static_cast<long long>(block_x_)));
  }
  int64_t n = 1;
  for (size_t d = 1; d < shape.size(); ++d) {
    const auto* c = shape[d].as<IntImmNode>();
    if (c == nullptr) return Unsupported("a thread's buffer '" + a->buffer->name + "' has a symbolic size");
    n *= c->value;
  }
  if (n * ((a->buffer->dtype.bits + 7) / 8) > 16384) {
    return Unsupported(StrFormat("a thread's buffer '%s' of %lld elements is too large for registers and local memory",
                                 a->buffer->name.c_str(), static_cast<long long>(n)));
  }
  llvm::IRBuilder<> eb(entry_, entry_->begin());
  buffers_[a->buffer->data.get()] = eb.CreateAlloca(MemType(a->buffer->dtype), eb.getInt64(n), a->buffer->name);
  thread_private_[a->buffer->data.get()] = std::vector<PrimExpr>(shape.begin() + 1, shape.end());
  Stmt(a->body);
  thread_private_.erase(a->buffer->data.get());
  buffers_.erase(a->buffer->data.get());
}

void GpuEmitter::Stmt(const ir::Stmt& s) {
  if (!error_.ok() || s == nullptr) return;
  switch (s->kind()) {
    case TirKind::kSeqStmt:
      for (const auto& x : As<SeqStmtNode>(s)->seq) Stmt(x);
      return;
    case TirKind::kFor: {
      const auto* f = As<ForNode>(s);
      if (f->for_kind != ForKind::kThreadBinding) return Loop(f);
      bool thread_loop = f->thread_tag.compare(0, 9, "threadIdx") == 0;
      if (thread_loop && in_thread_loop_) {
        return Unsupported("loop " + f->loop_var->name + " is bound to " + f->thread_tag +
                           " inside another thread loop");
      }
      llvm::Value* idx = ThreadIndex(f->thread_tag);
      vars_[f->loop_var.get()] = Cast(idx, DType::Int32(), f->loop_var->dtype);
      if (thread_loop) {
        in_thread_loop_ = true;
        thread_var_ = f->loop_var.get();
      }
      Stmt(f->body);
      if (thread_loop) {
        in_thread_loop_ = false;
        thread_var_ = nullptr;
      }
      vars_.erase(f->loop_var.get());
      return;
    }
    case TirKind::kLetStmt: {
      const auto* l = As<LetStmtNode>(s);
      vars_[l->var.get()] = Cast(Expr(l->value), l->value.dtype(), l->var->dtype);
      Stmt(l->body);
      vars_.erase(l->var.get());
      return;
    }
    case TirKind::kIfThenElse: {
      const auto* i = As<IfThenElseNode>(s);
      llvm::Value* c = Expr(i->cond);
      auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
      auto* merge = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
      auto* else_bb = i->else_case ? llvm::BasicBlock::Create(ctx_, "if.else", fn_) : merge;
      b_.CreateCondBr(c, then_bb, else_bb);
      b_.SetInsertPoint(then_bb);
      Stmt(i->then_case);
      b_.CreateBr(merge);
      if (i->else_case) {
        b_.SetInsertPoint(else_bb);
        Stmt(i->else_case);
        b_.CreateBr(merge);
      }
      b_.SetInsertPoint(merge);
      return;
    }
    case TirKind::kBufferStore: {
      const auto* st = As<BufferStoreNode>(s);
      llvm::Value* v = Cast(Expr(st->value), st->value.dtype(), st->buffer->dtype);
      llvm::Type* elem = nullptr;
      llvm::Value* p = Address(st->buffer, st->indices, &elem);
      if (p == nullptr || !error_.ok()) return;
      if (elem == i8_ && v->getType()->isIntegerTy(1)) v = b_.CreateZExt(v, i8_);
      b_.CreateStore(v, p);
      return;
    }
    case TirKind::kAllocate: {
      const auto* a = As<AllocateNode>(s);
      if (a->buffer->scope == "shared") return SharedAllocate(a);
      if (a->buffer->scope == "local" && !in_thread_loop_) return ThreadPrivateAllocate(a);
      if (a->buffer->scope != "global" && a->buffer->scope != "local") {
        return Unsupported("allocation of '" + a->buffer->name + "' in scope '" + a->buffer->scope +
                           "' (global, local and shared are supported)");
      }
      int64_t n = 1;
      for (const auto& d : a->buffer->shape) {
        const auto* c = d.as<IntImmNode>();
        if (c == nullptr) return Unsupported("a thread's buffer '" + a->buffer->name + "' has a symbolic size");
        n *= c->value;
      }
      if (n * ((a->buffer->dtype.bits + 7) / 8) > 16384) {
        return Unsupported(StrFormat("a thread's buffer '%s' of %lld elements is too large for registers and local memory",
                                     a->buffer->name.c_str(), static_cast<long long>(n)));
      }
      // Per-thread memory: an alloca at the kernel's entry (local memory or,
      // once promoted, registers).
      llvm::IRBuilder<> eb(entry_, entry_->begin());
      llvm::Value* mem = eb.CreateAlloca(MemType(a->buffer->dtype), eb.getInt64(n), a->buffer->name);
      buffers_[a->buffer->data.get()] = mem;
      Stmt(a->body);
      buffers_.erase(a->buffer->data.get());
      return;
    }
    case TirKind::kEvaluate: {
      const PrimExpr& v = As<EvaluateNode>(s)->value;
      if (v.as<IntImmNode>()) return;
      const auto* c = v.as<CallNode>();
      if (c && (c->op == "tvm_storage_sync" || c->op == "tir.tvm_storage_sync")) {
        // Inside a thread loop a barrier would sit under the loop's guards,
        // where some threads may not reach it (a hang); the schedules put
        // barriers between thread loops, where every thread of the block is.
        if (in_thread_loop_) return Unsupported("a barrier (tvm_storage_sync) inside a thread loop");
        Intrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
        return;
      }
      return Unsupported("an evaluated expression other than a barrier");
    }
    default:
      return Unsupported(std::string("statement ") + TirKindName(s->kind()) + " (is the PrimFunc lowered?)");
  }
}

Status GpuEmitter::Emit(GpuFunction* out) {
  out->name = func_.name;
  std::unordered_map<const VarNode*, bool> is_dim;
  for (size_t i = 0; i < func_.params.size(); ++i) {
    const Var& p = func_.params[i];
    if (func_.BufferOf(p)) {
      out->buffer_params.push_back(static_cast<int32_t>(i));
    } else if (p->dtype.code == kDLOpaqueHandle) {
      return Unimplemented("PrimFunc " + func_.name + " (GPU): handle parameter '" + p->name + "' has no buffer");
    } else {
      out->dims.push_back(GpuDim{p, static_cast<int32_t>(i), -1});
      is_dim[p.get()] = true;
    }
  }
  for (int32_t i : out->buffer_params) {
    Buffer b = func_.BufferOf(func_.params[i]);
    for (size_t d = 0; d < b->shape.size(); ++d) {
      const auto* v = b->shape[d].as<VarNode>();
      if (v == nullptr || is_dim.count(v)) continue;
      is_dim[v] = true;
      out->dims.push_back(GpuDim{std::static_pointer_cast<const VarNode>(b->shape[d].node()), i, static_cast<int32_t>(d)});
    }
  }
  ir::Stmt s = func_.body;
  std::vector<Buffer> workspaces;
  while (const auto* a = As<AllocateNode>(s)) {
    workspaces.push_back(a->buffer);
    out->workspaces.push_back(GpuWorkspace{a->buffer->name, a->buffer->dtype, a->buffer->shape});
    s = a->body;
  }
  std::vector<ir::Stmt> items;
  if (const auto* seq = As<SeqStmtNode>(s)) {
    items = seq->seq;
  } else {
    items.push_back(s);
  }
  // One parameter list for every kernel of the function.
  std::vector<llvm::Type*> params;
  for (size_t i = 0; i < out->buffer_params.size() + workspaces.size(); ++i) params.push_back(gptr_);
  for (size_t i = 0; i < out->dims.size(); ++i) params.push_back(i64_);
  auto* fn_ty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  llvm::NamedMDNode* annotations = mod_->getOrInsertNamedMetadata("nvvm.annotations");

  for (size_t k = 0; k < items.size(); ++k) {
    // The launch: the thread-binding loops around the item.
    GpuKernel kernel;
    kernel.name = StrFormat("%s_k%zu", func_.name.c_str(), k);
    const ir::Stmt* at = &items[k];
    bool has_grid = false, has_block = false;
    if (const auto* f = As<ForNode>(*at); f != nullptr && f->for_kind == ForKind::kThreadBinding &&
                                          f->thread_tag == "blockIdx.x") {
      kernel.grid_x = f->extent;
      has_grid = true;
      at = &f->body;
    }
    // The block's threads: one thread loop around the body, or (a block
    // that shares memory) several in sequence, separated by barriers, each
    // a phase that every thread of the block runs.
    std::vector<const ForNode*> bound;
    CollectBindings(*at, &bound);
    for (const ForNode* f : bound) {
      if (f->thread_tag != "threadIdx.x") {
        return Unimplemented("PrimFunc " + func_.name + " (GPU): only blockIdx.x and threadIdx.x are bound yet, not " +
                             f->thread_tag);
      }
      const auto* c = f->extent.as<IntImmNode>();
      if (c == nullptr) {
        return Unimplemented("PrimFunc " + func_.name + " (GPU): threadIdx.x must have a constant extent");
      }
      if (has_block && c->value != kernel.block_x) {
        return Unimplemented(StrFormat("PrimFunc %s (GPU): item %zu binds threadIdx.x with extents %lld and %lld "
                                       "(every thread loop of a kernel spans the whole block)",
                                       func_.name.c_str(), k, static_cast<long long>(kernel.block_x),
                                       static_cast<long long>(c->value)));
      }
      kernel.block_x = c->value;
      has_block = true;
    }
    if (!has_grid || !has_block) {
      return Unimplemented(StrFormat("PrimFunc %s (GPU): item %zu is not bound to blockIdx.x and threadIdx.x "
                                     "(run tir::ScheduleForGpu)",
                                     func_.name.c_str(), k));
    }
    kernel_name_ = kernel.name;
    shared_bytes_ = 0;
    in_thread_loop_ = false;
    thread_var_ = nullptr;
    block_x_ = kernel.block_x;
    thread_private_.clear();
    fn_ = llvm::Function::Create(fn_ty, llvm::GlobalValue::ExternalLinkage, kernel.name, mod_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    unsigned a = 0;
    vars_.clear();
    buffers_.clear();
    for (int32_t i : out->buffer_params) {
      Buffer buf = func_.BufferOf(func_.params[i]);
      llvm::Argument* arg = fn_->getArg(a);
      arg->setName(buf->name);
      fn_->addParamAttr(a, llvm::Attribute::NoAlias);
      buffers_[buf->data.get()] = arg;
      buffers_[func_.params[i].get()] = arg;
      ++a;
    }
    for (const Buffer& w : workspaces) {
      fn_->getArg(a)->setName(w->name);
      fn_->addParamAttr(a, llvm::Attribute::NoAlias);
      buffers_[w->data.get()] = fn_->getArg(a++);
    }
    for (const GpuDim& d : out->dims) {
      llvm::Argument* arg = fn_->getArg(a++);
      arg->setName(d.var->name);
      vars_[d.var.get()] = Cast(arg, DType::Int64(), d.var->dtype);
    }
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry_);

    a = static_cast<unsigned>(out->buffer_params.size() + workspaces.size());
    for (const GpuDim& d : out->dims) vars_[d.var.get()] = Cast(fn_->getArg(a++), DType::Int64(), d.var->dtype);
    Stmt(items[k]);
    KILN_RETURN_IF_ERROR(error_);
    b_.CreateRetVoid();
    // A kernel entry, and the most threads a block will have (lets ptxas
    // budget registers for it).
    llvm::Metadata* fn_md = llvm::ValueAsMetadata::get(fn_);
    annotations->addOperand(llvm::MDNode::get(ctx_, {fn_md, llvm::MDString::get(ctx_, "kernel"),
                                                     llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
    annotations->addOperand(
        llvm::MDNode::get(ctx_, {fn_md, llvm::MDString::get(ctx_, "maxntidx"),
                                 llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<int32_t>(kernel.block_x)))}));
    out->kernels.push_back(kernel);
  }
  return Status::Ok();
}

}  // namespace

Status EmitNvptxKernels(const std::vector<PrimFunc>& funcs, llvm::Module* module, std::vector<GpuFunction>* out) {
  for (const auto& f : funcs) {
    GpuEmitter e(module, *f);
    GpuFunction g;
    KILN_RETURN_IF_ERROR(e.Emit(&g));
    out->push_back(std::move(g));
  }
  return Status::Ok();
}

}  // namespace codegen
}  // namespace kiln
