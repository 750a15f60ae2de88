// Profiler: records what a call context runs (each kernel, packed function,
// builtin and bytecode-function call, with the shapes of its arguments, and
// each top-level invocation), and reports it as a table or as a Chrome trace.
//
// It lives in the runtime (not vm/) because both the VM and the static graph
// executor record into it and the graph executor may not depend on the VM.
//
// Off by default: a context records only while a profiler is attached to it
// (vm::Context::set_profiler, graph_executor::GraphSession::set_profiler, the
// C API's kiln_context_enable_profiling). When none is attached, the
// interpreter tests one pointer per Call instruction and does nothing else.
//
// Events. Each event has a category (kProfileInvoke for a whole call of a
// function, then kernel / packed / builtin / function for what it ran), a
// name, the argument types as text ("float32[1, 784], float32[784, 128]"), a
// location ("main@12": function and bytecode word, or "main node 3") and its
// start and duration. A function call's event covers the events of what it
// called. The first max_events events are kept for the trace; the table
// counts every event, also those past the cap.
//
// Table: one row per (category, name, shapes), sorted by total time, with the
// count, the mean and the share of the total time of the top-level
// invocations (rows of nested calls overlap, so shares need not sum to 100%).
// Trace: {"traceEvents":[{"name","cat","ph":"X","ts","dur","pid","tid",
// "args":{"shapes","at"}}],"displayTimeUnit":"ns"} with times in
// microseconds since the profiler started, which chrome://tracing and
// Perfetto (ui.perfetto.dev) open.
//
// Thread-compatible: one thread records at a time (a profiler belongs to one
// context). Events carry the recording thread's small id, so one profiler
// shared by contexts used one after the other on different threads still
// tells the threads apart.
#ifndef KILN_RUNTIME_PROFILER_H_
#define KILN_RUNTIME_PROFILER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/any.h"
#include "runtime/span.h"
#include "runtime/status.h"

namespace kiln {

// Categories (static strings; events keep the pointer).
extern const char kProfileInvoke[];    // "invoke": a whole call from outside
extern const char kProfileKernel[];    // "kernel": a generated kernel
extern const char kProfilePacked[];    // "packed": a packed (library) function
extern const char kProfileBuiltin[];   // "builtin": a vm.builtin.*
extern const char kProfileFunction[];  // "function": a bytecode function called from bytecode

struct ProfileEvent {
  const char* category = kProfileKernel;
  std::string name;
  std::string shapes;
  std::string at;
  int64_t start_ns = 0;     // since the profiler was created or cleared
  int64_t duration_ns = 0;
  uint32_t thread = 0;      // small per-thread id, 1 for the first thread that records
};

struct ProfileRow {
  const char* category = kProfileKernel;
  std::string name;
  std::string shapes;
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
};

class Profiler {
 public:
  static constexpr size_t kDefaultMaxEvents = size_t(1) << 20;

  explicit Profiler(size_t max_events = kDefaultMaxEvents);

  // Nanoseconds on the monotonic clock.
  static int64_t Now();

  // Records an event that ran from `start` to `end` (values of Now()).
  // `category` must be one of the kProfile* strings above. Strings are
  // interned: recording allocates only for text it has not seen before (and
  // when the event list grows).
  void Record(const char* category, const std::string& name, const std::string& shapes, const std::string& at,
              int64_t start, int64_t end);

  // Forgets every event and row; times restart from now.
  void Clear();

  // The recorded events (at most max_events), in the order recorded.
  std::vector<ProfileEvent> Events() const;
  size_t num_events() const { return events_.size(); }
  // Events recorded past max_events (counted in the table, not in the trace).
  size_t dropped_events() const { return dropped_; }

  // The rows, sorted by total time (largest first).
  std::vector<ProfileRow> Summary() const;
  // Summary() as aligned text, with a header line giving the number of
  // invocations and their total time.
  std::string FormatTable() const;
  // The events as Chrome trace JSON.
  std::string ChromeTraceJson() const;
  // Writes ChromeTraceJson() to `path`; kInvalidArgument naming the path and
  // the reason when it cannot be written.
  Status WriteChromeTrace(const std::string& path) const;

 private:
  // Events and rows refer to text by its index in strings_.
  struct Event {
    const char* category;
    uint32_t name, shapes, at, thread;
    int64_t start_ns, duration_ns;
  };
  struct Row {
    const char* category;
    uint32_t name, shapes;
    int64_t count, total_ns, min_ns, max_ns;
  };
  struct RowKey {
    uint32_t name, shapes;
    char category;  // the first letter tells the kProfile* strings apart
    bool operator==(const RowKey& o) const { return name == o.name && shapes == o.shapes && category == o.category; }
  };
  struct RowKeyHash {
    size_t operator()(const RowKey& k) const {
      return std::hash<uint64_t>()((static_cast<uint64_t>(k.name) << 32 | k.shapes) * 31 + k.category);
    }
  };
  uint32_t Intern(const std::string& text);

  size_t max_events_;
  int64_t origin_ns_;
  std::vector<Event> events_;
  size_t dropped_ = 0;
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::unordered_map<RowKey, Row, RowKeyHash> rows_;
};

// Argument types as text for events: tensors as "float32[1, 784]", shapes as
// "shape(1, 784)", ints and floats by value, other values by kind; strings
// (context names of builtins) are left out.
std::string DescribeProfileArgs(Span<const Any> args);
// Appends one value's text (as above) to *out, with ", " before it unless
// *out is empty. Strings append nothing.
void AppendProfileArg(const Any& value, std::string* out);

}  // namespace kiln

#endif  // KILN_RUNTIME_PROFILER_H_
