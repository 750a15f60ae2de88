// The tuner's learned cost model: gradient-boosted trees (XGBoost's C API)
// from a candidate's features (features.h) to its score, the default
// schedule's time divided by the candidate's (higher is faster; a failed
// candidate scores 0). Scores relative to the default make measurements of
// different kernels comparable, so one model serves every task and is kept
// beside the database (cost_model.json) to be reused by later runs.
//
// Trained online: Add() each measurement, Train() refits on all of them
// (the sets are small, a refit takes milliseconds). Before the first Train
// the model is untrained and Predict ranks nothing (all zeros).
// Only compiler/tune and tools/kiln-tune link XGBoost; the runtime does not.
#ifndef KILN_COMPILER_TUNE_COST_MODEL_H_
#define KILN_COMPILER_TUNE_COST_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace kiln {
namespace tune {

class CostModel {
 public:
  CostModel();
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Pre: features.size() == kNumFeatures.
  void Add(const std::vector<float>& features, float score);
  size_t num_samples() const { return scores_.size(); }
  bool trained() const { return booster_ != nullptr; }

  // Refits on every sample added. Fails when XGBoost refuses (its message).
  Status Train();
  // One score per row; zeros when untrained.
  Result<std::vector<float>> Predict(const std::vector<std::vector<float>>& rows) const;

  // The trained booster as XGBoost JSON at `path`, and the samples it was
  // trained on at `path`.samples (text, one per line). Save fails when
  // untrained. Load replaces the booster and adds the saved samples (a later
  // Train refits on them and the new ones); a damaged file is an error and
  // keeps the model as it was.
  Status Save(const std::string& path) const;
  Status Load(const std::string& path);

 private:
  void Free();
  std::vector<float> data_;  // row-major, kNumFeatures per row
  std::vector<float> scores_;
  void* booster_ = nullptr;  // BoosterHandle
};

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_COST_MODEL_H_
