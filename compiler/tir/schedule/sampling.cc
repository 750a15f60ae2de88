// tir::Schedule's sampling instructions: sample_perfect_tile,
// sample_categorical, sample_compute_location, and split by sampled factors.
#include <algorithm>

#include "compiler/arith/debug_string.h"
#include "compiler/arith/simplify.h"
#include "compiler/tir/schedule/schedule.h"
#include "compiler/tir/schedule/tree.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

std::string IntsString(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

std::vector<int64_t> PrimeFactors(int64_t x) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= x; ++p)
    while (x % p == 0) {
      out.push_back(p);
      x /= p;
    }
  if (x > 1) out.push_back(x);
  return out;
}

}  // namespace

ExprRV Schedule::NewExprRV(int64_t value) {
  ExprRV e{next_id_++};
  values_[e.id] = value;
  return e;
}

Result<int64_t> Schedule::Get(const ExprRV& v) const {
  auto it = values_.find(v.id);
  if (it == values_.end()) return InvalidArgument("schedule: v" + std::to_string(v.id) + " is not a sampled value");
  return it->second;
}

Result<std::vector<ExprRV>> Schedule::SamplePerfectTile(const LoopRV& loop, int n, int64_t max_innermost_factor) {
  KILN_ASSIGN_OR_RETURN(Var v, Resolve(loop));
  const std::string where = "sample_perfect_tile(" + v->name + ")";
  if (n < 1) return InvalidArgument(where + ": n = " + std::to_string(n) + " is not positive");
  if (max_innermost_factor < 1)
    return InvalidArgument(where + ": max_innermost_factor " + std::to_string(max_innermost_factor) + " is not positive");
  const auto* f = As<ForNode>(sched::FindLoop(body(), v.get()).stmt);
  auto extent = arith::AsConstInt(f->extent);
  if (!extent || *extent < 1)
    return InvalidArgument(where + ": the loop's extent " + arith::ToDebugString(f->extent) + " is not a positive constant");
  std::vector<int64_t> tile(n, 1);
  if (forced_decision_ != nullptr) {
    const std::vector<int64_t>& d = *forced_decision_;
    bool ok = static_cast<int>(d.size()) == n;
    int64_t product = 1;
    for (size_t k = 0; ok && k < d.size(); ++k) {
      ok = d[k] >= 1 && d[k] <= *extent;
      if (ok) product *= d[k];
      ok = ok && product <= *extent;
    }
    if (!ok || product != *extent || d.back() > max_innermost_factor)
      return FailedPrecondition(where + ": the decision " + IntsString(d) + " is not a perfect " + std::to_string(n) +
                                "-tiling of extent " + std::to_string(*extent) + " with innermost <= " +
                                std::to_string(max_innermost_factor) + " (a trace recorded on another workload?)");
    tile = d;
  } else {
    std::vector<int64_t> inner;
    for (int64_t d = 1; d <= std::min(*extent, max_innermost_factor); ++d)
      if (*extent % d == 0) inner.push_back(d);
    tile[n - 1] = n == 1 ? *extent : inner[std::uniform_int_distribution<size_t>(0, inner.size() - 1)(rng_)];
    if (n > 1) {
      for (int64_t p : PrimeFactors(*extent / tile[n - 1]))
        tile[std::uniform_int_distribution<int>(0, n - 2)(rng_)] *= p;
    }
  }
  std::vector<ExprRV> out;
  std::vector<int64_t> ids;
  for (int64_t t : tile) {
    out.push_back(NewExprRV(t));
    ids.push_back(out.back().id);
  }
  RecordSample("sample_perfect_tile", {TraceArg::Loop(loop), TraceArg::Int(n), TraceArg::Int(max_innermost_factor)},
               {"loop", "n", "max_innermost_factor"}, ids, Instruction::Output::kExpr, tile);
  return out;
}

Result<ExprRV> Schedule::SampleCategorical(const std::vector<int64_t>& candidates, const std::vector<double>& probs) {
  if (candidates.empty() || candidates.size() != probs.size())
    return InvalidArgument("sample_categorical: " + std::to_string(candidates.size()) + " candidates and " +
                           std::to_string(probs.size()) + " probabilities (need the same, at least one)");
  double sum = 0;
  for (double p : probs) {
    if (!(p >= 0)) return InvalidArgument("sample_categorical: a probability is negative or NaN");
    sum += p;
  }
  if (!(sum > 0)) return InvalidArgument("sample_categorical: the probabilities sum to zero");
  int64_t index = 0;
  if (forced_decision_ != nullptr) {
    const std::vector<int64_t>& d = *forced_decision_;
    if (d.size() != 1 || d[0] < 0 || d[0] >= static_cast<int64_t>(candidates.size()))
      return FailedPrecondition("sample_categorical: the decision " + IntsString(d) + " is not an index below " +
                                std::to_string(candidates.size()));
    index = d[0];
  } else {
    std::discrete_distribution<int64_t> dist(probs.begin(), probs.end());
    index = dist(rng_);
  }
  ExprRV out = NewExprRV(candidates[index]);
  RecordSample("sample_categorical", {TraceArg::Ints(candidates), TraceArg::Floats(probs)}, {"candidates", "probs"},
               {out.id}, Instruction::Output::kExpr, {index});
  return out;
}

Result<std::vector<Var>> Schedule::ComputeLocations(const BlockRV& block, bool* can_inline) {
  KILN_RETURN_IF_ERROR(Resolve(block).status());
  // Trial runs on copies: a primitive checks its own preconditions, so what it
  // accepts is exactly what is legal (no second copy of the rules here).
  {
    Schedule trial = *this;
    *can_inline = trial.ComputeInline(block).ok();
  }
  std::vector<Var> vars;
  std::vector<Stmt> stack = {body()};
  while (!stack.empty()) {
    Stmt s = stack.back();
    stack.pop_back();
    if (const auto* f = As<ForNode>(s)) vars.push_back(f->loop_var);
    std::vector<Stmt> kids;
    if (const auto* f = As<ForNode>(s)) kids.push_back(f->body);
    if (const auto* q = As<SeqStmtNode>(s)) kids = q->seq;
    if (const auto* br = As<BlockRealizeNode>(s)) kids.push_back(br->block.body);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  std::vector<Var> legal;
  for (const Var& v : vars) {
    Schedule trial = *this;
    LoopRV l = trial.NewLoopRV(v);
    if (trial.ComputeAt(block, l).ok()) legal.push_back(v);
  }
  return legal;
}

Result<LoopRV> Schedule::SampleComputeLocation(const BlockRV& block) {
  const std::vector<int64_t>* forced = forced_decision_;
  forced_decision_ = nullptr;  // the trial primitives below must not see it
  bool can_inline = false;
  KILN_ASSIGN_OR_RETURN(std::vector<Var> loops, ComputeLocations(block, &can_inline));
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  int64_t decision = kRootLoopId;
  if (forced != nullptr) {
    const std::vector<int64_t>& d = *forced;
    bool ok = d.size() == 1 && (d[0] == kRootLoopId || (d[0] == kInlineLoopId && can_inline) ||
                                (d[0] >= 0 && d[0] < static_cast<int64_t>(loops.size())));
    if (!ok)
      return FailedPrecondition("sample_compute_location(\"" + name + "\"): the decision " + IntsString(d) +
                                " is not a legal location here (" + std::to_string(loops.size()) + " loops" +
                                (can_inline ? ", inline" : "") + ", root)");
    decision = d[0];
  } else {
    // Candidates: root, inline when legal, then each legal loop.
    int64_t count = 1 + (can_inline ? 1 : 0) + static_cast<int64_t>(loops.size());
    int64_t pick = std::uniform_int_distribution<int64_t>(0, count - 1)(rng_);
    if (pick == 0) decision = kRootLoopId;
    else if (can_inline && pick == 1) decision = kInlineLoopId;
    else decision = pick - 1 - (can_inline ? 1 : 0);
  }
  LoopRV out = decision >= 0 ? NewLoopRV(loops[decision]) : LoopRV{decision};
  RecordSample("sample_compute_location", {TraceArg::Block(block)}, {""}, {out.id}, Instruction::Output::kLoop,
               {decision});
  return out;
}

Result<std::vector<LoopRV>> Schedule::SplitSampled(const LoopRV& loop, const std::vector<ExprRV>& factors) {
  std::vector<int64_t> values;
  for (const ExprRV& e : factors) {
    KILN_ASSIGN_OR_RETURN(int64_t x, Get(e));
    values.push_back(x);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<LoopRV> out, Split(loop, values));
  // Re-record with the handles instead of the values they had.
  Instruction inst = trace_.instructions().back();
  inst.inputs[1] = TraceArg::Exprs(factors);
  trace_.SetLast(std::move(inst));
  return out;
}

}  // namespace tir
}  // namespace kiln
