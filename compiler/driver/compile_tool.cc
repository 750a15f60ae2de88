#include "compiler/driver/compile_tool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "compiler/driver/compile.h"
#include "compiler/driver/config_file.h"
#include "compiler/memory/plan_memory.h"
#include "compiler/text/source.h"
#include "compiler/text/text.h"

namespace kiln {
namespace driver {
namespace {

const char kUsage[] =
    "usage: kiln-compile IN.relax -o OUT.vmfb [options]\n"
    "       (IN may be an ONNX model, IN.onnx)\n"
    "  -o FILE, --output=FILE          where to write (a .vmfb, or text with --emit)\n"
    "  --emit=vmfb|relax|tir|llvm|asm  what to produce (default vmfb; text goes to -o or stdout)\n"
    "  --params FILE                   bind weights (.npz or .safetensors) to main's parameters by name;\n"
    "                                  a module that refers to metadata[\"relax.expr.Constant\"][i] takes\n"
    "                                  the file's i-th tensor there instead\n"
    "  --params-function=NAME          bind them to NAME's parameters instead of main's\n"
    "  --dump-ir-before=PASS           print the module before PASS (repeatable; 'all' for every pass)\n"
    "  --dump-ir-after=PASS            print the module after PASS (repeatable; 'all' for every pass)\n"
    "  --dump-ir-after-all             print the module after every pass\n"
    "  --matmul=tir|dnnl               generate matmul kernels (tir, default) or call oneDNN (dnnl)\n"
    "  --dispatch=RULES.yaml           send chosen conv2d / matmul calls to oneDNN (or, with --target=cuda, to cuDNN / cuBLAS) by rules (docs/compiler.md)\n"
    "  --fuse=on|off                   fuse operator kernels (default on)\n"
    "  --winograd=on|off               3x3 convolutions with constant weights as Winograd F(4x4,3x3) or F(2x2,3x3) (default on)\n"
    "  --precision=fp32|fp16|bf16      weights and activations of matmuls, convolutions and the elementwise\n"
    "                                  chains between them in half precision, accumulating in float32\n"
    "                                  (default fp32; docs/precision.md)\n"
    "  --bound NAME=N                  upper bound of a symbolic variable for memory planning (repeatable)\n"
    "  --dim NAME=N[,NAME=N...]        fix a symbolic input dimension of an imported model, NAME as in the IR\n"
    "                                  (batch, x_dim2) or INPUT:POSITION (x:2) (repeatable)\n"
    "  --report-memory                 print each function's planned memory to stderr\n"
    "  --target=TRIPLE --cpu=NAME --features=+f1,-f2   code generation target (default: this machine)\n"
    "  --target=cuda [--arch=sm_XY]    NVIDIA GPU kernels as PTX for sm_XY (default sm_80)\n"
    "  --ptxas=PATH|none               with --target=cuda: the ptxas that adds a cubin for sm_XY beside the PTX\n"
    "                                  (default: $KILN_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin or $PATH;\n"
    "                                  no cubin when there is none; none: PTX only)\n"
    "  -O0 .. -O3                      LLVM optimization level (default -O3)\n"
    "  --threads=N                     threads the kernels' schedules plan for (parallel loops, their chunks;\n"
    "                                  default: this machine's cores); records of --tuning-db apply only when\n"
    "                                  kiln-tune measured them with --threads N\n"
    "  --jobs=N                        threads that compile the kernels' code (default: this machine's cores;\n"
    "                                  the output is the same for every N)\n"
    "  --tuning-db=DIR                 schedule each kernel that DIR (kiln-tune) has a record for, for this\n"
    "                                  target, by its best record when that beat the default schedule;\n"
    "                                  the others keep the default schedule\n"
    "  --tuning-cache=warm|cold        which records of --tuning-db apply: measured warm (default) or with\n"
    "                                  kiln-tune --cold-cache\n"
    "  --progress                      show a progress line on stderr (default: when stderr is a terminal\n"
    "                                  and no IR is dumped)\n"
    "  --config FILE.yaml              the same options from a YAML mapping (name: value, names as above\n"
    "                                  without dashes, 'output' for -o, 'O' for -O); flags override it\n"
    "Flags that take a value take --flag=value or --flag value. On success kiln-compile prints\n"
    "what it wrote and its size.\n";

// Option names shared by the flags and the config file.
const std::vector<std::string>& OptionNames() {
  static const std::vector<std::string> names = {
      "output", "emit", "params", "params-function", "dump-ir-before", "dump-ir-after", "dump-ir-after-all",
      "matmul", "dispatch", "fuse", "winograd", "bound", "dim", "report-memory", "target", "cpu", "features", "arch", "ptxas", "O",
      "tuning-db", "tuning-cache", "threads", "jobs", "precision"};
  return names;
}
// Options that may be given more than once (values accumulate).
bool Repeatable(const std::string& key) {
  return key == "dump-ir-before" || key == "dump-ir-after" || key == "bound" || key == "dim";
}

struct Usage {
  std::string message;  // printed as "kiln-compile: <message>"
  bool with_usage = false;
};

bool IsTrue(const std::string& v) { return v == "true" || v == "True" || v == "1" || v == "yes" || v == "on"; }
bool IsFalse(const std::string& v) { return v == "false" || v == "False" || v == "0" || v == "no" || v == "off"; }

// "batch=1,seq=128" -> fixed_dims; false with a message naming the flag.
bool ParseDims(const std::string& text, std::map<std::string, int64_t>* dims, std::string* message) {
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* end = nullptr;
    errno = 0;
    long long v = value.empty() ? 0 : std::strtoll(value.c_str(), &end, 10);
    if (eq == std::string::npos || name.empty() || value.empty() || *end != '\0' || errno == ERANGE || v < 1) {
      *message = "--dim: expected NAME=N with N a positive integer, got '" + item + "'";
      return false;
    }
    (*dims)[name] = v;
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

// Applies the merged options; a bad value is a Usage error.
bool Apply(const OptionValues& values, CompileOptions* options, std::string* output, EmitKind* emit, Usage* error) {
  for (const auto& kv : values) {
    const std::string& key = kv.first;
    if (kv.second.empty()) continue;
    const std::string& value = kv.second.back();
    if (!Repeatable(key) && kv.second.size() > 1) {
      error->message = "'" + key + "' given more than once";
      return false;
    }
    if (key == "output") {
      *output = value;
    } else if (key == "emit") {
      if (value == "vmfb") *emit = EmitKind::kVmfb;
      else if (value == "relax") *emit = EmitKind::kRelax;
      else if (value == "tir") *emit = EmitKind::kTir;
      else if (value == "llvm") *emit = EmitKind::kLlvm;
      else if (value == "asm") *emit = EmitKind::kAsm;
      else {
        error->message = "--emit must be vmfb, relax, tir, llvm or asm, got '" + value + "'";
        return false;
      }
    } else if (key == "params") {
      options->params_file = value;
    } else if (key == "params-function") {
      options->params_function = value;
    } else if (key == "dump-ir-before") {
      options->dump_ir_before = kv.second;
    } else if (key == "dump-ir-after") {
      for (const auto& v : kv.second) options->dump_ir_after.push_back(v);
    } else if (key == "dump-ir-after-all") {
      if (!IsTrue(value) && !IsFalse(value)) {
        error->message = "dump-ir-after-all must be true or false, got '" + value + "'";
        return false;
      }
      if (IsTrue(value)) options->dump_ir_after.push_back("all");
    } else if (key == "matmul") {
      if (value != "tir" && value != "dnnl") {
        error->message = "--matmul must be tir or dnnl, got '" + value + "'";
        return false;
      }
      options->matmul_to_dnnl = value == "dnnl";
    } else if (key == "dispatch") {
      options->dispatch_rules_file = value;
    } else if (key == "fuse") {
      if (!IsTrue(value) && !IsFalse(value)) {
        error->message = "--fuse must be on or off, got '" + value + "'";
        return false;
      }
      options->fuse = IsTrue(value);
    } else if (key == "winograd") {
      if (!IsTrue(value) && !IsFalse(value)) {
        error->message = "--winograd must be on or off, got '" + value + "'";
        return false;
      }
      options->winograd = IsTrue(value);
    } else if (key == "precision") {
      Result<transform::Precision> p = transform::ParsePrecision(value);
      if (!p.ok()) {
        error->message = p.status().message();
        return false;
      }
      options->precision = *p;
    } else if (key == "bound") {
      for (const auto& v : kv.second) {
        Result<std::pair<std::string, int64_t>> b = memory::ParseBoundFlag(v);
        if (!b.ok()) {
          error->message = b.status().message();
          return false;
        }
        options->upper_bounds[b->first] = b->second;
      }
    } else if (key == "dim") {
      for (const auto& v : kv.second) {
        if (!ParseDims(v, &options->fixed_dims, &error->message)) return false;
      }
    } else if (key == "report-memory") {
      if (!IsTrue(value) && !IsFalse(value)) {
        error->message = "report-memory must be true or false, got '" + value + "'";
        return false;
      }
      options->report_memory = IsTrue(value);
    } else if (key == "target") {
      options->target_triple = value;
    } else if (key == "cpu") {
      options->target_cpu = value;
    } else if (key == "arch") {
      options->gpu_arch = value;
    } else if (key == "ptxas") {
      options->ptxas = value;
    } else if (key == "features") {
      options->target_features = value;
    } else if (key == "tuning-db") {
      options->tuning_db = value;
    } else if (key == "tuning-cache") {
      if (value != "warm" && value != "cold") {
        error->message = "--tuning-cache must be warm or cold, got '" + value + "'";
        return false;
      }
      options->tuning_cold_cache = value == "cold";
    } else if (key == "threads") {
      char* end = nullptr;
      errno = 0;
      long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno == ERANGE || n < 1 || n > 1024) {
        error->message = "--threads must be an integer from 1 to 1024, got '" + value + "'";
        return false;
      }
      options->num_threads_hint = static_cast<int>(n);
    } else if (key == "jobs") {
      char* end = nullptr;
      errno = 0;
      long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno == ERANGE || n < 1 || n > 1024) {
        error->message = "--jobs must be an integer from 1 to 1024, got '" + value + "'";
        return false;
      }
      options->codegen_jobs = static_cast<int>(n);
    } else if (key == "O") {
      if (value.size() != 1 || value[0] < '0' || value[0] > '3') {
        error->message = "O must be 0, 1, 2 or 3, got '" + value + "'";
        return false;
      }
      options->opt_level = value[0] - '0';
    }
  }
  return true;
}

bool TakesValue(const std::string& key);

// "--name=value" -> true with key/value when name is an option taking a value.
bool SplitFlag(const std::string& arg, std::string* key, std::string* value) {
  if (arg.compare(0, 2, "--") != 0) return false;
  size_t eq = arg.find('=');
  if (eq == std::string::npos) return false;
  *key = arg.substr(2, eq - 2);
  *value = arg.substr(eq + 1);
  return TakesValue(*key);
}

// Option names written "--name value" as well as "--name=value".
bool TakesValue(const std::string& key) {
  const auto& names = OptionNames();
  return key != "O" && key != "dump-ir-after-all" && key != "report-memory" &&
         std::find(names.begin(), names.end(), key) != names.end();
}

// Errors of later passes carry file:line:col; quote the line as parse errors do.
Status WithSourceLine(const Status& s, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return s;
  std::string source((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return text::QuoteSourceLine(s, text::SourceFile(std::move(source), path));
}

// A progress line for long compiles. On a terminal it redraws one line with
// the elapsed seconds and erases it at the end; elsewhere (--progress into a
// log) it writes a line when it starts, one every 10 s and one at the end.
// Only this object writes to `err` while it runs: it is not used when IR
// dumps or memory reports share the stream.
class ProgressLine {
 public:
  ProgressLine(std::ostream& err, const std::string& what, bool terminal)
      : err_(err), what_(what), terminal_(terminal), start_(std::chrono::steady_clock::now()) {
    if (!terminal_) err_ << "kiln-compile: compiling " << what_ << "\n" << std::flush;
    thread_ = std::thread([this] { Run(); });
  }
  ~ProgressLine() { Finish(false); }

  void Finish(bool ok) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done_) return;
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (terminal_) {
      err_ << "\r\033[K" << std::flush;  // erase the line
    } else if (ok) {
      err_ << "kiln-compile: compiled " << what_ << " in " << Seconds() << " s\n" << std::flush;
    }
  }

 private:
  std::string Seconds() const {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", s);
    return buf;
  }
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    int ticks = 0;
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) {
      ++ticks;
      if (terminal_) {
        err_ << "\rkiln-compile: compiling " << what_ << " ... " << Seconds() << " s" << std::flush;
      } else if (ticks % 10 == 0) {
        err_ << "kiln-compile: still compiling " << what_ << " (" << Seconds() << " s)\n" << std::flush;
      }
    }
  }

  std::ostream& err_;
  std::string what_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// "wrote OUT: 12345 bytes (12.1 KiB)".
std::string WroteLine(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "kiln-compile: wrote " + path + "\n";
  unsigned long long bytes = static_cast<unsigned long long>(st.st_size);
  char buf[64];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof(buf), "%llu bytes", bytes);
  } else if (bytes < (1ull << 20)) {
    std::snprintf(buf, sizeof(buf), "%llu bytes (%.1f KiB)", bytes, bytes / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu bytes (%.1f MiB)", bytes, bytes / 1048576.0);
  }
  return "kiln-compile: wrote " + path + ": " + buf + "\n";
}

}  // namespace

Status ApplyCompileOptions(const OptionValues& values, CompileOptions* options) {
  std::string names;
  for (const auto& name : OptionNames()) {
    if (name == "output" || name == "emit") continue;
    names += (names.empty() ? "" : ", ") + name;
  }
  for (const auto& kv : values) {
    const auto& all = OptionNames();
    if (kv.first == "output" || kv.first == "emit" || std::find(all.begin(), all.end(), kv.first) == all.end())
      return InvalidArgument("unknown compile option '" + kv.first + "' (expected one of " + names + ")");
  }
  std::string output;
  EmitKind emit = EmitKind::kVmfb;
  Usage usage;
  if (!Apply(values, options, &output, &emit, &usage)) return InvalidArgument(usage.message);
  return Status::Ok();
}

int CompileToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CompileOptions options;
  options.dump_stream = &err;
  std::string input, output, config, key, value;
  EmitKind emit = EmitKind::kVmfb;
  OptionValues flags;
  bool progress = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    // Flags whose value may be the next argument.
    auto next = [&](const char* what, std::string* dst) {
      if (i + 1 >= argc) {
        err << "kiln-compile: " << arg << " needs " << what << "\n";
        return false;
      }
      *dst = argv[++i];
      return true;
    };
    if (arg == "-h" || arg == "--help") {
      out << kUsage;
      return 0;
    } else if (arg == "-o" || arg == "--output") {
      if (!next("a file name", &value)) return 2;
      flags["output"].push_back(value);
    } else if (arg == "--params") {
      if (!next("a file name", &value)) return 2;
      flags["params"].push_back(value);
    } else if (arg == "--progress") {
      progress = true;
    } else if (arg == "--config") {
      if (!next("a file name", &config)) return 2;
    } else if (arg.compare(0, 9, "--config=") == 0) {
      config = arg.substr(9);
    } else if (arg == "--dump-ir-after-all") {
      flags["dump-ir-after-all"].push_back("true");
    } else if (arg == "--report-memory") {
      flags["report-memory"].push_back("true");
    } else if (arg == "--bound" || arg == "--dim") {
      if (!next("NAME=N", &value)) return 2;
      flags[arg.substr(2)].push_back(value);
    } else if (arg.compare(0, 2, "--") == 0 && arg.find('=') == std::string::npos && TakesValue(arg.substr(2))) {
      if (!next("a value", &value)) return 2;
      flags[arg.substr(2)].push_back(value);
    } else if (SplitFlag(arg, &key, &value)) {
      flags[key].push_back(value);
    } else if (arg.size() == 3 && arg[0] == '-' && arg[1] == 'O' && arg[2] >= '0' && arg[2] <= '3') {
      flags["O"].push_back(arg.substr(2));
    } else if (!arg.empty() && arg[0] == '-') {
      err << "kiln-compile: unknown option '" << arg << "'\n" << kUsage;
      return 2;
    } else if (input.empty()) {
      input = arg;
    } else {
      err << "kiln-compile: more than one input file ('" << input << "' and '" << arg << "')\n";
      return 2;
    }
  }
  // The config file first, then the flags: a flag replaces the file's value.
  OptionValues merged;
  if (!config.empty()) {
    Result<OptionValues> file = ReadConfigFile(config, OptionNames());
    if (!file.ok()) {
      err << "kiln-compile: " << file.status().message() << "\n";
      return 2;
    }
    merged = *file;
  }
  for (const auto& kv : flags) merged[kv.first] = kv.second;
  Usage usage;
  if (!Apply(merged, &options, &output, &emit, &usage)) {
    err << "kiln-compile: " << usage.message << "\n";
    return 2;
  }
  if (input.empty()) {
    err << "kiln-compile: no input file\n" << kUsage;
    return 2;
  }
  if (emit == EmitKind::kVmfb && output.empty()) {
    err << "kiln-compile: no output file (-o OUT.vmfb)\n";
    return 2;
  }
  // The progress line shares `err` with nothing else: not with IR dumps or memory reports.
  bool quiet_err = options.dump_ir_before.empty() && options.dump_ir_after.empty() && !options.report_memory;
  bool terminal = &err == &std::cerr && isatty(STDERR_FILENO) == 1;
  std::unique_ptr<ProgressLine> line;
  if (quiet_err && (progress || terminal)) line.reset(new ProgressLine(err, input, terminal));
  if (emit == EmitKind::kVmfb) {
    Status s = CompileFile(input, output, options);
    if (line) line->Finish(s.ok());
    if (!s.ok()) {
      err << "kiln-compile: " << WithSourceLine(s, input).message() << "\n";
      return 1;
    }
    out << WroteLine(output);
    return 0;
  }
  CompileOptions effective;
  Result<ir::IRModule> mod = LoadModuleFile(input, options, &effective);
  Result<std::string> text = mod.ok() ? EmitText(*mod, emit, effective) : Result<std::string>(mod.status());
  if (line) line->Finish(text.ok());
  if (!mod.ok()) {
    err << "kiln-compile: " << mod.status().message() << "\n";
    return 1;
  }
  if (!text.ok()) {
    err << "kiln-compile: " << WithSourceLine(text.status(), input).message() << "\n";
    return 1;
  }
  if (output.empty()) {
    out << *text;
  } else {
    std::ofstream f(output, std::ios::binary);
    f << *text;
    f.close();
    if (!f) {
      err << "kiln-compile: cannot write '" << output << "'\n";
      return 1;
    }
    out << WroteLine(output);
  }
  return 0;
}

}  // namespace driver
}  // namespace kiln
