#include "compiler/transform/dispatch_library.h"

#include <yaml-cpp/yaml.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <unordered_map>
#include <sstream>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/var_uses.h"

namespace kiln {
namespace transform {
namespace {

// ---- rules ----

std::string At(const std::string& path, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? path : path + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

Result<int64_t> IntOf(const std::string& path, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) return InvalidArgument(At(path, n) + ": '" + key + "' takes an integer");
  const std::string& s = n.Scalar();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE || v < 0) {
    return InvalidArgument(At(path, n) + ": '" + key + "' takes a non-negative integer, got '" + s + "'");
  }
  return static_cast<int64_t>(v);
}

Result<std::vector<int64_t>> PairOf(const std::string& path, const YAML::Node& n, const std::string& key) {
  if (!n.IsSequence() || n.size() != 2) return InvalidArgument(At(path, n) + ": '" + key + "' takes a list of two integers");
  std::vector<int64_t> out;
  for (const auto& item : n) {
    KILN_ASSIGN_OR_RETURN(int64_t v, IntOf(path, item, key));
    out.push_back(v);
  }
  return out;
}

Result<DispatchRule> RuleOf(const std::string& path, const YAML::Node& n) {
  if (!n.IsMap()) return InvalidArgument(At(path, n) + ": a rule is a mapping with 'op', 'library' and optional 'when'");
  DispatchRule r;
  r.where = At(path, n);
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "op" || key == "library") {
      if (!v.IsScalar()) return InvalidArgument(At(path, v) + ": '" + key + "' takes a name");
      (key == "op" ? r.op : r.library) = v.Scalar();
    } else if (key == "when") {
      if (!v.IsMap()) return InvalidArgument(At(path, v) + ": 'when' is a mapping of condition: value");
      for (const auto& c : v) {
        const std::string ck = c.first.Scalar();
        const YAML::Node& cv = c.second;
        if (ck == "groups") {
          KILN_ASSIGN_OR_RETURN(r.groups, IntOf(path, cv, ck));
        } else if (ck == "depthwise") {
          if (!cv.IsScalar() || (cv.Scalar() != "true" && cv.Scalar() != "false")) {
            return InvalidArgument(At(path, cv) + ": 'depthwise' takes true or false");
          }
          r.depthwise = cv.Scalar() == "true";
        } else if (ck == "kernel") {
          KILN_ASSIGN_OR_RETURN(r.kernel, PairOf(path, cv, ck));
        } else if (ck == "stride") {
          KILN_ASSIGN_OR_RETURN(r.stride, PairOf(path, cv, ck));
        } else if (ck == "min_macs") {
          KILN_ASSIGN_OR_RETURN(r.min_macs, IntOf(path, cv, ck));
        } else if (ck == "max_macs") {
          KILN_ASSIGN_OR_RETURN(r.max_macs, IntOf(path, cv, ck));
        } else {
          return InvalidArgument(At(path, c.first) + ": unknown condition '" + ck +
                                 "' (conditions: groups, depthwise, kernel, stride, min_macs, max_macs)");
        }
      }
    } else {
      return InvalidArgument(At(path, kv.first) + ": unknown rule key '" + key + "' (keys: op, library, when)");
    }
  }
  if (r.op != "conv2d" && r.op != "matmul") {
    return InvalidArgument(r.where + ": 'op' must be conv2d or matmul, got '" + r.op + "'");
  }
  if (r.library != "dnnl" && r.library != "cublas" && r.library != "cudnn" && r.library != "kiln") {
    return InvalidArgument(r.where + ": 'library' must be dnnl, cublas, cudnn or kiln, got '" + r.library + "'");
  }
  if (r.library == "cublas" && r.op != "matmul") {
    return InvalidArgument(r.where + ": library cublas takes matmul only, not " + r.op);
  }
  if (r.library == "cudnn" && r.op != "conv2d") {
    return InvalidArgument(r.where + ": library cudnn takes conv2d only, not " + r.op);
  }
  bool conv_only = r.groups || r.depthwise || r.kernel || r.stride;
  if (r.op == "matmul" && conv_only) {
    return InvalidArgument(r.where + ": groups, depthwise, kernel and stride are conditions of conv2d rules");
  }
  return r;
}

Result<std::vector<DispatchRule>> Convert(const std::string& path, const YAML::Node& root) {
  std::vector<DispatchRule> rules;
  if (root.IsNull()) return rules;
  if (!root.IsMap() || !root["rules"] || root.size() != 1) {
    return InvalidArgument(At(path, root) + ": a dispatch rule file is a mapping with one key, 'rules'");
  }
  const YAML::Node& list = root["rules"];
  if (list.IsNull()) return rules;
  if (!list.IsSequence()) return InvalidArgument(At(path, list) + ": 'rules' is a list of rules");
  for (const auto& item : list) {
    KILN_ASSIGN_OR_RETURN(DispatchRule r, RuleOf(path, item));
    rules.push_back(std::move(r));
  }
  return rules;
}

// ---- the pass ----

std::string StringAttr(const ir::AttrMap& attrs, const char* name, const std::string& dflt) {
  auto it = attrs.find(name);
  if (it == attrs.end() || it->second.kind == ir::AttrValue::Kind::kNone) return dflt;
  return it->second.kind == ir::AttrValue::Kind::kString ? it->second.s : "?";
}

// An integer list attribute (a lone int counts as a list of one), or `dflt`.
std::vector<int64_t> IntsAttr(const ir::AttrMap& attrs, const char* name, std::vector<int64_t> dflt) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return dflt;
  const ir::AttrValue& v = it->second;
  if (v.kind == ir::AttrValue::Kind::kInt) return {v.i};
  if (v.kind == ir::AttrValue::Kind::kIntList) return v.ints;
  return dflt;
}

bool DefaultOutDtype(const ir::AttrMap& attrs) {
  std::string d = StringAttr(attrs, "out_dtype", "");
  return d.empty() || d == "void" || d == "float32";
}

// A float32 tensor of known rank (`ndim`, or >= 2 when ndim is -1); its
// shape may be unknown (R.Tensor(ndim=2)), since the library reads shapes at
// run time.
const ir::TensorSInfo* F32Tensor(const ir::Expr& e, int ndim) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(e->struct_info);
  if (!t || !t->has_dtype || t->dtype != DType::Float32()) return nullptr;
  if (ndim >= 0 ? t->ndim != ndim : t->ndim < 2) return nullptr;
  return t;
}

// Dimension i of `t`, when its shape is known and the dimension constant.
std::optional<int64_t> Dim(const ir::TensorSInfo& t, size_t i) {
  if (!t.has_shape || i >= t.shape.size()) return std::nullopt;
  return relax::ConstDim(t.shape[i]);
}

// The product of `dims`, or nullopt when one is symbolic.
std::optional<int64_t> StaticCount(const std::vector<ir::PrimExpr>& dims) {
  int64_t n = 1;
  for (const auto& d : dims) {
    auto c = relax::ConstDim(d);
    if (!c) return std::nullopt;
    n *= *c;
  }
  return n;
}

// What a rule's conditions look at, for one call.
struct CallFacts {
  std::string op;
  int64_t groups = 1;
  bool depthwise = false;
  std::vector<int64_t> kernel, stride;
  std::optional<int64_t> macs;
};

bool Matches(const DispatchRule& r, const CallFacts& f) {
  if (r.op != f.op) return false;
  if (r.groups && *r.groups != f.groups) return false;
  if (r.depthwise && *r.depthwise != f.depthwise) return false;
  if (r.kernel && *r.kernel != f.kernel) return false;
  if (r.stride && *r.stride != f.stride) return false;
  if ((r.min_macs || r.max_macs) && !f.macs) return false;
  if (r.min_macs && *f.macs < *r.min_macs) return false;
  if (r.max_macs && *f.macs > *r.max_macs) return false;
  return true;
}

// A GPU library call made here (kiln.cublas.matmul*, kiln.cudnn.conv2d*),
// which a following bias add and activation may still join.
struct GpuLibraryCall {
  std::string fn;       // "kiln.cublas.matmul" or "kiln.cudnn.conv2d"
  ir::Expr a, b;        // A, B or X, W
  ir::Expr attrs;       // conv2d's int64[9], else null
  ir::Expr bias;        // null until an add joined
  std::string act;      // "", "relu", "gelu"
  bool conv() const { return attrs != nullptr; }
};

class Dispatcher : public ExprMutator {
 public:
  Dispatcher(const std::vector<DispatchRule>& rules, const UseCounts& uses) : rules_(rules), uses_(uses) {}
  Status status;
  // Bindings of GPU library calls that a later call absorbed (dead, and not
  // removable by dce: packed calls count as effects).
  std::set<const ir::VarExpr*> absorbed;

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    std::vector<ir::Binding> mine;
    ExprMutator::VisitBinding(b, in_dataflow, &mine);
    for (auto& nb : mine) {
      const auto* call = nb.match_cast ? nullptr : ir::ExprAs<ir::CallExpr>(nb.value);
      const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
      std::optional<GpuLibraryCall> gpu_call;
      if (op) {
        Result<ir::Expr> r = op->name == "relax.nn.conv2d" ? Conv(*call, &gpu_call)
                             : op->name == "relax.matmul" ? Matmul(*call, &gpu_call)
                                                          : Epilogue(*call, op->name, &gpu_call);
        if (!r.ok()) {
          status = r.status();
        } else if (*r) {
          nb.value = *r;
        }
      }
      if (gpu_call) gpu_calls_[nb.var.get()] = std::move(*gpu_call);
      out->push_back(std::move(nb));
    }
  }

 private:
  // The library the first matching rule names, or "kiln".
  std::string Choose(const CallFacts& f) const {
    for (const auto& r : rules_)
      if (Matches(r, f)) return r.library;
    return "kiln";
  }

  static ir::Expr Packed(const char* fn, std::vector<ir::Expr> args, const ir::CallExpr& call) {
    ir::Expr callee = std::make_shared<ir::ExternFuncExpr>(fn);
    callee->struct_info = std::make_shared<ir::ObjectSInfo>();
    std::vector<ir::StructInfo> arg_sinfo;
    for (const auto& a : args) arg_sinfo.push_back(a->struct_info);
    auto tuple = std::make_shared<ir::TupleExpr>(std::move(args));
    tuple->struct_info = std::make_shared<ir::TupleSInfo>(arg_sinfo);
    auto out = std::make_shared<ir::CallExpr>(std::make_shared<ir::OpExpr>("relax.call_dps_packed"),
                                              std::vector<ir::Expr>{callee, tuple}, ir::AttrMap{},
                                              std::vector<ir::StructInfo>{call.struct_info});
    out->span = call.span;
    out->struct_info = call.struct_info;
    return ir::Expr(out);
  }

  Result<ir::Expr> Conv(const ir::CallExpr& call, std::optional<GpuLibraryCall>* gpu_call) {
    if (call.args.size() != 2) return ir::Expr(nullptr);
    const ir::TensorSInfo* x = F32Tensor(call.args[0], 4);
    const ir::TensorSInfo* w = F32Tensor(call.args[1], 4);
    const ir::TensorSInfo* y = ir::SInfoAs<ir::TensorSInfo>(call.struct_info);
    if (!x || !w || !y || y->ndim != 4) return ir::Expr(nullptr);
    if (StringAttr(call.attrs, "data_layout", "NCHW") != "NCHW" ||
        StringAttr(call.attrs, "kernel_layout", "OIHW") != "OIHW" ||
        StringAttr(call.attrs, "out_layout", "NCHW") != "NCHW" || !DefaultOutDtype(call.attrs)) {
      return ir::Expr(nullptr);
    }
    std::vector<int64_t> strides = IntsAttr(call.attrs, "strides", {1, 1});
    std::vector<int64_t> pad = IntsAttr(call.attrs, "padding", {0, 0, 0, 0});
    std::vector<int64_t> dil = IntsAttr(call.attrs, "dilation", {1, 1});
    if (strides.size() == 1) strides = {strides[0], strides[0]};
    if (dil.size() == 1) dil = {dil[0], dil[0]};
    if (pad.size() == 1) pad = {pad[0], pad[0], pad[0], pad[0]};
    if (pad.size() == 2) pad = {pad[0], pad[1], pad[0], pad[1]};
    if (strides.size() != 2 || dil.size() != 2 || pad.size() != 4) return ir::Expr(nullptr);
    CallFacts f;
    f.op = "conv2d";
    f.groups = IntsAttr(call.attrs, "groups", {1})[0];
    auto in_c = Dim(*x, 1);
    auto out_c = Dim(*w, 0);
    f.depthwise = f.groups > 1 && in_c && out_c && *in_c == f.groups && *out_c == f.groups;
    auto kh = Dim(*w, 2);
    auto kw = Dim(*w, 3);
    if (kh && kw) f.kernel = {*kh, *kw};
    f.stride = strides;
    if (y->has_shape && w->has_shape) {
      auto outs = StaticCount(y->shape);
      auto per = StaticCount({w->shape[1], w->shape[2], w->shape[3]});
      if (outs && per) f.macs = *outs * *per;
    }
    const std::string library = Choose(f);
    // cuDNN's legacy API pads symmetrically; other convolutions stay Kiln's.
    const bool cudnn = library == "cudnn" && pad[0] == pad[2] && pad[1] == pad[3];
    if (library != "dnnl" && !cudnn) return ir::Expr(nullptr);

    // The int64[9] Attrs of kiln.dnnl.conv2d (kernels/dnnl_kernels.h) and
    // kiln.cudnn.conv2d.
    const int64_t attrs[9] = {strides[0], strides[1], pad[0], pad[1], pad[2], pad[3], dil[0], dil[1], f.groups};
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty({9}, DType::Int64()));
    std::memcpy(t.raw_data(), attrs, sizeof(attrs));
    ir::Expr attrs_const = ir::MakeConstant(std::move(t));
    if (cudnn) {
      *gpu_call = GpuLibraryCall{"kiln.cudnn.conv2d", call.args[0], call.args[1], attrs_const, nullptr, ""};
      return Packed("kiln.cudnn.conv2d", {call.args[0], call.args[1], attrs_const}, call);
    }
    return Packed("kiln.dnnl.conv2d", {call.args[0], call.args[1], attrs_const}, call);
  }

  Result<ir::Expr> Matmul(const ir::CallExpr& call, std::optional<GpuLibraryCall>* gpu_call) {
    if (call.args.size() != 2 || !DefaultOutDtype(call.attrs)) return ir::Expr(nullptr);
    const ir::TensorSInfo* a = F32Tensor(call.args[0], -1);
    const ir::TensorSInfo* b = F32Tensor(call.args[1], -1);
    const ir::TensorSInfo* y = ir::SInfoAs<ir::TensorSInfo>(call.struct_info);
    if (!a || !b || !y || !y->has_dtype || y->dtype != DType::Float32()) return ir::Expr(nullptr);
    CallFacts f;
    f.op = "matmul";
    if (a->has_shape && y->has_shape) {  // the outputs times K
      std::vector<ir::PrimExpr> dims = y->shape;
      dims.push_back(a->shape.back());
      f.macs = StaticCount(dims);
    }
    const std::string library = Choose(f);
    // kiln.dnnl.matmul takes a (..., K) and b (K, N); batched or 1-D b stays.
    if (library == "dnnl" && b->ndim == 2) return Packed("kiln.dnnl.matmul", {call.args[0], call.args[1]}, call);
    if (library == "cublas" && CublasTakes(*a, *b)) {
      *gpu_call = GpuLibraryCall{"kiln.cublas.matmul", call.args[0], call.args[1], nullptr, nullptr, ""};
      return Packed("kiln.cublas.matmul", {call.args[0], call.args[1]}, call);
    }
    return ir::Expr(nullptr);
  }

  // kiln.cublas.matmul's shapes (kernels/cuda/cublas_matmul.h): b (K, N)
  // with any a (..., K), or a batched b (batch..., K, N) with a (M, K) or a
  // of b's rank whose batch dimensions are provably b's (no broadcasting).
  static bool CublasTakes(const ir::TensorSInfo& a, const ir::TensorSInfo& b) {
    if (b.ndim == 2 || a.ndim == 2) return true;
    if (a.ndim != b.ndim || !a.has_shape || !b.has_shape) return false;
    for (int i = 0; i + 2 < b.ndim; ++i)
      if (relax::CompareDims(a.shape[i], b.shape[i]) != relax::DimRelation::kEqual) return false;
    return true;
  }

  // A GPU library call used only here, followed by a bias add or an
  // activation that the library's epilogue does: one call instead of two
  // kernels. cuBLAS: a [N] float32 bias (N the matmul's last dimension),
  // then relu or gelu_tanh (also without a bias). cuDNN: a [O, 1, 1] or
  // [1, O, 1, 1] float32 bias (O the output channels), then relu.
  Result<ir::Expr> Epilogue(const ir::CallExpr& call, const std::string& op, std::optional<GpuLibraryCall>* out) {
    const bool is_add = op == "relax.add";
    const char* act = op == "relax.nn.relu" ? "relu" : op == "relax.nn.gelu_tanh" ? "gelu" : nullptr;
    if (!is_add && !act) return ir::Expr(nullptr);
    if (call.args.size() != (is_add ? 2u : 1u)) return ir::Expr(nullptr);
    for (size_t i = 0; i < call.args.size(); ++i) {
      const auto* v = ir::ExprAs<ir::VarExpr>(call.args[i]);
      auto it = v ? gpu_calls_.find(v) : gpu_calls_.end();
      if (it == gpu_calls_.end() || !it->second.act.empty()) continue;
      auto uses = uses_.find(v);
      if (uses == uses_.end() || uses->second != 1) continue;
      GpuLibraryCall c = it->second;
      if (is_add) {
        if (c.bias || !IsBiasOf(c, call.args[1 - i], call.args[i])) continue;
        c.bias = call.args[1 - i];
      } else {
        // cuDNN fuses relu only after a bias (cudnnConvolutionBiasActivationForward).
        if (c.conv() && (!c.bias || std::string(act) != "relu")) continue;
        c.act = act;
      }
      absorbed.insert(v);
      std::string fn = c.fn + (c.bias ? "_bias" : "") + (c.act.empty() ? "" : "_" + c.act);
      std::vector<ir::Expr> args = {c.a, c.b};
      if (c.bias) args.push_back(c.bias);
      if (c.conv()) args.push_back(c.attrs);
      *out = c;
      return Packed(fn.c_str(), args, call);
    }
    return ir::Expr(nullptr);
  }

  // Whether `bias` is a per-channel bias of `y`, the value of `c`.
  static bool IsBiasOf(const GpuLibraryCall& c, const ir::Expr& bias, const ir::Expr& y) {
    const ir::TensorSInfo* ys = relax::TensorInfoOf(y);
    const auto* bs = ir::SInfoAs<ir::TensorSInfo>(bias->struct_info);
    if (!ys || !ys->has_shape || !bs || !bs->has_shape || !bs->has_dtype || bs->dtype != DType::Float32()) return false;
    auto same = [](const ir::PrimExpr& a, const ir::PrimExpr& b) {
      return relax::CompareDims(a, b) == relax::DimRelation::kEqual;
    };
    auto one = [](const ir::PrimExpr& d) { return relax::ConstDim(d) == std::optional<int64_t>(1); };
    if (!c.conv()) return bs->ndim == 1 && same(bs->shape[0], ys->shape.back());
    if (ys->ndim != 4) return false;
    const ir::PrimExpr& o = ys->shape[1];
    if (bs->ndim == 3) return same(bs->shape[0], o) && one(bs->shape[1]) && one(bs->shape[2]);
    return bs->ndim == 4 && one(bs->shape[0]) && same(bs->shape[1], o) && one(bs->shape[2]) && one(bs->shape[3]);
  }

  const std::vector<DispatchRule>& rules_;
  const UseCounts& uses_;
  std::unordered_map<const ir::VarExpr*, GpuLibraryCall> gpu_calls_;
};

// Drops the bindings of `vars` (GPU library calls another call absorbed).
class DropBindings : public ExprMutator {
 public:
  explicit DropBindings(const std::set<const ir::VarExpr*>& vars) : vars_(vars) {}
  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    if (vars_.count(b.var.get())) return;
    ExprMutator::VisitBinding(b, in_dataflow, out);
  }

 private:
  const std::set<const ir::VarExpr*>& vars_;
};

}  // namespace

Result<std::vector<DispatchRule>> ParseDispatchRules(const std::string& yaml, const std::string& path) {
  try {
    return Convert(path, YAML::Load(yaml));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                           ": invalid YAML: " + e.msg);
  }
}

Result<std::vector<DispatchRule>> ReadDispatchRules(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read the dispatch rule file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseDispatchRules(ss.str(), path);
}

Result<ir::IRModule> DispatchToLibraries(const ir::IRModule& mod, const std::vector<DispatchRule>& rules) {
  if (rules.empty()) return mod;
  ir::IRModule out = mod;
  bool changed = false;
  for (auto& e : out.entries) {
    if (!e.relax) continue;
    UseCounts uses;
    CountUses(e.relax->body, &uses);
    Dispatcher d(rules, uses);
    ir::Function g = d.VisitFunction(e.relax);
    KILN_RETURN_IF_ERROR(d.status);
    if (!d.absorbed.empty()) g = DropBindings(d.absorbed).VisitFunction(g);
    changed |= g != e.relax;
    e.relax = g;
  }
  if (!changed) return out;
  return relax::InferStructInfo(out);
}

}  // namespace transform
}  // namespace kiln
