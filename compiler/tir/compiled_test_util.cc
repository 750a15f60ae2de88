#include "compiler/tir/compiled_test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <algorithm>

#include "compiler/text/text.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/writer/vmfb_writer.h"

namespace kiln {
namespace tir {
namespace test_util {

driver::CompileOptions ThreadsOptions(int threads, bool winograd) {
  driver::CompileOptions options;
  options.num_threads_hint = threads;
  options.winograd = winograd;
  return options;
}

std::vector<float> RandomFloats(int64_t count, uint64_t seed, float scale) {
  std::vector<float> v(static_cast<size_t>(count));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = scale * (static_cast<float>((s >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f);
  }
  return v;
}

Tensor FloatTensor(const std::vector<int64_t>& shape, const std::vector<float>& data) {
  Tensor t = Tensor::Empty(shape, DType::Float32()).value();
  if (!data.empty()) std::memcpy(t.data<float>(), data.data(), data.size() * sizeof(float));
  return t;
}

std::shared_ptr<const vm::Module> CompileAndLoad(const std::string& source, const driver::CompileOptions& options,
                                                 int load_threads) {
  Result<ir::IRModule> mod = text::ParseModule(source, "test.relax");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return nullptr;
  Result<compiler::VmfbProgram> program = driver::CompileModule(*mod, options);
  EXPECT_TRUE(program.ok()) << program.status().ToString();
  if (!program.ok()) return nullptr;
  Result<std::vector<uint8_t>> bytes = compiler::SerializeVmfb(*program);
  EXPECT_TRUE(bytes.ok());
  if (!bytes.ok()) return nullptr;
  void* owned = std::aligned_alloc(64, (bytes->size() + 63) / 64 * 64);
  std::memcpy(owned, bytes->data(), bytes->size());
  vm::LoadOptions load;
  load.num_threads = load_threads;
  auto loaded = vm::Module::LoadOwnedBuffer(
      owned, bytes->size(), [](const void*, void* user) { std::free(user); }, owned, load);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  return loaded.ok() ? *loaded : nullptr;
}

Result<Tensor> InvokeMain(const vm::Module& mod, const std::vector<Any>& args) {
  Any ret;
  std::unique_ptr<vm::Context> ctx = mod.CreateContext();
  Status s = ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &ret);
  if (!s.ok()) return s;
  return ret.AsTensor();
}

ir::PrimFunc LowerPrimFunc(const std::string& source, const driver::CompileOptions& options,
                           const std::string& name_part) {
  Result<ir::IRModule> mod = text::ParseModule(source, "test.relax");
  EXPECT_TRUE(mod.ok()) << mod.status().ToString();
  if (!mod.ok()) return nullptr;
  Result<ir::IRModule> lowered = driver::LowerModule(*mod, options);
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  if (!lowered.ok()) return nullptr;
  for (const ir::ModuleEntry& e : lowered->entries)
    if (e.prim && e.name.find(name_part) != std::string::npos) return e.prim;
  ADD_FAILURE() << "no PrimFunc named like " << name_part;
  return nullptr;
}

namespace {

class TileCounter : public StmtExprVisitor {
 public:
  TileCensus census;

  void VisitExpr(const ir::PrimExpr& e) override {
    if (const auto* c = e.as<ir::CallNode>()) {
      if (c->op == "fma" && in_vector_ && unrolled_ > 0) census.fma_widths.push_back(width_);
      if (c->op == "if_then_else") ++census.guarded;
    }
    StmtExprVisitor::VisitExpr(e);
  }

  void VisitStmt(const ir::Stmt& s) override {
    if (const auto* st = ir::As<ir::BufferStoreNode>(s); st != nullptr && st->buffer->name != "acc" &&
                                                              st->buffer->scope != "local") {
      struct Reads : StmtExprVisitor {
        const ir::VarNode* data;
        bool found = false;
        void VisitExpr(const ir::PrimExpr& e) override {
          if (const auto* l = e.as<ir::BufferLoadNode>()) found |= l->buffer->data.get() == data;
          StmtExprVisitor::VisitExpr(e);
        }
      } reads;
      reads.data = st->buffer->data.get();
      reads.VisitExpr(st->value);
      census.global_updates += reads.found;
    }
    const auto* f = ir::As<ir::ForNode>(s);
    if (f == nullptr) return StmtExprVisitor::VisitStmt(s);
    ++depth_;
    census.max_depth = std::max(census.max_depth, depth_);
    census.parallel += f->for_kind == ir::ForKind::kParallel;
    bool was = in_vector_;
    int64_t old = width_;
    if (f->for_kind == ir::ForKind::kVectorized) {
      const auto* imm = f->extent.as<ir::IntImmNode>();
      in_vector_ = imm != nullptr;
      width_ = imm ? imm->value : 0;
    }
    unrolled_ += f->for_kind == ir::ForKind::kUnrolled;
    StmtExprVisitor::VisitStmt(s);
    unrolled_ -= f->for_kind == ir::ForKind::kUnrolled;
    in_vector_ = was;
    width_ = old;
    --depth_;
  }

 private:
  bool in_vector_ = false;
  int64_t width_ = 0;
  int depth_ = 0, unrolled_ = 0;
};

}  // namespace

TileCensus CountTiles(const ir::PrimFunc& func) {
  TileCounter counter;
  counter.VisitStmt(func->body);
  return counter.census;
}

}  // namespace test_util
}  // namespace tir
}  // namespace kiln
