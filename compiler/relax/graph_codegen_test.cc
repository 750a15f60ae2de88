// Static graph generation: which functions get a graph, and the memory plan of
// the static MLP — intermediates share arena bytes, no value is overwritten
// while a later node still reads it, and the last node writes the output.
#include "compiler/relax/graph_codegen.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/relax/vm_codegen.h"
#include "compiler/text/text.h"

namespace kiln {
namespace relax {
namespace {

using compiler::GraphArgKind;

const char* kStaticMlp = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 784), dtype="float32"), w0: R.Tensor((128, 784), dtype="float32"), b0: R.Tensor((128,), dtype="float32"), w1: R.Tensor((10, 128), dtype="float32"), b1: R.Tensor((10,), dtype="float32")) -> R.Tensor((1, 10), dtype="float32"):
        with R.dataflow():
            lv0 = R.permute_dims(w0, axes=None)
            lv1 = R.matmul(x, lv0)
            lv2 = R.add(lv1, b0)
            lv3 = R.nn.relu(lv2)
            lv4 = R.permute_dims(w1, axes=None)
            lv5 = R.matmul(lv3, lv4)
            gv = R.add(lv5, b1)
            R.output(gv)
        return gv
)";

struct Compiled {
  ir::IRModule mod;
  compiler::VmfbProgram program;
  std::vector<std::string> graph_functions;
};

Result<Compiled> Compile(const std::string& src) {
  Compiled c;
  KILN_ASSIGN_OR_RETURN(c.mod, text::ParseModule(src, "t.relax"));
  KILN_ASSIGN_OR_RETURN(c.mod, InferStructInfo(c.mod));
  KILN_ASSIGN_OR_RETURN(c.mod, LegalizeOps(c.mod, LegalizeOptions{}));
  KILN_RETURN_IF_ERROR(GenerateVMCode(c.mod, &c.program));
  KILN_ASSIGN_OR_RETURN(c.graph_functions, GenerateStaticGraphs(c.mod, &c.program));
  return c;
}

uint64_t Bytes(const compiler::GraphArgInfo& a) {
  uint64_t n = 1;
  for (int64_t d : a.shape) n *= static_cast<uint64_t>(d);
  return n * a.dtype.bytes();
}

// For each binding of `f` (one graph node each), which earlier binding
// produced each call argument: -1 - i for parameter i.
std::vector<std::vector<int>> Producers(const ir::Function& f) {
  std::map<const ir::ExprNode*, int> def;
  for (size_t i = 0; i < f->params.size(); ++i) def[f->params[i].get()] = -1 - static_cast<int>(i);
  std::vector<std::vector<int>> out;
  const auto* seq = ir::ExprAs<ir::SeqExprNode>(f->body);
  for (const auto& block : seq->blocks) {
    for (const auto& b : block.bindings) {
      const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
      const auto* args = call ? ir::ExprAs<ir::TupleExpr>(call->args[1]) : nullptr;
      std::vector<int> p;
      if (args)
        for (const auto& a : args->fields) p.push_back(def.count(a.get()) ? def[a.get()] : -1000);
      def[b.var.get()] = static_cast<int>(out.size());
      out.push_back(p);
    }
  }
  return out;
}

TEST(GraphCodegen, StaticMlpReusesArenaMemoryAndWritesTheOutput) {
  Result<Compiled> c = Compile(kStaticMlp);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->graph_functions, std::vector<std::string>{"main"});
  ASSERT_EQ(c->program.graphs.size(), 1u);
  const compiler::GraphInfo& g = c->program.graphs[0];
  EXPECT_EQ(g.function, "main");
  ASSERT_EQ(g.inputs.size(), 5u);
  EXPECT_EQ(g.inputs[0].shape, (std::vector<int64_t>{1, 784}));
  ASSERT_EQ(g.nodes.size(), 7u);

  // The result is written straight into output 0 by the last node.
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0].kind, GraphArgKind::kOutput);
  EXPECT_EQ(g.outputs[0].index, 0u);
  EXPECT_EQ(g.outputs[0].shape, (std::vector<int64_t>{1, 10}));
  const compiler::GraphArgInfo& last = g.nodes.back().args.back();
  EXPECT_EQ(last.kind, GraphArgKind::kOutput);
  EXPECT_EQ(last.index, 0u);

  // Every node calls a kernel of the program with (inputs..., output).
  for (const auto& node : g.nodes) {
    ASSERT_LT(node.callable, c->program.callables.size());
    EXPECT_EQ(c->program.callables[node.callable].kind, compiler::CallableKind::kKernel);
  }

  // Memory reuse: the arena is smaller than all intermediates side by side.
  uint64_t sum = 0;
  for (const auto& node : g.nodes) {
    const auto& out = node.args.back();
    if (out.kind == GraphArgKind::kStorage) sum += (Bytes(out) + 63) / 64 * 64;
  }
  EXPECT_EQ(sum, 401408u + 3 * 512u + 5120u + 64u);
  EXPECT_LT(g.arena_bytes, sum);
  // lv0 (784 x 128) and lv1 (1 x 128) are live together; nothing needs more.
  EXPECT_EQ(g.arena_bytes, 401408u + 512u);

  // Replay the plan: track which node last wrote each arena byte, and check
  // that every storage read sees the value the Relax program means.
  std::vector<std::vector<int>> producers = Producers(c->mod.FindRelax("main"));
  ASSERT_EQ(producers.size(), g.nodes.size());
  std::vector<int> owner(g.arena_bytes, -1);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const auto& args = g.nodes[k].args;
    ASSERT_EQ(args.size(), producers[k].size() + 1) << "node " << k;
    for (size_t a = 0; a + 1 < args.size(); ++a) {
      int want = producers[k][a];
      if (want < 0) {
        EXPECT_EQ(args[a].kind, GraphArgKind::kInput) << "node " << k << " arg " << a;
        EXPECT_EQ(static_cast<int>(args[a].index), -1 - want);
        continue;
      }
      ASSERT_EQ(args[a].kind, GraphArgKind::kStorage) << "node " << k << " arg " << a;
      ASSERT_LE(args[a].byte_offset + Bytes(args[a]), g.arena_bytes);
      EXPECT_EQ(args[a].byte_offset % 64, 0u);
      for (uint64_t b = args[a].byte_offset; b < args[a].byte_offset + Bytes(args[a]); ++b) {
        ASSERT_EQ(owner[b], want) << "node " << k << " arg " << a << " byte " << b << " was overwritten";
      }
    }
    const auto& out = args.back();
    if (out.kind == GraphArgKind::kStorage) {
      ASSERT_LE(out.byte_offset + Bytes(out), g.arena_bytes);
      for (uint64_t b = out.byte_offset; b < out.byte_offset + Bytes(out); ++b) owner[b] = static_cast<int>(k);
    }
  }
}

TEST(GraphCodegen, SymbolicMlpGetsNoGraph) {
  std::ifstream f(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
  std::stringstream ss;
  ss << f.rdbuf();
  ASSERT_FALSE(ss.str().empty());
  Result<Compiled> c = Compile(ss.str());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->graph_functions.empty());
  EXPECT_TRUE(c->program.graphs.empty());
  EXPECT_EQ(c->program.functions.size(), 1u);  // the VM still runs it
}

TEST(GraphCodegen, TupleResultsInputsAndIneligibleFunctions) {
  Result<Compiled> c = Compile(R"(@I.ir_module
class Module:
    @R.function
    def pair(x: R.Tensor((4,), dtype="float32")):
        a = R.nn.relu(x)
        b = R.add(a, x)
        return (b, x)

    @R.function
    def cast(x: R.Tensor(ndim=1, dtype="float32")):
        y = R.match_cast(x, R.Tensor((4,), dtype="float32"))
        return y

    @R.function
    def packed(x: R.Tensor((4,), dtype="float32")):
        y = R.call_packed("p", x, sinfo_args=R.Tensor((4,), dtype="float32"))
        return y
)");
  ASSERT_TRUE(c.ok()) << c.status().message();
  // Only `pair` is static throughout; a match_cast or a plain packed call
  // leaves the function to the VM.
  EXPECT_EQ(c->graph_functions, std::vector<std::string>{"pair"});
  ASSERT_EQ(c->program.graphs.size(), 1u);
  const compiler::GraphInfo& g = c->program.graphs[0];
  ASSERT_EQ(g.outputs.size(), 2u);
  EXPECT_EQ(g.outputs[0].kind, GraphArgKind::kOutput);
  EXPECT_EQ(g.outputs[0].index, 0u);
  EXPECT_EQ(g.outputs[1].kind, GraphArgKind::kInput);  // x itself
  EXPECT_EQ(g.outputs[1].index, 0u);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[1].args.back().kind, GraphArgKind::kOutput);
  // relu's result is the only intermediate: 16 bytes, one aligned block.
  EXPECT_EQ(g.nodes[0].args.back().kind, GraphArgKind::kStorage);
  EXPECT_EQ(g.arena_bytes, 64u);
}

TEST(GraphCodegen, ResultReturnedTwiceIsLeftToTheVM) {
  // Each kernel writes one output tensor in place; a second copy of the same
  // result would have to be copied from another output, which graphs cannot
  // express, so the function gets no graph (the VM returns it twice).
  Result<Compiled> c = Compile(R"(@I.ir_module
class Module:
    @R.function
    def twice(x: R.Tensor((4,), dtype="float32")):
        a = R.nn.relu(x)
        b = R.add(a, x)
        return (b, b)

    @R.function
    def inputs_twice(x: R.Tensor((4,), dtype="float32")):
        return (x, x)
)");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->graph_functions, std::vector<std::string>{"inputs_twice"});
  for (const auto& g : c->program.graphs) {
    for (const auto& o : g.outputs) {
      EXPECT_NE(o.kind, GraphArgKind::kStorage) << g.function;  // never read back from the arena
    }
  }
}

}  // namespace
}  // namespace relax
}  // namespace kiln
