#include "runtime/profiler.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "runtime/dtype.h"
#include "runtime/tensor.h"

namespace kiln {

const char kProfileInvoke[] = "invoke";
const char kProfileKernel[] = "kernel";
const char kProfilePacked[] = "packed";
const char kProfileBuiltin[] = "builtin";
const char kProfileFunction[] = "function";

namespace {

// Small, stable thread ids for the trace's "tid" (1, 2, ... in the order
// threads first record), readable in Perfetto unlike pthread ids.
uint32_t ThreadId() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t id = next.fetch_add(1);
  return id;
}

void AppendDims(const int64_t* dims, size_t n, std::string* out) {
  for (size_t i = 0; i < n; ++i) {
    if (i) *out += ", ";
    *out += std::to_string(dims[i]);
  }
}

// JSON string body: quotes, backslashes and control characters escaped.
void AppendJsonString(const std::string& s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

// Microseconds with nanosecond precision, as the trace format wants.
void AppendMicros(int64_t ns, std::string* out) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  *out += buf;
}

}  // namespace

Profiler::Profiler(size_t max_events) : max_events_(max_events), origin_ns_(Now()) {}

int64_t Profiler::Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint32_t Profiler::Intern(const std::string& text) {
  auto it = string_ids_.find(text);
  if (it != string_ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(strings_.size());
  strings_.push_back(text);
  string_ids_.emplace(text, id);
  return id;
}

void Profiler::Record(const char* category, const std::string& name, const std::string& shapes,
                      const std::string& at, int64_t start, int64_t end) {
  int64_t duration = end - start;
  uint32_t name_id = Intern(name), shapes_id = Intern(shapes);
  RowKey key{name_id, shapes_id, category[0]};
  auto it = rows_.find(key);
  if (it == rows_.end()) {
    it = rows_.emplace(key, Row{category, name_id, shapes_id, 0, 0, duration, duration}).first;
  }
  Row& row = it->second;
  ++row.count;
  row.total_ns += duration;
  row.min_ns = std::min(row.min_ns, duration);
  row.max_ns = std::max(row.max_ns, duration);

  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(Event{category, name_id, shapes_id, Intern(at), ThreadId(), start - origin_ns_, duration});
}

void Profiler::Clear() {
  events_.clear();
  rows_.clear();
  strings_.clear();
  string_ids_.clear();
  dropped_ = 0;
  origin_ns_ = Now();
}

std::vector<ProfileEvent> Profiler::Events() const {
  std::vector<ProfileEvent> out;
  out.reserve(events_.size());
  for (const Event& e : events_) {
    ProfileEvent p;
    p.category = e.category;
    p.name = strings_[e.name];
    p.shapes = strings_[e.shapes];
    p.at = strings_[e.at];
    p.start_ns = e.start_ns;
    p.duration_ns = e.duration_ns;
    p.thread = e.thread;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<ProfileRow> Profiler::Summary() const {
  std::vector<ProfileRow> rows;
  rows.reserve(rows_.size());
  for (const auto& kv : rows_) {
    const Row& r = kv.second;
    ProfileRow p;
    p.category = r.category;
    p.name = strings_[r.name];
    p.shapes = strings_[r.shapes];
    p.count = r.count;
    p.total_ns = r.total_ns;
    p.min_ns = r.min_ns;
    p.max_ns = r.max_ns;
    rows.push_back(std::move(p));
  }
  std::sort(rows.begin(), rows.end(), [](const ProfileRow& a, const ProfileRow& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    if (a.name != b.name) return a.name < b.name;
    return a.shapes < b.shapes;
  });
  return rows;
}

std::string Profiler::FormatTable() const {
  std::vector<ProfileRow> rows = Summary();
  int64_t invocations = 0, invoke_ns = 0;
  for (const ProfileRow& r : rows) {
    if (std::strcmp(r.category, kProfileInvoke) == 0) {
      invocations += r.count;
      invoke_ns += r.total_ns;
    }
  }
  // Shares are of the invocations' time; without any, of all rows' time.
  int64_t base_ns = invoke_ns;
  if (base_ns == 0) {
    for (const ProfileRow& r : rows) base_ns += r.total_ns;
  }
  std::string out = StrFormat("profile: %lld invocation%s, %.3f us in total", static_cast<long long>(invocations),
                              invocations == 1 ? "" : "s", static_cast<double>(invoke_ns) / 1e3);
  if (dropped_ > 0) out += StrFormat(" (%zu events past the trace's cap: counted here, not traced)", dropped_);
  out += "\n";
  size_t name_width = 4;
  for (const ProfileRow& r : rows) name_width = std::max(name_width, r.name.size());
  name_width = std::min<size_t>(name_width, 48);
  out += StrFormat("%12s %7s %8s %10s  %-8s  %-*s  %s\n", "total us", "share", "count", "mean us", "kind",
                   static_cast<int>(name_width), "name", "shapes");
  for (const ProfileRow& r : rows) {
    double share = base_ns > 0 ? 100.0 * static_cast<double>(r.total_ns) / static_cast<double>(base_ns) : 0.0;
    double mean_us = r.count > 0 ? static_cast<double>(r.total_ns) / static_cast<double>(r.count) / 1e3 : 0.0;
    out += StrFormat("%12.3f %6.1f%% %8lld %10.3f  %-8s  %-*s  %s\n", static_cast<double>(r.total_ns) / 1e3, share,
                     static_cast<long long>(r.count), mean_us, r.category, static_cast<int>(name_width),
                     r.name.c_str(), r.shapes.c_str());
  }
  return out;
}

std::string Profiler::ChromeTraceJson() const {
  std::string out = "{\"traceEvents\":[";
  bool first = true;
  for (const Event& e : events_) {
    out += first ? "\n" : ",\n";
    first = false;
    out += "{\"name\":";
    AppendJsonString(strings_[e.name], &out);
    out += ",\"cat\":";
    AppendJsonString(e.category, &out);
    out += ",\"ph\":\"X\",\"ts\":";
    AppendMicros(e.start_ns, &out);
    out += ",\"dur\":";
    AppendMicros(e.duration_ns, &out);
    out += ",\"pid\":1,\"tid\":" + std::to_string(e.thread) + ",\"args\":{\"shapes\":";
    AppendJsonString(strings_[e.shapes], &out);
    out += ",\"at\":";
    AppendJsonString(strings_[e.at], &out);
    out += "}}";
  }
  out += "\n],\"displayTimeUnit\":\"ns\"}\n";
  return out;
}

Status Profiler::WriteChromeTrace(const std::string& path) const {
  std::string json = ChromeTraceJson();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return InvalidArgument("cannot write the trace to '" + path + "': " + std::strerror(errno));
  }
  size_t written = std::fwrite(json.data(), 1, json.size(), f);
  int close_rc = std::fclose(f);
  if (written != json.size() || close_rc != 0) {
    return InvalidArgument("cannot write the trace to '" + path + "': " + std::strerror(errno));
  }
  return Status::Ok();
}

void AppendProfileArg(const Any& v, std::string* out) {
  if (v.is_string()) return;
  if (!out->empty()) *out += ", ";
  switch (v.kind()) {
    case AnyKind::kTensor: {
      const DLTensor& dl = v.tensor_obj()->dl;
      *out += DTypeToString(DType::FromDL(dl.dtype));
      *out += '[';
      AppendDims(dl.shape, static_cast<size_t>(dl.ndim), out);
      *out += ']';
      return;
    }
    case AnyKind::kShape:
      *out += "shape(";
      AppendDims(v.shape_dims().data(), v.shape_dims().size(), out);
      *out += ')';
      return;
    case AnyKind::kInt: *out += std::to_string(v.int_value()); return;
    case AnyKind::kFloat: *out += StrFormat("%g", v.float_value()); return;
    case AnyKind::kNone: *out += "none"; return;
    case AnyKind::kTuple: *out += StrFormat("tuple(%zu)", v.tuple_fields().size()); return;
    default: *out += "object"; return;
  }
}

std::string DescribeProfileArgs(Span<const Any> args) {
  std::string out;
  for (const Any& a : args) AppendProfileArg(a, &out);
  return out;
}

}  // namespace kiln
