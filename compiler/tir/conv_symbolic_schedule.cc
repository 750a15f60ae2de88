#include "compiler/tir/conv_symbolic_schedule.h"

#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/tir/conv_symbolic_concat.h"
#include "compiler/tir/conv_symbolic_kernel.h"
#include "compiler/tir/depthwise_banded.h"
#include "compiler/tir/depthwise_channel_block_symbolic.h"
#include "compiler/tir/depthwise_inplace_symbolic.h"
#include "compiler/tir/depthwise_strided_symbolic.h"
#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace tir {

using namespace symconv;  // NOLINT: this file's own internal header

namespace {

class SymConvRewriter : public StmtExprMutator {
 public:
  SymConvRewriter(const PrimFunc& func, int threads) : threads_(threads) {
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
      SymConv cv;
      if (!As<ForNode>(in[i]) || !MatchSymConv(in[i], &cv)) {
        Stmt m = As<ForNode>(in[i]) ? DescendLoops(in[i]) : StmtExprMutator::MutateStmt(in[i]);
        any = any || m != in[i];
        out.push_back(m);
        continue;
      }
      // An elementwise nest over the output after it (statements that touch
      // neither the output nor what the convolution reads may sit between;
      // they move before the kernel).
      BufferRefs here = RefsOf(in[i]);
      std::vector<Stmt> moved;
      size_t used = i;
      const VarNode* c = cv.out->data.get();
      if (cv.epilogue.empty() && !params_.count(c)) {
        std::unordered_set<const VarNode*> chain = {c};
        size_t resume = i + 1;
        for (size_t next = i + 1; next < in.size(); ++next) {
          BufferRefs r = RefsOf(in[next]);
          std::vector<Stmt> epi;
          if (MatchEpilogueNest(in[next], cv, &epi)) {
            SymConv with = cv;
            with.epilogue.insert(with.epilogue.end(), epi.begin(), epi.end());
            if (!EpilogueOk(with)) break;
            cv = with;
            for (size_t j = resume; j < next; ++j) moved.push_back(in[j]);
            resume = next + 1;
            used = next;
            for (const auto& kv : r.loads) here.loads[kv.first] += kv.second;
            for (const auto& kv : r.stores) {
              here.stores[kv.first] += kv.second;
              chain.insert(kv.first);
            }
            continue;
          }
          bool blocked = r.stores.count(cv.data->data.get()) > 0 || r.stores.count(cv.weight->data.get()) > 0;
          for (const VarNode* b : chain) blocked |= r.Refs(b) > 0;
          if (blocked) break;
        }
      }
      InlineIntermediates(&cv, here);
      bool store_out = params_.count(c) > 0 || all_refs_.Refs(c) > here.Refs(c);
      // A pointwise convolution of a concatenation just computed (and read
      // nowhere else): the flat tiles read the concatenated tensors in place
      // and the copy goes (YOLOv8's C2f blocks copied every source first).
      std::vector<SymConcatSource> sources;
      const VarNode* x = cv.data->data.get();
      bool concat_before = !out.empty() && i > 0 && out.back() == in[i - 1] && !params_.count(x) &&
                           all_refs_.Refs(x) == 2 && MatchSymbolicChannelConcat(out.back(), cv.data, &sources);
      // Else an elementwise nest just before that computes X alone (a
      // squeeze-excite scale): the flat tiles compute X's values from what
      // it reads, and the nest goes.
      const bool prologue_before = !concat_before && !out.empty() && i > 0 && out.back() == in[i - 1] &&
                                   !params_.count(x) && all_refs_.Refs(x) == 2;
      SymConvKernel builder(cv, threads_, store_out, params_, std::move(sources),
                            prologue_before ? out.back() : Stmt());
      if ((concat_before && builder.ReadsSources()) || (prologue_before && builder.ReadsPrologue())) out.pop_back();
      for (const Stmt& m : moved) out.push_back(m);
      Stmt kernel = builder.Build();
      // Depthwise: the banded phase planes (depthwise_banded.h) for output
      // rows of at least one vector, chosen at run time.
      dw::DepthwiseNest d;
      if (dw::MatchDepthwiseNest(in[i], &d)) {
        d.epilogue = cv.epilogue;
        d.store_out = store_out;
        kernel = std::make_shared<IfThenElseNode>(dw::TakesRow(d), dw::BuildBandedDepthwise(d, {}), kernel);
        // Column stride 2, windows up to 3 wide: no copy where the rows fill
        // two vectors (depthwise_strided_symbolic.h).
        if (dw::StridedDirectFits(d))
          kernel = std::make_shared<IfThenElseNode>(dw::TakesStridedDirect(d), dw::BuildSymbolicStridedDirect(d), kernel);
        // Column stride 1, short planes: no copy (depthwise_inplace_symbolic.h).
        if (dw::InPlaceFits(d))
          kernel = std::make_shared<IfThenElseNode>(dw::TakesInPlace(d), dw::BuildSymbolicInPlace(d), kernel);
        // Narrow rows: 16 channels at a time (depthwise_channel_block_symbolic.h).
        if (d.o >= 16) kernel = std::make_shared<IfThenElseNode>(dw::TakesChannelBlock(d), dw::BuildSymbolicChannelBlock(d), kernel);
      }
      out.push_back(kernel);
      i = used;
      any = true;
    }
    if (!any) return orig;
    changed = true;
    return Seq(out);
  }

  // Loops that are not convolutions: look for sequences inside.
  Stmt DescendLoops(const Stmt& s) { return StmtExprMutator::MutateStmt(s); }

  // Epilogue stores into buffers of this function that nothing else reads
  // become values: later statements use the stored expression.
  void InlineIntermediates(SymConv* cv, const BufferRefs& here) {
    std::vector<Stmt> kept;
    std::vector<std::pair<const VarNode*, PrimExpr>> values;
    for (size_t k = 0; k < cv->epilogue.size(); ++k) {
      Stmt st = cv->epilogue[k];
      for (const auto& kv : values) st = ReplaceLoads(kv.first, kv.second).MutateStmt(st);
      const auto* store = As<BufferStoreNode>(st);
      const VarNode* b = store->buffer->data.get();
      bool last_store = true;
      for (size_t j = k + 1; j < cv->epilogue.size(); ++j)
        if (RefsOf(cv->epilogue[j]).stores.count(b)) last_store = false;
      if (!params_.count(b) && all_refs_.Refs(b) == here.Refs(b) && last_store && k + 1 < cv->epilogue.size()) {
        values.emplace_back(b, store->value);
        continue;
      }
      kept.push_back(st);
    }
    cv->epilogue = kept;
  }

  int threads_;
  std::unordered_set<const VarNode*> params_;
  BufferRefs all_refs_;
};

}  // namespace

PrimFunc ScheduleSymbolicConvs(const PrimFunc& func, int num_threads_hint) {
  SymConvRewriter rewriter(func, num_threads_hint);
  Stmt body = rewriter.MutateStmt(func->body);
  if (!rewriter.changed) return func;
  return WithBody(func, DropDeadAllocations(body));
}

}  // namespace tir
}  // namespace kiln
