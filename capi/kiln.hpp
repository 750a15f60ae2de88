// kiln.hpp: a header-only C++17 wrapper over the C API (kiln.h).
//
// It uses only kiln.h, so it works with libkiln.so alone, and it needs no
// exceptions: every fallible call returns kiln::api::Status or
// kiln::api::Result<T>, which hold the C status's code and message. Handles
// (Instance, Module, Context, Tensor, Value, Outputs) are move-only RAII
// owners of the matching kiln_*_t; Share() makes a second owner of the same
// tensor or value. Function is a borrowed view, valid while its module lives.
// Each handle's thread-safety is the C handle's (kiln.h): Instance, Module
// and Value are thread-safe, the others thread-compatible (one context per
// thread).
//
//   auto module = kiln::api::Module::LoadFile("mlp.vmfb");
//   if (!module.ok()) { puts(module.status().message().c_str()); return 1; }
//   auto context = kiln::api::Context::Create(*module);
//   auto x = kiln::api::Tensor::Create({1, 784}, KILN_DTYPE_FLOAT32);
//   auto outputs = context->Invoke("main", {*x});
//   const float* y = outputs->tensor(0)->data<float>();
//
// The namespace is kiln::api so that it never clashes with the runtime's
// internal C++ types (kiln::Status, kiln::Result in runtime/status.h).
#ifndef KILN_CAPI_KILN_HPP_
#define KILN_CAPI_KILN_HPP_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kiln.h"

namespace kiln {
namespace api {

// The outcome of a call: OK, or a code and a message.
class Status {
 public:
  Status() = default;
  Status(kiln_status_code_t code, std::string message) : code_(code), message_(std::move(message)) {}
  // Takes over (and frees) a C status; NULL is OK.
  static Status FromC(kiln_status_t* status) {
    if (status == nullptr) return Status();
    Status s(kiln_status_code(status), kiln_status_message(status));
    kiln_status_free(status);
    return s;
  }
  bool ok() const { return code_ == KILN_STATUS_OK; }
  kiln_status_code_t code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NOT_FOUND: no function 'x' ..." or "OK".
  std::string ToString() const {
    return ok() ? std::string("OK") : std::string(kiln_status_code_name(code_)) + ": " + message_;
  }

 private:
  kiln_status_code_t code_ = KILN_STATUS_OK;
  std::string message_;
};

// A value or the Status saying why there is none. Reading the value of a
// failed Result is a programming error: it prints the status and aborts
// (check ok() first).
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)), has_value_(true) {}  // NOLINT: implicit, like std::optional
  Result(Status status) : status_(std::move(status)) {             // NOLINT
    if (status_.ok()) status_ = Status(KILN_STATUS_INTERNAL, "Result made from an OK status without a value");
  }
  bool ok() const { return has_value_; }
  const Status& status() const { return status_; }
  T& value() & { return Check(), value_; }
  const T& value() const& { return Check(), value_; }
  T&& value() && { return Check(), std::move(value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Check() const {
    if (!has_value_) {
      std::fprintf(stderr, "kiln::api::Result: value() of a failed result: %s\n", status_.ToString().c_str());
      std::abort();
    }
  }
  T value_{};
  Status status_;
  bool has_value_ = false;
};

namespace internal {

// A move-only owner of a C handle released with Release.
template <typename H, void (*Release)(H*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(H* h) : h_(h) {}
  Handle(Handle&& other) noexcept : h_(other.h_) { other.h_ = nullptr; }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      h_ = other.h_;
      other.h_ = nullptr;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  void reset() {
    if (h_ != nullptr) Release(h_);
    h_ = nullptr;
  }
  H* get() const { return h_; }
  H* release() {
    H* h = h_;
    h_ = nullptr;
    return h;
  }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  H* h_ = nullptr;
};

}  // namespace internal

class Module;
class Context;

// A tensor handle (owned).
class Tensor {
 public:
  Tensor() = default;
  // Takes over a C handle.
  explicit Tensor(kiln_tensor_t* t) : h_(t) {}

  // Zeroed, 64-byte aligned storage owned by Kiln.
  static Result<Tensor> Create(const std::vector<int64_t>& shape, kiln_dtype_t dtype) {
    kiln_tensor_t* t = nullptr;
    Status s = Status::FromC(kiln_tensor_create(shape.data(), static_cast<int32_t>(shape.size()), dtype, &t));
    if (!s.ok()) return s;
    return Tensor(t);
  }
  // Caller memory, not copied; see kiln_tensor_wrap for how long it must live.
  static Result<Tensor> Wrap(void* data, const std::vector<int64_t>& shape, kiln_dtype_t dtype) {
    kiln_tensor_t* t = nullptr;
    Status s = Status::FromC(kiln_tensor_wrap(data, shape.data(), static_cast<int32_t>(shape.size()), dtype, &t));
    if (!s.ok()) return s;
    return Tensor(t);
  }
  // Caller memory handed over: release(user, data) runs once, with the last reference.
  static Result<Tensor> WrapWithRelease(void* data, const std::vector<int64_t>& shape, kiln_dtype_t dtype,
                                        kiln_tensor_release_fn_t release, void* user) {
    kiln_tensor_t* t = nullptr;
    Status s = Status::FromC(kiln_tensor_wrap_with_release(data, shape.data(), static_cast<int32_t>(shape.size()),
                                                           dtype, release, user, &t));
    if (!s.ok()) return s;
    return Tensor(t);
  }
  // Takes `managed` over on success (DLPack convention); see kiln.h.
  static Result<Tensor> FromDLPack(struct DLManagedTensor* managed) {
    kiln_tensor_t* t = nullptr;
    Status s = Status::FromC(kiln_tensor_from_dlpack(managed, &t));
    if (!s.ok()) return s;
    return Tensor(t);
  }
  // A new owner of the same storage, from any tensor handle (also borrowed ones).
  static Result<Tensor> Share(const kiln_tensor_t* t) {
    kiln_tensor_t* shared = nullptr;
    Status s = Status::FromC(kiln_tensor_share(t, &shared));
    if (!s.ok()) return s;
    return Tensor(shared);
  }
  Result<Tensor> Share() const { return Share(h_.get()); }
  // Since API 0.5: .npy files (kiln_tensor_read_npy / kiln_tensor_write_npy).
  static Result<Tensor> ReadNpy(const std::string& path) {
    kiln_tensor_t* t = nullptr;
    Status s = Status::FromC(kiln_tensor_read_npy(path.c_str(), &t));
    if (!s.ok()) return s;
    return Tensor(t);
  }
  Status WriteNpy(const std::string& path) const {
    return Status::FromC(kiln_tensor_write_npy(h_.get(), path.c_str()));
  }
  // The caller calls the result's deleter once.
  Result<struct DLManagedTensor*> ToDLPack() const {
    struct DLManagedTensor* m = nullptr;
    Status s = Status::FromC(kiln_tensor_to_dlpack(h_.get(), &m));
    if (!s.ok()) return s;
    return m;
  }

  // Accessors of an empty Tensor() return zeros / empty.
  kiln_dtype_t dtype() const {
    kiln_dtype_t d = 0;
    kiln_status_free(kiln_tensor_dtype(h_.get(), &d));
    return d;
  }
  std::vector<int64_t> shape() const {
    int32_t ndim = 0;
    const int64_t* dims = nullptr;
    kiln_status_free(kiln_tensor_ndim(h_.get(), &ndim));
    kiln_status_free(kiln_tensor_shape(h_.get(), &dims));
    return dims == nullptr ? std::vector<int64_t>() : std::vector<int64_t>(dims, dims + ndim);
  }
  int64_t element_count() const {
    int64_t n = 0;
    kiln_status_free(kiln_tensor_element_count(h_.get(), &n));
    return n;
  }
  size_t byte_size() const {
    size_t n = 0;
    kiln_status_free(kiln_tensor_byte_size(h_.get(), &n));
    return n;
  }
  void* raw_data() const {
    void* d = nullptr;
    kiln_status_free(kiln_tensor_data(h_.get(), &d));
    return d;
  }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }

  kiln_tensor_t* get() const { return h_.get(); }
  kiln_tensor_t* release() { return h_.release(); }
  explicit operator bool() const { return static_cast<bool>(h_); }

 private:
  internal::Handle<kiln_tensor_t, kiln_tensor_release> h_;
};

// A value (owned): tensor, int64, float64, shape or (nested) tuple.
class Value {
 public:
  Value() = default;
  explicit Value(kiln_value_t* v) : h_(v) {}

  static Result<Value> Int(int64_t v) {
    return Make([&](kiln_value_t** out) { return kiln_value_create_int64(v, out); });
  }
  static Result<Value> Float(double v) {
    return Make([&](kiln_value_t** out) { return kiln_value_create_float64(v, out); });
  }
  static Result<Value> Shape(const std::vector<int64_t>& dims) {
    return Make([&](kiln_value_t** out) {
      return kiln_value_create_shape(dims.data(), static_cast<int32_t>(dims.size()), out);
    });
  }
  static Result<Value> FromTensor(const Tensor& t) {
    return Make([&](kiln_value_t** out) { return kiln_value_create_tensor(t.get(), out); });
  }
  static Result<Value> Tuple(const std::vector<const Value*>& fields) {
    std::vector<const kiln_value_t*> raw;
    raw.reserve(fields.size());
    for (const Value* f : fields) raw.push_back(f != nullptr ? f->get() : nullptr);
    return Make([&](kiln_value_t** out) { return kiln_value_create_tuple(raw.data(), raw.size(), out); });
  }
  // A new owner of the same value, from any value handle (also borrowed ones).
  static Result<Value> Share(const kiln_value_t* v) {
    return Make([&](kiln_value_t** out) { return kiln_value_share(v, out); });
  }
  Result<Value> Share() const { return Share(h_.get()); }

  kiln_value_kind_t kind() const {
    kiln_value_kind_t k = KILN_VALUE_NONE;
    kiln_status_free(kiln_value_kind(h_.get(), &k));
    return k;
  }
  Result<int64_t> AsInt() const {
    int64_t v = 0;
    Status s = Status::FromC(kiln_value_get_int64(h_.get(), &v));
    if (!s.ok()) return s;
    return v;
  }
  Result<double> AsFloat() const {
    double v = 0;
    Status s = Status::FromC(kiln_value_get_float64(h_.get(), &v));
    if (!s.ok()) return s;
    return v;
  }
  Result<std::vector<int64_t>> AsShape() const {
    int32_t ndim = 0;
    const int64_t* dims = nullptr;
    Status s = Status::FromC(kiln_value_get_shape(h_.get(), &ndim, &dims));
    if (!s.ok()) return s;
    return std::vector<int64_t>(dims, dims + ndim);
  }
  // A new owner of the tensor this value holds.
  Result<Tensor> AsTensor() const {
    const kiln_tensor_t* t = nullptr;
    Status s = Status::FromC(kiln_value_get_tensor(h_.get(), &t));
    if (!s.ok()) return s;
    return Tensor::Share(t);
  }
  Result<size_t> TupleSize() const {
    size_t n = 0;
    Status s = Status::FromC(kiln_value_tuple_size(h_.get(), &n));
    if (!s.ok()) return s;
    return n;
  }
  // A new owner of field `index`.
  Result<Value> Field(size_t index) const {
    const kiln_value_t* f = nullptr;
    Status s = Status::FromC(kiln_value_tuple_get(h_.get(), index, &f));
    if (!s.ok()) return s;
    return Share(f);
  }

  kiln_value_t* get() const { return h_.get(); }
  kiln_value_t* release() { return h_.release(); }
  explicit operator bool() const { return static_cast<bool>(h_); }

 private:
  // Runs a C factory `create(&out)` and owns what it made.
  template <typename F>
  static Result<Value> Make(F&& create) {
    kiln_value_t* v = nullptr;
    Status s = Status::FromC(create(&v));
    if (!s.ok()) return s;
    return Value(v);
  }
  internal::Handle<kiln_value_t, kiln_value_release> h_;
};

// A declared parameter or result (an owned copy of kiln_value_info_t).
struct ValueInfo {
  std::string name;
  kiln_value_kind_t kind = KILN_VALUE_NONE;
  kiln_dtype_t dtype = 0;
  int32_t ndim = -1;
  std::vector<int64_t> dims;            // -1: symbolic or undeclared
  std::vector<std::string> dim_names;   // "784", "n", "" (undeclared)
};

// A function of a module: a borrowed view, valid while the module lives.
class Function {
 public:
  Function() = default;
  explicit Function(const kiln_function_t* f) : f_(f) {}
  std::string name() const {
    const char* n = nullptr;
    kiln_status_free(kiln_function_name(f_, &n));
    return n != nullptr ? n : "";
  }
  std::vector<ValueInfo> params() const { return Infos(true); }
  std::vector<ValueInfo> results() const { return Infos(false); }
  const kiln_function_t* get() const { return f_; }

 private:
  std::vector<ValueInfo> Infos(bool params) const {
    size_t n = 0;
    kiln_status_free(params ? kiln_function_param_count(f_, &n) : kiln_function_result_count(f_, &n));
    std::vector<ValueInfo> out;
    for (size_t i = 0; i < n; ++i) {
      kiln_value_info_t c;
      kiln_status_t* s = params ? kiln_function_param_info(f_, i, &c) : kiln_function_result_info(f_, i, &c);
      if (s != nullptr) {
        kiln_status_free(s);
        break;
      }
      ValueInfo v;
      v.name = c.name != nullptr ? c.name : "";
      v.kind = c.kind;
      v.dtype = c.dtype;
      v.ndim = c.ndim;
      for (int32_t d = 0; d < c.ndim && c.dims != nullptr; ++d) {
        v.dims.push_back(c.dims[d]);
        v.dim_names.push_back(c.dim_names[d]);
      }
      out.push_back(std::move(v));
    }
    return out;
  }
  const kiln_function_t* f_ = nullptr;
};

// A loaded .vmfb (owned). Thread-safe.
class Module {
 public:
  Module() = default;
  explicit Module(kiln_module_t* m) : h_(m) {}
  static Result<Module> LoadFile(const std::string& path) {
    kiln_module_t* m = nullptr;
    Status s = Status::FromC(kiln_module_load_file(path.c_str(), &m));
    if (!s.ok()) return s;
    return Module(m);
  }
  // `data` is borrowed: see kiln_module_load_buffer.
  static Result<Module> LoadBuffer(const void* data, size_t size) {
    kiln_module_t* m = nullptr;
    Status s = Status::FromC(kiln_module_load_buffer(data, size, &m));
    if (!s.ok()) return s;
    return Module(m);
  }
  Result<Function> Lookup(const std::string& name) const {
    const kiln_function_t* f = nullptr;
    Status s = Status::FromC(kiln_module_lookup_function(h_.get(), name.c_str(), &f));
    if (!s.ok()) return s;
    return Function(f);
  }
  std::vector<Function> Functions() const {
    size_t n = 0;
    kiln_status_free(kiln_module_function_count(h_.get(), &n));
    std::vector<Function> out;
    for (size_t i = 0; i < n; ++i) {
      const kiln_function_t* f = nullptr;
      kiln_status_free(kiln_module_function_at(h_.get(), i, &f));
      if (f != nullptr) out.emplace_back(f);
    }
    return out;
  }
  kiln_module_t* get() const { return h_.get(); }
  explicit operator bool() const { return static_cast<bool>(h_); }

 private:
  internal::Handle<kiln_module_t, kiln_module_release> h_;
};

// The results of one call (owned).
class Outputs {
 public:
  Outputs() = default;
  explicit Outputs(kiln_outputs_t* o) : h_(o) {}
  size_t size() const {
    size_t n = 0;
    kiln_status_free(kiln_outputs_count(h_.get(), &n));
    return n;
  }
  // Borrowed (valid while this Outputs lives); Tensor::Share(...) to keep it.
  Result<const kiln_tensor_t*> borrowed_tensor(size_t index) const {
    const kiln_tensor_t* t = nullptr;
    Status s = Status::FromC(kiln_outputs_get(h_.get(), index, &t));
    if (!s.ok()) return s;
    return t;
  }
  // A new owner of output `index` (a tensor).
  Result<Tensor> tensor(size_t index) const {
    Result<const kiln_tensor_t*> t = borrowed_tensor(index);
    if (!t.ok()) return t.status();
    return Tensor::Share(*t);
  }
  // A new owner of output `index`, whatever its kind.
  Result<Value> value(size_t index) const {
    const kiln_value_t* v = nullptr;
    Status s = Status::FromC(kiln_outputs_get_value(h_.get(), index, &v));
    if (!s.ok()) return s;
    return Value::Share(v);
  }
  kiln_outputs_t* get() const { return h_.get(); }

 private:
  internal::Handle<kiln_outputs_t, kiln_outputs_release> h_;
};

// Options of a context (a plain struct; see kiln_context_options_*).
struct ContextOptions {
  kiln_executor_t executor = KILN_EXECUTOR_AUTO;
  int32_t num_threads = 0;                 // 0: one per core (or the instance's pool)
  const kiln_allocator_t* allocator = nullptr;  // copied; nullptr: the default
};

namespace internal {
// Builds the C options object for `o`.
inline Status MakeContextOptions(const ContextOptions& o, kiln_context_options_t** out) {
  kiln_context_options_t* c = nullptr;
  Status s = Status::FromC(kiln_context_options_create(&c));
  if (s.ok()) s = Status::FromC(kiln_context_options_set_executor(c, o.executor));
  if (s.ok()) s = Status::FromC(kiln_context_options_set_num_threads(c, o.num_threads));
  if (s.ok()) s = Status::FromC(kiln_context_options_set_allocator(c, o.allocator));
  if (!s.ok()) {
    kiln_context_options_release(c);
    return s;
  }
  *out = c;
  return s;
}
}  // namespace internal

// A call context (owned). Thread-compatible: one per concurrent caller.
class Context {
 public:
  Context() = default;
  explicit Context(kiln_context_t* c) : h_(c) {}
  static Result<Context> Create(const Module& module, const ContextOptions& options = {}) {
    kiln_context_options_t* o = nullptr;
    Status s = internal::MakeContextOptions(options, &o);
    if (!s.ok()) return s;
    kiln_context_t* c = nullptr;
    s = Status::FromC(kiln_context_create_with_options(module.get(), o, &c));
    kiln_context_options_release(o);
    if (!s.ok()) return s;
    return Context(c);
  }

  // Calls with tensors, by function handle (the fast path) or by name.
  Result<Outputs> Invoke(const Function& function, std::initializer_list<std::reference_wrapper<const Tensor>> in) {
    return InvokeRaw(function, Pointers(in).data(), in.size());
  }
  Result<Outputs> Invoke(const Function& function, const std::vector<Tensor>& in) {
    return InvokeRaw(function, Pointers(in).data(), in.size());
  }
  Result<Outputs> Invoke(const std::string& name, std::initializer_list<std::reference_wrapper<const Tensor>> in) {
    std::vector<kiln_tensor_t*> p = Pointers(in);
    kiln_outputs_t* o = nullptr;
    Status s = Status::FromC(kiln_context_invoke(h_.get(), name.c_str(), p.data(), p.size(), &o));
    if (!s.ok()) return s;
    return Outputs(o);
  }
  Result<Outputs> InvokeRaw(const Function& function, kiln_tensor_t* const* inputs, size_t n) {
    kiln_outputs_t* o = nullptr;
    Status s = Status::FromC(kiln_context_invoke_function(h_.get(), function.get(), inputs, n, &o));
    if (!s.ok()) return s;
    return Outputs(o);
  }
  // Calls with values (scalars, shapes, tuples, tensors).
  Result<Outputs> InvokeValues(const Function& function, const std::vector<const Value*>& in) {
    std::vector<const kiln_value_t*> p;
    p.reserve(in.size());
    for (const Value* v : in) p.push_back(v != nullptr ? v->get() : nullptr);
    kiln_outputs_t* o = nullptr;
    Status s = Status::FromC(kiln_context_invoke_values(h_.get(), function.get(), p.data(), p.size(), &o));
    if (!s.ok()) return s;
    return Outputs(o);
  }

  int32_t num_threads() const {
    int32_t n = 0;
    kiln_status_free(kiln_context_num_threads(h_.get(), &n));
    return n;
  }
  Status EnableProfiling(bool enable) {
    return Status::FromC(kiln_context_enable_profiling(h_.get(), enable ? 1 : 0));
  }
  Result<std::string> ProfileTable() {
    const char* t = nullptr;
    Status s = Status::FromC(kiln_context_profile_table(h_.get(), &t));
    if (!s.ok()) return s;
    return std::string(t);
  }
  kiln_context_t* get() const { return h_.get(); }
  explicit operator bool() const { return static_cast<bool>(h_); }

 private:
  template <typename Seq>
  static std::vector<kiln_tensor_t*> Pointers(const Seq& in) {
    std::vector<kiln_tensor_t*> p;
    p.reserve(in.size());
    for (const Tensor& t : in) p.push_back(t.get());
    return p;
  }
  internal::Handle<kiln_context_t, kiln_context_release> h_;
};

// Options of an instance (see kiln_instance_options_*).
struct InstanceOptions {
  int32_t num_threads = 0;
  const kiln_allocator_t* allocator = nullptr;  // copied
  kiln_log_fn_t log = nullptr;                  // must outlive the instance and what it made
  void* log_user = nullptr;
  kiln_log_level_t min_level = KILN_LOG_INFO;
  bool verify_weights = false;                  // since API 0.5: kiln_instance_options_set_verify_weights
};

// A runtime instance (owned): the pool, allocator and logger shared by the
// modules and contexts made through it. Thread-safe.
class Instance {
 public:
  Instance() = default;
  explicit Instance(kiln_instance_t* i) : h_(i) {}
  static Result<Instance> Create(const InstanceOptions& options = {}) {
    kiln_instance_options_t* o = nullptr;
    Status s = Status::FromC(kiln_instance_options_create(&o));
    if (s.ok()) s = Status::FromC(kiln_instance_options_set_num_threads(o, options.num_threads));
    if (s.ok()) s = Status::FromC(kiln_instance_options_set_allocator(o, options.allocator));
    if (s.ok()) {
      s = Status::FromC(kiln_instance_options_set_logger(o, options.log, options.log_user, options.min_level));
    }
    if (s.ok()) s = Status::FromC(kiln_instance_options_set_verify_weights(o, options.verify_weights ? 1 : 0));
    kiln_instance_t* i = nullptr;
    if (s.ok()) s = Status::FromC(kiln_instance_create(o, &i));
    kiln_instance_options_release(o);
    if (!s.ok()) return s;
    return Instance(i);
  }
  Result<Module> LoadModule(const std::string& path) const {
    kiln_module_t* m = nullptr;
    Status s = Status::FromC(kiln_instance_load_module_file(h_.get(), path.c_str(), &m));
    if (!s.ok()) return s;
    return Module(m);
  }
  // On the instance's pool; options.num_threads must stay 0.
  Result<Context> CreateContext(const Module& module, const ContextOptions& options = {}) const {
    kiln_context_options_t* o = nullptr;
    Status s = internal::MakeContextOptions(options, &o);
    if (!s.ok()) return s;
    kiln_context_t* c = nullptr;
    s = Status::FromC(kiln_instance_create_context(h_.get(), module.get(), o, &c));
    kiln_context_options_release(o);
    if (!s.ok()) return s;
    return Context(c);
  }
  int32_t num_threads() const {
    int32_t n = 0;
    kiln_status_free(kiln_instance_num_threads(h_.get(), &n));
    return n;
  }
  kiln_instance_t* get() const { return h_.get(); }

 private:
  internal::Handle<kiln_instance_t, kiln_instance_release> h_;
};

// Registers a C function for compiled programs (before loading modules).
inline Status RegisterFunction(const std::string& name, kiln_packed_fn_t fn, void* user) {
  return Status::FromC(kiln_register_function(name.c_str(), fn, user));
}
inline Status UnregisterFunction(const std::string& name) {
  return Status::FromC(kiln_unregister_function(name.c_str()));
}

}  // namespace api
}  // namespace kiln

#endif  // KILN_CAPI_KILN_HPP_
