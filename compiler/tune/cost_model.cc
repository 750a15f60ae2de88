#include "compiler/tune/cost_model.h"

#include <xgboost/c_api.h>

#include <fstream>
#include <sstream>

#include "compiler/tune/features.h"

namespace kiln {
namespace tune {

namespace {

Status XgbError(const std::string& what) { return Internal("cost model: " + what + ": " + XGBGetLastError()); }

// Rounds per refit and tree settings: small trees on a few hundred samples,
// as MetaSchedule's XGBoost model uses (facts, not its code).
constexpr int kRounds = 40;

}  // namespace

CostModel::CostModel() = default;
CostModel::~CostModel() { Free(); }
CostModel::CostModel(CostModel&& o) noexcept
    : data_(std::move(o.data_)), scores_(std::move(o.scores_)), booster_(o.booster_) {
  o.booster_ = nullptr;
}
CostModel& CostModel::operator=(CostModel&& o) noexcept {
  if (this != &o) {
    Free();
    data_ = std::move(o.data_);
    scores_ = std::move(o.scores_);
    booster_ = o.booster_;
    o.booster_ = nullptr;
  }
  return *this;
}

void CostModel::Free() {
  if (booster_ != nullptr) XGBoosterFree(static_cast<BoosterHandle>(booster_));
  booster_ = nullptr;
}

void CostModel::Add(const std::vector<float>& features, float score) {
  data_.insert(data_.end(), features.begin(), features.end());
  scores_.push_back(score);
}

Status CostModel::Train() {
  if (scores_.empty()) return FailedPrecondition("cost model: no measurements to train on");
  DMatrixHandle dm = nullptr;
  if (XGDMatrixCreateFromMat(data_.data(), scores_.size(), kNumFeatures, -1.0f, &dm) != 0)
    return XgbError("creating the training matrix");
  Status st = Status::Ok();
  if (XGDMatrixSetFloatInfo(dm, "label", scores_.data(), scores_.size()) != 0) st = XgbError("setting labels");
  BoosterHandle b = nullptr;
  if (st.ok() && XGBoosterCreate(&dm, 1, &b) != 0) st = XgbError("creating the booster");
  const char* params[][2] = {{"max_depth", "6"}, {"eta", "0.2"},      {"min_child_weight", "1"},
                             {"nthread", "1"},   {"verbosity", "0"},  {"objective", "reg:squarederror"},
                             {"seed", "1"}};
  for (auto& p : params)
    if (st.ok() && XGBoosterSetParam(b, p[0], p[1]) != 0) st = XgbError(std::string("setting ") + p[0]);
  for (int i = 0; st.ok() && i < kRounds; ++i)
    if (XGBoosterUpdateOneIter(b, i, dm) != 0) st = XgbError("training");
  XGDMatrixFree(dm);
  if (!st.ok()) {
    if (b != nullptr) XGBoosterFree(b);
    return st;
  }
  Free();
  booster_ = b;
  return Status::Ok();
}

Result<std::vector<float>> CostModel::Predict(const std::vector<std::vector<float>>& rows) const {
  std::vector<float> out(rows.size(), 0.0f);
  if (booster_ == nullptr || rows.empty()) return out;
  std::vector<float> flat;
  flat.reserve(rows.size() * kNumFeatures);
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  DMatrixHandle dm = nullptr;
  if (XGDMatrixCreateFromMat(flat.data(), rows.size(), kNumFeatures, -1.0f, &dm) != 0)
    return XgbError("creating the prediction matrix");
  bst_ulong len = 0;
  const float* pred = nullptr;
  int rc = XGBoosterPredict(static_cast<BoosterHandle>(booster_), dm, 0, 0, 0, &len, &pred);
  if (rc == 0)
    for (bst_ulong i = 0; i < len && i < out.size(); ++i) out[i] = pred[i];
  XGDMatrixFree(dm);
  if (rc != 0) return XgbError("predicting");
  return out;
}

Status CostModel::Save(const std::string& path) const {
  if (booster_ == nullptr) return FailedPrecondition("cost model: nothing to save to " + path + " (not trained)");
  if (XGBoosterSaveModel(static_cast<BoosterHandle>(booster_), path.c_str()) != 0)
    return XgbError("saving " + path);
  // The samples too, one line each (score, then the features), so a later
  // run refits on them and its own instead of its own alone.
  std::ofstream out(path + ".samples");
  out.precision(9);
  for (size_t r = 0; r < scores_.size(); ++r) {
    out << scores_[r];
    for (int c = 0; c < kNumFeatures; ++c) out << ' ' << data_[r * kNumFeatures + c];
    out << '\n';
  }
  if (!out.good()) return Internal("cost model: cannot write " + path + ".samples");
  return Status::Ok();
}

Status CostModel::Load(const std::string& path) {
  if (!std::ifstream(path).good()) return NotFound("cost model: cannot read " + path);
  BoosterHandle b = nullptr;
  if (XGBoosterCreate(nullptr, 0, &b) != 0) return XgbError("creating the booster");
  if (XGBoosterLoadModel(b, path.c_str()) != 0) {
    Status st = XgbError("loading " + path);
    XGBoosterFree(b);
    return st;
  }
  Free();
  booster_ = b;
  // Samples saved with the model, when there (a line that does not hold a
  // score and kNumFeatures numbers is skipped).
  std::ifstream in(path + ".samples");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    float score = 0;
    std::vector<float> row(kNumFeatures);
    bool ok = static_cast<bool>(ls >> score);
    for (int c = 0; ok && c < kNumFeatures; ++c) ok = static_cast<bool>(ls >> row[c]);
    if (ok) Add(row, score);
  }
  return Status::Ok();
}

}  // namespace tune
}  // namespace kiln
