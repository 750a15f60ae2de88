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
