// PartitionFusionGraph on small hand-made graphs: which nodes end up together.
#include <gtest/gtest.h>

#include <initializer_list>
#include <vector>

#include "compiler/fusion/fusion_graph.h"

namespace kiln {
namespace fusion {
namespace {

struct G {
  FusionGraph g;
  int Add(OpPattern p, bool external = false) {
    FusionGraph::Node n;
    n.pattern = p;
    n.external = external;
    g.nodes.push_back(n);
    return static_cast<int>(g.nodes.size()) - 1;
  }
  // Edge pattern defaults to the consumer's kind.
  void Edge(int from, int to) { g.nodes[from].consumers.push_back({to, g.nodes[to].pattern}); }
  void Edge(int from, int to, OpPattern p) { g.nodes[from].consumers.push_back({to, p}); }
  std::vector<int> Run(int max_size = 256) { return PartitionFusionGraph(g, max_size); }
};

using V = std::vector<int>;

TEST(FusionGraph, ElementwiseChainIsOneGroup) {
  G t;
  int a = t.Add(kElemWise), b = t.Add(kInjective), c = t.Add(kElemWise, true);
  t.Edge(a, b);
  t.Edge(b, c);
  EXPECT_EQ(t.Run(), (V{2, 2, 2}));
}

TEST(FusionGraph, MatmulTakesBiasAddAndReluWhenTheAddReadsItElementwise) {
  G t;
  int mm = t.Add(kOutEWiseFusable), add = t.Add(kBroadcast), relu = t.Add(kElemWise, true);
  t.Edge(mm, add, kElemWise);  // the matmul result has the add's output shape
  t.Edge(add, relu);
  EXPECT_EQ(t.Run(), (V{2, 2, 2}));
}

TEST(FusionGraph, MatmulDoesNotTakeAnEpilogueThatBroadcastsIt) {
  G t;
  int mm = t.Add(kOutEWiseFusable), add = t.Add(kBroadcast, true);
  t.Edge(mm, add);  // edge stays broadcast: the result is expanded
  EXPECT_EQ(t.Run(), (V{0, 1}));
}

TEST(FusionGraph, DiamondFusesIntoItsPostDominator) {
  G t;
  int a = t.Add(kElemWise), b = t.Add(kElemWise), c = t.Add(kBroadcast), d = t.Add(kElemWise, true);
  t.Edge(a, b);
  t.Edge(a, c);
  t.Edge(b, d);
  t.Edge(c, d);
  EXPECT_EQ(t.Run(), (V{3, 3, 3, 3}));
}

TEST(FusionGraph, ValueReadByAnOpaqueNodeAndAKernelStaysAlone) {
  G t;
  int a = t.Add(kElemWise), op = t.Add(kOpaque, true), b = t.Add(kElemWise, true);
  t.Edge(a, op);
  t.Edge(a, b);
  EXPECT_EQ(t.Run(), (V{0, 1, 2}));
}

TEST(FusionGraph, OutputInTheMiddleEndsTheGroup) {
  G t;
  int a = t.Add(kElemWise), b = t.Add(kElemWise, true), c = t.Add(kElemWise, true);
  t.Edge(a, b);
  t.Edge(b, c);
  EXPECT_EQ(t.Run(), (V{1, 1, 2}));
}

TEST(FusionGraph, InjectivePrologueFusesIntoReductionAndMatmul) {
  G t;
  int tr = t.Add(kInjective), sum = t.Add(kCommReduce, true);
  t.Edge(tr, sum);
  EXPECT_EQ(t.Run(), (V{1, 1}));

  G m;
  int w = m.Add(kInjective), mm = m.Add(kOutEWiseFusable), add = m.Add(kBroadcast, true);
  m.Edge(w, mm);
  m.Edge(mm, add, kElemWise);
  EXPECT_EQ(m.Run(), (V{2, 2, 2}));
}

// The prologue cost check (prologue_cost.h): a producer chain costing P per
// element joins an anchor reading each element R times only when
// (R - 1) * P <= kMaterializeCost.
TEST(FusionGraph, CostlyPrologueOfAConvolutionStaysOut) {
  G t;
  int mul = t.Add(kBroadcast), add = t.Add(kElemWise), conv = t.Add(kOutEWiseFusable), relu = t.Add(kElemWise, true);
  t.g.nodes[mul].cost = 2;
  t.g.nodes[add].cost = 2;
  t.Edge(mul, add);
  t.Edge(add, conv);
  t.g.nodes[add].consumers.back().reads = 36;  // 3x3 taps, 32 outputs in tiles of 8
  t.Edge(conv, relu);
  // multiply + add one group, the convolution takes its epilogue only.
  EXPECT_EQ(t.Run(), (V{1, 1, 3, 3}));
}

TEST(FusionGraph, CostlyInjectivePrologueStaysOutCheapOneJoins) {
  for (double reads : {36.0, 1.0}) {
    G t;
    int resize = t.Add(kInjective), conv = t.Add(kOutEWiseFusable, true);
    t.g.nodes[resize].cost = 18;
    t.Edge(resize, conv);
    t.g.nodes[resize].consumers.back().reads = reads;
    EXPECT_EQ(t.Run(), reads > 1 ? (V{0, 1}) : (V{1, 1})) << reads;
  }
}

TEST(FusionGraph, PrologueThatCostsNothingJoinsWhateverTheReads) {
  G t;
  int tr = t.Add(kInjective), mm = t.Add(kOutEWiseFusable, true);
  t.Edge(tr, mm);
  t.g.nodes[tr].consumers.back().reads = 1000;  // cost 0: a transpose
  EXPECT_EQ(t.Run(), (V{1, 1}));
}

TEST(FusionGraph, PrologueMaterializedAnywayJoins) {
  // A Winograd output transform (not inlinable) with its bias and relu
  // (inlined into its stores) and a concatenation (free) before a pointwise
  // convolution: nothing would be recomputed.
  G t;
  int wo = t.Add(kInjective), add = t.Add(kBroadcast), relu = t.Add(kElemWise), other = t.Add(kElemWise),
      cat = t.Add(kInjective), conv = t.Add(kOutEWiseFusable, true);
  t.g.nodes[wo].cost = 200;
  t.g.nodes[wo].inlinable = false;
  t.g.nodes[add].cost = 2;
  t.g.nodes[relu].cost = 1;
  t.Edge(wo, add, kElemWise);
  t.Edge(add, relu);
  t.Edge(relu, cat);
  t.Edge(other, cat);
  t.Edge(cat, conv);
  t.g.nodes[cat].consumers.back().reads = 8;
  std::vector<int> groups = t.Run();
  EXPECT_EQ(groups[wo], conv);
  EXPECT_EQ(groups[cat], conv);
  // The same chain after an inlinable producer would be recomputed: refused.
  G u;
  int e = u.Add(kElemWise), add2 = u.Add(kBroadcast), relu2 = u.Add(kElemWise), conv2 = u.Add(kOutEWiseFusable, true);
  u.g.nodes[add2].cost = 2;
  u.g.nodes[relu2].cost = 1;
  u.Edge(e, add2, kElemWise);
  u.Edge(add2, relu2);
  u.Edge(relu2, conv2);
  u.g.nodes[relu2].consumers.back().reads = 8;
  EXPECT_EQ(u.Run(), (V{2, 2, 2, 3}));
}

TEST(FusionGraph, MaterializedPrologueStaysOutOfASymbolicAnchor) {
  // A Winograd output transform with its bias and relu before a pointwise
  // convolution of symbolic extent: the symbolic schedules cannot compute
  // the pair in one kernel, so the transform keeps its own group.
  for (bool symbolic : {false, true}) {
    G t;
    int wo = t.Add(kInjective), add = t.Add(kBroadcast), relu = t.Add(kElemWise), conv = t.Add(kOutEWiseFusable, true);
    t.g.nodes[wo].cost = 200;
    t.g.nodes[wo].inlinable = false;
    t.g.nodes[conv].symbolic = symbolic;
    t.Edge(wo, add, kElemWise);
    t.Edge(add, relu);
    t.Edge(relu, conv);
    t.g.nodes[relu].consumers.back().reads = 8;
    EXPECT_EQ(t.Run(), symbolic ? (V{2, 2, 2, 3}) : (V{3, 3, 3, 3})) << symbolic;
  }
}

TEST(FusionGraph, PrologueIntoAnEpilogueIsNotReread) {
  // A residual input fused into the conv's epilogue add is read once.
  G t;
  int conv = t.Add(kOutEWiseFusable), e = t.Add(kElemWise), add = t.Add(kElemWise, true);
  t.g.nodes[e].cost = 100;
  t.Edge(conv, add);
  t.Edge(e, add);
  EXPECT_EQ(t.Run(), (V{2, 2, 2}));
}

TEST(FusionGraph, ElementwiseFusesIntoFollowingReduction) {
  G t;
  int e = t.Add(kElemWise), sum = t.Add(kCommReduce, true);
  t.Edge(e, sum);
  EXPECT_EQ(t.Run(), (V{1, 1}));
}

TEST(FusionGraph, ReductionTakesNoEpilogue) {
  G t;
  int sum = t.Add(kCommReduce), e = t.Add(kElemWise, true);
  t.Edge(sum, e);
  EXPECT_EQ(t.Run(), (V{0, 1}));
}

TEST(FusionGraph, OpaqueNodesAreNeverFused) {
  G t;
  int a = t.Add(kOpaque), b = t.Add(kElemWise), c = t.Add(kOpaque, true);
  t.Edge(a, b);
  t.Edge(b, c);
  EXPECT_EQ(t.Run(), (V{0, 1, 2}));
}

TEST(FusionGraph, TwoMatmulsStayInTwoGroups) {
  G t;
  int mm0 = t.Add(kOutEWiseFusable), relu = t.Add(kElemWise), mm1 = t.Add(kOutEWiseFusable),
      add = t.Add(kBroadcast, true);
  t.Edge(mm0, relu);
  t.Edge(relu, mm1);
  t.Edge(mm1, add, kElemWise);
  EXPECT_EQ(t.Run(), (V{1, 1, 3, 3}));
}

TEST(FusionGraph, ElementwiseBranchDoesNotFuseThroughAMatmul) {
  // a feeds both a matmul and the add after it: the path through the matmul
  // is not elementwise, so a stays alone.
  G t;
  int a = t.Add(kElemWise), mm = t.Add(kOutEWiseFusable), add = t.Add(kElemWise, true);
  t.Edge(a, mm);
  t.Edge(a, add);
  t.Edge(mm, add);
  EXPECT_EQ(t.Run(), (V{0, 2, 2}));
}

TEST(FusionGraph, GroupSizeIsBounded) {
  G t;
  int a = t.Add(kElemWise), b = t.Add(kElemWise), c = t.Add(kElemWise), d = t.Add(kElemWise, true);
  t.Edge(a, b);
  t.Edge(b, c);
  t.Edge(c, d);
  std::vector<int> groups = t.Run(2);
  for (int r : groups) {
    int size = 0;
    for (int x : groups) size += x == r;
    EXPECT_LE(size, 2);
  }
  EXPECT_EQ(groups[0], groups[1]);
}

}  // namespace
}  // namespace fusion
}  // namespace kiln
