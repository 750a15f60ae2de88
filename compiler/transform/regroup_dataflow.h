// Regrouping a function's top-level bindings into dataflow blocks: a helper of
// the passes that splice bindings into a function (guard-raise-arms,
// inline-functions), after which the function's blocks are cut where the
// splice happened and fusion, which works within one dataflow block, would
// stop there.
//
// The top-level bindings keep their order. Each maximal run of bindings that
// may live in a dataflow block (those already in one, and elsewhere the pure
// ones: IsPureValue and no match_cast) becomes one dataflow block; the others
// stay in ordinary blocks. A variable defined in a dataflow block is a
// dataflow variable exactly when nothing after the block (a later binding,
// an If arm, the function's result) reads it; variables of ordinary blocks
// are not. Variables whose kind changes are replaced by new ones and every
// use follows.
//
// Post: struct info of kept nodes is unchanged (a new variable copies its
// predecessor's); run normalization on the module if the caller needs every
// node inferred. Never fails.
#ifndef KILN_COMPILER_TRANSFORM_REGROUP_DATAFLOW_H_
#define KILN_COMPILER_TRANSFORM_REGROUP_DATAFLOW_H_

#include "compiler/ir/relax.h"

namespace kiln {
namespace transform {

ir::Function RegroupDataflow(const ir::Function& f);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_REGROUP_DATAFLOW_H_
