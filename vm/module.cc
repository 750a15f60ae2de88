#include "vm/module.h"

#include "runtime/kernel_call.h"
#include "runtime/mapped_file.h"
#include "runtime/thread_pool.h"
#include "runtime/vmfb_loader.h"
#include "vm/builtins.h"
#include "vm/module_impl.h"

namespace kiln {
namespace vm {
namespace {

// A kernel passed as a value (ArgKind::kCallable): callable like a packed
// function, with tensor/int/float arguments.
// It launches on the calling context's pool (ThreadPool::Current()), or on the
// module's default pool when called from outside any context.
PackedFunc KernelAsPackedFunc(const ResolvedCallable& r, ThreadPool* default_pool) {
  kiln_kernel_fn fn = r.kernel;
  std::string name = r.name;
  return [fn, name, default_pool](Span<const Any> args, Any*) -> Status {
    ThreadPool* pool = ThreadPool::Current() != nullptr ? ThreadPool::Current() : default_pool;
    std::vector<kiln_kernel_arg> kargs(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const Any& a = args[i];
      if (a.is_tensor()) {
        kargs[i].tensor = AsKernelTensor(&a.tensor_obj()->dl);
      } else if (a.is_int()) {
        kargs[i].i64 = a.int_value();
      } else if (a.is_float()) {
        kargs[i].f64 = a.float_value();
      } else {
        return InvalidArgument(StrFormat("kernel '%s': argument %zu is %s; kernels take tensors, ints and floats",
                                         name.c_str(), i, a.Describe().c_str()));
      }
    }
    return CallKernel(fn, name, kargs.data(), static_cast<int32_t>(kargs.size()), pool);
  };
}

ValueInfo ToValueInfo(const ProgramValueInfo& v) {
  ValueInfo out;
  out.name = v.name;
  out.kind = static_cast<ValueInfo::Kind>(v.kind);
  out.dtype = v.dtype;
  out.ndim = v.ndim;
  out.dims = v.dims;
  return out;
}

// kInvalidArgument unless 0 <= n <= kMaxThreads.
Status CheckNumThreads(int n, const char* what) {
  if (n < 0 || n > kMaxThreads) {
    return InvalidArgument(StrFormat("%s: num_threads is %d; use 0 (one per core) to %d", what, n, kMaxThreads));
  }
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<const Module>> ModuleImpl::Create(FileBytes bytes, const LoadOptions& options) {
  KILN_RETURN_IF_ERROR(CheckNumThreads(options.num_threads, "LoadOptions"));
  LinkOptions link;
  // The linked program records the pool, so graph sessions made from it
  // default to the same one.
  link.thread_pool = options.thread_pool != nullptr ? options.thread_pool : ThreadPool::Shared(options.num_threads);
  link.resolve_builtin = LookupBuiltin;
  link.verify_weights = options.verify_weights;
  link.gpu = options.gpu;
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const LinkedProgram> linked, LoadVmfb(std::move(bytes), link));
  KILN_ASSIGN_OR_RETURN(std::vector<DecodedFunction> functions, VerifyAndDecode(*linked));

  auto m = std::make_shared<ModuleImpl>();
  m->linked_ = std::move(linked);
  m->functions_ = std::move(functions);
  const Program& p = m->linked_->program;
  for (size_t i = 0; i < p.functions.size(); ++i) m->function_index_[p.functions[i].name] = static_cast<int32_t>(i);

  // Callables usable as values. A bytecode function value holds the module
  // weakly (no cycle); calling it after the module is gone is an error.
  std::weak_ptr<const ModuleImpl> weak = m;
  for (const ResolvedCallable& r : m->linked_->callables) {
    switch (r.kind) {
      case CallableKind::kPacked:
        m->callable_values_.push_back(Any::Function(r.name, r.packed));
        break;
      case CallableKind::kKernel:
        m->callable_values_.push_back(Any::Function(r.name, KernelAsPackedFunc(r, m->linked_->thread_pool)));
        break;
      case CallableKind::kFunction: {
        int32_t index = static_cast<int32_t>(r.function_index);
        std::string name = r.name;
        m->callable_values_.push_back(Any::Function(r.name, [weak, index, name](Span<const Any> args, Any* ret) {
          std::shared_ptr<const ModuleImpl> module = weak.lock();
          if (!module) return FailedPrecondition("function '" + name + "' called after its module was unloaded");
          ContextImpl ctx(module);
          return ctx.InvokeIndex(index, args, ret);
        }));
        break;
      }
      case CallableKind::kBuiltin:
        m->callable_values_.emplace_back();
        break;
    }
  }
  m->values_.program = &m->linked_->program;
  m->values_.callable_values = &m->callable_values_;
  return std::shared_ptr<const Module>(std::move(m));
}

int32_t ModuleImpl::FindFunction(const std::string& name) const {
  auto it = function_index_.find(name);
  return it == function_index_.end() ? -1 : it->second;
}

std::vector<std::string> ModuleImpl::FunctionNames() const {
  std::vector<std::string> names;
  for (const ProgramFunction& f : program().functions) names.push_back(f.name);
  return names;
}

Result<FunctionSignature> ModuleImpl::GetSignature(const std::string& function) const {
  int32_t i = FindFunction(function);
  if (i < 0) return NotFound("no function named '" + function + "' in module");
  const ProgramFunction& f = program().functions[i];
  FunctionSignature sig;
  sig.name = f.name;
  for (const ProgramValueInfo& v : f.params) sig.params.push_back(ToValueInfo(v));
  for (const ProgramValueInfo& v : f.results) sig.results.push_back(ToValueInfo(v));
  return sig;
}

std::string ModuleImpl::Producer() const {
  return StrFormat("%s, format %u.%u", program().producer.c_str(), program().format_major, program().format_minor);
}

std::string ModuleImpl::TargetDescription() const {
  const ProgramTarget& t = program().target;
  return StrFormat("%s, cpu %s, features %s", t.triple.empty() ? "(no triple)" : t.triple.c_str(),
                   t.cpu.empty() ? "generic" : t.cpu.c_str(), t.features.empty() ? "(none)" : t.features.c_str());
}

bool ModuleImpl::HasStaticGraph(const std::string& function) const { return program().FindGraph(function) >= 0; }

std::unique_ptr<Context> ModuleImpl::CreateContext() const {
  // Default options (the VM, the default allocator) cannot fail.
  Result<std::unique_ptr<Context>> c = CallContext::Create(shared_from_this(), thread_pool(), ContextOptions());
  KILN_CHECK(c.ok(), "%s", c.status().ToString().c_str());
  return std::move(c).value();
}

Result<std::unique_ptr<Context>> ModuleImpl::CreateContext(const ContextOptions& options) const {
  KILN_RETURN_IF_ERROR(CheckNumThreads(options.num_threads, "ContextOptions"));
  ThreadPool* pool = options.thread_pool;
  if (pool == nullptr) pool = options.num_threads > 0 ? ThreadPool::Shared(options.num_threads) : thread_pool();
  return CallContext::Create(shared_from_this(), pool, options);
}

ContextImpl::ContextImpl(std::shared_ptr<const ModuleImpl> module)
    : module_(std::move(module)),
      pool_(ThreadPool::Current() != nullptr ? ThreadPool::Current() : module_->thread_pool()) {}

Result<std::shared_ptr<const Module>> Module::LoadFile(const std::string& path, const LoadOptions& options) {
  Result<FileBytes> bytes = MapFile(path);
  if (!bytes.ok()) return bytes.TakeStatus();
  Result<std::shared_ptr<const Module>> m = ModuleImpl::Create(std::move(bytes).value(), options);
  if (!m.ok()) {
    Status s = m.TakeStatus();
    s.Annotate("loading " + path);
    return s;
  }
  return m;
}

Result<std::shared_ptr<const Module>> Module::LoadBuffer(const void* data, size_t size, const LoadOptions& options) {
  FileBytes bytes;
  bytes.data = static_cast<const uint8_t*>(data);
  bytes.size = size;
  return ModuleImpl::Create(std::move(bytes), options);
}

Result<std::shared_ptr<const Module>> Module::LoadOwnedBuffer(const void* data, size_t size,
                                                              void (*release)(const void* data, void* user),
                                                              void* user, const LoadOptions& options) {
  FileBytes bytes;
  bytes.data = static_cast<const uint8_t*>(data);
  bytes.size = size;
  // The release runs when the last holder (module, constant tensor) goes,
  // or right away when loading fails.
  bytes.owner = std::shared_ptr<void>(const_cast<void*>(data), [release, user](void* p) {
    if (release != nullptr) release(p, user);
  });
  return ModuleImpl::Create(std::move(bytes), options);
}

}  // namespace vm
}  // namespace kiln
