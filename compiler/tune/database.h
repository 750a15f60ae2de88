// The tuning database: one directory of two JSON-lines files.
//   workloads.jsonl  {"hash":"<16 hex>","name":"mm","func":"<module text of the PrimFunc>"}
//   records.jsonl    {"workload":"<hash>","target":"x86_64-pc-linux-gnu -mcpu=znver3",
//                     "trace":[...trace_json.h...],"state":"ok","median_us":12.5,"default_us":20.1,
//                     "times_us":[...],"message":"","threads":1,"cache":"warm"}
//                    (a cold-cache record: "cache":"cold","flush_bytes":67108864)
//   verdicts.jsonl   {"workload":"<hash>","target":"...","threads":1,"cache":"warm",
//                     "record":"<16 hex>","verdict":"drop","default_us":41.2,"tuned_us":47.9,
//                     "reason":"..."}   (optional; written by kiln-tune's model check)
// A verdict judges one record (named by RecordKey, the hash of its trace) in
// the whole model: kiln-tune built the model with and without the records
// and timed both, and "drop" says this record cost time there although it
// beat the default measured alone. The compiler does not apply a record
// whose latest verdict is "drop" (the workload keeps its default schedule,
// never a second-best record nobody checked); a newer, faster record of the
// workload has another key, so it applies until a later check judges it.
// The last verdict line for a record wins, so a check can reinstate one.
// A database without verdicts.jsonl (older ones) applies every record.
// A workload is a PrimFunc in block form, keyed by a structural hash: the
// FNV-1a hash of its printed text with the function renamed, its
// attributes dropped and its variables and buffers renamed v0, v1, ... in
// order of appearance, so the same function under another name (or from
// another file, or annotated by a pass, or a model's second equal kernel
// whose buffers are named after other Relax variables) is the same
// workload (a database written before names were ignored still loads: its
// hashes are mapped to these);
// a lookup also checks structural equality with the stored text, so a hash
// collision cannot apply a record to the wrong function.
//
// Lines are appended and flushed one at a time, so an interrupted run leaves
// every complete line usable. A damaged line (not JSON, fields missing, a
// record of an unknown workload) is reported as "FILE:LINE: why" and skipped;
// the rest loads. Thread-compatible.
#ifndef KILN_COMPILER_TUNE_DATABASE_H_
#define KILN_COMPILER_TUNE_DATABASE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "compiler/tir/schedule/trace.h"
#include "runtime/status.h"

namespace kiln {
namespace tune {

struct TuningRecord {
  std::string workload;  // hash
  std::string target;
  tir::Trace trace;
  std::string state = "ok";  // MeasureStateName of the measurement
  double median_us = 0;
  std::vector<double> times_us;
  // The default schedule's median in the same tuning run: the compiler
  // applies a record only when it beat the default (so tuning never makes a
  // kernel slower than it was measured to be).
  double default_us = 0;
  std::string message;
  // The kernel threads it was measured with (kiln-tune --threads), which is
  // also the thread hint its default schedule was planned for: a record
  // applies only to a build for the same count (kiln-compile --threads). A
  // line without the field (written before it was stored) reads as 1,
  // kiln-tune's default.
  int threads = 1;
  // How the times were measured: warm (the kernel called again and again,
  // its operands left in the caches by the call before) or cold (kiln-tune
  // --cold-cache: flush_bytes read before each timed call, cache_evict.h).
  // The two are not comparable (ResNet-18's classifier matmul: 19 us warm, 62
  // us cold), so a search, top_k and --tuning-db use one regime at a time. A
  // line without "cache" (written before it was stored) reads as warm.
  bool cold_cache = false;
  int64_t flush_bytes = 0;  // with cold_cache: the bytes each flush read
};

// kiln-tune's whole-model judgement of one record (verdicts.jsonl above).
struct TuningVerdict {
  std::string workload;  // hash
  std::string target;
  int threads = 1;
  bool cold_cache = false;
  std::string record;  // Database::RecordKey of the judged record
  bool drop = false;   // "drop" (not applied) or "keep"
  // The workload's kernels' time per model call in the model check, in the
  // default build and in the build with the record (medians over rounds).
  double default_us = 0;
  double tuned_us = 0;
  std::string reason;
};

// Which records a query takes, by how they were measured.
enum class CacheRegime { kAny, kWarm, kCold };

class Database {
 public:
  // Opens `dir`, creating it when absent. Damaged lines go to `damage` (may
  // be null) as statuses whose message is "FILE:LINE: why". Fails only when
  // the directory cannot be created or read.
  static Result<Database> Open(const std::string& dir, std::vector<Status>* damage);

  static std::string WorkloadHash(const ir::PrimFunc& func);

  // The hash of `func`'s workload, added (and written) when new.
  Result<std::string> CommitWorkload(const ir::PrimFunc& func);
  // Appends a record (its workload must be committed).
  Status CommitRecord(const TuningRecord& record);

  // The hash of the stored workload structurally equal to `func`, or "".
  std::string FindWorkload(const ir::PrimFunc& func) const;
  // The `k` fastest successful records of `workload` for `target` (and,
  // when `threads` > 0, measured with that many threads; and measured in
  // `cache`'s regime), fastest first.
  std::vector<TuningRecord> TopK(const std::string& workload, const std::string& target, size_t k,
                                 int threads = 0, CacheRegime cache = CacheRegime::kAny) const;
  // Every record of `workload` for `target` (and `threads` when > 0, and
  // `cache`'s regime; failed ones too), in file order.
  std::vector<TuningRecord> Records(const std::string& workload, const std::string& target, int threads = 0,
                                    CacheRegime cache = CacheRegime::kAny) const;
  // What a build applies to `workload` (kiln-compile --tuning-db): its
  // fastest record for `target`, `threads` and `cache`'s regime when that
  // beat the default schedule, unless (with `apply_verdicts`) its latest
  // verdict drops it; then nothing, and *dropped (may be null) is set.
  std::optional<TuningRecord> Selected(const std::string& workload, const std::string& target, int threads,
                                       CacheRegime cache, bool apply_verdicts, bool* dropped = nullptr) const;

  // A record's identity for verdicts: the hash of its trace's JSON.
  static std::string RecordKey(const TuningRecord& record);
  // Appends a verdict (its workload must be committed).
  Status CommitVerdict(const TuningVerdict& verdict);
  // The latest verdict on `record`, or null.
  const TuningVerdict* FindVerdict(const TuningRecord& record) const;

  // Every stored workload's hash, in hash order.
  std::vector<std::string> WorkloadHashes() const;
  // The name `hash` was committed under (its PrimFunc's name), or "".
  std::string WorkloadName(const std::string& hash) const;
  // Every record of `workload`, whatever its target, threads and regime (failed
  // ones too), in file order.
  std::vector<TuningRecord> AllRecords(const std::string& workload) const;

  size_t num_workloads() const { return workloads_.size(); }
  size_t num_records() const { return records_.size(); }

 private:
  struct Workload {
    std::string name;
    std::string text;
    ir::PrimFunc func;
  };
  Status AppendLine(const std::string& file, const std::string& line);

  std::string dir_;
  std::map<std::string, Workload> workloads_;
  std::vector<TuningRecord> records_;
  // By VerdictKey: the latest line wins.
  std::map<std::string, TuningVerdict> verdicts_;
};

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_DATABASE_H_
