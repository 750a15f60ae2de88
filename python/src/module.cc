// kiln.Module, kiln.Context, kiln.load and kiln.from_dlpack.
#include "module.h"

#include <kiln/kiln.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "function.h"
#include "inputs.h"
#include "state.h"
#include "status.h"
#include "tensor.h"

namespace kiln_python {

namespace {

class Module {
 public:
  explicit Module(std::shared_ptr<ModuleState> state) : state_(std::move(state)) {}

  Function function(const std::string& name, std::shared_ptr<ContextState> context = nullptr) const {
    const kiln_function_t* function = nullptr;
    check(kiln_module_lookup_function(state_->module, name.c_str(), &function));
    return Function(state_, function, std::move(context));
  }

  py::dict functions() const {
    size_t count = 0;
    check(kiln_module_function_count(state_->module, &count));
    py::dict result;
    for (size_t i = 0; i < count; ++i) {
      const kiln_function_t* function = nullptr;
      check(kiln_module_function_at(state_->module, i, &function));
      Function f(state_, function, nullptr);
      py::str name(f.name());
      result[name] = py::cast(std::move(f));
    }
    return result;
  }

  const std::shared_ptr<ModuleState>& state() const { return state_; }

 private:
  std::shared_ptr<ModuleState> state_;
};

class Context {
 public:
  Context(const Module& module, int threads, const std::string& executor, bool profile)
      : module_(module), state_(std::make_shared<ContextState>()) {
    kiln_executor_t kind;
    if (executor == "auto") {
      kind = KILN_EXECUTOR_AUTO;
    } else if (executor == "vm") {
      kind = KILN_EXECUTOR_VM;
    } else if (executor == "graph") {
      kind = KILN_EXECUTOR_GRAPH;
    } else {
      raise_error(KILN_STATUS_INVALID_ARGUMENT,
                  "unknown executor '" + executor + "' (expected 'auto', 'vm' or 'graph')");
    }
    state_->module = module.state();
    kiln_context_options_t* options = nullptr;
    check(kiln_context_options_create(&options));
    std::unique_ptr<kiln_context_options_t, decltype(&kiln_context_options_release)> owner(
        options, &kiln_context_options_release);
    check(kiln_context_options_set_executor(options, kind));
    check(kiln_context_options_set_num_threads(options, threads));
    check(kiln_context_create_with_options(module.state()->module, options, &state_->context));
    if (profile) check(kiln_context_enable_profiling(state_->context, 1));
  }

  Function function(const std::string& name) const { return module_.function(name, state_); }

  int threads() const {
    int32_t threads = 0;
    check(kiln_context_num_threads(state_->context, &threads));
    return threads;
  }

  std::string profile() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    const char* table = nullptr;
    check(kiln_context_profile_table(state_->context, &table));
    return table;
  }

  void reset_profile() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    check(kiln_context_reset_profile(state_->context));
  }

 private:
  Module module_;
  std::shared_ptr<ContextState> state_;
};

Module load(py::object source) {
  auto state = std::make_shared<ModuleState>();
  kiln_status_t* status = nullptr;
  if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source) ||
      py::isinstance<py::memoryview>(source)) {
    // Copied: Kiln borrows the buffer for the module's life, and a bytearray
    // could change under it. Into 64-byte aligned storage, as a mapped file
    // is: constants are used in place, and a bytes object's data is not.
    py::buffer_info info = py::buffer(source).request();
    size_t size = static_cast<size_t>(info.size * info.itemsize);
    void* storage = std::aligned_alloc(64, (size + 63) / 64 * 64 + 64);
    if (storage == nullptr) raise_error(KILN_STATUS_RESOURCE_EXHAUSTED, "kiln.load: out of memory for the module's bytes");
    std::memcpy(storage, info.ptr, size);
    state->bytes = std::shared_ptr<const uint8_t>(static_cast<const uint8_t*>(storage),
                                                  [](const uint8_t* p) { std::free(const_cast<uint8_t*>(p)); });
    py::gil_scoped_release no_gil;
    status = kiln_module_load_buffer(storage, size, &state->module);
  } else {
    std::string path = py::str(py::module_::import("os").attr("fspath")(source));
    py::gil_scoped_release no_gil;
    status = kiln_module_load_file(path.c_str(), &state->module);
  }
  check(status);
  return Module(std::move(state));
}

}  // namespace

void bind_module(py::module_& m) {
  py::class_<Context>(m, "Context",
                      "A reusable call context with its own threads and executor (Module.context).\n"
                      "Calls through one context from several Python threads take turns; use one context per\n"
                      "thread for parallel calls.")
      .def("__getitem__", &Context::function, py::arg("name"), "The function `name`, bound to this context.")
      .def_property_readonly("threads", &Context::threads, "The number of threads the context's kernels run on.")
      .def("profile", &Context::profile,
           "The per-kernel profile of the calls so far, as a text table (needs profile=True).")
      .def("reset_profile", &Context::reset_profile, "Forgets what the profile recorded.");

  py::class_<Module>(m, "Module", "A loaded, verified .vmfb; immutable and shared by any number of threads.")
      .def("__getitem__", [](const Module& module, const std::string& name) { return module.function(name); },
           py::arg("name"), "The function `name`; kiln.NotFoundError (a KeyError) lists the module's functions.")
      .def("__contains__",
           [](const Module& module, const std::string& name) {
             const kiln_function_t* function = nullptr;
             kiln_status_t* status = kiln_module_lookup_function(module.state()->module, name.c_str(), &function);
             kiln_status_free(status);
             return status == nullptr;
           })
      .def_property_readonly("functions", &Module::functions, "The module's functions by name.")
      .def(
          "context",
          [](const Module& module, int threads, const std::string& executor, bool profile) {
            return Context(module, threads, executor, profile);
          },
          py::kw_only(), py::arg("threads") = 0, py::arg("executor") = "auto", py::arg("profile") = false,
          "A call context: threads=0 is one per physical core; executor is 'auto' (the static graph when\n"
          "the function has one), 'vm' or 'graph'; profile=True records every kernel (Context.profile).");

  m.def("load", &load, py::arg("source"),
        "Loads and verifies a compiled model: a path (str or os.PathLike) to a .vmfb, or its bytes.");
  m.def(
      "from_dlpack",
      [](py::object obj) {
        bool owned = false;
        kiln_tensor_t* tensor = tensor_from_python(obj, ArgumentName("kiln.from_dlpack"), &owned);
        if (!owned) check(kiln_tensor_share(tensor, &tensor));
        return std::make_unique<Tensor>(tensor, nullptr);
      },
      py::arg("array"),
      "A kiln.Tensor over `array` (numpy, __dlpack__, buffer protocol): shared when its data is\n"
      "64-byte aligned, copied into aligned storage otherwise.");
}

}  // namespace kiln_python
