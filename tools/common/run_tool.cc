#include "tools/common/run_tool.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>

#include "runtime/npy.h"
#include "runtime/vmfb_loader.h"
#include "tools/common/compare.h"
#include "tools/common/flags.h"
#include "tools/common/inline_tensor.h"
#include "tools/common/plugins.h"
#include "tools/common/prepared_call.h"
#include "tools/common/process_stats.h"

namespace kiln {
namespace tools {

const char kRunToolUsage[] =
    "usage: kiln-run FILE.vmfb [flags]\n"
    "  --function=NAME          the function to call (default main)\n"
    "  --input=SPEC             one per parameter, in order; SPEC is @x.npy, 2x3xf32=1,2,3,4,5,6,\n"
    "                           f32=1, 128x784xf32=random:SEED or 1x3x224x224xf32=@raw.bin\n"
    "  --output=@y.npy|-        the i-th result: save it as .npy, or '-' to print all its values\n"
    "                           (results without --output are printed abbreviated)\n"
    "  --expected_output=SPEC   compare the i-th result with SPEC; exit 1 on a mismatch\n"
    "  --atol=X --rtol=X        tolerance: |got - expected| <= atol + rtol * |expected| (1e-5, 1e-5)\n"
    "  --repeat=N               time N more calls; print the median and mean (the outputs are the\n"
    "                           last call's)\n"
    "  --threads=N              kernel threads (default: one per core)\n"
    "  --executor=auto|vm|graph the static graph where there is one (auto), the VM, or the graph only\n"
    "  --print-statistics       load time, call times, peak tensor memory, peak RSS\n"
    "  --verify                 check the weights against their checksum before running (the\n"
    "                           kernels' checksum is checked on every load)\n"
    "  --plugin=PATH            load a library of packed functions first (repeatable; kiln.h, \"Plugins\")\n"
    "  --device=cpu|cuda[:N]    where to run (default cpu); cuda: a module compiled with --target=cuda, on GPU N\n"
    "Flags take --flag=value or --flag value.\n";

Result<int> ParseDeviceFlag(const std::string& v) {
  if (v == "cpu") return -1;
  if (v == "cuda") return 0;
  std::string n = v.compare(0, 5, "cuda:") == 0 ? v.substr(5) : "";
  if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("expected cpu, cuda or cuda:N, got '" + v + "'");
  }
  return std::stoi(n);
}

Result<RunToolOptions> ParseRunToolArgs(int argc, const char* const* argv) {
  RunToolOptions o;
  FlagParser flags;
  flags.AddValue("function", [&](const std::string& v) -> Status {
    if (v.empty()) return InvalidArgument("empty function name");
    o.function = v;
    return Status::Ok();
  });
  flags.AddRepeated("input", &o.inputs);
  flags.AddValue("output", [&](const std::string& v) -> Status {
    if (v != "-" && (v.size() < 2 || v[0] != '@')) return InvalidArgument("expected @PATH.npy or -, got '" + v + "'");
    o.outputs.push_back(v);
    return Status::Ok();
  });
  flags.AddRepeated("expected_output", &o.expected_outputs);
  flags.AddDouble("atol", 0, &o.atol);
  flags.AddDouble("rtol", 0, &o.rtol);
  flags.AddInt("repeat", 1, 1000000000, &o.repeat);
  flags.AddInt("threads", 1, 1000000000, &o.threads);
  flags.AddChoice("executor", {"auto", "vm", "graph"}, &o.executor);
  flags.AddSwitch("print-statistics", &o.print_statistics);
  flags.AddSwitch("verify", &o.verify);
  flags.AddRepeated("plugin", &o.plugins);
  flags.AddValue("device", [&](const std::string& v) -> Status {
    KILN_ASSIGN_OR_RETURN(o.device, ParseDeviceFlag(v));
    return Status::Ok();
  });
  std::vector<std::string> positional;
  KILN_RETURN_IF_ERROR(flags.Parse(argc, argv, &positional));
  o.help = flags.help();
  if (positional.size() > 1) {
    return InvalidArgument("more than one module file: '" + positional[0] + "' and '" + positional[1] + "'");
  }
  if (!positional.empty()) o.module_path = positional[0];
  if (o.module_path.empty() && !o.help) return InvalidArgument("no .vmfb file given (see --help)");
  return o;
}

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Status RunTool(const RunToolOptions& o, std::ostream& out) {
  // Expected outputs are parsed before the module loads, like the inputs.
  std::vector<Tensor> expected;
  for (size_t i = 0; i < o.expected_outputs.size(); ++i) {
    Result<Tensor> t = ParseTensorArgument(o.expected_outputs[i]);
    if (!t.ok()) return t.TakeStatus().Annotate(StrFormat("--expected_output %zu", i + 1));
    expected.push_back(std::move(t).value());
  }
  // Before the module: loading resolves the packed functions it calls.
  KILN_RETURN_IF_ERROR(LoadPlugins(o.plugins));
  CallSpec spec;
  spec.module_path = o.module_path;
  spec.function = o.function;
  spec.inputs = o.inputs;
  spec.threads = o.threads;
  spec.executor = o.executor;
  spec.verify_weights = o.verify;
  spec.device = o.device;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<PreparedCall> prepared, PreparedCall::Create(spec));
  std::string note = NoChecksumsNote(prepared->module()->linked_program()->program);
  if (!note.empty()) out << "note: " << o.module_path << ": " << note << "\n";
  Any result;
  auto first_start = std::chrono::steady_clock::now();
  KILN_RETURN_IF_ERROR(prepared->Call(&result));
  double first_ms = MsSince(first_start);
  std::vector<double> ms;
  for (int r = 0; r < o.repeat; ++r) {
    Any again;
    auto start = std::chrono::steady_clock::now();
    Status s = prepared->Call(&again);
    ms.push_back(MsSince(start));
    KILN_RETURN_IF_ERROR_CTX(std::move(s), "repeat %d", r + 1);
    // The outputs shown, saved and compared are the last call's: a call that
    // repeats shapes runs differently from the first on the VM (it replays
    // the first calls' kernels, vm/call_plan.h), and this checks it.
    result = std::move(again);
  }
  std::vector<Any> outputs = FlattenOutputs(result);
  KILN_RETURN_IF_ERROR(prepared->OutputsToHost(&outputs));  // on a GPU they are in device memory
  if (o.outputs.size() > outputs.size()) {
    return InvalidArgument(StrFormat("%zu --output flags, but '%s' returned %zu outputs", o.outputs.size(),
                                     o.function.c_str(), outputs.size()));
  }
  if (expected.size() > outputs.size()) {
    return InvalidArgument(StrFormat("%zu --expected_output flags, but '%s' returned %zu outputs", expected.size(),
                                     o.function.c_str(), outputs.size()));
  }
  PrintOptions everything;
  everything.threshold = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i < o.outputs.size() && o.outputs[i] != "-") {
      std::string path = o.outputs[i].substr(1);
      if (!outputs[i].is_tensor()) {
        return InvalidArgument(StrFormat("output %zu is not a tensor (%s); it cannot be saved as .npy", i,
                                         outputs[i].Describe().c_str()));
      }
      KILN_RETURN_IF_ERROR_CTX(WriteNpyFile(outputs[i].tensor(), path), "output %zu", i);
      out << "output " << i << ": " << outputs[i].Describe() << " -> " << path << "\n";
    } else if (i < o.outputs.size()) {
      out << "output " << i << ": " << FormatValue(outputs[i], everything) << "\n";
    } else {
      out << "output " << i << ": " << FormatValue(outputs[i]) << "\n";
    }
  }
  std::string mismatch;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!outputs[i].is_tensor()) {
      return InvalidArgument(StrFormat("output %zu is not a tensor (%s); it cannot be compared", i,
                                       outputs[i].Describe().c_str()));
    }
    Result<CompareResult> c = CompareTensors(outputs[i].tensor(), expected[i], o.atol, o.rtol);
    if (!c.ok()) return c.TakeStatus().Annotate(StrFormat("output %zu against --expected_output %zu", i, i + 1));
    std::string text = DescribeComparison(*c, o.atol, o.rtol);
    out << "output " << i << ": " << (c->ok() ? "matches: " : "MISMATCH: ") << text << "\n";
    if (!c->ok() && mismatch.empty()) mismatch = StrFormat("output %zu: ", i) + text;
  }

  double median = 0, mean = 0;
  if (!ms.empty()) {
    for (double v : ms) mean += v;
    mean /= static_cast<double>(ms.size());
    std::sort(ms.begin(), ms.end());
    size_t n = ms.size();
    median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    out << StrFormat("time per call over %d calls: median %.4f ms, mean %.4f ms\n", o.repeat, median, mean);
  }
  if (o.print_statistics) {
    out << "statistics:\n";
    out << StrFormat("  load:        %.3f ms\n", prepared->load_seconds() * 1e3);
    out << StrFormat("  first call:  %.3f ms\n", first_ms);
    if (!ms.empty()) out << StrFormat("  later calls: median %.4f ms, mean %.4f ms (%d calls)\n", median, mean, o.repeat);
    out << StrFormat("  executor:    %s\n", prepared->uses_graph() ? "graph" : "vm");
    out << "  peak tensor memory (last call): " << FormatBytes(prepared->LastCallPeakBytes()) << "\n";
    out << "  peak RSS:    " << FormatBytes(PeakRssBytes()) << "\n";
  }
  if (!mismatch.empty()) return FailedPrecondition(mismatch);
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
