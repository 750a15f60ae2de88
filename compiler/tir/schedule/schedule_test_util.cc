#include "compiler/tir/schedule/schedule_test_util.h"

#include <cmath>
#include <limits>
#include <memory>

#include "compiler/arith/simplify.h"
#include "compiler/codegen/native_codegen.h"
#include "compiler/text/text.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/tir/stmt_functor.h"
#include "kernels/kiln_kernel_abi.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <random>

namespace kiln {
namespace tir {
namespace testing {

using namespace ir;  // NOLINT

PrimFunc ParseFunc(const std::string& source, const std::string& name) {
  std::string text = source;
  if (text.find("@I.ir_module") == std::string::npos) {
    std::string indented;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(pos, nl - pos);
      if (!line.empty()) indented += "    " + line;
      indented += "\n";
      pos = nl + 1;
    }
    text = "@I.ir_module\nclass Module:\n" + indented;
  }
  Result<IRModule> mod = text::ParseModule(text, "<schedule_test>");
  KILN_CHECK(mod.ok(), "%s\n%s", mod.status().ToString().c_str(), text.c_str());
  PrimFunc f = mod->FindPrim(name);
  KILN_CHECK(f != nullptr, "no PrimFunc %s", name.c_str());
  return f;
}

std::string Print(const PrimFunc& f) {
  IRModule m;
  m.Add(f->name, f);
  return text::PrintModule(m);
}

namespace {

// A kernel library loaded from a temporary file (removed right away).
class Library {
 public:
  ~Library() {
    if (handle_) dlclose(handle_);
  }
  Status Load(const std::vector<uint8_t>& so) {
    const char* base = getenv("TMPDIR");
    std::string path = std::string(base && *base ? base : "/tmp") + "/kiln-schedule-test-XXXXXX";
    int fd = mkstemp(path.data());
    if (fd < 0) return Internal("mkstemp failed");
    bool ok = write(fd, so.data(), so.size()) == static_cast<ssize_t>(so.size());
    close(fd);
    if (ok) handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    unlink(path.c_str());
    if (!handle_) return Internal("cannot load the kernel library");
    auto query = reinterpret_cast<kiln_kernel_query_fn>(dlsym(handle_, KILN_KERNEL_QUERY_SYMBOL));
    if (!query) return Internal("no kiln_kernel_query");
    table_ = query(KILN_KERNEL_ABI_VERSION);
    if (!table_) return Internal("ABI version refused");
    return Status::Ok();
  }
  Status Run(const std::string& name, const std::vector<Tensor>& tensors) const {
    for (uint32_t i = 0; i < table_->num_kernels; ++i) {
      if (name != table_->kernels[i].name) continue;
      ThreadPool pool(2);
      kiln_kernel_env env = MakeKernelEnv(&pool);
      std::vector<kiln_kernel_arg> args(tensors.size());
      for (size_t k = 0; k < tensors.size(); ++k) args[k].tensor = reinterpret_cast<kiln_dltensor*>(tensors[k].dl());
      int rc = table_->kernels[i].fn(&env, args.data(), static_cast<int32_t>(args.size()));
      if (rc != 0) return Internal(name + " returned " + std::to_string(rc));
      return Status::Ok();
    }
    return NotFound("no kernel " + name);
  }

 private:
  void* handle_ = nullptr;
  const kiln_kernel_library* table_ = nullptr;
};

Tensor RandomTensor(const std::vector<int64_t>& shape, uint32_t seed) {
  Result<Tensor> t = Tensor::Empty(shape, DType::Float32());
  KILN_CHECK(t.ok(), "%s", t.status().ToString().c_str());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = t->data<float>();
  for (int64_t i = 0; i < t->NumElements(); ++i) p[i] = dist(rng);
  return *t;
}

}  // namespace

Status SameNumbers(const PrimFunc& original, const PrimFunc& scheduled, int64_t nan_stride) {
  auto renamed = std::make_shared<PrimFuncNode>(*scheduled);
  renamed->name = original->name + "_scheduled";
  std::vector<PrimFunc> funcs = {LowerBlocks(original), LowerBlocks(PrimFunc(renamed))};
  KILN_ASSIGN_OR_RETURN(codegen::NativeLibraryBuild built, codegen::BuildNativeLibrary(funcs, {}));
  Library lib;
  KILN_RETURN_IF_ERROR(lib.Load(built.shared_object));
  std::vector<Tensor> a, b;
  uint32_t seed = 1;
  for (const auto& p : original->params) {
    Buffer buf = original->BufferOf(p);
    if (!buf) return InvalidArgument("SameNumbers: scalar parameter " + p->name);
    std::vector<int64_t> shape;
    for (const auto& d : buf->shape) {
      auto c = arith::AsConstInt(d);
      if (!c) return InvalidArgument("SameNumbers: symbolic shape of " + buf->name);
      shape.push_back(*c);
    }
    a.push_back(RandomTensor(shape, seed));
    b.push_back(RandomTensor(shape, seed++));
    if (nan_stride > 0) {
      for (int64_t i = nan_stride / 2; i < a.back().NumElements(); i += nan_stride) {
        a.back().data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
        b.back().data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
  KILN_RETURN_IF_ERROR(lib.Run(funcs[0]->name, a));
  KILN_RETURN_IF_ERROR(lib.Run(funcs[1]->name, b));
  for (size_t k = 0; k < a.size(); ++k) {
    const float* x = a[k].data<float>();
    const float* y = b[k].data<float>();
    for (int64_t i = 0; i < a[k].NumElements(); ++i) {
      float tol = 1e-4f * std::max(1.0f, std::fabs(x[i]));
      if (std::isnan(x[i]) && std::isnan(y[i])) continue;
      if (!(std::fabs(x[i] - y[i]) <= tol))
        return Internal("parameter " + std::to_string(k) + " element " + std::to_string(i) + ": " +
                        std::to_string(x[i]) + " vs " + std::to_string(y[i]));
    }
  }
  return Status::Ok();
}

Status RunOnRandomInputs(const PrimFunc& f, std::vector<Tensor>* params, uint32_t seed) {
  KILN_ASSIGN_OR_RETURN(codegen::NativeLibraryBuild built, codegen::BuildNativeLibrary({LowerBlocks(f)}, {}));
  Library lib;
  KILN_RETURN_IF_ERROR(lib.Load(built.shared_object));
  params->clear();
  for (const auto& p : f->params) {
    Buffer buf = f->BufferOf(p);
    if (!buf) return InvalidArgument("RunOnRandomInputs: scalar parameter " + p->name);
    std::vector<int64_t> shape;
    for (const auto& d : buf->shape) {
      auto c = arith::AsConstInt(d);
      if (!c) return InvalidArgument("RunOnRandomInputs: symbolic shape of " + buf->name);
      shape.push_back(*c);
    }
    params->push_back(RandomTensor(shape, seed++));
  }
  return lib.Run(f->name, *params);
}

StmtCensus CountStmts(const ir::PrimFunc& f) {
  struct Walker : StmtExprVisitor {
    StmtCensus c;
    int depth = 0;
    void VisitStmt(const ir::Stmt& s) override {
      const auto* loop = ir::As<ir::ForNode>(s);
      if (loop != nullptr) {
        ++c.loops;
        c.vectorized += loop->for_kind == ir::ForKind::kVectorized;
      }
      c.stores += ir::As<ir::BufferStoreNode>(s) != nullptr;
      if (const auto* a = ir::As<ir::AllocateNode>(s)) {
        ++c.allocates;
        StmtCensus::Allocation alloc{depth, {}};
        for (const ir::PrimExpr& d : a->buffer->shape) {
          const auto* imm = d.as<ir::IntImmNode>();
          alloc.shape.push_back(imm ? imm->value : -1);
        }
        c.allocations.push_back(alloc);
      }
      depth += loop != nullptr;
      StmtExprVisitor::VisitStmt(s);
      depth -= loop != nullptr;
    }
  } w;
  w.VisitStmt(f->body);
  return w.c;
}

std::string Int64Text(int64_t v) { return "T.int64(" + std::to_string(v) + ")"; }

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace testing
}  // namespace tir
}  // namespace kiln
