#include "compiler/relax/te_compute.h"

#include <functional>
#include <memory>

#include "compiler/relax/te_builder.h"

namespace kiln {
namespace te {

Result<ir::PrimFunc> BuildComputePrimFunc(const ComputeSpec& spec) {
  FuncBuilder b(spec.func_name);
  std::vector<ir::Buffer> ins;
  for (const auto& t : spec.inputs) ins.push_back(b.Input(t.name, t.shape, t.dtype).buffer());
  const auto& fcompute = spec.fcompute;
  Tensor out = b.Reduce(spec.output.name, spec.output.shape, spec.output.dtype, ReduceKind::kSum, spec.reduce_extents,
                        [&](const Indices& i, const Indices& r) { return fcompute(ins, i, r); },
                        b.Local(spec.reduce_init));
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, b.Build({out}));
  // The single stage's block keeps the spec's block name (the buffer has the
  // output's name): rebuild the loop nest down to it.
  std::function<ir::Stmt(const ir::Stmt&)> rename = [&](const ir::Stmt& s) -> ir::Stmt {
    if (const auto* loop = ir::As<ir::ForNode>(s)) {
      return std::make_shared<ir::ForNode>(loop->loop_var, loop->min, loop->extent, loop->for_kind, rename(loop->body));
    }
    const auto* br = ir::As<ir::BlockRealizeNode>(s);
    KILN_CHECK(br != nullptr);
    ir::Block block = br->block;
    block.name = spec.block_name;
    return std::make_shared<ir::BlockRealizeNode>(br->iter_values, br->predicate, std::move(block));
  };
  const auto* root = ir::As<ir::BlockRealizeNode>(f->body);
  ir::Block root_block = root->block;
  root_block.body = rename(root_block.body);
  auto nf = std::make_shared<ir::PrimFuncNode>(*f);
  nf->body = std::make_shared<ir::BlockRealizeNode>(root->iter_values, root->predicate, std::move(root_block));
  return ir::PrimFunc(nf);
}

}  // namespace te
}  // namespace kiln
