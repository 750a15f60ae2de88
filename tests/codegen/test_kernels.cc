#include "tests/codegen/test_kernels.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <random>

#include "compiler/text/text.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/lower_blocks.h"

namespace kiln {
namespace codegen_test {

using namespace ir;  // NOLINT

namespace {

PrimFunc NewFunc(const std::string& name, std::vector<Buffer> buffers, std::vector<Var> scalars, Stmt body) {
  auto f = std::make_shared<PrimFuncNode>();
  f->name = name;
  for (const auto& b : buffers) {
    Var param = MakeVar(b->name, HandleType());
    f->params.push_back(param);
    f->buffer_map.push_back({param, b});
  }
  for (const auto& s : scalars) f->params.push_back(s);
  f->body = std::move(body);
  return f;
}

Stmt For(const Var& v, PrimExpr extent, Stmt body) {
  return std::make_shared<ForNode>(v, 0, std::move(extent), ForKind::kSerial, std::move(body));
}

PrimExpr F32(double v) { return FloatImm(DType::Float32(), v); }

Stmt RealizeBlock(std::vector<PrimExpr> values, Block b) {
  return std::make_shared<BlockRealizeNode>(std::move(values), IntImm(DType::Bool(), 1), std::move(b));
}

}  // namespace

PrimFunc MakeAdd() {
  Var n = MakeVar("n"), i = MakeVar("i");
  Buffer a = MakeBuffer("A", {PrimExpr(n)}, DType::Float32());
  Buffer b = MakeBuffer("B", {PrimExpr(n)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(n)}, DType::Float32());
  Stmt body = For(i, PrimExpr(n), Store(c, Load(a, {PrimExpr(i)}) + Load(b, {PrimExpr(i)}), {PrimExpr(i)}));
  return NewFunc("add", {a, b, c}, {}, body);
}

PrimFunc MakeRelu() {
  Var n = MakeVar("n"), m = MakeVar("m"), i = MakeVar("i"), j = MakeVar("j");
  Buffer x = MakeBuffer("X", {PrimExpr(n), PrimExpr(m)}, DType::Float32());
  Buffer y = MakeBuffer("Y", {PrimExpr(n), PrimExpr(m)}, DType::Float32());
  Stmt body = For(i, PrimExpr(n),
                  For(j, PrimExpr(m),
                      Store(y, MakeBinary(TirKind::kMax, Load(x, {PrimExpr(i), PrimExpr(j)}), F32(0)),
                            {PrimExpr(i), PrimExpr(j)})));
  return NewFunc("relu", {x, y}, {}, body);
}

PrimFunc MakeLinear0(bool symbolic_batch) {
  PrimExpr batch = symbolic_batch ? PrimExpr(MakeVar("n")) : PrimExpr(1);
  Buffer x = MakeBuffer("X", {batch, PrimExpr(784)}, DType::Float32());
  Buffer w = MakeBuffer("W", {PrimExpr(128), PrimExpr(784)}, DType::Float32());
  Buffer bias = MakeBuffer("B", {PrimExpr(128)}, DType::Float32());
  Buffer z = MakeBuffer("Z", {batch, PrimExpr(128)}, DType::Float32());
  Buffer y = MakeBuffer("Y", {batch, PrimExpr(128)}, DType::Float32());

  // for i, j, k in T.grid(batch, 128, 784): with T.block("Y"): SSR ...
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  Var vi = MakeVar("vi"), vj = MakeVar("vj"), vk = MakeVar("vk");
  Block by;
  by.name = "Y";
  by.iter_vars = {IterVar{vi, 0, batch, IterKind::kSpatial}, IterVar{vj, 0, 128, IterKind::kSpatial},
                  IterVar{vk, 0, 784, IterKind::kReduce}};
  by.init = Store(y, F32(0), {PrimExpr(vi), PrimExpr(vj)});
  by.body = Store(y,
                  Load(y, {PrimExpr(vi), PrimExpr(vj)}) +
                      Load(x, {PrimExpr(vi), PrimExpr(vk)}) * Load(w, {PrimExpr(vj), PrimExpr(vk)}),
                  {PrimExpr(vi), PrimExpr(vj)});
  Stmt matmul = For(i, batch, For(j, 128, For(k, 784, RealizeBlock({PrimExpr(i), PrimExpr(j), PrimExpr(k)}, by))));

  // for i, j in T.grid(batch, 128): with T.block("Z"): Z = Y + B
  Var i2 = MakeVar("i"), j2 = MakeVar("j"), wi = MakeVar("vi"), wj = MakeVar("vj");
  Block bz;
  bz.name = "Z";
  bz.iter_vars = {IterVar{wi, 0, batch, IterKind::kSpatial}, IterVar{wj, 0, 128, IterKind::kSpatial}};
  bz.body = Store(z, Load(y, {PrimExpr(wi), PrimExpr(wj)}) + Load(bias, {PrimExpr(wj)}), {PrimExpr(wi), PrimExpr(wj)});
  Stmt add = For(i2, batch, For(j2, 128, RealizeBlock({PrimExpr(i2), PrimExpr(j2)}, bz)));

  Block root;
  root.name = "root";
  root.alloc_buffers = {y};
  root.body = Seq({matmul, add});
  return NewFunc("linear0", {x, w, bias, z}, {}, RealizeBlock({}, root));
}

PrimFunc MakeScale() {
  Var n = MakeVar("n"), i = MakeVar("i"), k = MakeVar("k");
  Buffer a = MakeBuffer("A", {PrimExpr(n)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(n)}, DType::Float32());
  PrimExpr even = MakeBinary(TirKind::kEQ, MakeBinary(TirKind::kFloorMod, PrimExpr(i), PrimExpr(2)), PrimExpr(0));
  PrimExpr sel = PrimExpr(std::make_shared<SelectNode>(even, F32(1), F32(0)));
  Stmt body = For(i, PrimExpr(n), Store(c, Load(a, {PrimExpr(i)}) * Cast(DType::Float32(), PrimExpr(k)) + sel, {PrimExpr(i)}));
  return NewFunc("scale", {a, c}, {k}, body);
}

PrimFunc MakeIota() {
  Var n = MakeVar("n"), i = MakeVar("i");
  Buffer a = MakeBuffer("A", {PrimExpr(n)}, DType::Float32());
  Stmt body = For(i, PrimExpr(n), Store(a, Cast(DType::Float32(), PrimExpr(i)), {PrimExpr(i)}));
  return NewFunc("iota", {a}, {n}, body);
}

PrimFunc MakeFloorOps() {
  Var n = MakeVar("n"), i = MakeVar("i");
  Buffer a = MakeBuffer("A", {PrimExpr(n)}, DType::Int32());
  Buffer b = MakeBuffer("B", {PrimExpr(n)}, DType::Int32());
  Buffer d = MakeBuffer("D", {PrimExpr(n)}, DType::Int32());
  Buffer m = MakeBuffer("M", {PrimExpr(n)}, DType::Int32());
  PrimExpr la = Load(a, {PrimExpr(i)}), lb = Load(b, {PrimExpr(i)});
  Stmt body = For(i, PrimExpr(n),
                  Seq({Store(d, MakeBinary(TirKind::kFloorDiv, la, lb), {PrimExpr(i)}),
                       Store(m, MakeBinary(TirKind::kFloorMod, la, lb), {PrimExpr(i)})}));
  return NewFunc("floor_ops", {a, b, d, m}, {}, body);
}

PrimFunc MakeWorkspaceUser() {
  Var n = MakeVar("n"), i = MakeVar("i"), i2 = MakeVar("i");
  Buffer a = MakeBuffer("A", {PrimExpr(n)}, DType::Float32());
  Buffer c = MakeBuffer("C", {PrimExpr(n)}, DType::Float32());
  Buffer t = MakeBuffer("T", {PrimExpr(n)}, DType::Float32());
  Stmt fill = For(i, PrimExpr(n), Store(t, Load(a, {PrimExpr(i)}) * F32(2), {PrimExpr(i)}));
  // Two reads of T at different places, so that no schedule can fold T away
  // (a single reversed read was: its store moved into C's).
  Stmt rev = For(i2, PrimExpr(n),
                 Store(c, Load(t, {PrimExpr(n) - 1 - PrimExpr(i2)}) + Load(t, {PrimExpr(i2)}), {PrimExpr(i2)}));
  return NewFunc("big_tmp", {a, c}, {}, std::make_shared<AllocateNode>(t, Seq({fill, rev})));
}

std::vector<PrimFunc> Prepare(const std::vector<PrimFunc>& funcs, int threads_hint) {
  std::vector<PrimFunc> out;
  for (const auto& f : funcs) out.push_back(tir::ApplyDefaultSchedule(tir::LowerBlocks(f), threads_hint));
  return out;
}

Result<std::unique_ptr<LoadedLibrary>> LoadedLibrary::Load(const std::vector<uint8_t>& so) {
  const char* base = getenv("TMPDIR");
  std::string path = std::string(base && *base ? base : "/tmp") + "/kiln-codegen-test-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) return Internal("mkstemp failed");
  bool written = write(fd, so.data(), so.size()) == static_cast<ssize_t>(so.size());
  close(fd);
  if (!written) return Internal("cannot write " + path);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  unlink(path.c_str());
  if (handle == nullptr) return Internal(std::string("dlopen failed: ") + dlerror());
  std::unique_ptr<LoadedLibrary> lib(new LoadedLibrary());
  lib->handle_ = handle;
  auto query = reinterpret_cast<kiln_kernel_query_fn>(dlsym(handle, KILN_KERNEL_QUERY_SYMBOL));
  if (query == nullptr) return NotFound("the library does not export kiln_kernel_query");
  lib->table_ = query(KILN_KERNEL_ABI_VERSION);
  if (lib->table_ == nullptr) return Incompatible("kiln_kernel_query refused the ABI version");
  return lib;
}

LoadedLibrary::~LoadedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

kiln_kernel_fn LoadedLibrary::Find(const std::string& name) const {
  for (uint32_t i = 0; i < table_->num_kernels; ++i) {
    if (name == table_->kernels[i].name) return table_->kernels[i].fn;
  }
  return nullptr;
}

void* LoadedLibrary::Symbol(const std::string& name) const { return dlsym(handle_, name.c_str()); }

CapturingEnv::CapturingEnv(ThreadPool* pool) : base_(MakeKernelEnv(pool)) {
  env_ = base_;
  env_.ctx = this;
  env_.parallel_for = ParallelFor;
  env_.workspace_alloc = Alloc;
  env_.workspace_free = Free;
  env_.set_error = SetError;
}

int32_t CapturingEnv::ParallelFor(void* ctx, int32_t n, kiln_task_fn fn, void* closure) {
  auto* self = static_cast<CapturingEnv*>(ctx);
  self->last_num_tasks_ = n;
  return self->base_.parallel_for(self->base_.ctx, n, fn, closure);
}
void* CapturingEnv::Alloc(void* ctx, uint64_t nbytes, uint64_t align) {
  auto* self = static_cast<CapturingEnv*>(ctx);
  ++self->workspace_allocs_;
  if (self->fail_allocations_) return nullptr;
  return self->base_.workspace_alloc(self->base_.ctx, nbytes, align);
}
void CapturingEnv::Free(void* ctx, void* p) {
  auto* self = static_cast<CapturingEnv*>(ctx);
  self->base_.workspace_free(self->base_.ctx, p);
}
void CapturingEnv::SetError(void* ctx, const char* msg) { static_cast<CapturingEnv*>(ctx)->last_error_ = msg; }

Result<std::unique_ptr<LoadedLibrary>> BuildText(const std::string& source, const codegen::CodegenOptions& options) {
  KILN_ASSIGN_OR_RETURN(IRModule mod, text::ParseModule(source, "<test>"));
  std::vector<PrimFunc> funcs;
  for (const auto& e : mod.entries)
    if (e.prim) funcs.push_back(e.prim);
  KILN_ASSIGN_OR_RETURN(codegen::NativeLibraryBuild built, codegen::BuildNativeLibrary(Prepare(funcs, 1), options));
  return LoadedLibrary::Load(built.shared_object);
}

std::string ElementwiseModule(const std::vector<ElementwiseKernel>& kernels) {
  std::string s = "@I.ir_module\nclass Module:\n";
  for (const auto& k : kernels) {
    bool binary = k.expr.find("B[i]") != std::string::npos;
    s += "    @T.prim_func\n    def " + k.name + "(a: T.handle, " + (binary ? "b: T.handle, " : "") + "c: T.handle):\n";
    s += "        n = T.int64()\n";
    s += "        A = T.match_buffer(a, (n,), \"" + k.in_dtype + "\")\n";
    if (binary) s += "        B = T.match_buffer(b, (n,), \"" + k.in_dtype + "\")\n";
    s += "        C = T.match_buffer(c, (n,), \"" + k.out_dtype + "\")\n";
    s += std::string("        for i in T.") + (k.vectorized ? "vectorized" : "serial") + "(n):\n";
    s += "            C[i] = " + k.expr + "\n";
  }
  return s;
}

int RunKernel(const LoadedLibrary& lib, const std::string& name, const std::vector<Tensor>& tensors,
              std::string* error) {
  kiln_kernel_fn fn = lib.Find(name);
  if (fn == nullptr) {
    if (error) *error = "no kernel " + name;
    return -1;
  }
  ThreadPool pool(1);
  CapturingEnv env(&pool);
  std::vector<kiln_kernel_arg> args;
  for (const auto& t : tensors) args.push_back(TensorArg(t));
  int rc = fn(env.env(), args.data(), static_cast<int32_t>(args.size()));
  if (error) *error = env.last_error();
  return rc;
}

Tensor MakeTensor(std::vector<int64_t> shape, DType dtype) {
  Result<Tensor> t = Tensor::Empty(shape, dtype);
  KILN_CHECK(t.ok(), "%s", t.status().ToString().c_str());
  std::memset(t->raw_data(), 0, t->NumBytes());
  return *t;
}

void FillRandom(const Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = dist(rng);
}

kiln_kernel_arg TensorArg(const Tensor& t) {
  kiln_kernel_arg a;
  a.tensor = reinterpret_cast<kiln_dltensor*>(t.dl());
  return a;
}

float MaxAbsDiff(const float* a, const float* b, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace codegen_test
}  // namespace kiln
