#include "tools/common/run_tool.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>

#include "graph_executor/graph_session.h"
#include "runtime/thread_pool.h"
#include "tools/common/inline_tensor.h"
#include "tools/common/npy.h"
#include "tools/common/prepared_call.h"
#include "vm/module.h"

namespace kiln {
namespace tools {

const char kRunToolUsage[] =
    "usage: kiln-run FILE.vmfb [--function=main] [--input=SPEC]... [--output=@y.npy]...\n"
    "                [--repeat=N] [--threads=N] [--executor=auto|vm|graph]\n"
    "  SPEC: @x.npy, 2x3xf32=1,2,3,4,5,6, f32=1 or 128x784xf32=random:SEED\n";

namespace {

Result<int> ParsePositive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v <= 0 || v > 1000000000) {
    return InvalidArgument(flag + ": '" + text + "' is not a positive integer");
  }
  return static_cast<int>(v);
}

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

}  // namespace

Result<RunToolOptions> ParseRunToolArgs(int argc, const char* const* argv) {
  RunToolOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value_of = [&](const char* flag) -> const char* {
      size_t n = std::char_traits<char>::length(flag);
      if (arg.compare(0, n, flag) == 0 && arg.size() > n && arg[n] == '=') return arg.c_str() + n + 1;
      return nullptr;
    };
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (const char* v = value_of("--function")) {
      if (*v == '\0') return InvalidArgument("--function: empty function name");
      o.function = v;
    } else if (const char* v = value_of("--input")) {
      o.inputs.push_back(v);
    } else if (const char* v = value_of("--output")) {
      if (v[0] != '@' || v[1] == '\0') {
        return InvalidArgument(std::string("--output: expected @PATH.npy, got '") + v + "'");
      }
      o.output_paths.push_back(v + 1);
    } else if (const char* v = value_of("--repeat")) {
      KILN_ASSIGN_OR_RETURN(o.repeat, ParsePositive("--repeat", v));
    } else if (const char* v = value_of("--threads")) {
      KILN_ASSIGN_OR_RETURN(o.threads, ParsePositive("--threads", v));
    } else if (const char* v = value_of("--executor")) {
      o.executor = v;
      if (o.executor != "auto" && o.executor != "vm" && o.executor != "graph") {
        return InvalidArgument("--executor: '" + o.executor + "' is not auto, vm or graph");
      }
    } else if (arg.size() > 1 && arg[0] == '-') {
      return InvalidArgument("unknown flag '" + arg + "' (see --help)");
    } else if (o.module_path.empty()) {
      o.module_path = arg;
    } else {
      return InvalidArgument("more than one module file: '" + o.module_path + "' and '" + arg + "'");
    }
  }
  if (o.module_path.empty() && !o.help) return InvalidArgument("no .vmfb file given (see --help)");
  return o;
}

Status RunTool(const RunToolOptions& o, std::ostream& out) {
  CallSpec spec;
  spec.module_path = o.module_path;
  spec.function = o.function;
  spec.inputs = o.inputs;
  spec.threads = o.threads;
  spec.executor = o.executor;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<PreparedCall> prepared, PreparedCall::Create(spec));
  auto call = [&](Any* result) { return prepared->Call(result); };
  Any result;
  KILN_RETURN_IF_ERROR(call(&result));
  std::vector<Any> outputs = FlattenOutputs(result);
  if (o.output_paths.size() > outputs.size()) {
    return InvalidArgument(StrFormat("%zu --output flags, but '%s' returned %zu outputs", o.output_paths.size(),
                                     o.function.c_str(), outputs.size()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i < o.output_paths.size()) {
      if (!outputs[i].is_tensor()) {
        return InvalidArgument(StrFormat("output %zu is not a tensor (%s); it cannot be saved as .npy", i,
                                         outputs[i].Describe().c_str()));
      }
      KILN_RETURN_IF_ERROR_CTX(WriteNpyFile(outputs[i].tensor(), o.output_paths[i]), "output %zu", i);
      out << "output " << i << ": " << outputs[i].Describe() << " -> " << o.output_paths[i] << "\n";
    } else {
      out << "output " << i << ": " << FormatValue(outputs[i]) << "\n";
    }
  }

  if (o.repeat > 0) {
    std::vector<double> ms;
    ms.reserve(static_cast<size_t>(o.repeat));
    for (int r = 0; r < o.repeat; ++r) {
      Any again;
      auto start = std::chrono::steady_clock::now();
      Status s = call(&again);
      auto stop = std::chrono::steady_clock::now();
      KILN_RETURN_IF_ERROR_CTX(std::move(s), "repeat %d", r + 1);
      ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    double mean = 0;
    for (double v : ms) mean += v;
    mean /= static_cast<double>(ms.size());
    std::sort(ms.begin(), ms.end());
    size_t n = ms.size();
    double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    out << StrFormat("time per call over %d calls: median %.4f ms, mean %.4f ms\n", o.repeat, median, mean);
  }
  return Status::Ok();
}

int RunToolMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Result<RunToolOptions> options = ParseRunToolArgs(argc, argv);
  if (!options.ok()) {
    err << "kiln-run: error: " << OneLine(options.status().message()) << "\n";
    return 2;
  }
  if (options->help) {
    out << kRunToolUsage;
    return 0;
  }
  Status s = RunTool(*options, out);
  if (!s.ok()) {
    err << "kiln-run: error: " << OneLine(s.message()) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tools
}  // namespace kiln
