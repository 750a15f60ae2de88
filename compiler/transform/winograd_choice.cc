#include "compiler/transform/winograd_choice.h"

#include <map>
#include <memory>
#include <unordered_set>
#include <utility>

#include "compiler/ir/structural_equal.h"
#include "compiler/relax/op_registry.h"
#include "compiler/transform/expr_mutator.h"
#include "compiler/transform/var_uses.h"

namespace kiln {
namespace transform {
namespace {

// The longest run of bindings moved into the branches: an epilogue is a
// bias, an activation and perhaps a residual add (PReLU is four).
constexpr size_t kMaxEpilogueBindings = 16;
// How far past the If the epilogue is looked for (a block may hold a whole
// model).
constexpr size_t kMaxEpilogueScan = 64;

ir::Expr Branch(std::vector<ir::Binding> bindings, const ir::RVar& result) {
  ir::BindingBlock block;
  block.is_dataflow = true;
  block.bindings = std::move(bindings);
  auto seq = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{std::move(block)}, result);
  seq->struct_info = result->struct_info;
  return seq;
}

// Rewrites uses of variables by a map (the copies of an epilogue).
class Remap : public ExprMutator {
 public:
  void Set(const ir::VarExpr* from, ir::Expr to) { var_remap_[from] = std::move(to); }
};

const ir::TensorSInfo* TensorInfo(const ir::RVar& v) {
  return v->struct_info ? ir::SInfoAs<ir::TensorSInfo>(v->struct_info) : nullptr;
}

// An elementwise or broadcast operator call whose result has the shape
// `shape` (the convolution's output).
bool Elementwise(const ir::Binding& b, const std::vector<ir::PrimExpr>& shape) {
  if (b.match_cast) return false;
  const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
  const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
  if (!op) return false;
  const relax::OpInfo* info = relax::FindOp(op->name);
  if (!info || info->pattern > ir::kBroadcast) return false;
  const ir::TensorSInfo* t = TensorInfo(b.var);
  if (!t || !t->has_shape || t->shape.size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i)
    if (!ir::StructuralEqual(t->shape[i], shape[i])) return false;
  return true;
}

ir::RVar CopyVar(const ir::RVar& v, const std::string& name, bool dataflow) {
  auto nv = std::make_shared<ir::VarExpr>(name, v->annotation, dataflow);
  nv->struct_info = v->struct_info;
  nv->span = v->span;
  return nv;
}

// One block, with the epilogues after its choices moved into them.
void SinkInBlock(ir::BindingBlock* block, const std::set<const ir::VarExpr*>& choices, const UseCounts& uses,
                 const std::function<std::string(const std::string&)>& fresh) {
  std::vector<ir::Binding>& bs = block->bindings;
  for (size_t i = 0; i < bs.size(); ++i) {
    if (!choices.count(bs[i].var.get())) continue;
    const auto* branch = ir::ExprAs<ir::IfExpr>(bs[i].value);
    const ir::TensorSInfo* yt = TensorInfo(bs[i].var);
    if (!branch || !yt || !yt->has_shape) continue;
    // The candidates, in order: each reads the chain (the If's result or an
    // earlier candidate's) and nothing bound after the If outside it, except
    // bindings that read only what was bound before the If (a bias's
    // expand_dims), which may move before it (a dataflow block has no side
    // effects).
    std::unordered_set<const ir::VarExpr*> chain{bs[i].var.get()}, after;
    std::vector<size_t> moved, hoisted;
    for (size_t j = i + 1; j < bs.size() && j <= i + kMaxEpilogueScan && moved.size() < kMaxEpilogueBindings; ++j) {
      bool reads_chain = false, reads_after = false;
      UseCounts reads;
      CountUses(bs[j].value, &reads);
      for (const auto& [v, n] : reads) reads_chain |= chain.count(v) > 0, reads_after |= after.count(v) > 0;
      if (reads_chain && !reads_after && Elementwise(bs[j], yt->shape)) {
        chain.insert(bs[j].var.get());
        moved.push_back(j);
      } else if (!reads_chain && !reads_after && block->is_dataflow && !bs[j].match_cast) {
        hoisted.push_back(j);
      } else {
        after.insert(bs[j].var.get());
      }
    }
    // The longest prefix of them of which exactly one result is used
    // outside the prefix, and the If's result nowhere else: that result
    // becomes the If's.
    size_t take = 0;
    const ir::VarExpr* result = bs[i].var.get();
    for (size_t p = moved.size(); p > 0; --p) {
      UseCounts inside;
      for (size_t k = 0; k < p; ++k) CountUses(bs[moved[k]].value, &inside);
      const ir::VarExpr* escaping = nullptr;
      int escapes = 0;
      auto check = [&](const ir::VarExpr* v) {
        auto t = uses.find(v);
        int total = t == uses.end() ? 0 : t->second;
        auto in = inside.find(v);
        if (total - (in == inside.end() ? 0 : in->second) > 0) ++escapes, escaping = v;
      };
      check(bs[i].var.get());
      for (size_t k = 0; k < p; ++k) check(bs[moved[k]].var.get());
      if (escapes == 1 && escaping != bs[i].var.get()) {
        take = p;
        result = escaping;
        break;
      }
    }
    if (take == 0) continue;
    // Each branch: its bindings, then the epilogue on its result.
    auto extend = [&](const ir::Expr& e, const char* suffix) {
      const auto& seq = static_cast<const ir::SeqExprNode&>(*e);
      const auto* res = ir::ExprAs<ir::VarExpr>(seq.body);
      std::vector<ir::Binding> out = seq.blocks.at(0).bindings;
      Remap remap;
      remap.Set(bs[i].var.get(), seq.body);
      ir::RVar last = std::static_pointer_cast<const ir::VarExpr>(seq.body);
      // The old result is used by the epilogue inside the block now.
      if (res && !res->is_dataflow && take > 0) {
        ir::RVar df = CopyVar(last, last->name, true);
        for (ir::Binding& b : out)
          if (b.var == last) b.var = df;
        remap.Set(bs[i].var.get(), df);
      }
      for (size_t k = 0; k < take; ++k) {
        const ir::Binding& b = bs[moved[k]];
        bool is_result = b.var.get() == result;
        ir::RVar nv = CopyVar(b.var, fresh(b.var->name + suffix), !is_result);
        ir::Binding nb = b;
        nb.var = nv;
        nb.value = remap.VisitExpr(b.value);
        remap.Set(b.var.get(), nv);
        out.push_back(std::move(nb));
        if (is_result) last = nv;
      }
      return Branch(std::move(out), last);
    };
    ir::Expr t = extend(branch->then_branch, "_w"), f = extend(branch->else_branch, "_d");
    auto nif = std::make_shared<ir::IfExpr>(branch->cond, t, f);
    nif->span = bs[i].value->span;
    ir::RVar result_var;
    for (size_t k = 0; k < take; ++k)
      if (bs[moved[k]].var.get() == result) result_var = bs[moved[k]].var;
    nif->struct_info = result_var->struct_info;
    // The hoisted bindings before the last moved one go before the If; the
    // moved ones leave the block.
    const size_t last = moved[take - 1];
    std::vector<ir::Binding> next(bs.begin(), bs.begin() + static_cast<std::ptrdiff_t>(i));
    for (size_t h : hoisted)
      if (h < last) next.push_back(bs[h]);
    next.push_back(ir::Binding{result_var, nif, nullptr, bs[i].span});
    const size_t at = next.size() - 1;
    std::set<size_t> gone(moved.begin(), moved.begin() + static_cast<std::ptrdiff_t>(take));
    for (size_t h : hoisted)
      if (h < last) gone.insert(h);
    for (size_t j = i + 1; j < bs.size(); ++j)
      if (!gone.count(j)) next.push_back(bs[j]);
    bs = std::move(next);
    i = at;
  }
}

}  // namespace

ir::Expr MakeShapeChoice(const ir::PrimExpr& cond, std::vector<ir::Binding> then_bindings,
                         const ir::RVar& then_result, std::vector<ir::Binding> else_bindings,
                         const ir::RVar& else_result) {
  auto c = std::make_shared<ir::PrimValueExpr>(cond);
  c->struct_info = std::make_shared<ir::PrimSInfo>(cond.dtype());
  auto e = std::make_shared<ir::IfExpr>(c, Branch(std::move(then_bindings), then_result),
                                        Branch(std::move(else_bindings), else_result));
  e->struct_info = then_result->struct_info;
  return e;
}

ir::Function SinkEpilogueIntoChoices(const ir::Function& f, const std::set<const ir::VarExpr*>& choices,
                                     const std::function<std::string(const std::string&)>& fresh) {
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(f->body);
  if (!seq || choices.empty()) return f;
  UseCounts uses;
  CountUses(f->body, &uses);
  std::vector<ir::BindingBlock> sunk = seq->blocks;
  for (ir::BindingBlock& b : sunk) SinkInBlock(&b, choices, uses, fresh);
  // An If may not sit inside a dataflow block (the text format rejects
  // it, as TVM does): each If gets a block of its own between the dataflow
  // blocks before and after it, and the dataflow variables read across
  // those blocks become non-dataflow ones.
  std::vector<ir::BindingBlock> blocks;
  for (ir::BindingBlock& b : sunk) {
    if (!b.is_dataflow) {
      blocks.push_back(std::move(b));
      continue;
    }
    ir::BindingBlock part;
    part.is_dataflow = true;
    for (ir::Binding& bind : b.bindings) {
      if (!ir::ExprAs<ir::IfExpr>(bind.value)) {
        part.bindings.push_back(std::move(bind));
        continue;
      }
      if (!part.bindings.empty()) blocks.push_back(std::move(part));
      part = ir::BindingBlock{};
      part.is_dataflow = true;
      ir::BindingBlock alone;
      alone.bindings.push_back(std::move(bind));
      blocks.push_back(std::move(alone));
    }
    if (!part.bindings.empty()) blocks.push_back(std::move(part));
  }
  std::unordered_map<const ir::VarExpr*, size_t> defined_in;
  for (size_t k = 0; k < blocks.size(); ++k)
    for (const ir::Binding& bind : blocks[k].bindings) defined_in[bind.var.get()] = k;
  std::set<const ir::VarExpr*> escaping;
  auto read_in = [&](const ir::Expr& e, size_t k) {
    UseCounts reads;
    CountUses(e, &reads);
    for (const auto& [v, n] : reads) {
      auto d = defined_in.find(v);
      if (d != defined_in.end() && d->second != k && v->is_dataflow) escaping.insert(v);
    }
  };
  for (size_t k = 0; k < blocks.size(); ++k) {
    for (const ir::Binding& bind : blocks[k].bindings) {
      read_in(bind.value, k);
      if (!blocks[k].is_dataflow && bind.var->is_dataflow) escaping.insert(bind.var.get());
    }
  }
  read_in(seq->body, blocks.size());
  Remap remap;
  for (ir::BindingBlock& b : blocks)
    for (ir::Binding& bind : b.bindings)
      if (escaping.count(bind.var.get())) {
        ir::RVar nv = CopyVar(bind.var, bind.var->name, false);
        remap.Set(bind.var.get(), nv);
        bind.var = nv;
      }
  if (!escaping.empty())
    for (ir::BindingBlock& b : blocks)
      for (ir::Binding& bind : b.bindings) bind.value = remap.VisitExpr(bind.value);
  ir::Expr body = escaping.empty() ? seq->body : remap.VisitExpr(seq->body);
  return ir::WithBody(f, std::move(blocks), body);
}

}  // namespace transform
}  // namespace kiln
