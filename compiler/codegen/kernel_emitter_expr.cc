// Expressions: casts, arithmetic, comparisons, intrinsics, loads, and the
// bodies of explicit vector loops (vector_loop.h).
#include <functional>

#include "compiler/codegen/kernel_emitter_internal.h"
#include "compiler/codegen/vector_loop.h"
#include "compiler/codegen/vector_math.h"
#include "compiler/tir/nest_util.h"

namespace kiln {
namespace codegen {
namespace emitter {

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
    const bool via_i32 = to.bits < 32 || IsSigned(to);
    // LLVM 14 scalarizes a vector fptosi.sat to i32 on x86 (a compare, branch
    // and cvttss2si per lane, also where its loop vectorizer widened a scalar
    // one: DynamicQuantizeLinear's float -> uint8 ran at a sixth of the speed
    // of a float copy); the same result spelled as selects around a plain
    // fptosi vectorizes.
    llvm::Type* elem = v->getType()->getScalarType();
    if (via_i32 && (elem->isFloatTy() || elem->isDoubleTy())) return b_.CreateTrunc(FloatToI32Sat(v), ty);
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

// llvm.fptosi.sat to i32 of a float or double (scalar or vector): NaN -> 0,
// below -2^31 -> INT32_MIN, from 2^31 up -> INT32_MAX. NaN is replaced first
// and the value clamped into [-2^31, the largest value below 2^31], so the
// fptosi is never out of range (poison); the top lanes are then INT32_MAX.
llvm::Value* KernelEmitter::FloatToI32Sat(llvm::Value* v) {
  llvm::Type* vt = v->getType();
  llvm::Type* ft = vt->getScalarType();
  llvm::Type* it = mc_.i32;
  if (auto* vec = llvm::dyn_cast<llvm::VectorType>(vt)) it = llvm::VectorType::get(mc_.i32, vec->getElementCount());
  auto fconst = [&](double c) { return llvm::ConstantFP::get(vt, c); };
  const double lo = -2147483648.0;
  // The largest float (or double) below 2^31.
  const double hi = ft->isDoubleTy() ? 2147483647.0 : 2147483520.0;
  llvm::Value* x = b_.CreateSelect(b_.CreateFCmpUNO(v, v), fconst(0.0), v);
  x = b_.CreateSelect(b_.CreateFCmpOLT(x, fconst(lo)), fconst(lo), x);
  llvm::Value* top = b_.CreateFCmpOGT(x, fconst(hi));
  x = b_.CreateSelect(top, fconst(hi), x);
  llvm::Value* r = b_.CreateFPToSI(x, it);
  return b_.CreateSelect(top, llvm::ConstantInt::get(it, 2147483647), r);
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
      if (fp) return FloatMinMax(is_max, a, c);
      llvm::Intrinsic::ID id = is_max ? (sgn ? llvm::Intrinsic::smax : llvm::Intrinsic::umax)
                                      : (sgn ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
      return b_.CreateBinaryIntrinsic(id, a, c);
    }
    default:
      break;
  }
  return Compare(k, t, a, c, op);
}

// Float min/max, scalar or vector. NaN in either operand gives NaN (numpy's
// minimum/maximum). Against a constant that is not NaN (ReLU's 0, a clip's
// bounds): k > x ? k : x gives x when x is NaN, one vmaxps / vminps (whose
// second operand is what a NaN returns) instead of two compares and two
// blends.
llvm::Value* KernelEmitter::FloatMinMax(bool is_max, llvm::Value* a, llvm::Value* c) {
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
  if (name == "prefetch") {
    // prefetch(B[i...]): a hint to bring the element's cache line in for
    // reading (llvm.prefetch, locality 3: keep it in every level); no
    // value, no fault. Schedules issue it ahead of a stream of loads whose
    // lines come from memory (conv_kernel_tile.cc, kPrefetchAhead...).
    if (!arity(1)) return Poison(op->dtype);
    const auto* l = op->args[0].as<BufferLoadNode>();
    if (l == nullptr) {
      Unsupported("intrinsic 'prefetch' takes a buffer load");
      return Poison(op->dtype);
    }
    b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {mc_.ptr},
                       {Address(l->buffer, l->indices), b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
    return llvm::ConstantInt::get(RegType(op->dtype), 0);
  }
  if (name == "transpose16") {
    // transpose16(S[i...], stride, D[j...], off_0, ..., off_15): the 16 x 16
    // floats at S + r * stride + c (r, c < 16) transposed into rows at D +
    // off_r: D[off_r + c] = S[c * stride + r]. Sixteen row loads, four
    // rounds of two-input shuffles (each swapping the off-diagonal blocks
    // of 8, 4, 2, 1 between row pairs), sixteen row stores: moves between
    // NCHW planes and channel-minor tiles (depthwise_channel_block.h), where
    // one load or store per element cost about 8x the shuffles.
    if (!arity(19)) return Poison(op->dtype);
    const auto* src = op->args[0].as<BufferLoadNode>();
    const auto* dst = op->args[2].as<BufferLoadNode>();
    if (src == nullptr || dst == nullptr) {
      Unsupported("intrinsic 'transpose16' takes buffer loads as its source and destination");
      return Poison(op->dtype);
    }
    auto* vty = llvm::FixedVectorType::get(b_.getFloatTy(), 16);
    llvm::Value* s_addr = Address(src->buffer, src->indices);
    llvm::Value* d_addr = Address(dst->buffer, dst->indices);
    llvm::Value* stride = Index(op->args[1]);
    std::vector<llvm::Value*> v(16);
    for (int r = 0; r < 16; ++r) {
      llvm::Value* at = b_.CreateInBoundsGEP(b_.getFloatTy(), s_addr, b_.CreateNSWMul(stride, b_.getInt64(r)));
      v[r] = b_.CreateAlignedLoad(vty, at, llvm::Align(4));
    }
    for (int s = 8; s >= 1; s /= 2) {
      std::vector<int> lo(16), hi(16);
      for (int c = 0; c < 16; ++c) {
        lo[c] = (c & s) == 0 ? c : 16 + c - s;
        hi[c] = (c & s) == 0 ? c + s : 16 + c;
      }
      for (int i = 0; i < 16; ++i) {
        if ((i & s) != 0) continue;
        llvm::Value* a = v[i];
        llvm::Value* b = v[i + s];
        v[i] = b_.CreateShuffleVector(a, b, lo);
        v[i + s] = b_.CreateShuffleVector(a, b, hi);
      }
    }
    for (int r = 0; r < 16; ++r) {
      llvm::Value* at = b_.CreateInBoundsGEP(b_.getFloatTy(), d_addr, Index(op->args[3 + r]));
      b_.CreateAlignedStore(v[r], at, llvm::Align(4));
    }
    return llvm::ConstantInt::get(RegType(op->dtype), 0);
  }
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
  if (name == "exp") r = NonPositiveOperand(op->args[0]) ? ExpNonPositive(op->args[0], t, ct) : math::Exp(b_, x[0]);
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

// Whether `e` is min(v, 0) or min(0, v) for a float v: its exp is at most 1
// (softmax writes exp(min(x - max, 0)), op_softmax.cc).
bool KernelEmitter::NonPositiveOperand(const PrimExpr& e) {
  if (e->kind() != TirKind::kMin) return false;
  const auto* m = static_cast<const BinaryNode*>(e.get());
  return tir::nest::IsFloatZero(m->a) || tir::nest::IsFloatZero(m->b);
}

// exp(min(v, 0)) for the operand NonPositiveOperand accepted, in compute type ct.
llvm::Value* KernelEmitter::ExpNonPositive(const PrimExpr& e, DType t, DType ct) {
  const auto* m = static_cast<const BinaryNode*>(e.get());
  const PrimExpr& v = tir::nest::IsFloatZero(m->a) ? m->b : m->a;
  return math::ExpNonPositive(b_, CastValue(ExprAs(v, t), t, ct));
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

llvm::Value* KernelEmitter::VectorExpr(const PrimExpr& e, const VarNode* var, unsigned lanes) {
  if (!tir::nest::Uses(e, {var})) return b_.CreateVectorSplat(lanes, ExprAs(e, DType::Float32()));
  auto* vty = llvm::FixedVectorType::get(b_.getFloatTy(), lanes);
  switch (e->kind()) {
    case TirKind::kBufferLoad: {
      const auto* l = e.as<BufferLoadNode>();
      if (int64_t k = codegen::RepeatFactor(l->buffer, l->indices, var); k != 0) {
        // Lane i reads element i / k from lane 0's (vector_loop.h): the
        // used lanes' elements, contiguous, then each repeated k times.
        unsigned used = vector_used_lanes_ != 0 && vector_used_lanes_ < lanes ? vector_used_lanes_ : lanes;
        unsigned narrow = static_cast<unsigned>((used + k - 1) / k);
        llvm::Value* src = b_.CreateAlignedLoad(llvm::FixedVectorType::get(b_.getFloatTy(), narrow),
                                                Address(l->buffer, l->indices), llvm::Align(4));
        std::vector<int> rep(lanes, -1);
        for (unsigned i = 0; i < used; ++i) rep[i] = static_cast<int>(i / k);
        return b_.CreateShuffleVector(src, rep);
      }
      std::optional<int64_t> stride = codegen::FlatCoefficient(l->buffer, l->indices, var);
      if (stride && (*stride == codegen::kMaxLoadStride || *stride == codegen::kDeinterleaveStride)) {
        // Lanes 0, s, ..., s(lanes - 1) of the elements from lane 0's address
        // on (s = 2 or 3; EmitsAsVectors admitted 3 only where allowed): one
        // wide load, masked so that it touches only those elements and the
        // ones between them (never past the last element the scalar loop
        // reads), then every s-th lane.
        const unsigned s = static_cast<unsigned>(*stride);
        unsigned wide = s * lanes;
        auto* wty = llvm::FixedVectorType::get(b_.getFloatTy(), wide);
        // (With padded lanes, TargetDesc::masked_vectors, only the used
        // ones' elements.)
        unsigned used = vector_used_lanes_ != 0 && vector_used_lanes_ < lanes ? vector_used_lanes_ : lanes;
        std::vector<llvm::Constant*> mask_bits(wide, b_.getFalse());
        for (unsigned i = 0; i < s * (used - 1) + 1; ++i) mask_bits[i] = b_.getTrue();
        llvm::Value* all = b_.CreateMaskedLoad(wty, Address(l->buffer, l->indices), llvm::Align(4),
                                               llvm::ConstantVector::get(mask_bits), llvm::PoisonValue::get(wty));
        std::vector<int> every(lanes);
        for (unsigned i = 0; i < lanes; ++i) every[i] = static_cast<int>(s * i);
        return b_.CreateShuffleVector(all, every);
      }
      return VectorLoad(b_.getFloatTy(), Address(l->buffer, l->indices), lanes, llvm::Align(4),
                        stack_vars_.count(l->buffer->data.get()) != 0);
    }
    case TirKind::kCast: {
      // A float16 / bfloat16 load widened to float32 (EmitsAsVectors checked).
      const auto* l = e.as<CastNode>()->value.as<BufferLoadNode>();
      llvm::Value* h = VectorLoad(RegType(l->buffer->dtype), Address(l->buffer, l->indices), lanes, llvm::Align(2),
                                  stack_vars_.count(l->buffer->data.get()) != 0);
      return b_.CreateFPExt(h, vty);
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
      if (op->op == "exp" && NonPositiveOperand(op->args[0])) {
        // As the scalar path: exp(min(v, 0)) scales in one step.
        const auto* m = static_cast<const BinaryNode*>(op->args[0].get());
        return math::ExpNonPositive(b_, VectorExpr(tir::nest::IsFloatZero(m->a) ? m->b : m->a, var, lanes));
      }
      std::vector<llvm::Value*> x;
      for (const auto& a : op->args) x.push_back(VectorExpr(a, var, lanes));
      if (op->op == "erf") return math::Erf(b_, x[0]);
      if (op->op == "tanh") return math::Tanh(b_, x[0]);
      if (op->op == "sigmoid") return math::Sigmoid(b_, x[0]);
      if (op->op == "exp") return math::Exp(b_, x[0]);
      return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vty}, x);
    }
    case TirKind::kMin:
    case TirKind::kMax: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      return FloatMinMax(e->kind() == TirKind::kMax, VectorExpr(op->a, var, lanes), VectorExpr(op->b, var, lanes));
    }
    case TirKind::kSelect: {
      // The condition is a float comparison (EmitsAsVectors checked), made
      // lane by lane as the scalar path makes it.
      // (or `and` / `or` of them).
      const auto* s = e.as<SelectNode>();
      std::function<llvm::Value*(const PrimExpr&)> cond = [&](const PrimExpr& c) -> llvm::Value* {
        if (!tir::nest::Uses(c, {var})) return b_.CreateVectorSplat(lanes, ExprAs(c, DType::Bool()));
        const auto* cmp = static_cast<const BinaryNode*>(c.get());
        if (c->kind() == TirKind::kAnd) return b_.CreateAnd(cond(cmp->a), cond(cmp->b));
        if (c->kind() == TirKind::kOr) return b_.CreateOr(cond(cmp->a), cond(cmp->b));
        return Compare(c->kind(), cmp->a.dtype(), VectorExpr(cmp->a, var, lanes), VectorExpr(cmp->b, var, lanes), cmp);
      };
      return b_.CreateSelect(cond(s->cond), VectorExpr(s->true_value, var, lanes),
                             VectorExpr(s->false_value, var, lanes));
    }
    default:
      Unsupported(std::string("expression ") + TirKindName(e->kind()) + " in an explicit vector loop");
      return llvm::PoisonValue::get(vty);
  }
}

}  // namespace emitter
}  // namespace codegen
}  // namespace kiln
