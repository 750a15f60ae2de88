// The extension module kiln._tune: Kiln's tuner (the search kiln-tune runs,
// compiler/tune/tune.h) from Python; kiln/tuner.py wraps it as kiln.tune.
//
// A module of its own beside kiln._compiler: it links the tuner's search and
// its cost model (XGBoost), which neither the compiler nor the runtime link,
// and kiln/tuner.py imports it on the first kiln.tune call only, so
// `import kiln` does not load XGBoost.
//
// The tuning runs without the GIL. The tuner's progress lines go to a Python
// callable, one call per line, the GIL taken for the call; before each trial
// the tuner asks whether to stop (TuneOptions::should_stop), and it stops
// when the callable raised or a signal handler did (Ctrl-C:
// KeyboardInterrupt). The exception is raised once the tuner has returned,
// with every record measured so far in the database.
//
// Candidates are measured in kiln-measure-host, installed beside this module
// and exec'd per candidate (compiler/tune/runner.h), so the Python process's
// threads never matter to a measurement; without the program (a build that
// lacks it) the runner falls back to a fork of this process. One tuning at a
// time per process (a second call waits, without the GIL): the fork
// fallback must not fork while another tuning thread holds a lock.
#include "compiler/tune/tune.h"

#include <dlfcn.h>
#include <pybind11/pybind11.h>
#include <unistd.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/text/text.h"
#include "compiler/tune/database.h"
#include "compiler_errors.h"

namespace py = pybind11;

namespace {

// kiln-measure-host beside this extension module ($KILN_MEASURE_HOST
// overrides); empty when there is none.
std::string HostProgram() {
  const char* env = getenv("KILN_MEASURE_HOST");
  if (env != nullptr && *env) return env;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&HostProgram), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string self = info.dli_fname;
  size_t slash = self.rfind('/');
  std::string program = (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/kiln-measure-host";
  return access(program.c_str(), X_OK) == 0 ? program : "";
}

// Hands each complete line written to it to `sink` (without its newline).
class LineBuffer : public std::streambuf {
 public:
  explicit LineBuffer(std::function<void(const std::string &)> sink) : sink_(std::move(sink)) {}
  ~LineBuffer() override {
    if (!line_.empty()) sink_(line_);
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    Put(traits_type::to_char_type(c));
    return c;
  }
  std::streamsize xsputn(const char *s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) Put(s[i]);
    return n;
  }

 private:
  void Put(char c) {
    if (c != '\n') {
      line_ += c;
      return;
    }
    sink_(line_);
    line_.clear();
  }
  std::function<void(const std::string &)> sink_;
  std::string line_;
};

// The Python side of one tuning: the progress callable and the first
// exception raised while the tuner ran. Touched only with the GIL held.
struct PythonSide {
  py::object progress;
  std::unique_ptr<py::error_already_set> pending;

  void Emit(const std::string &line) {
    py::gil_scoped_acquire gil;
    if (pending) return;  // stopping: the callable raised already
    try {
      progress(line);
    } catch (py::error_already_set &e) {
      pending = std::make_unique<py::error_already_set>(std::move(e));
    }
  }
  bool ShouldStop() {
    py::gil_scoped_acquire gil;
    if (!pending && PyErr_CheckSignals() != 0) pending = std::make_unique<py::error_already_set>();
    return pending != nullptr;
  }
};

std::mutex &TuningMutex() {
  static std::mutex *mutex = new std::mutex;  // never destroyed: may be held at exit
  return *mutex;
}

std::string PrimFuncNames(const kiln::ir::IRModule &mod) {
  std::string names;
  for (const auto &e : mod.entries) {
    if (!e.prim) continue;
    names += (names.empty() ? "" : ", ") + e.name;
  }
  return names.empty() ? "it has none" : "its PrimFuncs: " + names;
}

kiln::Result<kiln::tune::TuneSummary> TuneSource(const std::string &source, bool is_path, const std::string &function,
                                                 const std::string &db_dir, kiln::tune::TuneOptions options,
                                                 PythonSide *python) {
  LineBuffer lines([python](const std::string &line) { python->Emit(line); });
  std::ostream progress(&lines);
  const std::string label = is_path ? source : std::string("<string>");
  kiln::Result<kiln::ir::IRModule> mod =
      is_path ? kiln::text::ParseModuleFile(source) : kiln::text::ParseModule(source, label);
  if (!mod.ok()) return mod.status();
  kiln::ir::PrimFunc func = mod->FindPrim(function);
  if (!func)
    return kiln::NotFound("kiln.tune: " + label + " has no PrimFunc named '" + function + "' (" + PrimFuncNames(*mod) +
                          ")");
  std::vector<kiln::Status> damage;
  KILN_ASSIGN_OR_RETURN(kiln::tune::Database db, kiln::tune::Database::Open(db_dir, &damage));
  for (const auto &d : damage) progress << "error: " << d.message() << " (line skipped)\n";
  options.should_stop = [python] { return python->ShouldStop(); };
  return kiln::tune::TuneFunction(func, &db, options, progress);
}

// Tunes the PrimFunc `function` of the module `source` (a .relax path when
// `is_path`, else its text) into the database `db`; returns the summary as a
// dict. Arguments are checked by kiln/tuner.py.
py::dict Tune(const std::string &source, bool is_path, const std::string &function, const std::string &db, int trials,
              uint64_t seed, int threads, int repeats, double timeout_s, int batch, const std::string &search,
              const std::string &space, const std::string &cost_model, int64_t cold_cache_bytes,
              py::object progress) {
  kiln::tune::TuneOptions options;
  options.trials = trials;
  options.seed = seed;
  options.runner.threads = threads;
  options.runner.repeats = repeats;
  options.runner.timeout_s = timeout_s;
  options.runner.host_program = HostProgram();
  // < 0: warm timing; 0: cold with the default flush (twice the LLC); else
  // cold with that many bytes (kiln-tune --cold-cache[=SIZE]).
  options.runner.cold_cache = cold_cache_bytes >= 0;
  options.runner.cold_cache_bytes = cold_cache_bytes > 0 ? cold_cache_bytes : 0;
  options.batch = batch;
  options.search = search == "random" ? kiln::tune::SearchKind::kRandom : kiln::tune::SearchKind::kEvolutionary;
  options.space = space == "default"   ? kiln::tune::SpaceKind::kDefault
                  : space == "generic" ? kiln::tune::SpaceKind::kGeneric
                                       : kiln::tune::SpaceKind::kAll;
  options.cost_model_path = cost_model;
  PythonSide python;
  python.progress = std::move(progress);
  kiln::Result<kiln::tune::TuneSummary> sum = [&] {
    py::gil_scoped_release no_gil;
    std::lock_guard<std::mutex> one_at_a_time(TuningMutex());
    return TuneSource(source, is_path, function, db, options, &python);
  }();
  // The callable's (or Ctrl-C's) exception first: it is why the tuning ended.
  if (python.pending) throw py::error_already_set(std::move(*python.pending));
  if (!sum.ok()) kiln_python::raise_compiler_status(sum.status());
  py::dict result;
  result["function"] = sum->function;
  result["workload"] = sum->workload;
  result["default_us"] = sum->default_us;
  result["best_us"] = sum->best_us;
  result["trials"] = sum->trials;
  result["failures"] = sum->failures;
  result["best_trace"] = sum->best_trace;
  result["best_after"] = sum->best_after;
  return result;
}

}  // namespace

PYBIND11_MODULE(_tune, m) {
  m.doc() = "Kiln's tuner (kiln-tune's search); see kiln.tune.";
  m.def("tune", &Tune, py::arg("source"), py::arg("is_path"), py::arg("function"), py::arg("db"), py::arg("trials"),
        py::arg("seed"), py::arg("threads"), py::arg("repeats"), py::arg("timeout_s"), py::arg("batch"),
        py::arg("search"), py::arg("space"), py::arg("cost_model"), py::arg("cold_cache_bytes"), py::arg("progress"),
        "Tunes one PrimFunc of a .relax file (is_path) or text into the "
        "database db; returns the summary as a dict.");
}
