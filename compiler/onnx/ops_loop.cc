// Control flow: Loop and Scan.
//
// The body graph is lifted into a private Relax function (subgraph_import.cc)
// whose first parameters are the body's own inputs, followed by the enclosing
// values it reads. The node becomes one call of the VM builtin that runs it
// (vm/builtins.def, vm/loop.cc):
//
//     r = R.call_packed("vm.builtin.loop", cls.body, scan, n_state, n_scan_in,
//                       n_scan_out, M, cond, <zero shapes, dtypes>, states...,
//                       scan inputs..., captured..., sinfo_args=R.Tuple(...))
//
// between two dataflow blocks, as If is. The loop runs in the VM: its body is
// one more frame, however many iterations run, so a trip count or condition
// known only at run time costs nothing at compile time. Scan outputs are
// stacked by the builtin along a new axis 0; their leading dimension is the
// trip count when the import knows it (M alone as a constant, Scan's scanned
// axis) and a fresh symbolic dimension (R.match_cast) otherwise.
//
// Loop-carried values keep the struct info of their initial values when the
// body returns them so; a body that changes their shapes (a growing concat)
// is lifted again with symbolic dimensions for them.
//
// Scan: each scan input is moved so that its scanned axis comes first and
// reversed when scanned backward (permute_dims, a step -1 strided_slice);
// scan outputs are reversed and moved to their axes after the loop. Scan of
// opset 8 (a batch axis on every value) unrolls its batch over that form.
#include "compiler/ir/structural_equal.h"
#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {
namespace {

// Whether `v` is a tensor type (or carries no type, as bodies may leave it).
bool IsTensorValue(const ::onnx::ValueInfoProto& v) { return !v.has_type() || v.type().has_tensor_type(); }

Status CheckTensorValues(NodeCtx& ctx, const ::onnx::GraphProto& body) {
  for (const auto& v : body.input())
    if (!IsTensorValue(v)) return ctx.Unsupported("body input \"" + v.name() + "\" is a sequence, map or optional value (tensors only)");
  for (const auto& v : body.output())
    if (!IsTensorValue(v)) return ctx.Unsupported("body output \"" + v.name() + "\" is a sequence, map or optional value (tensors only)");
  return Status::Ok();
}

// Same rank, dtype and dimensions (constants equal, or the same expression).
bool SameTensor(const ir::StructInfo& a, const ir::StructInfo& b) {
  const auto* x = ir::SInfoAs<ir::TensorSInfo>(a);
  const auto* y = ir::SInfoAs<ir::TensorSInfo>(b);
  if (x == nullptr || y == nullptr || !x->has_shape || !y->has_shape || x->ndim != y->ndim) return false;
  if (!x->has_dtype || !y->has_dtype || x->dtype != y->dtype) return false;
  for (int i = 0; i < x->ndim; ++i) {
    auto cx = ConstDim(x->shape[i]), cy = ConstDim(y->shape[i]);
    if (cx && cy) {
      if (*cx != *cy) return false;
    } else if (!ir::StructuralEqual(x->shape[i], y->shape[i])) {
      return false;
    }
  }
  return true;
}

// `s` with a fresh symbolic variable for every dimension.
ir::StructInfo Relaxed(const ir::TensorSInfo& s, const std::string& base) {
  std::vector<ir::PrimExpr> dims;
  for (int k = 0; k < s.ndim; ++k) dims.push_back(ir::PrimExpr(ir::MakeVar(base + "_dim" + std::to_string(k))));
  return ir::MakeTensorSInfo(dims, s.dtype);
}

// What a Loop or Scan node hands to the builtin, and what comes back.
struct LoopSpec {
  bool scan = false;
  const ::onnx::GraphProto* body = nullptr;
  std::vector<ir::StructInfo> lead;    // Loop: iteration and condition
  std::vector<ir::Expr> states;        // initial values
  std::vector<ir::Expr> scan_inputs;   // scanned axis first, forward
  ir::Expr max_trip, cond;             // null: absent
  std::optional<ir::PrimExpr> trips;   // the trip count, when the import knows it
  size_t n_scan_out = 0;
};

// Imports the body, emits the loop and returns its outputs: final states,
// then scan outputs stacked along axis 0. The caller has suspended the
// dataflow block before reading the node's inputs, so that they and the
// values the body captures are the variables that leave the block.
Result<std::vector<ir::Expr>> EmitLoop(NodeCtx& ctx, const LoopSpec& spec) {
  Importer* imp = ctx.importer();
  const size_t n_state = spec.states.size();
  const size_t lead = spec.lead.size();
  std::vector<ir::StructInfo> state_sinfo, inputs = spec.lead;
  for (const auto& s : spec.states) state_sinfo.push_back(s->struct_info);
  std::vector<ir::StructInfo> slice_sinfo;
  for (const auto& x : spec.scan_inputs) {
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(x->struct_info);
    if (t == nullptr || !t->has_shape || !t->has_dtype) return Internal("a scan input without a shape");
    slice_sinfo.push_back(ir::MakeTensorSInfo(std::vector<ir::PrimExpr>(t->shape.begin() + 1, t->shape.end()), t->dtype));
  }
  std::string base = IdentifierText(ctx.node().name().empty() ? (spec.scan ? "scan" : "loop") : ctx.node().name());

  // Lift with the states' own struct info; again with symbolic dimensions
  // for the states whose shapes the body changes (the earlier function is
  // then unused and dropped by remove-unused). A relaxed state takes any
  // shape of its rank, so this ends after at most n_state + 1 lifts.
  std::string fn;
  std::vector<ir::Expr> captured;
  ir::StructInfo ret;
  std::vector<bool> relaxed(n_state, false);
  for (;;) {
    std::vector<ir::StructInfo> in = inputs;
    in.insert(in.end(), state_sinfo.begin(), state_sinfo.end());
    in.insert(in.end(), slice_sinfo.begin(), slice_sinfo.end());
    captured.clear();
    KILN_ASSIGN_OR_RETURN(fn, imp->LiftSubgraph(*spec.body, base + "_body", &captured, in));
    ret = imp->bb().module().FindRelax(fn)->ret_sinfo;
    std::vector<ir::StructInfo> fields;
    if (const auto* tup = ir::SInfoAs<ir::TupleSInfo>(ret)) {
      fields = tup->fields;
    } else {
      fields.push_back(ret);
    }
    const size_t f0 = spec.scan ? 0 : 1;
    bool again = false;
    for (size_t j = 0; j < n_state; ++j) {
      const auto* want = ir::SInfoAs<ir::TensorSInfo>(state_sinfo[j]);
      const auto* got = ir::SInfoAs<ir::TensorSInfo>(fields[f0 + j]);
      if (got == nullptr || !got->has_dtype || got->ndim != want->ndim || got->dtype != want->dtype) {
        return ctx.Unsupported("loop-carried value " + std::to_string(j) + " changes its rank or dtype in the body");
      }
      if (!relaxed[j] && !SameTensor(state_sinfo[j], fields[f0 + j])) {
        relaxed[j] = true;
        again = true;
        state_sinfo[j] = Relaxed(*want, base + "_state" + std::to_string(j));
      }
    }
    if (!again) break;
  }
  std::vector<ir::StructInfo> fields;
  if (const auto* tup = ir::SInfoAs<ir::TupleSInfo>(ret)) {
    fields = tup->fields;
  } else {
    fields.push_back(ret);
  }
  const size_t f0 = spec.scan ? 0 : 1;

  // The call. Results whose shapes the caller cannot name yet are typed by
  // rank and dtype, then matched to fresh dimensions.
  std::vector<ir::Expr> args = {std::make_shared<ir::GlobalVarExpr>(fn),
                                PrimValue(ir::PrimExpr(int64_t{(spec.scan ? 1 : 0) | (spec.max_trip ? 2 : 0) |
                                                               (spec.cond ? 4 : 0)})),
                                PrimValue(ir::PrimExpr(static_cast<int64_t>(n_state))),
                                PrimValue(ir::PrimExpr(static_cast<int64_t>(spec.scan_inputs.size()))),
                                PrimValue(ir::PrimExpr(static_cast<int64_t>(spec.n_scan_out))),
                                spec.max_trip ? spec.max_trip : PrimValue(ir::PrimExpr(int64_t{0})),
                                spec.cond ? spec.cond : PrimValue(ir::PrimExpr(int64_t{0}))};
  std::vector<ir::StructInfo> result_sinfo = state_sinfo;
  std::vector<ir::StructInfo> exact(n_state + spec.n_scan_out);
  for (size_t j = 0; j < n_state; ++j) exact[j] = state_sinfo[j];
  for (size_t k = 0; k < spec.n_scan_out; ++k) {
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(fields[f0 + n_state + k]);
    if (t == nullptr || t->ndim < 0 || !t->has_dtype) {
      return Internal("scan output " + std::to_string(k) + " is not a tensor of known rank and dtype");
    }
    std::vector<ir::PrimExpr> zero, dims;
    dims.push_back(spec.trips ? *spec.trips : ir::PrimExpr(ir::MakeVar(base + "_trips")));
    for (int d = 0; d < t->ndim; ++d) {
      std::optional<int64_t> c = t->has_shape ? ConstDim(t->shape[d]) : std::nullopt;
      zero.push_back(ir::PrimExpr(c ? *c : int64_t{0}));
      dims.push_back(c ? ir::PrimExpr(*c) : ir::PrimExpr(ir::MakeVar(base + "_scan" + std::to_string(k) + "_dim" + std::to_string(d + 1))));
    }
    args.push_back(MakeShape(zero));
    args.push_back(PrimValue(ir::PrimExpr(static_cast<int64_t>(t->dtype.code))));
    args.push_back(PrimValue(ir::PrimExpr(static_cast<int64_t>(t->dtype.bits))));
    args.push_back(PrimValue(ir::PrimExpr(static_cast<int64_t>(t->dtype.lanes))));
    result_sinfo.push_back(ir::MakeTensorSInfoNdim(t->ndim + 1, t->dtype));
    exact[n_state + k] = ir::MakeTensorSInfo(dims, t->dtype);
  }
  for (size_t j = 0; j < n_state; ++j) {
    const auto* s = ir::SInfoAs<ir::TensorSInfo>(state_sinfo[j]);
    if (relaxed[j]) {
      // Relaxed: each dimension's variable is the body's; the caller gets its own.
      exact[j] = Relaxed(*s, ctx.HasOutput(j) ? IdentifierText(ctx.node().output(static_cast<int>(j))) : base + "_out" + std::to_string(j));
      result_sinfo[j] = ir::MakeTensorSInfoNdim(s->ndim, s->dtype);
    }
  }

  builder::BlockBuilder& bb = imp->bb();
  for (const auto& s : spec.states) args.push_back(s);
  for (const auto& x : spec.scan_inputs) args.push_back(x);
  for (const auto& c : captured) args.push_back(c);
  (void)lead;
  ir::StructInfo tuple_sinfo = std::make_shared<ir::TupleSInfo>(result_sinfo);
  auto call = std::make_shared<ir::CallExpr>(std::make_shared<ir::ExternFuncExpr>("vm.builtin.loop"), args,
                                             ir::AttrMap{}, std::vector<ir::StructInfo>{tuple_sinfo});
  call->struct_info = tuple_sinfo;
  KILN_ASSIGN_OR_RETURN(ir::RVar r, bb.Emit(call, base));
  std::vector<ir::Expr> outs;
  for (size_t i = 0; i < result_sinfo.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(ir::RVar item, bb.Emit(std::make_shared<ir::TupleGetItemExpr>(r, static_cast<int>(i))));
    ir::Expr e = item;
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(item->struct_info);
    if (t == nullptr || !t->has_shape) {
      KILN_ASSIGN_OR_RETURN(ir::RVar cast, bb.EmitMatchCast(item, exact[i]));
      e = cast;
    }
    outs.push_back(e);
  }
  return outs;
}

const ::onnx::GraphProto* BodyOf(NodeCtx& ctx) {
  const ::onnx::AttributeProto* a = ctx.Attr("body");
  return a != nullptr && a->has_g() ? &a->g() : nullptr;
}

// Checks that input i holds one element of `dtype`.
Status CheckOneElement(NodeCtx& ctx, size_t i, DType dtype, const char* what) {
  KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* t, ctx.Info(i));
  if (t->has_dtype && t->dtype != dtype) {
    return ctx.Invalid(std::string(what) + " must be " + DTypeName(dtype) + ", got " + DTypeName(t->dtype));
  }
  for (const auto& d : t->shape) {
    auto c = ConstDim(d);
    if (!c || *c != 1) return ctx.Invalid(std::string(what) + " must hold one element");
  }
  return Status::Ok();
}

// Input i, checked to hold one element of `dtype`.
Result<ir::Expr> OneElement(NodeCtx& ctx, size_t i, DType dtype, const char* what) {
  KILN_RETURN_IF_ERROR(CheckOneElement(ctx, i, dtype, what));
  return ctx.Input(i);
}

Status ConvertLoop(NodeCtx& ctx) {
  const ::onnx::GraphProto* body = BodyOf(ctx);
  if (body == nullptr) return ctx.Invalid("the body (a graph) is required");
  if (ctx.NumInputs() < 2) return ctx.Invalid("Loop takes M and cond (either may be empty) before its loop-carried values");
  KILN_RETURN_IF_ERROR(CheckTensorValues(ctx, *body));
  const size_t n_state = ctx.NumInputs() - 2;
  if (static_cast<size_t>(body->input_size()) != n_state + 2) {
    return ctx.Invalid("the body has " + std::to_string(body->input_size()) + " inputs; the node passes " +
                       std::to_string(n_state) + " loop-carried values (the body takes 2 more)");
  }
  if (static_cast<size_t>(body->output_size()) < n_state + 1) {
    return ctx.Invalid("the body has " + std::to_string(body->output_size()) + " outputs; it must return the condition and " +
                       std::to_string(n_state) + " loop-carried values");
  }
  LoopSpec spec;
  spec.body = body;
  spec.n_scan_out = static_cast<size_t>(body->output_size()) - 1 - n_state;
  if (ctx.NumOutputs() > n_state + spec.n_scan_out) {
    return ctx.Invalid("the node has " + std::to_string(ctx.NumOutputs()) + " outputs; the body gives " +
                       std::to_string(n_state + spec.n_scan_out));
  }
  if (!ctx.HasInput(0) && !ctx.HasInput(1)) {
    return ctx.Unsupported("a Loop with neither a trip count M nor a condition (it never ends)");
  }
  KILN_RETURN_IF_ERROR(ctx.importer()->SuspendDataflow());
  if (ctx.HasInput(0)) {
    KILN_ASSIGN_OR_RETURN(const Value* m, ctx.In(0));
    if (m->known && m->known->elems.size() == 1) {
      // Known at import time (a constant, or shape arithmetic such as a
      // sequence length): an R.prim_value, never a tensor.
      KILN_RETURN_IF_ERROR(CheckOneElement(ctx, 0, DType::Int64(), "the trip count M"));
      ir::PrimExpr e = m->known->elems[0];
      spec.max_trip = PrimValue(e);
      // M alone: the scan outputs' length is M too (a dimension is never negative).
      if (!ctx.HasInput(1)) {
        if (auto c = ConstDim(e)) {
          spec.trips = ir::PrimExpr(std::max<int64_t>(0, *c));
        } else if (e.as<ir::VarNode>()) {
          spec.trips = e;
        }
      }
    } else {
      KILN_ASSIGN_OR_RETURN(spec.max_trip, OneElement(ctx, 0, DType::Int64(), "the trip count M"));
    }
  }
  if (ctx.HasInput(1)) { KILN_ASSIGN_OR_RETURN(spec.cond, OneElement(ctx, 1, DType::Bool(), "the condition")); }
  spec.lead = {ir::MakeTensorSInfo({}, DType::Int64()), ir::MakeTensorSInfo({}, DType::Bool())};
  for (size_t j = 0; j < n_state; ++j) {
    if (!ctx.HasInput(2 + j)) return ctx.Unsupported("an empty loop-carried value (optional values)");
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* t, ctx.Info(2 + j));
    (void)t;
    KILN_ASSIGN_OR_RETURN(ir::Expr v, ctx.Input(2 + j));
    spec.states.push_back(v);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ir::Expr> outs, EmitLoop(ctx, spec));
  KILN_RETURN_IF_ERROR(ctx.importer()->ResumeDataflow());
  for (size_t i = 0; i < ctx.NumOutputs(); ++i)
    if (ctx.HasOutput(i)) ctx.SetOutput(i, outs[i]);
  return Status::Ok();
}

// axes/directions attributes of Scan: one per value, defaults 0.
Result<std::vector<int64_t>> PerValue(NodeCtx& ctx, const char* name, size_t n) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, ctx.AttrInts(name, std::vector<int64_t>(n, 0)));
  if (v.size() != n) {
    return ctx.Invalid(std::string(name) + " has " + std::to_string(v.size()) + " entries for " + std::to_string(n) + " values");
  }
  return v;
}

// A Scan body takes the states, then one slice of each scan input, and
// returns the states before its scan outputs.
Status CheckScanBody(NodeCtx& ctx, const ::onnx::GraphProto& body, size_t n_state, size_t n_scan_in) {
  if (static_cast<size_t>(body.input_size()) != n_state + n_scan_in) {
    return ctx.Invalid("the body has " + std::to_string(body.input_size()) + " inputs; the node passes " +
                       std::to_string(n_state + n_scan_in));
  }
  if (static_cast<size_t>(body.output_size()) < n_state) {
    return ctx.Invalid("the body has " + std::to_string(body.output_size()) + " outputs, fewer than the " +
                       std::to_string(n_state) + " state variables");
  }
  return Status::Ok();
}

// Slice b of axis 0 of x, the axis dropped.
Result<ir::Expr> BatchItem(NodeCtx& ctx, const ir::Expr& x, int64_t b) {
  KILN_ASSIGN_OR_RETURN(ir::Expr s, ctx.Op("strided_slice", {x}, {{"axes", AttrInts({0})}, {"begin", AttrInts({b})},
                                                                 {"end", AttrInts({b + 1})}, {"strides", AttrInts({1})}}));
  return ctx.Op("squeeze", {s}, {{"axis", AttrInts({0})}});
}

// Scan of opsets 8: every state and scan input has a leading batch axis (scan
// inputs are [batch, sequence, ...]), scan inputs are scanned along axis 1 in
// the `directions` given, scan outputs are [batch, sequence, ...] in forward
// order. The batch is unrolled: one opset-9 loop per batch item on its slices,
// the results stacked again, so the batch must be known at import time (old
// model zoos export it as 1). Per-item lengths (sequence_lens) are refused.
constexpr int64_t kScan8MaxBatch = 64;

Status ConvertScan8(NodeCtx& ctx) {
  const ::onnx::GraphProto* body = BodyOf(ctx);
  if (body == nullptr) return ctx.Invalid("the body (a graph) is required");
  KILN_RETURN_IF_ERROR(CheckTensorValues(ctx, *body));
  if (ctx.HasInput(0)) return ctx.Unsupported("sequence_lens (input 0): sequences of different lengths in one batch");
  KILN_ASSIGN_OR_RETURN(int64_t n_in, ctx.AttrInt("num_scan_inputs", -1));
  if (n_in < 1 || static_cast<size_t>(n_in) + 1 > ctx.NumInputs()) {
    return ctx.Invalid("num_scan_inputs must be between 1 and the number of inputs after sequence_lens (" +
                       std::to_string(ctx.NumInputs() - (ctx.NumInputs() > 0 ? 1 : 0)) + ")");
  }
  const size_t n_scan_in = static_cast<size_t>(n_in);
  const size_t n_state = ctx.NumInputs() - 1 - n_scan_in;
  KILN_RETURN_IF_ERROR(CheckScanBody(ctx, *body, n_state, n_scan_in));
  const size_t n_scan_out = static_cast<size_t>(body->output_size()) - n_state;
  if (ctx.NumOutputs() > n_state + n_scan_out) {
    return ctx.Invalid("the node has " + std::to_string(ctx.NumOutputs()) + " outputs; the body gives " +
                       std::to_string(n_state + n_scan_out));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dirs, PerValue(ctx, "directions", n_scan_in));
  for (int64_t d : dirs)
    if (d != 0 && d != 1) return ctx.Invalid("directions must be 0 or 1");
  // The batch: axis 0 of every state and scan input, one constant.
  std::optional<int64_t> batch;
  for (size_t i = 1; i < ctx.NumInputs(); ++i) {
    const bool is_scan = i > n_state;
    const std::string what = is_scan ? "scan input " + std::to_string(i - 1 - n_state) : "state variable " + std::to_string(i - 1);
    if (!ctx.HasInput(i)) return ctx.Invalid(what + " is empty");
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* t, ctx.Info(i));
    if (!t->has_shape) return Internal("a Scan input without a shape");
    if (t->ndim < (is_scan ? 2 : 1)) {
      return ctx.Invalid(what + " has rank " + std::to_string(t->ndim) + "; opset 8 needs a batch axis" +
                         (is_scan ? " and a sequence axis" : ""));
    }
    std::optional<int64_t> b = ConstDim(t->shape[0]);
    if (!b) return ctx.Unsupported(what + ": a batch dimension not known at import time (the batch is unrolled)");
    if (batch && *batch != *b) {
      return ctx.Invalid(what + " has batch " + std::to_string(*b) + ", an earlier input " + std::to_string(*batch));
    }
    batch = b;
  }
  if (*batch > kScan8MaxBatch) {
    return ctx.Unsupported("a batch of " + std::to_string(*batch) + " (the batch is unrolled; at most " +
                           std::to_string(kScan8MaxBatch) + ")");
  }
  KILN_RETURN_IF_ERROR(ctx.importer()->SuspendDataflow());
  std::vector<std::vector<ir::Expr>> items(n_state + n_scan_out);
  for (int64_t b = 0; b < *batch; ++b) {
    LoopSpec spec;
    spec.scan = true;
    spec.body = body;
    spec.n_scan_out = n_scan_out;
    for (size_t j = 0; j < n_state; ++j) {
      KILN_ASSIGN_OR_RETURN(ir::Expr v, ctx.Input(1 + j));
      KILN_ASSIGN_OR_RETURN(ir::Expr s, BatchItem(ctx, v, b));
      spec.states.push_back(s);
    }
    for (size_t k = 0; k < n_scan_in; ++k) {
      KILN_ASSIGN_OR_RETURN(ir::Expr v, ctx.Input(1 + n_state + k));
      KILN_ASSIGN_OR_RETURN(ir::Expr x, BatchItem(ctx, v, b));
      if (dirs[k] == 1) {
        KILN_ASSIGN_OR_RETURN(x, ctx.Op("strided_slice", {x}, {{"axes", AttrInts({0})}, {"begin", AttrInts({-1})},
                                                                {"end", AttrInts({-(int64_t{1} << 40)})},
                                                                {"strides", AttrInts({-1})}, {"assume_inbound", AttrB(false)}}));
      }
      const auto* t = ir::SInfoAs<ir::TensorSInfo>(x->struct_info);
      if (k == 0 && t != nullptr && t->has_shape) {
        ir::PrimExpr len = t->shape[0];
        if (ConstDim(len) || len.as<ir::VarNode>()) spec.trips = len;
      }
      spec.scan_inputs.push_back(x);
    }
    KILN_ASSIGN_OR_RETURN(std::vector<ir::Expr> outs, EmitLoop(ctx, spec));
    for (size_t i = 0; i < outs.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Op("expand_dims", {outs[i]}, {{"axis", AttrInts({0})}}));
      items[i].push_back(e);
    }
  }
  std::vector<ir::Expr> stacked;
  for (auto& parts : items) {
    if (parts.size() == 1) {
      stacked.push_back(parts[0]);
      continue;
    }
    KILN_ASSIGN_OR_RETURN(ir::Expr e, ctx.Op("concat", {std::make_shared<ir::TupleExpr>(parts)}, {{"axis", AttrI(0)}}));
    stacked.push_back(e);
  }
  KILN_RETURN_IF_ERROR(ctx.importer()->ResumeDataflow());
  for (size_t i = 0; i < ctx.NumOutputs(); ++i)
    if (ctx.HasOutput(i)) ctx.SetOutput(i, stacked[i]);
  return Status::Ok();
}

Status ConvertScan(NodeCtx& ctx) {
  if (ctx.opset() < 9) return ConvertScan8(ctx);
  const ::onnx::GraphProto* body = BodyOf(ctx);
  if (body == nullptr) return ctx.Invalid("the body (a graph) is required");
  KILN_RETURN_IF_ERROR(CheckTensorValues(ctx, *body));
  KILN_ASSIGN_OR_RETURN(int64_t n_in, ctx.AttrInt("num_scan_inputs", -1));
  if (n_in < 1 || static_cast<size_t>(n_in) > ctx.NumInputs()) {
    return ctx.Invalid("num_scan_inputs must be between 1 and the number of inputs (" + std::to_string(ctx.NumInputs()) + ")");
  }
  const size_t n_scan_in = static_cast<size_t>(n_in);
  const size_t n_state = ctx.NumInputs() - n_scan_in;
  KILN_RETURN_IF_ERROR(CheckScanBody(ctx, *body, n_state, n_scan_in));
  LoopSpec spec;
  spec.scan = true;
  spec.body = body;
  spec.n_scan_out = static_cast<size_t>(body->output_size()) - n_state;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> in_axes, PerValue(ctx, "scan_input_axes", n_scan_in));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> in_dirs, PerValue(ctx, "scan_input_directions", n_scan_in));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_axes, PerValue(ctx, "scan_output_axes", spec.n_scan_out));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_dirs, PerValue(ctx, "scan_output_directions", spec.n_scan_out));
  for (int64_t d : out_dirs)
    if (d != 0 && d != 1) return ctx.Invalid("scan_output_directions must be 0 or 1");
  KILN_RETURN_IF_ERROR(ctx.importer()->SuspendDataflow());
  for (size_t j = 0; j < n_state; ++j) {
    if (!ctx.HasInput(j)) return ctx.Unsupported("an empty state variable");
    KILN_ASSIGN_OR_RETURN(ir::Expr v, ctx.Input(j));
    spec.states.push_back(v);
  }
  for (size_t k = 0; k < n_scan_in; ++k) {
    const size_t i = n_state + k;
    if (!ctx.HasInput(i)) return ctx.Invalid("scan input " + std::to_string(k) + " is empty");
    KILN_ASSIGN_OR_RETURN(const ir::TensorSInfo* t, ctx.Info(i));
    if (t->ndim < 1) return ctx.Invalid("scan input " + std::to_string(k) + " is a scalar");
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(in_axes[k], t->ndim, "scan_input_axes"));
    if (in_dirs[k] != 0 && in_dirs[k] != 1) return ctx.Invalid("scan_input_directions must be 0 or 1");
    if (!t->has_shape) return Internal("scan input without a shape");
    ir::PrimExpr len = t->shape[static_cast<size_t>(axis)];
    KILN_ASSIGN_OR_RETURN(ir::Expr x, ctx.Input(i));
    if (axis != 0) {
      std::vector<int64_t> perm = {axis};
      for (int64_t d = 0; d < t->ndim; ++d)
        if (d != axis) perm.push_back(d);
      KILN_ASSIGN_OR_RETURN(x, ctx.Op("permute_dims", {x}, {{"axes", AttrInts(perm)}}));
    }
    if (in_dirs[k] == 1) {
      KILN_ASSIGN_OR_RETURN(x, ctx.Op("strided_slice", {x}, {{"axes", AttrInts({0})}, {"begin", AttrInts({-1})},
                                                              {"end", AttrInts({-(int64_t{1} << 40)})},
                                                              {"strides", AttrInts({-1})}, {"assume_inbound", AttrB(false)}}));
    }
    spec.scan_inputs.push_back(x);
    if (k == 0 && (ConstDim(len) || len.as<ir::VarNode>())) spec.trips = len;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ir::Expr> outs, EmitLoop(ctx, spec));
  KILN_RETURN_IF_ERROR(ctx.importer()->ResumeDataflow());
  for (size_t k = 0; k < spec.n_scan_out; ++k) {
    ir::Expr& y = outs[n_state + k];
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(y->struct_info);
    if (out_dirs[k] == 1) {
      KILN_ASSIGN_OR_RETURN(y, ctx.Op("strided_slice", {y}, {{"axes", AttrInts({0})}, {"begin", AttrInts({-1})},
                                                              {"end", AttrInts({-(int64_t{1} << 40)})},
                                                              {"strides", AttrInts({-1})}, {"assume_inbound", AttrB(false)}}));
    }
    KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(out_axes[k], t->ndim, "scan_output_axes"));
    if (axis != 0) {
      std::vector<int64_t> perm;
      for (int64_t d = 1; d <= axis; ++d) perm.push_back(d);
      perm.push_back(0);
      for (int64_t d = axis + 1; d < t->ndim; ++d) perm.push_back(d);
      KILN_ASSIGN_OR_RETURN(y, ctx.Op("permute_dims", {y}, {{"axes", AttrInts(perm)}}));
    }
  }
  if (ctx.NumOutputs() > outs.size()) {
    return ctx.Invalid("the node has " + std::to_string(ctx.NumOutputs()) + " outputs; the body gives " +
                       std::to_string(outs.size()));
  }
  for (size_t i = 0; i < ctx.NumOutputs(); ++i)
    if (ctx.HasOutput(i)) ctx.SetOutput(i, outs[i]);
  return Status::Ok();
}

}  // namespace

void AddLoopConverters(ConverterTable* t) {
  (*t)["Loop"] = ConvertLoop;
  (*t)["Scan"] = ConvertScan;
}

}  // namespace onnx
}  // namespace kiln
