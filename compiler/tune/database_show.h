// kiln-tune --show DIR: what a tuning database holds and what kiln-compile
// --tuning-db takes from it, for people deciding whether a tuning run paid.
// For each workload (kernel) and each (target, kernel threads, cache regime)
// it was measured for: how many records, how many failed, the default
// schedule's time and the best record's in that run, whether a build applies
// the best record (it beat the default and no model-check verdict drops it)
// and, when it does or was dropped, the record's trace in readable form.
#ifndef KILN_COMPILER_TUNE_DATABASE_SHOW_H_
#define KILN_COMPILER_TUNE_DATABASE_SHOW_H_

#include <ostream>
#include <string>

#include "compiler/tune/database.h"

namespace kiln {
namespace tune {

void ShowDatabase(const Database& db, const std::string& dir, std::ostream& out);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_DATABASE_SHOW_H_
