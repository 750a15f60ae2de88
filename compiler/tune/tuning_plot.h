// The SVG plot of a whole-model tuning run (kiln-tune --plot FILE.svg),
// written by hand (no plotting dependency): on top, the model's estimated
// time (sum of calls x best time) against the trials of the run; below,
// each task's best time as a share of its default schedule's time against
// the same trial axis (a task's line starts at 100 % and falls when a
// candidate beats the default).
#ifndef KILN_COMPILER_TUNE_TUNING_PLOT_H_
#define KILN_COMPILER_TUNE_TUNING_PLOT_H_

#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace tune {

struct PlotSeries {
  std::string name;
  double default_us = 0;
  // (trial of the run, best time in us after it).
  std::vector<std::pair<int, double>> points;
};

struct TuningPlot {
  std::string title;
  int trials = 0;                                  // the x axis' end
  std::vector<std::pair<int, double>> model_us;   // (trial, estimated model time), from trial 0
  std::vector<PlotSeries> tasks;
};

std::string TuningPlotSvg(const TuningPlot& plot);

}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TUNING_PLOT_H_
