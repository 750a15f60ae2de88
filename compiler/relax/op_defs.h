// The operator families: each op_*.cc file appends the OpInfo entries of its
// operators (inference + legalization + pattern) to the registry's table.
// Adding a family = one declaration here, one call in op_registry.cc, one
// source in CMakeLists.txt.
#ifndef KILN_COMPILER_RELAX_OP_DEFS_H_
#define KILN_COMPILER_RELAX_OP_DEFS_H_

#include <vector>

#include "compiler/relax/op_registry.h"

namespace kiln {
namespace relax {

void AddDpsOps(std::vector<OpInfo>* table);          // call_tir, call_dps_packed (op_dps.cc)
void AddElementwiseOps(std::vector<OpInfo>* table);  // op_elementwise.cc
void AddMatmulOps(std::vector<OpInfo>* table);       // op_matmul.cc
void AddPermuteDimsOps(std::vector<OpInfo>* table);  // op_permute_dims.cc
void AddReshapeOps(std::vector<OpInfo>* table);      // reshape, flatten, squeeze, expand_dims, broadcast_to (op_reshape.cc)
void AddConcatSplitOps(std::vector<OpInfo>* table);  // concat, split (op_concat_split.cc)
void AddSliceOps(std::vector<OpInfo>* table);        // strided_slice (op_slice.cc)
void AddGatherOps(std::vector<OpInfo>* table);       // take, gather_elements, gather_nd (op_gather.cc)
void AddScatterOps(std::vector<OpInfo>* table);      // scatter_elements, scatter_nd (op_scatter.cc)
void AddGridSampleOps(std::vector<OpInfo>* table);   // image.grid_sample (op_grid_sample.cc)
void AddTileOps(std::vector<OpInfo>* table);         // tile, repeat (op_tile.cc)
void AddSoftmaxOps(std::vector<OpInfo>* table);      // op_softmax.cc
void AddNormOps(std::vector<OpInfo>* table);         // op_norm.cc
void AddAttentionOps(std::vector<OpInfo>* table);    // op_attention.cc
void AddLinalgOps(std::vector<OpInfo>* table);       // op_linalg.cc (einsum)
void AddConvOps(std::vector<OpInfo>* table);         // op_conv.cc
void AddPoolOps(std::vector<OpInfo>* table);         // op_pool.cc
void AddNnMiscOps(std::vector<OpInfo>* table);       // dropout, pad (op_nn_misc.cc)
void AddResizeOps(std::vector<OpInfo>* table);       // image.resize2d (op_resize.cc)
void AddUnaryOps(std::vector<OpInfo>* table);        // op_unary.cc
void AddReduceOps(std::vector<OpInfo>* table);       // op_reduce.cc
void AddCreateOps(std::vector<OpInfo>* table);       // op_create.cc
void AddScanOps(std::vector<OpInfo>* table);         // op_scan.cc
void AddRnnOps(std::vector<OpInfo>* table);          // nn.lstm, nn.gru, nn.rnn (op_rnn.cc)
void AddShapeValueOps(std::vector<OpInfo>* table);   // tensor_to_shape, shape_to_tensor (op_shape_value.cc)
void AddQuantizedOps(std::vector<OpInfo>* table);    // matmul_integer (op_quantized.cc)

}  // namespace relax
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_OP_DEFS_H_
