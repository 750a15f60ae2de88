// kiln-gpu-cases: runs the GPU kernel cases that kiln-gpu-cases-make wrote
// (README.md) and prints one table row per kernel function. Runtime only: no
// compiler, no toolkit; the driver is dlopen'ed.
//
// Exit status: 0 all match, 1 a mismatch or a failed launch, 2 no GPU (or
// unreadable cases).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_module.h"

namespace kiln {
namespace {

struct Buffer {
  std::string name, dtype;
  size_t nbytes = 0;
  std::string before, after;
};
struct Kernel {
  std::string name;
  uint32_t grid = 1, block = 1;
};
struct Function {
  std::string name;
  std::vector<Buffer> buffers;
  std::vector<size_t> workspaces;
  std::vector<int64_t> dims;
  std::vector<Kernel> kernels;
};
struct Cases {
  std::string dir, ptx_file, arch;
  std::vector<Function> functions;
};

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

Result<Cases> ReadCases(const std::string& dir) {
  KILN_ASSIGN_OR_RETURN(std::string text, ReadFile(dir + "/cases.txt"));
  Cases c;
  c.dir = dir;
  std::istringstream in(text);
  std::string line;
  Function* f = nullptr;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::istringstream l(line);
    std::string tag;
    l >> tag;
    if (tag == "ptx") {
      l >> c.ptx_file >> c.arch;
    } else if (tag == "function") {
      c.functions.emplace_back();
      f = &c.functions.back();
      l >> f->name;
    } else if (f != nullptr && tag == "buffer") {
      Buffer b;
      l >> b.name >> b.dtype >> b.nbytes >> b.before >> b.after;
      f->buffers.push_back(b);
    } else if (f != nullptr && tag == "workspace") {
      std::string name;
      size_t n = 0;
      l >> name >> n;
      f->workspaces.push_back(n);
    } else if (f != nullptr && tag == "dim") {
      std::string name;
      int64_t v = 0;
      l >> name >> v;
      f->dims.push_back(v);
    } else if (f != nullptr && tag == "kernel") {
      Kernel k;
      l >> k.name >> k.grid >> k.block;
      f->kernels.push_back(k);
    } else if (tag == "end" || tag.empty()) {
      f = tag == "end" ? nullptr : f;
    } else {
      return DataLoss(StrFormat("%s/cases.txt:%d: unexpected '%s'", dir.c_str(), lineno, tag.c_str()));
    }
    if (l.fail()) return DataLoss(StrFormat("%s/cases.txt:%d: malformed line", dir.c_str(), lineno));
  }
  return c;
}

struct Row {
  std::string model, function;
  size_t kernels = 0;
  double max_abs = 0, max_rel = 0;
  size_t mismatches = 0;
  double gpu_us = 0;
  std::string error;
};

// Compares a buffer the GPU produced with the CPU's; float32 within
// 1e-4 + 1e-3 |cpu|, other dtypes exactly.
void Compare(const Buffer& b, const std::string& gpu, const std::string& cpu, Row* row) {
  if (b.dtype == "float32") {
    size_t n = b.nbytes / 4;
    const float* g = reinterpret_cast<const float*>(gpu.data());
    const float* c = reinterpret_cast<const float*>(cpu.data());
    for (size_t i = 0; i < n; ++i) {
      double d = std::fabs(static_cast<double>(g[i]) - c[i]);
      if (std::isnan(g[i]) != std::isnan(c[i])) d = INFINITY;
      if (std::isnan(g[i]) && std::isnan(c[i])) d = 0;
      row->max_abs = std::max(row->max_abs, d);
      if (std::fabs(c[i]) > 1e-3) row->max_rel = std::max(row->max_rel, d / std::fabs(c[i]));
      // NaN where the CPU has NaN too (sqrt of a negative random variance)
      // agrees; fabs(NaN) must not make the bound NaN.
      double bound = 1e-4 + 1e-3 * (std::isnan(c[i]) ? 0.0 : std::fabs(c[i]));
      if (!(d <= bound)) row->mismatches++;
    }
  } else if (gpu != cpu) {
    for (size_t i = 0; i < gpu.size(); ++i) row->mismatches += gpu[i] != cpu[i];
  }
}

Status RunFunction(cuda::CudaDevice* dev, const cuda::CudaModule& mod, const Cases& c, const Function& f, int iters,
                   Row* row) {
  std::vector<uint64_t> ptrs;
  std::vector<std::string> after;
  for (const auto& b : f.buffers) {
    KILN_ASSIGN_OR_RETURN(std::string before, ReadFile(c.dir + "/" + b.before));
    KILN_ASSIGN_OR_RETURN(std::string want, ReadFile(c.dir + "/" + b.after));
    if (before.size() != b.nbytes || want.size() != b.nbytes) return DataLoss("buffer " + b.name + ": size differs from cases.txt");
    KILN_ASSIGN_OR_RETURN(uint64_t p, dev->Allocate(b.nbytes));
    ptrs.push_back(p);
    KILN_RETURN_IF_ERROR(dev->CopyToDevice(p, before.data(), b.nbytes));
    KILN_RETURN_IF_ERROR(dev->Synchronize());  // `before` goes away
    after.push_back(std::move(want));
  }
  for (size_t w : f.workspaces) {
    KILN_ASSIGN_OR_RETURN(uint64_t p, dev->Allocate(w));
    ptrs.push_back(p);
  }
  std::vector<int64_t> dims = f.dims;
  std::vector<void*> args;
  for (auto& p : ptrs) args.push_back(&p);
  for (auto& d : dims) args.push_back(&d);
  std::vector<void*> fns;
  for (const auto& k : f.kernels) {
    KILN_ASSIGN_OR_RETURN(void* fn, mod.Function(k.name));
    fns.push_back(fn);
  }
  auto launch_all = [&]() -> Status {
    for (size_t i = 0; i < f.kernels.size(); ++i) {
      cuda::LaunchDims d;
      d.grid[0] = f.kernels[i].grid;
      d.block[0] = f.kernels[i].block;
      KILN_RETURN_IF_ERROR_CTX(mod.Launch(fns[i], d, args.data()), "launching %s", f.kernels[i].name.c_str());
    }
    return Status::Ok();
  };
  KILN_RETURN_IF_ERROR(launch_all());
  KILN_RETURN_IF_ERROR_CTX(dev->Synchronize(), "running %s", f.name.c_str());
  for (size_t i = 0; i < f.buffers.size(); ++i) {
    std::string got(f.buffers[i].nbytes, '\0');
    KILN_RETURN_IF_ERROR(dev->CopyToHost(&got[0], ptrs[i], got.size()));
    KILN_RETURN_IF_ERROR(dev->Synchronize());
    Compare(f.buffers[i], got, after[i], row);
  }
  // Timing: warm, then `iters` back-to-back calls between two events.
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaTimer> timer, cuda::CudaTimer::Create(*dev));
  for (int i = 0; i < 3; ++i) KILN_RETURN_IF_ERROR(launch_all());
  KILN_RETURN_IF_ERROR(timer->Start(dev->stream()));
  for (int i = 0; i < iters; ++i) KILN_RETURN_IF_ERROR(launch_all());
  KILN_RETURN_IF_ERROR(timer->Stop(dev->stream()));
  KILN_ASSIGN_OR_RETURN(float ms, timer->ElapsedMs());
  row->gpu_us = 1000.0 * ms / iters;
  for (uint64_t p : ptrs) dev->Free(p);
  return Status::Ok();
}

std::string Basename(const std::string& dir) {
  std::string d = dir;
  while (!d.empty() && d.back() == '/') d.pop_back();
  size_t s = d.rfind('/');
  return s == std::string::npos ? d : d.substr(s + 1);
}

int Main(int argc, char** argv) {
  int iters = 20;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--iters=", 8) == 0) {
      iters = std::max(1, std::atoi(argv[i] + 8));
    } else {
      dirs.push_back(argv[i]);
    }
  }
  if (dirs.empty()) {
    std::fprintf(stderr, "usage: kiln-gpu-cases [--iters=N] CASE_DIR...\n");
    return 2;
  }
  Result<std::unique_ptr<cuda::CudaDevice>> dev = cuda::CudaDevice::Open(0);
  if (!dev.ok()) {
    std::printf("kiln-gpu-cases: %s\n", dev.status().ToString().c_str());
    return 2;
  }
  const cuda::DeviceInfo& info = dev.value()->info();
  std::printf("device 0: %s (%s), %zu MiB, %d SMs, driver CUDA %s\n", info.name.c_str(), info.Arch().c_str(),
              info.total_memory >> 20, info.multiprocessors, cuda::DriverVersion().value().c_str());
  std::vector<Row> rows;
  int failures = 0;
  for (const auto& dir : dirs) {
    Result<Cases> cases = ReadCases(dir);
    if (!cases.ok()) {
      std::printf("kiln-gpu-cases: %s\n", cases.status().ToString().c_str());
      return 2;
    }
    Row load_row;
    load_row.model = Basename(dir);
    Result<std::string> ptx = ReadFile(dir + "/" + cases->ptx_file);
    Result<std::unique_ptr<cuda::CudaModule>> mod =
        ptx.ok() ? cuda::CudaModule::LoadPtx(dev.value().get(), ptx.value(), load_row.model)
                 : Result<std::unique_ptr<cuda::CudaModule>>(ptx.status());
    if (!mod.ok()) {
      load_row.function = "(load PTX " + cases->arch + ")";
      load_row.error = mod.status().ToString();
      rows.push_back(load_row);
      ++failures;
      continue;
    }
    for (const auto& f : cases->functions) {
      Row row;
      row.model = load_row.model;
      row.function = f.name;
      row.kernels = f.kernels.size();
      Status s = RunFunction(dev.value().get(), *mod.value(), cases.value(), f, iters, &row);
      if (!s.ok()) row.error = s.ToString();
      if (!s.ok() || row.mismatches) ++failures;
      rows.push_back(row);
    }
  }
  std::printf("\n%-18s %-44s %7s %10s %10s %9s %10s  %s\n", "model", "function", "kernels", "max|d|", "max rel",
              "mismatch", "GPU us", "result");
  for (const Row& r : rows) {
    std::string fn = r.function.size() > 44 ? r.function.substr(0, 41) + "..." : r.function;
    std::printf("%-18s %-44s %7zu %10.2e %10.2e %9zu %10.2f  %s\n", r.model.c_str(), fn.c_str(), r.kernels, r.max_abs,
                r.max_rel, r.mismatches, r.gpu_us,
                !r.error.empty() ? ("ERROR " + r.error).c_str() : r.mismatches ? "MISMATCH" : "ok");
  }
  std::printf("\n%zu kernel functions, %d failed\n", rows.size(), failures);
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) { return kiln::Main(argc, argv); }
