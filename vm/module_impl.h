// The implementation classes behind vm::Module and vm::Context. Internal.
#ifndef KILN_VM_MODULE_IMPL_H_
#define KILN_VM_MODULE_IMPL_H_

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/mapped_file.h"
#include "runtime/program.h"
#include "vm/bytecode.h"
#include "vm/frame.h"
#include "vm/module.h"

namespace kiln {
namespace vm {

// Immutable after Create; thread-safe.
class ModuleImpl final : public Module, public std::enable_shared_from_this<ModuleImpl> {
 public:
  static Result<std::shared_ptr<const Module>> Create(FileBytes bytes, const LoadOptions& options);

  std::vector<std::string> FunctionNames() const override;
  Result<FunctionSignature> GetSignature(const std::string& function) const override;
  std::string Producer() const override;
  std::string TargetDescription() const override;
  bool HasStaticGraph(const std::string& function) const override;
  std::unique_ptr<Context> CreateContext() const override;
  Result<std::unique_ptr<Context>> CreateContext(const ContextOptions& options) const override;
  ThreadPool* thread_pool() const override { return linked_->thread_pool; }
  std::shared_ptr<const LinkedProgram> linked_program() const override { return linked_; }

  const Program& program() const { return linked_->program; }
  const LinkedProgram& linked() const { return *linked_; }
  const std::vector<DecodedFunction>& functions() const { return functions_; }
  const ValueSource& values() const { return values_; }
  // Index of `name`, or -1.
  int32_t FindFunction(const std::string& name) const;

 private:
  std::shared_ptr<const LinkedProgram> linked_;
  std::vector<DecodedFunction> functions_;
  std::unordered_map<std::string, int32_t> function_index_;
  std::vector<Any> callable_values_;  // callables passed as values
  ValueSource values_{};
};

// One caller's state: a stack of frames reused across calls. Thread-compatible.
class ContextImpl final : public Context {
 public:
  // `pool`: where kernels launch; never null.
  ContextImpl(std::shared_ptr<const ModuleImpl> module, ThreadPool* pool)
      : module_(std::move(module)), pool_(pool) {}
  // Runs on the pool of whoever calls: the caller's current pool
  // (ThreadPool::Current(), e.g. a bytecode function value called from a
  // kernel's context), else the module's default.
  explicit ContextImpl(std::shared_ptr<const ModuleImpl> module);
  Status Invoke(const std::string& function, Span<const Any> args, Any* result) override;
  ThreadPool* thread_pool() const override { return pool_; }
  // Invoke by index, checking the argument count.
  Status InvokeIndex(int32_t function, Span<const Any> args, Any* result);

 private:
  Status Execute(int32_t function, Span<const Any> args, Any* result, int depth);
  Frame& FrameAt(int depth);

  std::shared_ptr<const ModuleImpl> module_;
  ThreadPool* pool_;  // not owned: caller-owned or a process-lifetime shared pool
  std::vector<std::unique_ptr<Frame>> frames_;  // by call depth; pointers stay stable as it grows
};

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_MODULE_IMPL_H_
