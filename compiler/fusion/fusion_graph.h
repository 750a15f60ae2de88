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
    bool batch_symbolic = false;  // its kernel is symbolic in the batch alone (SymbolicOnlyInBatch)
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
// transform, a custom nest) never joins a `batch_symbolic` anchor: the
// schedule of a convolution symbolic in its batch alone (conv_batch_peel.h)
// needs its input to be a parameter, and the pair was left a naive nest
// (captcha_crnn's Winograd outputs fused with a 1x1 convolution: 4.8
// GFLOP/s; 3-4x the two kernels alone, loaded machine). Anchors of symbolic
// height or width (conv_symbolic_schedule.h) take it: the transform writes
// its own buffer, which the convolution reads in place, also as a source of
// a concatenation (YOLOv8n's C2f blocks; nudenet at 320^2, 1 thread, loaded
// machine: its Winograd-output and convolution kernels' minima over 40
// calls summed 10.85 -> 10.36 ms).
//
// For every node, the index of its group's representative: the group's last
// node (its post-dominator, whose value is the group's only result). A node
// alone in its group maps to itself. Groups never exceed `max_group_size`.
// Pre: `graph` is in topological order (KILN_CHECK).
std::vector<int> PartitionFusionGraph(const FusionGraph& graph, int max_group_size = 256);

}  // namespace fusion
}  // namespace kiln

#endif  // KILN_COMPILER_FUSION_FUSION_GRAPH_H_
