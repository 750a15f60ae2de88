// Internal to the ONNX importer: the state of one graph's import and the
// context a node converter works in. Converters live in ops_*.cc, one file
// per operator family, and register through the Add*Converters functions.
//
// A value of the graph is a Relax expression (a parameter, a constant or an
// emitted variable) and, when it is known at import time, its contents:
// - `known`: an integer tensor (rank 0 or 1 in practice) whose elements are
//   int64 PrimExprs, constants or symbolic dimensions — what Shape, Gather,
//   Concat, ... on shapes produce. Such values are folded here and reach the
//   program only as R.shape([...]) or, if fully constant, as a constant.
// - `constant`: host data of an initializer or Constant (any dtype), for
//   operators that take attribute-like inputs (Clip's min, Pad's value, ...).
// The expression is built lazily from `known` when a tensor is really needed.
#ifndef KILN_COMPILER_ONNX_GRAPH_IMPORTER_H_
#define KILN_COMPILER_ONNX_GRAPH_IMPORTER_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/builder/block_builder.h"
#include "compiler/ir/module.h"
#include "compiler/onnx/input_dims.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {
namespace onnx {

// An integer tensor known at import time (elements row-major, int64 exprs).
struct KnownInts {
  std::vector<int64_t> shape;
  std::vector<ir::PrimExpr> elems;
  DType dtype = DType::Int64();
  // The elements as integers when all are constants.
  std::optional<std::vector<int64_t>> Ints() const;
};

struct Value {
  ir::Expr expr;                   // may be null while `known` is set
  std::optional<KnownInts> known;  // contents, when known
  Tensor constant;                 // host data, when a constant
  mutable ir::StructInfo sinfo;    // cached struct info (without materializing)
};

class Importer;

// An If whose condition is known only at run time, its branches lifted:
// `fn(args)` computes a branch's outputs (a tuple when several).
struct IfBranches {
  ir::Expr cond;  // a bool scalar
  std::string then_fn, else_fn;
  std::vector<ir::Expr> then_args, else_args;
};

// What a converter sees of its node. Input(i) of a missing optional input is
// an error; check HasInput first.
class NodeCtx {
 public:
  NodeCtx(Importer* imp, const ::onnx::NodeProto* node, int opset) : imp_(imp), node_(node), opset_(opset) {}

  const ::onnx::NodeProto& node() const { return *node_; }
  int opset() const { return opset_; }
  const std::string& op_type() const { return node_->op_type(); }

  size_t NumInputs() const { return static_cast<size_t>(node_->input_size()); }
  size_t NumOutputs() const { return static_cast<size_t>(node_->output_size()); }
  bool HasInput(size_t i) const { return i < NumInputs() && !node_->input(static_cast<int>(i)).empty(); }
  bool HasOutput(size_t i) const { return i < NumOutputs() && !node_->output(static_cast<int>(i)).empty(); }
  // The value of input i (must exist).
  Result<const Value*> In(size_t i) const;
  // The Relax expression of input i (built from known contents if needed).
  Result<ir::Expr> Input(size_t i);
  // The tensor struct info of input i (rank and dtype always known for
  // imported values; dims may be symbolic).
  Result<const ir::TensorSInfo*> Info(size_t i);
  // Known contents of input i, or nullopt.
  const KnownInts* Known(size_t i) const;
  // Known integer contents of input i (all constant), or an error saying
  // `what` must be a constant.
  Result<std::vector<int64_t>> ConstInts(size_t i, const char* what) const;
  // The contents of input i as shape values: known contents, or (for a
  // run-time int64/int32 tensor of static length) fresh symbolic variables
  // read when the program runs (shape_values.cc). Errors name `what`.
  Result<const KnownInts*> ShapeOperand(size_t i, const char* what);
  // A constant scalar (or one-element tensor) input as double.
  Result<double> ConstScalar(size_t i, const char* what) const;

  // Attributes.
  bool HasAttr(const char* name) const;
  const ::onnx::AttributeProto* Attr(const char* name) const;
  Result<int64_t> AttrInt(const char* name, int64_t def) const;
  Result<double> AttrFloat(const char* name, double def) const;
  Result<std::string> AttrString(const char* name, const std::string& def) const;
  Result<std::vector<int64_t>> AttrInts(const char* name, const std::vector<int64_t>& def) const;
  Result<std::vector<double>> AttrFloats(const char* name, const std::vector<double>& def) const;

  // Emits `value` (normalized); the new variable.
  Result<ir::Expr> Emit(ir::Expr value);
  // Emits R.<op>(args, attrs).
  Result<ir::Expr> Op(const std::string& op, std::vector<ir::Expr> args, ir::AttrMap attrs = {});

  // Outputs.
  void SetOutput(size_t i, ir::Expr e);
  void SetOutputValue(size_t i, Value v);
  void SetOutputKnown(size_t i, KnownInts k);

  // Errors naming an unsupported feature (collected by the importer).
  Status Unsupported(const std::string& what) const { return Unimplemented(what); }
  Status Invalid(const std::string& what) const { return InvalidArgument(what); }

  Importer* importer() const { return imp_; }

 private:
  Importer* imp_;
  const ::onnx::NodeProto* node_;
  int opset_;
};

using ConvertFn = Status (*)(NodeCtx& ctx);
using ConverterTable = std::map<std::string, ConvertFn>;

void AddElementwiseConverters(ConverterTable* t);
void AddNnConverters(ConverterTable* t);
void AddShapeConverters(ConverterTable* t);
void AddReduceConverters(ConverterTable* t);
void AddResizeConverters(ConverterTable* t);
void AddControlFlowConverters(ConverterTable* t);
void AddLoopConverters(ConverterTable* t);
void AddRnnConverters(ConverterTable* t);
void AddDataDependentConverters(ConverterTable* t);  // NonZero (ops_nonzero.cc)
void AddGatherConverters(ConverterTable* t);  // ops_gather.cc: GatherND
void AddScatterConverters(ConverterTable* t);  // ops_scatter.cc: ScatterElements, Scatter, ScatterND, GridSample
void AddQuantizedConverters(ConverterTable* t);  // ops_quantized.cc: MatMulInteger, DynamicQuantizeLinear, QLinearMatMul
// The table of every operator the importer knows.
const ConverterTable& Converters();

// ---------------------------------------------------------------- helpers

// attr builders
ir::AttrValue AttrI(int64_t v);
ir::AttrValue AttrF(double v);
ir::AttrValue AttrS(const std::string& v);
ir::AttrValue AttrB(bool v);
ir::AttrValue AttrInts(const std::vector<int64_t>& v);

// A constant Relax expression of host data, with its struct info.
using ir::MakeConstant;
// A scalar constant of `dtype`.
ir::Expr ScalarConst(DType dtype, double v);
// R.shape([...]) / R.prim_value(v).
ir::Expr MakeShape(std::vector<ir::PrimExpr> dims);
ir::Expr PrimValue(ir::PrimExpr v);
// The known ints as a host tensor when all are constant.
std::optional<Tensor> KnownToTensor(const KnownInts& k);
// The integer constant of a dimension, or nullopt.
std::optional<int64_t> ConstDim(const ir::PrimExpr& d);
// Simplified int64 arithmetic on dims.
ir::PrimExpr SimplifyDim(const ir::PrimExpr& e);

// The newest default-domain opset imported. What opsets 18 to 21 changed in
// the operators Kiln converts, and how each is taken: axes as an input for
// every Reduce* (18); Split's num_outputs (18); Pad's axes input (18) and
// "wrap" mode (19, refused by name); Resize's antialias, axes and
// keep_aspect_ratio_policy (18) and half_pixel_symmetric (19), refused by
// name where they change the result; AveragePool's dilations (19); Cast's
// saturate (19, float8 only, no effect on the types Kiln has); new element
// types of Constant, Cast, Reshape, ... (19, 21: float8, int4) refused as
// element types. Operators new in these opsets are unsupported operators.
constexpr int kMaxOpset = 21;
// The largest element count (and dimension) the importer builds shapes of:
// bigger values in a model are errors, so no shape arithmetic can overflow.
constexpr int64_t kMaxElements = int64_t{1} << 50;
// The product of `dims`, or nullopt when a dim is negative or it exceeds kMaxElements.
std::optional<int64_t> CheckedProduct(const std::vector<int64_t>& dims);
// Constant entries of a shape must lie in [0, kMaxElements] and so must
// their product; symbolic entries are left alone.
Status CheckShape(const std::vector<ir::PrimExpr>& dims);

// axis in [-rank, rank) -> [0, rank), or an error naming `what`.
Result<int64_t> NormAxis(int64_t axis, int64_t rank, const char* what = "axis");

// A value of host data (known contents too when small and integer).
Value ConstantValue(const Tensor& t);

// IdentifierText(name) made unique among `used` (which then holds it):
// "x", "x_1", ...
std::string Identifier(const std::string& name, std::set<std::string>* used);

// For a shape operand that only arrives as a run-time tensor (input i of the
// node): its length, after checking it is an int64/int32 tensor of rank <= 1
// and static length (errors name `what`).
Result<int64_t> RunTimeShapeLength(NodeCtx& ctx, size_t i, const char* what);
// R.tensor_to_shape(tensor) (n elements) bound to n fresh variables
// `base`_0, ... by R.match_cast; the variables, which the compiler takes as
// dimensions (>= 0). A defined entry k of `expected` stands instead of the
// fresh variable k: the match then checks the value when the program runs.
// `messages` (one per element, "" for none) say what a failed check means
// (ir::Binding::messages; see RunTimeNode below).
Result<std::vector<ir::PrimExpr>> ReadShapeAtRunTime(NodeCtx& ctx, ir::Expr tensor, int64_t n, const std::string& base,
                                                     const std::vector<ir::PrimExpr>& expected = {},
                                                     const std::vector<std::string>& messages = {});

// Pieces of the messages of the checks a converter leaves for run time
// (R.match_cast's messages), so that a failure names the node, the input and
// the expression in the model's dimension names:
//   ONNX Reshape node "r": input 1 "shape" asks for 7 elements; input 0 "x"
//   (shape [batch, 3]) holds batch * 3 = 12
// RunTimeNode: `ONNX Reshape node "r"` (the first output's name when the node
// has none). InputText: `input 1 "shape"`; with `with_shape`, its shape too.
// ExpectedText: "{expected}" for a constant, else "batch * 3 = {expected}"
// (the VM fills in the value).
std::string RunTimeNode(const NodeCtx& ctx);
std::string InputText(NodeCtx& ctx, size_t i, bool with_shape = false);
std::string ExpectedText(const ir::PrimExpr& e);
// "{got} of the values of input 1 "axes" lie outside [-3, 2], the axes of a
// rank-3 tensor": the message of an AxesOutOfRange count matched against 0.
std::string AxesOutOfRangeMessage(NodeCtx& ctx, size_t i, int64_t rank);

// A scalar operand (input i, one int value) that may be negative, read when
// the program runs as p - m with p = max(v, 0) and m = max(-v, 0) bound to
// variables apart (the compiler takes symbolic values as sizes, >= 0).
Result<ir::PrimExpr> SignedRunTimeScalar(NodeCtx& ctx, size_t i, const char* what);

// A data-dependent size: `count` (a one-element int64 tensor, >= 0) read when
// the program runs and bound to a fresh variable (`name`_len) that later
// operators use symbolically (shape_values.cc).
Result<ir::PrimExpr> RunTimeSize(NodeCtx& ctx, ir::Expr count, const std::string& name);

// A value known as (symbolic) shape arithmetic as a tensor of its shape and
// dtype, computed when the program runs (R.shape_to_tensor; shape_values.cc).
Result<ir::Expr> MaterializeKnown(builder::BlockBuilder& bb, const KnownInts& known);

// The DType's name for R.astype / dtype attributes ("float32").
std::string DTypeName(DType t);

// The import of one graph.
class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, std::string base_dir, const std::map<std::string, int64_t>& fixed_dims,
           std::string function_name, const std::map<std::string, Tensor>& input_values = {});
  Result<ir::IRModule> Run();

  builder::BlockBuilder& bb() { return bb_; }
  const Value* Find(const std::string& name) const;
  void Set(const std::string& name, Value v);
  // Materializes a value's expression (constant from known contents).
  Result<ir::Expr> ExprOf(const std::string& name);
  int opset() const { return opset_; }

  // Control flow (subgraph_import.cc). A binding that may not sit in a
  // dataflow block (an If) goes between SuspendDataflow and ResumeDataflow:
  // the open block ends, and the values it defined that the current node or
  // a later one uses (or the graph outputs) become its outputs first.
  Status SuspendDataflow();
  Status ResumeDataflow();
  // Imports `graph` (a branch whose condition is known at import time) into
  // the function being built; `outputs` get the values of its outputs.
  Status ImportInline(const ::onnx::GraphProto& graph, std::vector<Value>* outputs);
  // Lifts `graph` into a private function of the module (named after
  // `name_hint`, made unique): the values of enclosing graphs it uses become
  // its parameters, in `args` order as the caller passes them; it returns its
  // outputs (a tuple when several). Problems inside the graph are collected
  // with the rest; the result then is an error. With `inputs` (one struct
  // info per graph input: a loop body's), the graph's inputs are the first
  // parameters, which the caller passes itself (they are not in `args`).
  Result<std::string> LiftSubgraph(const ::onnx::GraphProto& graph, const std::string& name_hint,
                                   std::vector<ir::Expr>* args, const std::vector<ir::StructInfo>& inputs = {});
  // LiftSubgraph for a branch of an If whose condition is known only at run
  // time. When the branch does not import because the model is wrong on
  // that path at these shapes (every problem an operator refusing its
  // operands: InvalidArgument, as a rank or size check that folded at import
  // into a path ONNX Runtime too fails on), its problems move out of the
  // model's list into `*wrong` (the names they poisoned cleared): the caller
  // may make the branch raise them when it runs, or give them back with
  // AddProblems. Any other failure leaves `*wrong` empty and the problems
  // listed.
  Result<std::string> LiftBranch(const ::onnx::GraphProto& graph, const std::string& name_hint,
                                 std::vector<ir::Expr>* args, std::vector<std::string>* wrong);
  void AddProblems(const std::vector<std::string>& problems) { problems_.insert(problems_.end(), problems.begin(), problems.end()); }
  // "node \"name\" (#i) If (opset n)" for the node being converted.
  std::string CurrentNodeLabel() const { return NodeLabel(graph_->node(node_index_), node_index_); }
  // The If being converted (`ctx`), outside a dataflow block, whose branches
  // give different ranks or dtypes: the nodes after it that depend on its
  // outputs are imported once per branch, typed by that branch, and the If
  // chooses between the two copies (if_tail.cc). Returns in a dataflow block.
  Status SplitIfTail(NodeCtx& ctx, const IfBranches& branches);
  // The most nodes SplitIfTail may import a second time, for the whole model.
  void set_if_tail_limit(int64_t n) { if_tail_limit_ = n; }

 private:
  Status ImportInputs();
  Status ImportInitializers(const ::onnx::GraphProto& graph);
  // Imports the nodes of `graph` (the model's or a subgraph) in order.
  void ImportNodes(const ::onnx::GraphProto& graph);
  // Imports node i of the graph being imported (one step of ImportNodes).
  void ImportNode(int i);
  // The names that nodes from the current one on, and the current graph's
  // outputs, read (subgraphs' reads of enclosing values included).
  std::set<std::string> NamesUsedFromCurrentNode() const;
  Result<DType> InputDType(const ::onnx::ValueInfoProto& vi);
  Result<ir::StructInfo> InputSInfo(const InputShape& shape, DType dtype, const std::map<std::string, int64_t>& pinned);
  std::string NodeLabel(const ::onnx::NodeProto& node, int index) const;

  const ::onnx::ModelProto& model_;
  std::string base_dir_;
  std::map<std::string, int64_t> fixed_dims_;
  std::map<std::string, Tensor> input_values_;
  std::string function_name_;
  int opset_ = 0;
  builder::BlockBuilder bb_;
  std::map<std::string, Value> values_;
  std::map<std::string, ir::Var> dim_vars_;
  std::set<std::string> identifiers_;  // parameter and dimension names used
  std::vector<ir::RVar> params_;
  std::vector<std::string> problems_;
  std::set<std::string> poisoned_;  // outputs of nodes that failed (their users are not reported again)
  // The indices in problems_ of converters' InvalidArgument errors (the
  // model wrong at these shapes), and whether all of problems_[from...] are.
  std::set<size_t> invalid_problems_;
  bool AllInvalidFrom(size_t from) const;
  // Drops problems_[from...] (and their marks).
  void DropProblemsFrom(size_t from);
  const ::onnx::GraphProto* graph_ = nullptr;  // the graph whose nodes are being imported
  int node_index_ = 0;                          // the node being converted
  // Per node of graph_: 1 not imported yet, 0 done, 2 held by an If tail split in progress.
  std::vector<char>* pending_ = nullptr;
  // If tail splits (if_tail.cc): the graphs of the copied nodes (kept while
  // the import runs) and each one's node indices in the graph it came from;
  // the nodes copied so far and the limit; the outputs of the If being
  // converted that only the copies read.
  std::vector<std::unique_ptr<::onnx::GraphProto>> tail_graphs_;
  std::map<const ::onnx::GraphProto*, std::vector<int>> tail_index_;
  int64_t if_tail_nodes_ = 0;
  int64_t if_tail_limit_ = 4096;
  bool if_tail_limit_hit_ = false;
  std::set<std::string> split_outputs_;
};

// An If arm that fails with `message` when it runs, declared `sinfo` (which
// it must not bind a dimension by: it never returns); if_tail.cc.
ir::Expr RaiseArm(const std::string& message, const ir::StructInfo& sinfo, const std::string& name);
// `s` with only its ranks and dtypes (if_tail.cc).
ir::StructInfo RanksOnly(const ir::StructInfo& s);

// The names `graph` reads from enclosing graphs: node inputs (nested
// subgraphs' too) that neither its inputs, its initializers nor an earlier
// node of it define.
std::set<std::string> OuterNames(const ::onnx::GraphProto& graph);
// The symbolic variables in the dimensions of `s` (tensors, tuples of them).
void CollectDimVars(const ir::StructInfo& s, std::set<const ir::VarNode*>* out);

}  // namespace onnx
}  // namespace kiln

#endif  // KILN_COMPILER_ONNX_GRAPH_IMPORTER_H_
