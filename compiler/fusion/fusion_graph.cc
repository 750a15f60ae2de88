#include "compiler/fusion/fusion_graph.h"

#include <algorithm>
#include <functional>

#include "compiler/fusion/prologue_cost.h"
#include "runtime/status.h"

namespace kiln {
namespace fusion {
namespace {

OpPattern Max(OpPattern a, OpPattern b) { return std::max(a, b); }

// The post-dominator tree: parent[i] is the closest node every path from i
// to the graph's outputs goes through (-1: none, i.e. i is used after the
// graph, unused, or its paths only meet outside); pattern[i] is the least
// fusable edge or node kind on the way there.
struct PostDomTree {
  std::vector<int> parent, depth;
  std::vector<OpPattern> pattern;

  explicit PostDomTree(const FusionGraph& g) {
    size_t n = g.nodes.size();
    parent.assign(n, -1);
    depth.assign(n, 1);
    pattern.assign(n, kOpaque);
    for (size_t k = n; k-- > 0;) {
      const FusionGraph::Node& node = g.nodes[k];
      if (node.external || node.consumers.empty()) continue;
      OpPattern p = kElemWise;
      int lca = node.consumers[0].consumer;
      p = Max(p, node.consumers[0].pattern);
      for (size_t e = 1; e < node.consumers.size(); ++e) {
        lca = Meet(lca, node.consumers[e].consumer, &p);
        p = Max(p, node.consumers[e].pattern);
      }
      parent[k] = lca;
      depth[k] = lca < 0 ? 1 : depth[lca] + 1;
      pattern[k] = p;
    }
  }

  // The least common ancestor of a and b; the kinds passed on the way up
  // join `p`.
  int Meet(int a, int b, OpPattern* p) const {
    while (a != b) {
      if (a < 0 || b < 0) return -1;
      if (depth[a] >= depth[b]) {
        *p = Max(*p, pattern[a]);
        a = parent[a];
      } else {
        *p = Max(*p, pattern[b]);
        b = parent[b];
      }
    }
    return a;
  }
};

class Partitioner {
 public:
  Partitioner(const FusionGraph& g, int max_size) : g_(g), dom_(g), max_size_(max_size) {
    size_t n = g.nodes.size();
    root_.resize(n);
    size_.assign(n, 1);
    pattern_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      root_[i] = static_cast<int>(i);
      pattern_[i] = g.nodes[i].pattern;
    }
    producers_.resize(n);
    for (size_t i = 0; i < n; ++i)
      for (const auto& e : g.nodes[i].consumers) producers_[e.consumer].push_back({static_cast<int>(i), e.pattern});
  }

  std::vector<int> Run() {
    for (int phase = 0; phase < 2; ++phase) {
      for (size_t i = 0; i < g_.nodes.size(); ++i) Visit(static_cast<int>(i), phase);
    }
    std::vector<int> out(g_.nodes.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = Find(static_cast<int>(i));
    return out;
  }

 private:
  using Cond = std::function<bool(OpPattern kind, bool is_sink)>;

  void Visit(int i, int phase) {
    if (g_.nodes[i].pattern == kOpaque) return;
    int d = dom_.parent[i];
    if (d < 0) return;
    int gi = Find(i), gd = Find(d);
    if (gi == gd) return;
    if (size_[gi] + size_[gd] > max_size_) return;
    OpPattern gp = pattern_[gi];
    OpPattern path = dom_.pattern[i];
    if (phase == 0) {
      if (gp == kOutEWiseFusable) {
        // Epilogue of a matmul/conv: elementwise all the way.
        if (path == kElemWise && CheckPath(i, d, [](OpPattern k, bool) { return k <= kBroadcast; })) Commit(i, d);
      } else if (gp <= kBroadcast) {
        if (path <= kInjective || path == kCommReduce) {
          bool ok = CheckPath(i, d, [](OpPattern k, bool sink) {
            if (!sink) return k <= kInjective;
            return k <= kInjective || k == kCommReduce || k == kOutEWiseFusable;
          });
          if (ok && PrologueWorthIt(i, d)) Commit(i, d);
        }
      }
      return;
    }
    // Phase 1: injective ops, after the anchors took their epilogues.
    if (gp > kInjective) return;
    if (gp == kInjective && CheckPath(i, d, [](OpPattern k, bool) { return k <= kInjective; })) {
      Commit(i, d);
      return;
    }
    // An input prologue of a group anchored by a reduction or a matmul/conv.
    OpPattern dk = pattern_[Find(d)];
    if (dk == kCommReduce || dk == kOutEWiseFusable) {
      bool ok = CheckPath(i, d, [](OpPattern k, bool sink) {
        return sink ? (k == kCommReduce || k == kOutEWiseFusable) : k <= kInjective;
      });
      if (ok && PrologueWorthIt(i, d)) Commit(i, d);
    }
  }

  int Find(int i) {
    while (root_[i] != i) {
      root_[i] = root_[root_[i]];
      i = root_[i];
    }
    return i;
  }

  // Every node on a path from src's consumers to sink satisfies `cond` (with
  // its group's kind). The post-dominator guarantees every path ends at sink.
  bool CheckPath(int src, int sink, const Cond& cond) {
    std::vector<char> seen(g_.nodes.size(), 0);
    std::vector<int> stack;
    for (const auto& e : g_.nodes[src].consumers) stack.push_back(e.consumer);
    while (!stack.empty()) {
      int k = stack.back();
      stack.pop_back();
      if (seen[k]) continue;
      seen[k] = 1;
      OpPattern kind = g_.nodes[k].pattern == kOpaque ? kOpaque : pattern_[Find(k)];
      if (!cond(kind, k == sink)) return false;
      if (k == sink) continue;
      for (const auto& e : g_.nodes[k].consumers) stack.push_back(e.consumer);
    }
    return true;
  }

  // The cost check of prologue_cost.h for merging src's group and the nodes
  // on its paths to sink into sink's group: true when sink's group is not
  // anchored by a reduction or matmul/conv (nothing re-reads the values), or
  // when recomputing the joining nodes at every read of sink costs no more
  // than writing their result and reading it back.
  bool PrologueWorthIt(int src, int sink) {
    OpPattern anchor = pattern_[Find(sink)];
    if (anchor != kCommReduce && anchor != kOutEWiseFusable) return true;
    int target = Find(sink);
    std::vector<char> seen(g_.nodes.size(), 0);
    std::vector<int> groups;
    double reads = 1.0;
    std::vector<int> stack = {src};
    while (!stack.empty()) {
      int k = stack.back();
      stack.pop_back();
      if (seen[k] || k == sink) continue;
      seen[k] = 1;
      int r = Find(k);
      if (r != target && std::find(groups.begin(), groups.end(), r) == groups.end()) groups.push_back(r);
      for (const auto& e : g_.nodes[k].consumers) {
        if (e.consumer == sink) reads = std::max(reads, e.reads);
        stack.push_back(e.consumer);
      }
    }
    // The joining nodes in topological order; those whose value is
    // materialized anyway are never recomputed.
    std::vector<char> joining(g_.nodes.size(), 0), materialized(g_.nodes.size(), 0);
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (std::find(groups.begin(), groups.end(), Find(static_cast<int>(k))) != groups.end()) joining[k] = 1;
    double ops = 0.0;
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      if (!joining[k]) continue;
      const FusionGraph::Node& node = g_.nodes[k];
      if (!node.inlinable && g_.nodes[sink].symbolic) return false;
      // Elementwise on materialized values only: inline_elementwise moves it
      // into their stores.
      bool folded = node.pattern <= kBroadcast && !producers_[k].empty();
      for (const auto& p : producers_[k]) folded &= joining[p.first] && materialized[p.first] && p.second == kElemWise;
      materialized[k] = !node.inlinable || folded;
      if (!materialized[k]) ops += node.cost;
    }
    return !PrologueTooCostly(reads, ops);
  }

  // Merges src and every node on its paths to sink into sink's group.
  void Commit(int src, int sink) {
    int target = Find(sink);
    std::vector<char> seen(g_.nodes.size(), 0);
    std::vector<int> stack = {src};
    while (!stack.empty()) {
      int k = stack.back();
      stack.pop_back();
      if (seen[k] || k == sink) continue;
      seen[k] = 1;
      int r = Find(k);
      if (r != target) {
        root_[r] = target;
        size_[target] += size_[r];
        pattern_[target] = Max(pattern_[target], pattern_[r]);
      }
      for (const auto& e : g_.nodes[k].consumers) stack.push_back(e.consumer);
    }
  }

  const FusionGraph& g_;
  PostDomTree dom_;
  int max_size_;
  std::vector<int> root_, size_;
  std::vector<OpPattern> pattern_;
  // Per node: the nodes it reads, with how it reads them.
  std::vector<std::vector<std::pair<int, OpPattern>>> producers_;
};

}  // namespace

std::vector<int> PartitionFusionGraph(const FusionGraph& graph, int max_group_size) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const auto& e : graph.nodes[i].consumers) {
      KILN_CHECK(e.consumer > static_cast<int>(i) && e.consumer < static_cast<int>(graph.nodes.size()),
                 "fusion graph not in topological order (%zu -> %d)", i, e.consumer);
    }
  }
  Partitioner p(graph, max_group_size);
  std::vector<int> groups = p.Run();
  // The representative must be the group's last node (its post-dominator).
  for (size_t i = 0; i < groups.size(); ++i) KILN_CHECK(groups[i] >= static_cast<int>(i), "group root %d before member %zu", groups[i], i);
  return groups;
}

}  // namespace fusion
}  // namespace kiln
