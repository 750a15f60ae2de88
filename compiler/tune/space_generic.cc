// The generic design space (space.h): rules by block structure.
#include <string>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/schedule/tree.h"
#include "compiler/tune/space.h"

namespace kiln {
namespace tune {

using namespace ir;  // NOLINT
using tir::BlockRV;
using tir::ExprRV;
using tir::LoopRV;
using tir::Schedule;
namespace sched = tir::sched;

namespace {

constexpr int kSpatialTiles = 4;
constexpr int kReduceTiles = 2;
constexpr int64_t kMaxInnermost = 64;
constexpr int64_t kMaxVectorTile = 16;

// How the loops around a block bind its iteration variables.
struct BlockShape {
  bool simple = false;          // every loop binds exactly one iteration variable, static extents
  std::vector<IterKind> kinds;  // per loop, outermost first
  bool has_reduce = false;
  bool writes_intermediate = false;
};

BlockShape Inspect(const Schedule& sch, const std::string& name) {
  BlockShape shape;
  sched::Site site = sched::FindBlock(sch.func()->body, name);
  const auto* br = As<BlockRealizeNode>(site.stmt);
  if (br == nullptr) return shape;
  for (const auto& iv : br->block.iter_vars) shape.has_reduce |= iv.kind == IterKind::kReduce;
  const auto* root = As<BlockRealizeNode>(sch.func()->body);
  for (const auto& w : sched::BlockAccesses(br->block).writes)
    for (const auto& a : root->block.alloc_buffers) shape.writes_intermediate |= a == w;
  std::vector<const ForNode*> loops;
  for (auto it = site.ancestors.rbegin(); it != site.ancestors.rend(); ++it) {
    if (As<BlockRealizeNode>(*it)) break;
    if (const auto* f = As<ForNode>(*it)) loops.insert(loops.begin(), f);
  }
  if (loops.empty() || loops.size() != br->iter_values.size()) return shape;
  for (const ForNode* f : loops) {
    if (!arith::AsConstInt(f->extent)) return shape;
    int binds = 0;
    IterKind kind = IterKind::kSpatial;
    for (size_t i = 0; i < br->iter_values.size(); ++i) {
      const auto* v = br->iter_values[i].template as<VarNode>();
      if (v == f->loop_var.get()) {
        ++binds;
        kind = br->block.iter_vars[i].kind;
      } else if (sched::UsesVar(br->iter_values[i], f->loop_var.get())) {
        return shape;
      }
    }
    if (binds != 1) return shape;
    shape.kinds.push_back(kind);
  }
  shape.simple = true;
  return shape;
}

// Fuses `loops` (a perfect chain) when there are several; the one loop.
Result<LoopRV> FuseAll(Schedule* sch, const std::vector<LoopRV>& loops) {
  if (loops.size() == 1) return loops[0];
  return sch->Fuse(loops);
}

Status TileReduction(Schedule* sch, const BlockRV& block, const BlockShape& shape) {
  KILN_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
  // tiles[level] collects the loops of that level, in axis order.
  std::vector<std::vector<LoopRV>> s_tiles(kSpatialTiles), r_tiles(kReduceTiles);
  for (size_t k = 0; k < loops.size(); ++k) {
    bool spatial = shape.kinds[k] == IterKind::kSpatial;
    int n = spatial ? kSpatialTiles : kReduceTiles;
    KILN_ASSIGN_OR_RETURN(std::vector<ExprRV> f, sch->SamplePerfectTile(loops[k], n, kMaxInnermost));
    KILN_ASSIGN_OR_RETURN(std::vector<LoopRV> parts, sch->SplitSampled(loops[k], f));
    for (int level = 0; level < n; ++level) (spatial ? s_tiles : r_tiles)[level].push_back(parts[level]);
  }
  std::vector<LoopRV> order;
  for (const auto* level : {&s_tiles[0], &s_tiles[1], &r_tiles[0], &s_tiles[2], &r_tiles[1], &s_tiles[3]})
    order.insert(order.end(), level->begin(), level->end());
  KILN_RETURN_IF_ERROR(sch->Reorder(order));
  bool has_spatial = !s_tiles[0].empty();
  if (has_spatial) {
    // Accumulate a tile in a local buffer written back after its reduction
    // (MetaSchedule's write cache at the outer tiles): the accumulator stays
    // in cache or registers, apart from the output.
    KILN_ASSIGN_OR_RETURN(ExprRV cache, sch->SampleCategorical({0, 1}, {0.5, 0.5}));
    KILN_ASSIGN_OR_RETURN(int64_t c, sch->Get(cache));
    if (c == 1) {
      KILN_ASSIGN_OR_RETURN(BlockRV write_back, sch->CacheWrite(block, 0, "local"));
      KILN_RETURN_IF_ERROR(sch->ReverseComputeAt(write_back, s_tiles[1].back()));
    }
  }
  if (has_spatial && !r_tiles[0].empty()) {
    // The init runs once per output element, before the reduction starts.
    KILN_RETURN_IF_ERROR(sch->DecomposeReduction(block, r_tiles[0][0]).status());
  }
  if (!has_spatial) return Status::Ok();
  KILN_ASSIGN_OR_RETURN(LoopRV outer, FuseAll(sch, s_tiles[0]));
  KILN_RETURN_IF_ERROR(sch->Parallel(outer));
  KILN_RETURN_IF_ERROR(sch->Vectorize(s_tiles[3].back()));
  if (!r_tiles[1].empty()) {
    KILN_ASSIGN_OR_RETURN(ExprRV unroll, sch->SampleCategorical({0, 1}, {0.5, 0.5}));
    KILN_ASSIGN_OR_RETURN(int64_t u, sch->Get(unroll));
    if (u == 1) KILN_RETURN_IF_ERROR(sch->Unroll(r_tiles[1].back()));
  }
  return Status::Ok();
}

Status TileSpatial(Schedule* sch, const BlockRV& block) {
  KILN_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
  KILN_ASSIGN_OR_RETURN(std::vector<ExprRV> f, sch->SamplePerfectTile(loops.back(), 2, kMaxVectorTile));
  KILN_ASSIGN_OR_RETURN(std::vector<LoopRV> parts, sch->SplitSampled(loops.back(), f));
  std::vector<LoopRV> outer(loops.begin(), loops.end() - 1);
  outer.push_back(parts[0]);
  KILN_ASSIGN_OR_RETURN(LoopRV fused, FuseAll(sch, outer));
  KILN_ASSIGN_OR_RETURN(ExprRV par, sch->SampleCategorical({0, 1}, {0.5, 0.5}));
  KILN_ASSIGN_OR_RETURN(int64_t p, sch->Get(par));
  if (p == 1) KILN_RETURN_IF_ERROR(sch->Parallel(fused));
  return sch->Vectorize(parts[1]);
}

}  // namespace

Status ApplyGenericSpace(Schedule* sch) {
  std::vector<std::string> names;
  const auto* root = As<BlockRealizeNode>(sch->func()->body);
  for (const auto& s : sched::CollectBlocks(sch->func()->body)) {
    const auto* br = As<BlockRealizeNode>(s);
    if (br != root) names.push_back(br->block.name);
  }
  // Inline first, so the tiling rules see the blocks that remain.
  for (const auto& name : names) {
    BlockShape shape = Inspect(*sch, name);
    if (shape.has_reduce || !shape.writes_intermediate) continue;
    KILN_ASSIGN_OR_RETURN(BlockRV b, sch->GetBlock(name));
    (void)sch->ComputeInline(b);  // refused (and unchanged) when it does not apply
  }
  for (const auto& name : names) {
    if (!sched::FindBlock(sch->func()->body, name).found()) continue;  // inlined
    BlockShape shape = Inspect(*sch, name);
    if (!shape.simple) continue;
    KILN_ASSIGN_OR_RETURN(BlockRV b, sch->GetBlock(name));
    // A rule that stops halfway leaves a correct, partly scheduled block.
    (void)(shape.has_reduce ? TileReduction(sch, b, shape) : TileSpatial(sch, b));
  }
  return Status::Ok();
}

Result<Schedule> SampleGenericSpace(const PrimFunc& func, uint64_t seed) {
  KILN_ASSIGN_OR_RETURN(Schedule sch, Schedule::Create(func, seed));
  KILN_RETURN_IF_ERROR(ApplyGenericSpace(&sch));
  return sch;
}

}  // namespace tune
}  // namespace kiln
