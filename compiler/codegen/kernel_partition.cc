#include "compiler/codegen/kernel_partition.h"

#include <algorithm>
#include <map>
#include <utility>

#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace codegen {
namespace {

struct NodeCounter : tir::StmtExprVisitor {
  uint64_t nodes = 0;
  void VisitExpr(const ir::PrimExpr& e) override {
    if (!e.defined()) return;
    ++nodes;
    tir::StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const ir::Stmt& s) override {
    if (!s) return;
    ++nodes;
    tir::StmtExprVisitor::VisitStmt(s);
  }
};

}  // namespace

uint64_t KernelNodeCount(const ir::PrimFunc& func) {
  NodeCounter counter;
  counter.VisitStmt(func->body);
  return counter.nodes;
}

std::vector<std::vector<size_t>> PartitionKernels(const std::vector<ir::PrimFunc>& funcs) {
  std::vector<size_t> all(funcs.size());
  for (size_t i = 0; i < funcs.size(); ++i) all[i] = i;
  // Groups by (node count, parameter count), in order of first member.
  std::map<std::pair<uint64_t, size_t>, size_t> group_of;
  std::vector<std::vector<size_t>> groups;
  std::vector<uint64_t> group_nodes;
  uint64_t total = 0;
  for (size_t i = 0; i < funcs.size(); ++i) {
    uint64_t n = KernelNodeCount(funcs[i]);
    total += n;
    auto key = std::make_pair(n, funcs[i]->params.size());
    auto it = group_of.find(key);
    if (it == group_of.end()) {
      it = group_of.emplace(key, groups.size()).first;
      groups.emplace_back();
      group_nodes.push_back(0);
    }
    groups[it->second].push_back(i);
    group_nodes[it->second] += n;
  }
  size_t num_parts = std::min(kMaxKernelParts, groups.size());
  if (total < kMinPartitionedNodes || num_parts <= 1) return {all};
  // Largest group first (ties: the earlier group), each onto the lightest
  // part (ties: the lower part).
  std::vector<size_t> order(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return group_nodes[a] > group_nodes[b]; });
  std::vector<uint64_t> load(num_parts, 0);
  std::vector<std::vector<size_t>> parts(num_parts);
  for (size_t g : order) {
    size_t best = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[best] += group_nodes[g];
    parts[best].insert(parts[best].end(), groups[g].begin(), groups[g].end());
  }
  for (auto& p : parts) std::sort(p.begin(), p.end());
  return parts;
}

}  // namespace codegen
}  // namespace kiln
