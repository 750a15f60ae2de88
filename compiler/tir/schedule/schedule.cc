// tir::Schedule: creation, handles, lookup, loop kinds, the trace and replay.
// The loop and block transformations live in the files named after them.
#include "compiler/tir/schedule/schedule.h"

#include <memory>
#include <set>
#include <unordered_set>

#include "compiler/tir/schedule/tree.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

Result<Schedule> Schedule::Create(const PrimFunc& func, uint64_t seed) {
  if (!func) return InvalidArgument("schedule: no function");
  if (As<BlockRealizeNode>(func->body) == nullptr)
    return InvalidArgument("schedule: function " + func->name +
                           " is not in block form (its body is not a root T.block)");
  std::set<std::string> names;
  for (const auto& s : sched::CollectBlocks(func->body)) {
    const std::string& n = As<BlockRealizeNode>(s)->block.name;
    if (!names.insert(n).second)
      return InvalidArgument("schedule: function " + func->name + " has two blocks named \"" + n + "\"");
  }
  Schedule sch;
  sch.original_ = func;
  sch.func_ = func;
  sch.rng_.seed(seed);
  return sch;
}

BlockRV Schedule::NewBlockRV(const std::string& name) {
  BlockRV b{next_id_++};
  blocks_[b.id] = name;
  return b;
}

LoopRV Schedule::NewLoopRV(const Var& var) {
  LoopRV l{next_id_++};
  loops_[l.id] = var;
  return l;
}

Result<std::string> Schedule::Resolve(const BlockRV& b) const {
  auto it = blocks_.find(b.id);
  if (it == blocks_.end()) return InvalidArgument("schedule: b" + std::to_string(b.id) + " is not a block handle");
  if (!sched::FindBlock(body(), it->second).found())
    return InvalidArgument("schedule: block \"" + it->second + "\" (b" + std::to_string(b.id) + ") no longer exists");
  return it->second;
}

Result<Var> Schedule::Resolve(const LoopRV& l) const {
  auto it = loops_.find(l.id);
  if (it == loops_.end()) return InvalidArgument("schedule: l" + std::to_string(l.id) + " is not a loop handle");
  if (!sched::FindLoop(body(), it->second.get()).found())
    return InvalidArgument("schedule: loop " + it->second->name + " (l" + std::to_string(l.id) +
                           ") no longer exists (it was split, fused or inlined away)");
  return it->second;
}

Result<std::string> Schedule::BlockName(const BlockRV& block) const { return Resolve(block); }

void Schedule::SetBody(const Stmt& body) {
  auto copy = std::make_shared<PrimFuncNode>(*func_);
  copy->body = body;
  func_ = copy;
}

void Schedule::Record(const std::string& name, std::vector<TraceArg> inputs, std::vector<std::string> keywords,
                      const std::vector<BlockRV>& out_blocks, const std::vector<LoopRV>& out_loops) {
  Instruction inst;
  inst.name = name;
  inst.inputs = std::move(inputs);
  inst.keywords = std::move(keywords);
  for (const auto& b : out_blocks) {
    inst.outputs.push_back(b.id);
    inst.output_kinds.push_back(Instruction::Output::kBlock);
  }
  for (const auto& l : out_loops) {
    inst.outputs.push_back(l.id);
    inst.output_kinds.push_back(Instruction::Output::kLoop);
  }
  trace_.Append(std::move(inst));
}

void Schedule::RecordSample(const std::string& name, std::vector<TraceArg> inputs, std::vector<std::string> keywords,
                            std::vector<int64_t> outputs, Instruction::Output kind, std::vector<int64_t> decision) {
  Instruction inst;
  inst.name = name;
  inst.inputs = std::move(inputs);
  inst.keywords = std::move(keywords);
  inst.output_kinds.assign(outputs.size(), kind);
  inst.outputs = std::move(outputs);
  inst.decision = std::move(decision);
  trace_.Append(std::move(inst));
}

Result<BlockRV> Schedule::GetBlock(const std::string& name) {
  if (name == As<BlockRealizeNode>(body())->block.name)
    return InvalidArgument("get_block: \"" + name + "\" is the root block, which cannot be scheduled");
  if (!sched::FindBlock(body(), name).found())
    return NotFound("get_block: no block named \"" + name + "\" in " + func_->name);
  BlockRV b = NewBlockRV(name);
  Record("get_block", {TraceArg::Str(name)}, {}, {b}, {});
  return b;
}

Result<std::vector<LoopRV>> Schedule::GetLoops(const BlockRV& block) {
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  sched::Site site = sched::FindBlock(body(), name);
  std::vector<Var> vars;
  for (auto it = site.ancestors.rbegin(); it != site.ancestors.rend(); ++it) {
    if (As<BlockRealizeNode>(*it)) break;
    if (const auto* f = As<ForNode>(*it)) vars.insert(vars.begin(), f->loop_var);
  }
  std::vector<LoopRV> out;
  for (const auto& v : vars) out.push_back(NewLoopRV(v));
  Record("get_loops", {TraceArg::Block(block)}, {}, {}, out);
  return out;
}

Result<std::vector<BlockRV>> Schedule::GetChildBlocks(const BlockRV& block) {
  KILN_ASSIGN_OR_RETURN(std::string name, Resolve(block));
  sched::Site site = sched::FindBlock(body(), name);
  std::vector<BlockRV> out;
  for (const auto& s : sched::ChildBlocks(site.stmt)) out.push_back(NewBlockRV(As<BlockRealizeNode>(s)->block.name));
  Record("get_child_blocks", {TraceArg::Block(block)}, {}, out, {});
  return out;
}

Result<std::vector<BlockRV>> Schedule::GetChildBlocks(const LoopRV& loop) {
  KILN_ASSIGN_OR_RETURN(Var v, Resolve(loop));
  sched::Site site = sched::FindLoop(body(), v.get());
  std::vector<BlockRV> out;
  for (const auto& s : sched::ChildBlocks(site.stmt)) out.push_back(NewBlockRV(As<BlockRealizeNode>(s)->block.name));
  Record("get_child_blocks", {TraceArg::Loop(loop)}, {}, out, {});
  return out;
}

// ------------------------------------------------------------- loop kinds

namespace {

// Why `loop` cannot run its iterations in parallel / as vector lanes, or "".
std::string ReductionDependence(const ForNode* loop) {
  for (const auto& s : sched::CollectBlocks(loop->body)) {
    const auto* br = As<BlockRealizeNode>(s);
    for (size_t i = 0; i < br->block.iter_vars.size(); ++i) {
      if (br->block.iter_vars[i].kind != IterKind::kReduce) continue;
      if (sched::UsesVar(br->iter_values[i], loop->loop_var.get()))
        return "reduction iteration variable " + br->block.iter_vars[i].var->name + " of block \"" +
               br->block.name + "\" depends on it";
    }
  }
  return "";
}

Stmt WithKind(const ForNode* f, ForKind kind) {
  return std::make_shared<ForNode>(f->loop_var, f->min, f->extent, kind, f->body);
}

}  // namespace

Status Schedule::Parallel(const LoopRV& loop) {
  KILN_ASSIGN_OR_RETURN(Var v, Resolve(loop));
  sched::Site site = sched::FindLoop(body(), v.get());
  const auto* f = As<ForNode>(site.stmt);
  if (f->for_kind != ForKind::kSerial)
    return InvalidArgument("parallel: loop " + v->name + " is already " + ForKindName(f->for_kind));
  std::string why = ReductionDependence(f);
  if (!why.empty()) return FailedPrecondition("parallel: cannot parallelize loop " + v->name + ": " + why);
  for (const auto& a : site.ancestors) {
    const auto* outer = As<ForNode>(a);
    if (outer && outer->for_kind == ForKind::kVectorized)
      return InvalidArgument("parallel: loop " + v->name + " is inside vectorized loop " + outer->loop_var->name);
  }
  SetBody(sched::Replace(body(), f, WithKind(f, ForKind::kParallel)));
  Record("parallel", {TraceArg::Loop(loop)}, {}, {}, {});
  return Status::Ok();
}

Status Schedule::Vectorize(const LoopRV& loop) {
  KILN_ASSIGN_OR_RETURN(Var v, Resolve(loop));
  sched::Site site = sched::FindLoop(body(), v.get());
  const auto* f = As<ForNode>(site.stmt);
  if (f->for_kind != ForKind::kSerial)
    return InvalidArgument("vectorize: loop " + v->name + " is already " + ForKindName(f->for_kind));
  std::string why = ReductionDependence(f);
  if (!why.empty()) return FailedPrecondition("vectorize: cannot vectorize loop " + v->name + ": " + why);
  SetBody(sched::Replace(body(), f, WithKind(f, ForKind::kVectorized)));
  Record("vectorize", {TraceArg::Loop(loop)}, {}, {}, {});
  return Status::Ok();
}

Status Schedule::Unroll(const LoopRV& loop) {
  KILN_ASSIGN_OR_RETURN(Var v, Resolve(loop));
  sched::Site site = sched::FindLoop(body(), v.get());
  const auto* f = As<ForNode>(site.stmt);
  if (f->for_kind != ForKind::kSerial)
    return InvalidArgument("unroll: loop " + v->name + " is already " + ForKindName(f->for_kind));
  SetBody(sched::Replace(body(), f, WithKind(f, ForKind::kUnrolled)));
  Record("unroll", {TraceArg::Loop(loop)}, {}, {}, {});
  return Status::Ok();
}

Status Schedule::Annotate(const std::string& key, const ExprRV& value) {
  KILN_ASSIGN_OR_RETURN(int64_t v, Get(value));
  if (key.empty()) return InvalidArgument("annotate: the key is empty");
  const auto* root = As<BlockRealizeNode>(body());
  auto copy = std::make_shared<BlockRealizeNode>(*root);
  copy->block.annotations[key] = std::to_string(v);
  SetBody(copy);
  Record("annotate", {TraceArg::Str(key), TraceArg::Exprs({value})}, {}, {}, {});
  return Status::Ok();
}

// ------------------------------------------------------------- replay

Status Schedule::Apply(const Instruction& inst, bool keep_decision, std::vector<int64_t>* outputs) {
  const auto& in = inst.inputs;
  auto block = [&](size_t k) { return BlockRV{in[k].i}; };
  auto loop = [&](size_t k) { return LoopRV{in[k].i}; };
  auto loops_from = [&](size_t k) {
    std::vector<LoopRV> v;
    for (size_t j = k; j < in.size(); ++j)
      if (in[j].kind == TraceArg::Kind::kLoop) v.push_back(LoopRV{in[j].i});
    return v;
  };
  auto push_blocks = [&](const std::vector<BlockRV>& v) { for (auto b : v) outputs->push_back(b.id); };
  auto push_loops = [&](const std::vector<LoopRV>& v) { for (auto l : v) outputs->push_back(l.id); };
  auto exprs = [&](size_t k) {
    std::vector<ExprRV> v;
    for (int64_t id : in[k].ints) v.push_back(ExprRV{id});
    return v;
  };
  // Recorded traces come from files: check the shape of the inputs before
  // indexing them, so a damaged trace is an error and not a crash.
  auto need = [&](size_t k, TraceArg::Kind kind) -> Status {
    if (in.size() <= k || in[k].kind != kind)
      return InvalidArgument("replay: " + inst.name + " input " + std::to_string(k) + " is missing or of the wrong kind");
    return Status::Ok();
  };
  const std::string& n = inst.name;
  if (n == "sample_perfect_tile" || n == "sample_categorical" || n == "sample_compute_location") {
    forced_decision_ = keep_decision ? &inst.decision : nullptr;
    Status st = Status::Ok();
    if (n == "sample_perfect_tile") {
      st = need(0, TraceArg::Kind::kLoop);
      if (st.ok()) st = need(1, TraceArg::Kind::kInt);
      if (st.ok()) st = need(2, TraceArg::Kind::kInt);
      if (st.ok()) {
        Result<std::vector<ExprRV>> v = SamplePerfectTile(loop(0), static_cast<int>(in[1].i), in[2].i);
        if (v.ok()) for (auto e : *v) outputs->push_back(e.id);
        st = v.status();
      }
    } else if (n == "sample_categorical") {
      st = need(0, TraceArg::Kind::kInts);
      if (st.ok()) st = need(1, TraceArg::Kind::kFloats);
      if (st.ok()) {
        Result<ExprRV> v = SampleCategorical(in[0].ints, in[1].floats);
        if (v.ok()) outputs->push_back(v->id);
        st = v.status();
      }
    } else {
      st = need(0, TraceArg::Kind::kBlock);
      if (st.ok()) {
        Result<LoopRV> v = SampleComputeLocation(block(0));
        if (v.ok()) outputs->push_back(v->id);
        st = v.status();
      }
    }
    forced_decision_ = nullptr;
    return st;
  }
  {
    // Expected inputs of the other instructions ('*' = any number of loops).
    using K = TraceArg::Kind;
    static const std::map<std::string, std::vector<K>> kInputs = {
        {"get_block", {K::kString}},         {"get_loops", {K::kBlock}},
        {"parallel", {K::kLoop}},            {"vectorize", {K::kLoop}},
        {"unroll", {K::kLoop}},              {"compute_inline", {K::kBlock}},
        {"reverse_compute_inline", {K::kBlock}}, {"compute_at", {K::kBlock, K::kLoop}},
        {"reverse_compute_at", {K::kBlock, K::kLoop}}, {"cache_read", {K::kBlock, K::kInt, K::kString}},
        {"cache_write", {K::kBlock, K::kInt, K::kString}}, {"decompose_reduction", {K::kBlock, K::kLoop}},
        {"transform_layout", {K::kString, K::kIndexMap}}, {"storage_align", {K::kString, K::kInt, K::kInt, K::kInt}},
    };
    auto it = kInputs.find(n);
    if (it != kInputs.end()) {
      if (in.size() != it->second.size())
        return InvalidArgument("replay: " + n + " takes " + std::to_string(it->second.size()) + " inputs, the trace has " +
                               std::to_string(in.size()));
      for (size_t k = 0; k < in.size(); ++k) KILN_RETURN_IF_ERROR(need(k, it->second[k]));
    } else if (n == "split") {
      if (in.size() != 2 || in[0].kind != K::kLoop || (in[1].kind != K::kInts && in[1].kind != K::kExprs))
        return InvalidArgument("replay: split takes a loop and a list of factors");
    } else if (n == "fuse" || n == "reorder") {
      for (const auto& a : in)
        if (a.kind != K::kLoop) return InvalidArgument("replay: " + n + " takes loops only");
    } else if (n == "annotate") {
      if (in.size() != 2 || in[0].kind != K::kString || in[1].kind != K::kExprs || in[1].ints.size() != 1)
        return InvalidArgument("replay: annotate takes a key and one sampled value");
    } else if (n == "get_child_blocks") {
      if (in.size() != 1 || (in[0].kind != K::kBlock && in[0].kind != K::kLoop))
        return InvalidArgument("replay: get_child_blocks takes a block or a loop");
    }
  }
  if (n == "split" && in[1].kind == TraceArg::Kind::kExprs) {
    KILN_ASSIGN_OR_RETURN(auto v, SplitSampled(loop(0), exprs(1)));
    push_loops(v);
    return Status::Ok();
  }
  if (n == "get_block") {
    KILN_ASSIGN_OR_RETURN(BlockRV b, GetBlock(in[0].s));
    push_blocks({b});
  } else if (n == "get_loops") {
    KILN_ASSIGN_OR_RETURN(auto v, GetLoops(block(0)));
    push_loops(v);
  } else if (n == "get_child_blocks") {
    if (in[0].kind == TraceArg::Kind::kBlock) {
      KILN_ASSIGN_OR_RETURN(auto v, GetChildBlocks(block(0)));
      push_blocks(v);
    } else {
      KILN_ASSIGN_OR_RETURN(auto v, GetChildBlocks(loop(0)));
      push_blocks(v);
    }
  } else if (n == "split") {
    KILN_ASSIGN_OR_RETURN(auto v, Split(loop(0), in[1].ints));
    push_loops(v);
  } else if (n == "fuse") {
    KILN_ASSIGN_OR_RETURN(LoopRV l, Fuse(loops_from(0)));
    push_loops({l});
  } else if (n == "reorder") {
    KILN_RETURN_IF_ERROR(Reorder(loops_from(0)));
  } else if (n == "parallel") {
    KILN_RETURN_IF_ERROR(Parallel(loop(0)));
  } else if (n == "vectorize") {
    KILN_RETURN_IF_ERROR(Vectorize(loop(0)));
  } else if (n == "unroll") {
    KILN_RETURN_IF_ERROR(Unroll(loop(0)));
  } else if (n == "compute_inline") {
    KILN_RETURN_IF_ERROR(ComputeInline(block(0)));
  } else if (n == "reverse_compute_inline") {
    KILN_RETURN_IF_ERROR(ReverseComputeInline(block(0)));
  } else if (n == "compute_at") {
    KILN_RETURN_IF_ERROR(ComputeAt(block(0), loop(1)));
  } else if (n == "reverse_compute_at") {
    KILN_RETURN_IF_ERROR(ReverseComputeAt(block(0), loop(1)));
  } else if (n == "cache_read") {
    KILN_ASSIGN_OR_RETURN(BlockRV b, CacheRead(block(0), static_cast<int>(in[1].i), in[2].s));
    push_blocks({b});
  } else if (n == "cache_write") {
    KILN_ASSIGN_OR_RETURN(BlockRV b, CacheWrite(block(0), static_cast<int>(in[1].i), in[2].s));
    push_blocks({b});
  } else if (n == "decompose_reduction") {
    KILN_ASSIGN_OR_RETURN(BlockRV b, DecomposeReduction(block(0), loop(1)));
    push_blocks({b});
  } else if (n == "transform_layout") {
    KILN_RETURN_IF_ERROR(TransformLayout(in[0].s, IndexMap{in[1].map_src, in[1].map_dst}));
  } else if (n == "annotate") {
    KILN_RETURN_IF_ERROR(Annotate(in[0].s, exprs(1)[0]));
  } else if (n == "storage_align") {
    KILN_RETURN_IF_ERROR(StorageAlign(in[0].s, static_cast<int>(in[1].i), in[2].i, in[3].i));
  } else {
    return InvalidArgument("replay: unknown instruction " + n);
  }
  return Status::Ok();
}

Result<Schedule> Schedule::Replay(const PrimFunc& func, const Trace& trace) {
  return ReplayImpl(func, trace, /*keep_decisions=*/true, 1);
}

Result<Schedule> Schedule::ReplayWithNewDecisions(const PrimFunc& func, const Trace& trace, uint64_t seed) {
  return ReplayImpl(func, trace, /*keep_decisions=*/false, seed);
}

Result<Schedule> Schedule::ReplayFillingDecisions(const PrimFunc& func, const Trace& trace, uint64_t seed,
                                                  size_t* failed_at) {
  return ReplayImpl(func, trace, /*keep_decisions=*/false, seed, /*keep_given=*/true, failed_at);
}

Result<Schedule> Schedule::ReplayImpl(const PrimFunc& func, const Trace& trace, bool keep_decisions, uint64_t seed,
                                      bool keep_given, size_t* failed_at) {
  if (failed_at != nullptr) *failed_at = trace.instructions().size();
  KILN_ASSIGN_OR_RETURN(Schedule sch, Create(func, seed));
  // recorded id -> id in `sch`; the non-loop compute locations map to
  // themselves.
  std::map<int64_t, int64_t> rv = {{kRootLoopId, kRootLoopId}, {kInlineLoopId, kInlineLoopId}};
  auto map_id = [&](int64_t* id, size_t k, const std::string& name) -> Status {
    auto it = rv.find(*id);
    if (it == rv.end())
      return InvalidArgument("replay: instruction " + std::to_string(k) + " (" + name +
                             ") uses a handle no earlier instruction produced");
    *id = it->second;
    return Status::Ok();
  };
  for (size_t k = 0; k < trace.instructions().size(); ++k) {
    if (failed_at != nullptr) *failed_at = k;
    Instruction inst = trace.instructions()[k];
    for (auto& a : inst.inputs) {
      if (a.kind == TraceArg::Kind::kBlock || a.kind == TraceArg::Kind::kLoop) {
        KILN_RETURN_IF_ERROR(map_id(&a.i, k, inst.name));
      } else if (a.kind == TraceArg::Kind::kExprs) {
        for (auto& id : a.ints) KILN_RETURN_IF_ERROR(map_id(&id, k, inst.name));
      }
    }
    std::vector<int64_t> outs;
    bool keep = keep_decisions || (keep_given && !inst.decision.empty());
    KILN_RETURN_IF_ERROR_CTX(sch.Apply(inst, keep, &outs), "replay: instruction %zu (%s)", k,
                             inst.name.c_str());
    if (outs.size() != inst.outputs.size())
      return InvalidArgument("replay: instruction " + std::to_string(k) + " (" + inst.name + ") gave " +
                             std::to_string(outs.size()) + " handles, the trace recorded " +
                             std::to_string(inst.outputs.size()));
    for (size_t j = 0; j < outs.size(); ++j) rv[inst.outputs[j]] = outs[j];
  }
  if (failed_at != nullptr) *failed_at = trace.instructions().size();
  return sch;
}

}  // namespace tir
}  // namespace kiln
