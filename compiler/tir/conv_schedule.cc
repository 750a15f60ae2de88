#include "compiler/tir/conv_schedule.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/conv_kernel.h"
#include "compiler/tir/conv_match.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/pool_schedule.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace tir {

using namespace ir;  // NOLINT

namespace {

using namespace nest;  // NOLINT: the shared nest helpers
using conv::ConcatSource;
using conv::ConvKernel;
using conv::ConvNest;
using conv::Dim;
using conv::Float32Plain;
using conv::MatchChannelConcat;
using conv::MatchConv;
using conv::MatchStage;
using conv::Stage;

// Depthwise convolutions (one input and one output channel per group) with
// a stride: the window schedule (pool_schedule.h) computes them straight
// from the input with strided vector loads, each output once; the tile
// scheme here would first split the input into stride x stride phase planes
// (4x the output's size, copied per call) for 9 FMAs per output.
// On MobileNetV2's stride-2 layers (1 thread) this took 120, 48 and 69 us
// where the tiles took 382, 125 and 87; at stride 1 the tiles are faster
// (243 against 436 us at 144 x 56^2), so those stay here.
// Only windows the window schedule unrolls, though: a longer one keeps its
// tap loop around vector rows and adds each tap into the output in memory
// (a load, a strided load and a store per multiply-add). Basic Pitch's
// 1-channel 1x256 / 2 low-pass filter (the importer's conv1d over 44098
// samples) ran so at 2.1 ms (2 GFLOP/s); the tiles, after splitting the
// input into its 2 column phases, take 0.09 ms.
bool LeftToWindowSchedule(const ConvNest& cv, const ScheduleKnobs& knobs) {
  return cv.opg == 1 && cv.ki == 1 && (cv.sh > 1 || cv.sw > 1) && cv.kh * cv.kw <= MaxUnrolledWindowTaps(knobs);
}

// Finds convolution nests in statement sequences and rewrites them with their
// fusable epilogues.
class ConvRewriter : public StmtExprMutator {
 public:
  ConvRewriter(const PrimFunc& func, int threads, const ScheduleKnobs& knobs) : threads_(threads), knobs_(knobs) {
    for (const auto& kv : func->buffer_map) params_.insert(kv.second->data.get());
    all_refs_ = RefsOf(func->body);
  }
  bool changed = false;

  Stmt MutateStmt(const Stmt& s) override {
    if (const auto* seq = As<SeqStmtNode>(s)) return RewriteSeq(seq->seq, s);
    if (As<ForNode>(s)) return RewriteSeq({s}, s);
    return StmtExprMutator::MutateStmt(s);
  }

 private:
  Stmt RewriteSeq(const std::vector<Stmt>& in, const Stmt& orig) {
    std::vector<Stmt> out;
    bool any = false;
    for (size_t i = 0; i < in.size(); ++i) {
      ConvNest cv;
      if (!MatchConv(in[i], &cv, /*half_operands=*/true) || LeftToWindowSchedule(cv, knobs_)) {
        Stmt m = As<ForNode>(in[i]) ? in[i] : StmtExprMutator::MutateStmt(in[i]);
        any = any || m != in[i];
        out.push_back(m);
        continue;
      }
      std::vector<Stage> stages;
      Buffer cur = cv.out;
      int cur_refs_here = 3;  // the nest's own load and two stores of C
      std::unordered_set<const VarNode*> chain = {cur->data.get()};
      std::unordered_set<const VarNode*> reads = {cv.data->data.get(), cv.weight->data.get()};
      std::vector<Stmt> moved;
      size_t next = i + 1, resume = i + 1;
      while (next < in.size() && !params_.count(cur->data.get())) {
        BufferRefs r = RefsOf(in[next]);
        Stage e;
        if (MatchStage(in[next], cur, cv, &e) &&
            all_refs_.Refs(cur->data.get()) == cur_refs_here + r.Refs(cur->data.get())) {
          // Statements skipped since the last stage run before the kernel.
          for (size_t j = resume; j < next; ++j) moved.push_back(in[j]);
          for (const auto& kv : r.loads) reads.insert(kv.first);
          chain.insert(e.dst->data.get());
          stages.push_back(e);
          cur = e.dst;
          cur_refs_here = 1;  // the stage's store
          resume = ++next;
          continue;
        }
        // Skip statements independent of the chain (the per-channel scale and
        // shift of a batch norm sit between the convolution and its use).
        bool blocked = false;
        for (const VarNode* b : chain) blocked |= r.Refs(b) > 0;
        for (const auto& kv : r.stores) blocked |= reads.count(kv.first) > 0;
        ConvNest other;
        if (blocked || MatchConv(in[next], &other, /*half_operands=*/true)) break;
        ++next;
      }
      // A pointwise convolution of a concatenation just computed (and read
      // nowhere else) reads the concatenated tensors in place: the copy goes.
      std::vector<ConcatSource> sources;
      bool concat_before = !out.empty() && i > 0 && out.back() == in[i - 1] &&
                           !params_.count(cv.data->data.get()) && all_refs_.Refs(cv.data->data.get()) == 2 &&
                           MatchChannelConcat(out.back(), cv.data, &sources);
      ConvKernel kernel(cv, stages, threads_, knobs_, std::move(sources));
      if (concat_before && kernel.ReadsSources()) out.pop_back();
      for (const Stmt& m : moved) out.push_back(MutateStmt(m));
      out.push_back(kernel.Build());
      i = resume - 1;
      any = true;
    }
    if (!any) return orig;
    changed = true;
    return Seq(out);
  }

  int threads_;
  ScheduleKnobs knobs_;
  std::unordered_set<const VarNode*> params_;
  BufferRefs all_refs_;
};

}  // namespace

PrimFunc ScheduleConvs(const PrimFunc& func, int num_threads_hint, const ScheduleKnobs& knobs) {
  ConvRewriter rewriter(func, num_threads_hint, knobs);
  Stmt body = rewriter.MutateStmt(func->body);
  if (!rewriter.changed) return func;
  return WithBody(func, DropDeadAllocations(body));
}

}  // namespace tir
}  // namespace kiln
