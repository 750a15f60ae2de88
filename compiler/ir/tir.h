// TIR: the loop-level IR of kernels (PrimFuncs), and the integer expressions
// that symbolic shapes of Relax share with it.
//
// Semantics, in brief:
// - Integer arithmetic is two's complement in the expression's dtype; FloorDiv
//   and FloorMod round toward negative infinity; Div is true division for floats
//   and truncating division for ints.
// - A Var is identified by its node, not its name: two Vars named "n" are
//   different variables. Symbolic dimensions of Relax are int64 Vars.
// - BufferLoad/BufferStore index a Buffer with one index per dimension of its
//   shape; the buffer is row-major unless it has strides.
// - A BlockRealize binds a Block's iteration variables to values and, for
//   reduction blocks, runs `init` the first time every reduction variable is at
//   its minimum. Blocks are lowered to plain loops before code generation.
// - For loops run loop_var from min to min + extent - 1; the kind is a
//   scheduling decision (serial, parallel, vectorized, unrolled) and never
//   changes the result.
//
// Nodes are immutable and shared (shared_ptr<const T>); passes build new nodes
// and return the old one when nothing changed. Node kinds are listed once in
// node_kinds.def; `e->kind()` is a tag, `e.as<AddNode>()` a tag compare.
#ifndef KILN_COMPILER_IR_TIR_H_
#define KILN_COMPILER_IR_TIR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/span.h"
#include "runtime/dtype.h"

namespace kiln {
namespace ir {

enum class TirKind : uint8_t {
#define KILN_PRIM_EXPR(Name) k##Name,
#define KILN_STMT(Name) k##Name,
#include "compiler/ir/node_kinds.def"
#undef KILN_PRIM_EXPR
#undef KILN_STMT
};
const char* TirKindName(TirKind kind);

class TirNode {
 public:
  explicit TirNode(TirKind kind) : kind_(kind) {}
  virtual ~TirNode() = default;
  TirKind kind() const { return kind_; }
  SourceSpan span;

 private:
  TirKind kind_;
};

// ---------------------------------------------------------------- expressions

class PrimExprNode : public TirNode {
 public:
  PrimExprNode(TirKind kind, DType dtype) : TirNode(kind), dtype(dtype) {}
  DType dtype;
};

// A handle to an immutable expression node, with tag-checked downcasts.
class PrimExpr {
 public:
  PrimExpr() = default;
  PrimExpr(std::shared_ptr<const PrimExprNode> n) : node_(std::move(n)) {}  // NOLINT
  // Integer literals convert to int64 IntImm (shape arithmetic is int64).
  PrimExpr(int64_t v);  // NOLINT
  PrimExpr(int v) : PrimExpr(static_cast<int64_t>(v)) {}  // NOLINT

  const PrimExprNode* get() const { return node_.get(); }
  const PrimExprNode* operator->() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  DType dtype() const { return node_->dtype; }
  bool same_as(const PrimExpr& o) const { return node_ == o.node_; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind() == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  const std::shared_ptr<const PrimExprNode>& node() const { return node_; }

 private:
  std::shared_ptr<const PrimExprNode> node_;
};

class IntImmNode : public PrimExprNode {
 public:
  static constexpr TirKind kKind = TirKind::kIntImm;
  IntImmNode(DType t, int64_t v) : PrimExprNode(kKind, t), value(v) {}
  int64_t value;
};

class FloatImmNode : public PrimExprNode {
 public:
  static constexpr TirKind kKind = TirKind::kFloatImm;
  FloatImmNode(DType t, double v) : PrimExprNode(kKind, t), value(v) {}
  double value;
};

class StringImmNode : public PrimExprNode {
 public:
  static constexpr TirKind kKind = TirKind::kStringImm;
  explicit StringImmNode(std::string v) : PrimExprNode(kKind, DType{kDLOpaqueHandle, 64, 1}), value(std::move(v)) {}
  std::string value;
};

// A variable: a loop variable, a symbolic dimension, a buffer's data handle
// (dtype handle), or a scalar parameter.
class VarNode : public PrimExprNode {
 public:
  static constexpr TirKind kKind = TirKind::kVar;
  VarNode(std::string n, DType t) : PrimExprNode(kKind, t), name(std::move(n)) {}
  std::string name;
};
using Var = std::shared_ptr<const VarNode>;

// Binary nodes share one layout.
class BinaryNode : public PrimExprNode {
 public:
  BinaryNode(TirKind kind, DType t, PrimExpr a, PrimExpr b) : PrimExprNode(kind, t), a(std::move(a)), b(std::move(b)) {}
  PrimExpr a, b;
};
#define KILN_BINARY_NODE(Name)                                              \
  class Name##Node : public BinaryNode {                                    \
   public:                                                                  \
    static constexpr TirKind kKind = TirKind::k##Name;                      \
    Name##Node(DType t, PrimExpr a, PrimExpr b) : BinaryNode(kKind, t, std::move(a), std::move(b)) {} \
  };
KILN_BINARY_NODE(Add)
KILN_BINARY_NODE(Sub)
KILN_BINARY_NODE(Mul)
KILN_BINARY_NODE(Div)
KILN_BINARY_NODE(FloorDiv)
KILN_BINARY_NODE(FloorMod)
KILN_BINARY_NODE(Min)
KILN_BINARY_NODE(Max)
KILN_BINARY_NODE(EQ)
KILN_BINARY_NODE(NE)
KILN_BINARY_NODE(LT)
KILN_BINARY_NODE(LE)
KILN_BINARY_NODE(GT)
KILN_BINARY_NODE(GE)
KILN_BINARY_NODE(And)
KILN_BINARY_NODE(Or)
#undef KILN_BINARY_NODE
bool IsBinary(TirKind kind);

class NotNode : public PrimExprNode {
 public:
  static constexpr TirKind kKind = TirKind::kNot;
  explicit NotNode(PrimExpr a) : PrimExprNode(kKind, DType::Bool()), a(std::move(a)) {}
  PrimExpr a;
};

class CastNode : public PrimExprNode {
 public:
  static constexpr TirKind kKind = TirKind::kCast;
  CastNode(DType t, PrimExpr v) : PrimExprNode(kKind, t), value(std::move(v)) {}
  PrimExpr value;
};

// cond ? t : f, both sides evaluated (T.Select).
class SelectNode : public PrimExprNode {
 public:
  static constexpr TirKind kKind = TirKind::kSelect;
  SelectNode(PrimExpr c, PrimExpr t, PrimExpr f)
      : PrimExprNode(kKind, t.dtype()), cond(std::move(c)), true_value(std::move(t)), false_value(std::move(f)) {}
  PrimExpr cond, true_value, false_value;
};

// A buffer: a typed n-d view of memory reached through `data`.
class BufferNode {
 public:
  std::string name;
  Var data;                     // handle variable
  DType dtype;
  std::vector<PrimExpr> shape;
  std::vector<PrimExpr> strides;  // empty: row-major compact
  std::string scope = "global";
  SourceSpan span;
};
using Buffer = std::shared_ptr<const BufferNode>;

class BufferLoadNode : public PrimExprNode {
 public:
  static constexpr TirKind kKind = TirKind::kBufferLoad;
  BufferLoadNode(Buffer b, std::vector<PrimExpr> idx)
      : PrimExprNode(kKind, b->dtype), buffer(std::move(b)), indices(std::move(idx)) {}
  Buffer buffer;
  std::vector<PrimExpr> indices;
};

// An intrinsic call: "exp", "log", "sqrt", "tanh", "sigmoid", "erf", "pow",
// "fabs", "floor", "ceil", "if_then_else" (lazy select), ...
class CallNode : public PrimExprNode {
 public:
  static constexpr TirKind kKind = TirKind::kCall;
  CallNode(DType t, std::string op, std::vector<PrimExpr> args)
      : PrimExprNode(kKind, t), op(std::move(op)), args(std::move(args)) {}
  std::string op;
  std::vector<PrimExpr> args;
};

// ---------------------------------------------------------------- statements

class StmtNode : public TirNode {
 public:
  using TirNode::TirNode;
};
using Stmt = std::shared_ptr<const StmtNode>;

template <typename T>
const T* As(const Stmt& s) {
  return s && s->kind() == T::kKind ? static_cast<const T*>(s.get()) : nullptr;
}

class BufferStoreNode : public StmtNode {
 public:
  static constexpr TirKind kKind = TirKind::kBufferStore;
  BufferStoreNode(Buffer b, PrimExpr v, std::vector<PrimExpr> idx)
      : StmtNode(kKind), buffer(std::move(b)), value(std::move(v)), indices(std::move(idx)) {}
  Buffer buffer;
  PrimExpr value;
  std::vector<PrimExpr> indices;
};

// kThreadBinding: the loop's iterations are the GPU threads or blocks named by
// the loop's thread_tag ("blockIdx.x", "threadIdx.x", as TVM's bind); its
// extent is the launch dimension, and loop_var is the thread's index.
enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled, kThreadBinding };
const char* ForKindName(ForKind kind);  // "serial", "parallel", "vectorized", "unroll", "thread_binding"
// blockIdx.x/y/z or threadIdx.x/y/z.
bool IsThreadTag(const std::string& tag);

class ForNode : public StmtNode {
 public:
  static constexpr TirKind kKind = TirKind::kFor;
  ForNode(Var v, PrimExpr min, PrimExpr extent, ForKind k, Stmt body, std::string thread_tag = "")
      : StmtNode(kKind), loop_var(std::move(v)), min(std::move(min)), extent(std::move(extent)), for_kind(k),
        body(std::move(body)), thread_tag(std::move(thread_tag)) {}
  Var loop_var;
  PrimExpr min, extent;
  ForKind for_kind;
  Stmt body;
  std::string thread_tag;  // kThreadBinding only
};

class SeqStmtNode : public StmtNode {
 public:
  static constexpr TirKind kKind = TirKind::kSeqStmt;
  explicit SeqStmtNode(std::vector<Stmt> s) : StmtNode(kKind), seq(std::move(s)) {}
  std::vector<Stmt> seq;
};

class IfThenElseNode : public StmtNode {
 public:
  static constexpr TirKind kKind = TirKind::kIfThenElse;
  IfThenElseNode(PrimExpr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  PrimExpr cond;
  Stmt then_case;
  Stmt else_case;  // may be null
};

class LetStmtNode : public StmtNode {
 public:
  static constexpr TirKind kKind = TirKind::kLetStmt;
  LetStmtNode(Var v, PrimExpr val, Stmt b) : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  Var var;
  PrimExpr value;
  Stmt body;
};

class EvaluateNode : public StmtNode {
 public:
  static constexpr TirKind kKind = TirKind::kEvaluate;
  explicit EvaluateNode(PrimExpr v) : StmtNode(kKind), value(std::move(v)) {}
  PrimExpr value;
};

// Allocation of a buffer that lives for `body` (what T.alloc_buffer becomes
// after blocks are lowered).
class AllocateNode : public StmtNode {
 public:
  static constexpr TirKind kKind = TirKind::kAllocate;
  AllocateNode(Buffer b, Stmt body) : StmtNode(kKind), buffer(std::move(b)), body(std::move(body)) {}
  Buffer buffer;
  Stmt body;
};

enum class IterKind : uint8_t { kSpatial, kReduce };

struct IterVar {
  Var var;
  PrimExpr min;     // domain [min, min + extent)
  PrimExpr extent;
  IterKind kind = IterKind::kSpatial;
};

// A region of a buffer: per dimension [min, min + extent).
struct BufferRegion {
  Buffer buffer;
  std::vector<std::pair<PrimExpr, PrimExpr>> ranges;  // (min, extent)
};

struct Block {
  std::string name;
  std::vector<IterVar> iter_vars;
  std::vector<BufferRegion> reads;
  std::vector<BufferRegion> writes;
  std::vector<Buffer> alloc_buffers;
  Stmt init;   // may be null
  Stmt body;
  std::map<std::string, std::string> annotations;
};

class BlockRealizeNode : public StmtNode {
 public:
  static constexpr TirKind kKind = TirKind::kBlockRealize;
  BlockRealizeNode(std::vector<PrimExpr> values, PrimExpr pred, Block b)
      : StmtNode(kKind), iter_values(std::move(values)), predicate(std::move(pred)), block(std::move(b)) {}
  std::vector<PrimExpr> iter_values;  // one per block.iter_vars
  PrimExpr predicate;                  // T.where; IntImm bool 1 when absent
  Block block;
};

// ---------------------------------------------------------------- functions

// An attribute value of T.func_attr / R.func_attr.
struct AttrValue {
  // kIntDict: {"n": 128}, e.g. R.func_attr({"tir_var_upper_bound": {"n": 128}}).
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kString, kIntList, kIntDict } kind = Kind::kNone;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::map<std::string, int64_t> int_dict;
  bool operator==(const AttrValue& o) const {
    return kind == o.kind && i == o.i && f == o.f && s == o.s && ints == o.ints && int_dict == o.int_dict;
  }
};
using AttrMap = std::map<std::string, AttrValue>;

class PrimFuncNode {
 public:
  std::string name;
  // Parameters in order: handle Vars (bound to buffers through buffer_map) or
  // scalar Vars.
  std::vector<Var> params;
  std::vector<std::pair<Var, Buffer>> buffer_map;
  Stmt body;  // usually a root BlockRealize holding alloc_buffers
  AttrMap attrs;
  bool is_private = false;  // @T.prim_func(private=True): not exported by name
  SourceSpan span;

  // The buffer a handle parameter is bound to, or nullptr.
  Buffer BufferOf(const Var& param) const {
    for (const auto& kv : buffer_map)
      if (kv.first == param) return kv.second;
    return nullptr;
  }
};
using PrimFunc = std::shared_ptr<const PrimFuncNode>;

// ---------------------------------------------------------------- constructors

DType HandleType();  // {kDLOpaqueHandle, 64, 1}
Var MakeVar(const std::string& name, DType dtype = DType::Int64());
PrimExpr IntImm(DType dtype, int64_t value);
PrimExpr FloatImm(DType dtype, double value);
PrimExpr MakeBinary(TirKind kind, PrimExpr a, PrimExpr b);  // dtype: a's, or bool for comparisons
PrimExpr Cast(DType dtype, PrimExpr v);
PrimExpr Load(const Buffer& b, std::vector<PrimExpr> idx);
Buffer MakeBuffer(const std::string& name, std::vector<PrimExpr> shape, DType dtype);
Stmt Store(const Buffer& b, PrimExpr v, std::vector<PrimExpr> idx);
Stmt Seq(std::vector<Stmt> stmts);  // flattens nested SeqStmts; one element: itself

inline PrimExpr operator+(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kAdd, std::move(a), std::move(b)); }
inline PrimExpr operator-(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kSub, std::move(a), std::move(b)); }
inline PrimExpr operator*(PrimExpr a, PrimExpr b) { return MakeBinary(TirKind::kMul, std::move(a), std::move(b)); }

}  // namespace ir
}  // namespace kiln

#endif  // KILN_COMPILER_IR_TIR_H_
