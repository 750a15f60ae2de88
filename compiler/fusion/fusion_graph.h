// The dataflow graph fuse_ops partitions, and the partitioning itself (the
// rules are described in fuse_ops.h), kept apart from the Relax rewriting so
// that it can be tested on small hand-made graphs.
#ifndef KILN_COMPILER_FUSION_FUSION_GRAPH_H_
#define KILN_COMPILER_FUSION_FUSION_GRAPH_H_

#include <vector>

#include "compiler/fusion/op_pattern.h"

namespace kiln {
namespace fusion {

struct FusionGraph {
  struct Edge {
    int consumer;        // index of the consuming node
    OpPattern pattern;   // how the consumer reads the value (usually its own kind)
    // How many times the consumer reads each element of the value
    // (ReadsPerElement, prologue_cost.h); only reductions' and
    // out_ewise_fusable kernels' edges are checked.
    double reads = 1.0;
  };
  struct Node {
    OpPattern pattern = kOpaque;  // kOpaque: never fused
    bool external = false;        // the value is used after the graph (an output)
    std::vector<Edge> consumers;  // at most one edge per consumer
    double cost = 0.0;            // per element of its value (OpsPerElement)
    bool inlinable = true;        // stores at its loop point (StoresAtLoopPoint)
    bool symbolic = false;        // its kernel has a symbolic extent
  };
  // Topological order: every consumer has a larger index than its producer.
  std::vector<Node> nodes;
};

// A group of injective-or-less nodes joins a group as the prologue of its
// reduction / matmul / convolution only when the cost check of
// prologue_cost.h passes: with R the largest `reads` of the edges into the
// post-dominator and P the summed `cost` of the nodes that would join and
// are not materialized anyway (not `inlinable`, or elementwise / broadcast
// with all their producers among the joining nodes materialized), not
// PrologueTooCostly(R, P). A node that is not `inlinable` (a Winograd output
// transform, a custom nest) never joins a `symbolic` anchor: the static
// schedules that compute such a prologue in the anchor's kernel need static
// extents, and the symbolic ones leave the pair a naive nest (captcha_crnn's
// symbolic Winograd outputs fused with a 1x1 convolution: 4.8 GFLOP/s).
// Allowed for anchors of symbolic height or width (whose schedule reads a
// concatenation's sources in place, the transform's own buffer among them),
// nudenet at 320^2 gained nothing (1 thread, loaded machine, per-kernel
// minima over 40 calls): YOLOv8n's C2f blocks 1-3 % faster, its head's
// transform + 1x1 convolution 13 % slower (the SiLU between them is then a
// pass of its own), whole model within noise; so it stays refused.
//
// For every node, the index of its group's representative: the group's last
// node (its post-dominator, whose value is the group's only result). A node
// alone in its group maps to itself. Groups never exceed `max_group_size`.
// Pre: `graph` is in topological order (KILN_CHECK).
std::vector<int> PartitionFusionGraph(const FusionGraph& graph, int max_group_size = 256);

}  // namespace fusion
}  // namespace kiln

#endif  // KILN_COMPILER_FUSION_FUSION_GRAPH_H_
