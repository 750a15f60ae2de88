// kiln-gpu-cases-make: writes the GPU kernel cases of one model (README.md).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/native_codegen.h"
#include "compiler/codegen/nvptx_codegen.h"
#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "compiler/tir/gpu_reduce_schedule.h"
#include "compiler/tir/nest_util.h"
#include "compiler/tir/stmt_functor.h"
#include "runtime/kernel_call.h"
#include "runtime/native_library.h"

namespace kiln {
namespace {

using ir::PrimExpr;
using ir::TirKind;

// Integer value of a shape expression, symbolic variables by name.
Result<int64_t> Eval(const PrimExpr& e, const std::map<std::string, int64_t>& dims) {
  if (const auto* i = e.as<ir::IntImmNode>()) return i->value;
  if (const auto* v = e.as<ir::VarNode>()) {
    auto it = dims.find(v->name);
    if (it == dims.end()) return InvalidArgument("no value for the symbolic dimension '" + v->name + "' (give " + v->name + "=N)");
    return it->second;
  }
  if (const auto* c = e.as<ir::CastNode>()) return Eval(c->value, dims);
  if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    KILN_ASSIGN_OR_RETURN(int64_t x, Eval(b->a, dims));
    KILN_ASSIGN_OR_RETURN(int64_t y, Eval(b->b, dims));
    switch (e->kind()) {
      case TirKind::kAdd: return x + y;
      case TirKind::kSub: return x - y;
      case TirKind::kMul: return x * y;
      case TirKind::kFloorDiv: return y == 0 ? 0 : (x / y - ((x % y != 0) && ((x % y < 0) != (y < 0))));
      case TirKind::kFloorMod: return y == 0 ? 0 : ((x % y) + y) % y;
      case TirKind::kMin: return std::min(x, y);
      case TirKind::kMax: return std::max(x, y);
      default: break;
    }
  }
  return Unimplemented(std::string("cannot evaluate a shape expression of kind ") + ir::TirKindName(e->kind()));
}

// The GPU-scheduled TIR with its thread bindings as serial loops: the CPU
// codegen runs it, which checks the schedule's index arithmetic, guards and
// workspaces here, before any GPU sees it. A block that shares memory has
// each phase in a thread loop of its own (gpu_reduce_schedule.h), so the
// threads run one after the other within a phase and the barriers between
// phases are dropped. A warp shuffle of a shared load buf[i] by delta d
// becomes buf[i + d] (the lane's own value where i % 32 + d >= 32): the
// schedules shuffle only a thread's own element, and lane i + d, later in
// the serial order, has not overwritten it yet.
class SerializeThreads : public tir::StmtExprMutator {
 public:
  Status status;

  ir::Stmt MutateStmt(const ir::Stmt& s) override {
    if (const auto* e = ir::As<ir::EvaluateNode>(s)) {
      const auto* c = e->value.as<ir::CallNode>();
      if (c != nullptr && c->op == "tvm_storage_sync") return std::make_shared<ir::EvaluateNode>(ir::IntImm(DType::Int32(), 0));
    }
    ir::Stmt out = tir::StmtExprMutator::MutateStmt(s);
    const auto* f = ir::As<ir::ForNode>(out);
    if (f == nullptr || f->for_kind != ir::ForKind::kThreadBinding) return out;
    return std::make_shared<ir::ForNode>(f->loop_var, f->min, f->extent, ir::ForKind::kSerial, f->body);
  }

  ir::PrimExpr MutateExpr(const ir::PrimExpr& e) override {
    ir::PrimExpr out = tir::StmtExprMutator::MutateExpr(e);
    const auto* c = out.as<ir::CallNode>();
    if (c == nullptr || c->op != tir::kWarpShuffleDown) return out;
    const auto* l = c->args.size() == 2 ? c->args[0].as<ir::BufferLoadNode>() : nullptr;
    const int64_t* d = c->args.size() == 2 ? tir::nest::ConstInt(c->args[1]) : nullptr;
    if (l == nullptr || l->indices.size() != 1 || d == nullptr) {
      if (status.ok()) status = Unimplemented("a warp shuffle of other than a one-index load by a constant delta");
      return out;
    }
    ir::PrimExpr i = l->indices[0];
    ir::PrimExpr lane = ir::MakeBinary(TirKind::kFloorMod, i, ir::IntImm(i.dtype(), 32));
    ir::PrimExpr in_warp = ir::MakeBinary(TirKind::kLT, lane + ir::IntImm(i.dtype(), *d), ir::IntImm(i.dtype(), 32));
    ir::PrimExpr other(std::make_shared<ir::BufferLoadNode>(l->buffer, std::vector<ir::PrimExpr>{i + ir::IntImm(i.dtype(), *d)}));
    return ir::PrimExpr(std::make_shared<ir::CallNode>(c->dtype, "if_then_else",
                                                       std::vector<ir::PrimExpr>{in_warp, other, c->args[0]}));
  }
};

// Largest |a - b| over float32 buffers, or -1 when they differ beyond
// 1e-4 + 1e-3 |b| (or, for other dtypes, at all).
double Differs(const void* a, const void* b, size_t nbytes, DType t) {
  if (!(t.code == kDLFloat && t.bits == 32)) return std::memcmp(a, b, nbytes) == 0 ? 0 : -1;
  const float* x = static_cast<const float*>(a);
  const float* y = static_cast<const float*>(b);
  double worst = 0;
  for (size_t i = 0; i < nbytes / 4; ++i) {
    double d = std::fabs(static_cast<double>(x[i]) - y[i]);
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (!(d <= 1e-4 + 1e-3 * std::fabs(y[i]))) return -1;
    worst = std::max(worst, d);
  }
  return worst;
}

struct HostBuffer {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  void* data = nullptr;
  size_t nbytes = 0;
  ~HostBuffer() { std::free(data); }
};

Status WriteFile(const std::string& path, const void* data, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return NotFound("cannot write " + path);
  size_t w = n ? std::fwrite(data, 1, n, f) : 0;
  std::fclose(f);
  return w == n ? Status::Ok() : DataLoss("short write to " + path);
}

Status Make(const std::string& model, const std::string& out_dir, const std::map<std::string, int64_t>& dims,
            const std::string& arch) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModuleFile(model));
  driver::CompileOptions cpu;
  driver::CompileOptions gpu;
  gpu.target_triple = "cuda";
  gpu.gpu_arch = arch;
  KILN_ASSIGN_OR_RETURN(ir::IRModule cpu_mod, driver::LowerModule(mod, cpu));
  KILN_ASSIGN_OR_RETURN(ir::IRModule gpu_mod, driver::LowerModule(mod, gpu));
  std::vector<ir::PrimFunc> cpu_funcs, gpu_funcs;
  for (const auto& e : cpu_mod.entries)
    if (e.prim) cpu_funcs.push_back(e.prim);
  for (const auto& e : gpu_mod.entries)
    if (e.prim) gpu_funcs.push_back(e.prim);
  KILN_ASSIGN_OR_RETURN(codegen::NativeLibraryBuild lib, codegen::BuildNativeLibrary(cpu_funcs, codegen::CodegenOptions()));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<NativeLibrary> native,
                        NativeLibrary::LoadFromMemory(lib.shared_object.data(), lib.shared_object.size(), model));
  std::vector<ir::PrimFunc> serial_funcs;
  for (const auto& f : gpu_funcs) {
    SerializeThreads ser;
    serial_funcs.push_back(tir::nest::WithBody(f, ser.MutateStmt(f->body)));
    KILN_RETURN_IF_ERROR(ser.status);
  }
  KILN_ASSIGN_OR_RETURN(codegen::NativeLibraryBuild serial_lib,
                        codegen::BuildNativeLibrary(serial_funcs, codegen::CodegenOptions()));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<NativeLibrary> serial,
                        NativeLibrary::LoadFromMemory(serial_lib.shared_object.data(), serial_lib.shared_object.size(),
                                                      model + " (GPU schedule on the CPU)"));
  codegen::PtxOptions po;
  po.arch = arch;
  KILN_ASSIGN_OR_RETURN(codegen::PtxBuild ptx, codegen::BuildPtx(gpu_funcs, po));
  KILN_RETURN_IF_ERROR(WriteFile(out_dir + "/kernels.ptx", ptx.ptx.data(), ptx.ptx.size()));
  std::ofstream manifest(out_dir + "/cases.txt");
  manifest << "ptx kernels.ptx " << arch << "\n";
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  for (size_t fi = 0; fi < ptx.functions.size(); ++fi) {
    const codegen::GpuFunction& g = ptx.functions[fi];
    const ir::PrimFunc& f = gpu_funcs[fi];
    std::vector<std::unique_ptr<HostBuffer>> bufs;
    std::vector<kiln_dltensor> tensors(f->params.size());
    std::vector<kiln_kernel_arg> args(f->params.size());
    for (size_t p = 0; p < f->params.size(); ++p) {
      ir::Buffer b = f->BufferOf(f->params[p]);
      if (!b) {
        KILN_ASSIGN_OR_RETURN(int64_t v, Eval(PrimExpr(f->params[p]), dims));
        args[p].i64 = v;
        continue;
      }
      auto hb = std::make_unique<HostBuffer>();
      hb->name = b->name;
      hb->dtype = b->dtype;
      int64_t elems = 1;
      for (const auto& d : b->shape) {
        KILN_ASSIGN_OR_RETURN(int64_t v, Eval(d, dims));
        hb->shape.push_back(v);
        elems *= v;
      }
      size_t esize = (b->dtype.bits + 7) / 8;
      hb->nbytes = static_cast<size_t>(elems) * esize;
      hb->data = std::aligned_alloc(64, (hb->nbytes + 63) / 64 * 64 + 64);
      uint8_t* bytes = static_cast<uint8_t*>(hb->data);
      for (int64_t i = 0; i < elems; ++i) {
        if (b->dtype.code == kDLFloat && b->dtype.bits == 32) {
          reinterpret_cast<float*>(bytes)[i] = uni(rng);
        } else {
          std::memset(bytes + i * esize, 0, esize);
          bytes[i * esize] = static_cast<uint8_t>(rng() % 2);  // small non-negative ints / bools
        }
      }
      kiln_dltensor& t = tensors[p];
      t.data = hb->data;
      t.device_type = kDLCPU;
      t.device_id = 0;
      t.ndim = static_cast<int32_t>(hb->shape.size());
      t.dtype_code = b->dtype.code;
      t.dtype_bits = b->dtype.bits;
      t.dtype_lanes = 1;
      t.shape = hb->shape.data();
      t.strides = nullptr;
      t.byte_offset = 0;
      args[p].tensor = &t;
      bufs.push_back(std::move(hb));
    }
    // Before.
    manifest << "function " << g.name << "\n";
    size_t bi = 0;
    for (size_t p = 0; p < f->params.size(); ++p) {
      if (!f->BufferOf(f->params[p])) continue;
      const HostBuffer& hb = *bufs[bi];
      std::string stem = g.name + "." + std::to_string(bi);
      KILN_RETURN_IF_ERROR(WriteFile(out_dir + "/" + stem + ".before", hb.data, hb.nbytes));
      manifest << "buffer " << hb.name << " " << DTypeToString(hb.dtype) << " " << hb.nbytes << " " << stem
               << ".before " << stem << ".after\n";
      ++bi;
    }
    std::vector<std::string> before;
    for (const auto& hb : bufs) before.emplace_back(static_cast<const char*>(hb->data), hb->nbytes);
    KILN_ASSIGN_OR_RETURN(const kiln_kernel_entry* entry, serial->Find(g.name));
    KILN_RETURN_IF_ERROR_CTX(CallKernel(entry->fn, g.name, args.data(), static_cast<int32_t>(args.size()), nullptr),
                             "the GPU schedule of %s on the CPU", g.name.c_str());
    std::vector<std::string> scheduled;
    for (size_t i = 0; i < bufs.size(); ++i) {
      scheduled.emplace_back(static_cast<const char*>(bufs[i]->data), bufs[i]->nbytes);
      std::memcpy(bufs[i]->data, before[i].data(), before[i].size());
    }
    KILN_ASSIGN_OR_RETURN(entry, native->Find(g.name));
    KILN_RETURN_IF_ERROR_CTX(CallKernel(entry->fn, g.name, args.data(), static_cast<int32_t>(args.size()), nullptr),
                             "the CPU kernel %s", g.name.c_str());
    double worst = 0;
    for (size_t i = 0; i < bufs.size(); ++i) {
      double d = Differs(scheduled[i].data(), bufs[i]->data, bufs[i]->nbytes, bufs[i]->dtype);
      if (d < 0) {
        return Internal(StrFormat("%s: the GPU schedule, run on the CPU, differs from the CPU kernel in buffer '%s'",
                                  g.name.c_str(), bufs[i]->name.c_str()));
      }
      worst = std::max(worst, d);
    }
    std::printf("  %-48s GPU schedule on the CPU matches (max |d| %.2e)\n", g.name.c_str(), worst);
    bi = 0;
    for (size_t p = 0; p < f->params.size(); ++p) {
      if (!f->BufferOf(f->params[p])) continue;
      std::string stem = g.name + "." + std::to_string(bi);
      KILN_RETURN_IF_ERROR(WriteFile(out_dir + "/" + stem + ".after", bufs[bi]->data, bufs[bi]->nbytes));
      ++bi;
    }
    for (const auto& w : g.workspaces) {
      int64_t elems = 1;
      for (const auto& d : w.shape) {
        KILN_ASSIGN_OR_RETURN(int64_t v, Eval(d, dims));
        elems *= v;
      }
      manifest << "workspace " << w.name << " " << elems * ((w.dtype.bits + 7) / 8) << "\n";
    }
    for (const auto& d : g.dims) {
      KILN_ASSIGN_OR_RETURN(int64_t v, Eval(PrimExpr(d.var), dims));
      manifest << "dim " << d.var->name << " " << v << "\n";
    }
    for (const auto& k : g.kernels) {
      KILN_ASSIGN_OR_RETURN(int64_t grid, Eval(k.grid_x, dims));
      manifest << "kernel " << k.name << " " << grid << " " << k.block_x << "\n";
    }
    manifest << "end\n";
  }
  manifest.close();
  if (!manifest) return DataLoss("cannot write " + out_dir + "/cases.txt");
  std::printf("%s: %zu functions -> %s\n", model.c_str(), ptx.functions.size(), out_dir.c_str());
  return Status::Ok();
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln-gpu-cases-make MODEL.relax OUT_DIR [--arch=sm_XY] [NAME=VALUE ...]\n");
    return 2;
  }
  std::map<std::string, int64_t> dims;
  std::string arch = "sm_80";
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a.compare(0, 7, "--arch=") == 0) {
      arch = a.substr(7);
      continue;
    }
    size_t eq = a.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "kiln-gpu-cases-make: expected NAME=VALUE, got '%s'\n", argv[i]);
      return 2;
    }
    dims[a.substr(0, eq)] = std::atoll(a.c_str() + eq + 1);
  }
  kiln::Status s = kiln::Make(argv[1], argv[2], dims, arch);
  if (!s.ok()) {
    std::fprintf(stderr, "kiln-gpu-cases-make: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
