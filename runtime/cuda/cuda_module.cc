#include "runtime/cuda/cuda_module.h"

#include <cstring>
#include <vector>

#include "runtime/cuda/driver_api.h"

namespace kiln {
namespace cuda {

Result<std::unique_ptr<CudaModule>> CudaModule::LoadPtx(CudaDevice* device, const std::string& ptx,
                                                        const std::string& name) {
  const DriverApi& api = device->api();
  KILN_RETURN_IF_ERROR(device->MakeCurrent());
  // The JIT writes its diagnostics into these buffers; the error log is what
  // makes a bad PTX fixable, so it goes into the Status.
  std::vector<char> error_log(16384, 0), info_log(4096, 0);
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(error_log.size() - 1)),
                    info_log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(info_log.size() - 1))};
  CUmodule mod = nullptr;
  CUresult rc = api.cuModuleLoadDataEx(&mod, ptx.c_str(), 4, options, values);
  if (rc != CUDA_SUCCESS) {
    std::string log(error_log.data());
    while (!log.empty() && (log.back() == '\n' || log.back() == '\0')) log.pop_back();
    Status s = Check(api, rc, "cuModuleLoadDataEx");
    return Status(s.code(), "loading PTX module '" + name + "': " + s.message() +
                                (log.empty() ? std::string(" (the JIT left no log)") : ": " + log));
  }
  std::unique_ptr<CudaModule> m(new CudaModule());
  m->device_ = device;
  m->module_ = mod;
  m->name_ = name;
  return m;
}

Result<std::unique_ptr<CudaModule>> CudaModule::LoadCubin(CudaDevice* device, const uint8_t* cubin, uint64_t size,
                                                          const std::string& name) {
  const DriverApi& api = device->api();
  if (cubin == nullptr || size < 4) return InvalidArgument("loading cubin of '" + name + "': no ELF image");
  KILN_RETURN_IF_ERROR(device->MakeCurrent());
  // The segment is 64-byte aligned in the file, but a file the caller
  // passes as bytes may sit at any address; the copy gives the driver's ELF
  // reader the 8-byte alignment of its headers.
  std::vector<uint64_t> aligned((size + 7) / 8);
  std::memcpy(aligned.data(), cubin, static_cast<size_t>(size));
  CUmodule mod = nullptr;
  CUresult rc = api.cuModuleLoadDataEx(&mod, aligned.data(), 0, nullptr, nullptr);
  if (rc != CUDA_SUCCESS) {
    Status s = Check(api, rc, "cuModuleLoadDataEx");
    return Status(s.code(), "loading cubin of '" + name + "': " + s.message());
  }
  std::unique_ptr<CudaModule> m(new CudaModule());
  m->device_ = device;
  m->module_ = mod;
  m->name_ = name;
  return m;
}

CudaModule::~CudaModule() {
  if (module_ && device_->MakeCurrent().ok()) (void)device_->api().cuModuleUnload(static_cast<CUmodule>(module_));
}

Result<void*> CudaModule::Function(const std::string& kernel) const {
  const DriverApi& api = device_->api();
  KILN_RETURN_IF_ERROR(device_->MakeCurrent());
  CUfunction fn = nullptr;
  CUresult rc = api.cuModuleGetFunction(&fn, static_cast<CUmodule>(module_), kernel.c_str());
  if (rc == CUDA_ERROR_NOT_FOUND) return NotFound("PTX module '" + name_ + "' has no kernel '" + kernel + "'");
  KILN_CUDA_RETURN_IF_ERROR(api, rc, "cuModuleGetFunction");
  return static_cast<void*>(fn);
}

Status CudaModule::Launch(void* function, const LaunchDims& d, void** args, void* stream) const {
  const DriverApi& api = device_->api();
  KILN_RETURN_IF_ERROR(device_->MakeCurrent());
  if (stream == nullptr) stream = device_->stream();
  return Check(api,
               api.cuLaunchKernel(static_cast<CUfunction>(function), d.grid[0], d.grid[1], d.grid[2], d.block[0],
                                  d.block[1], d.block[2], d.shared_bytes, static_cast<CUstream>(stream), args, nullptr),
               "cuLaunchKernel");
}

}  // namespace cuda
}  // namespace kiln
