#include "compiler/tune/tuning_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace kiln {
namespace tune {

namespace {

constexpr double kWidth = 760, kLeft = 80, kRight = 200, kPanel = 220, kTop = 40, kGap = 70;
const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                               "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Label(double v) {
  char buf[32];
  if (std::fabs(v) >= 100) snprintf(buf, sizeof buf, "%.0f", v);
  else snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// One panel: axes with ticks, y from lo to hi, at vertical offset `top`.
struct Panel {
  double top, lo, hi;
  int trials;
  double X(double t) const { return kLeft + (kWidth - kLeft - kRight) * (trials > 0 ? t / trials : 0); }
  double Y(double v) const { return top + kPanel * (hi > lo ? (hi - v) / (hi - lo) : 0.5); }
};

void Axes(std::ostringstream& os, const Panel& p, const std::string& ylabel) {
  double x0 = kLeft, x1 = kWidth - kRight;
  os << "<rect x=\"" << x0 << "\" y=\"" << p.top << "\" width=\"" << x1 - x0 << "\" height=\"" << kPanel
     << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    double v = p.lo + (p.hi - p.lo) * k / 4;
    double y = p.Y(v);
    os << "<line x1=\"" << x0 << "\" y1=\"" << Num(y) << "\" x2=\"" << x1 << "\" y2=\"" << Num(y)
       << "\" stroke=\"#ddd\"/>\n";
    os << "<text x=\"" << x0 - 6 << "\" y=\"" << Num(y + 4) << "\" text-anchor=\"end\">" << Label(v) << "</text>\n";
    double t = p.trials * k / 4.0;
    os << "<text x=\"" << Num(p.X(t)) << "\" y=\"" << p.top + kPanel + 16 << "\" text-anchor=\"middle\">"
       << Label(std::round(t)) << "</text>\n";
  }
  os << "<text x=\"" << x0 - 56 << "\" y=\"" << p.top + kPanel / 2 << "\" transform=\"rotate(-90 " << x0 - 56 << " "
     << p.top + kPanel / 2 << ")\" text-anchor=\"middle\">" << Escape(ylabel) << "</text>\n";
  os << "<text x=\"" << (x0 + x1) / 2 << "\" y=\"" << p.top + kPanel + 34 << "\" text-anchor=\"middle\">trials</text>\n";
}

// A step line (the best so far holds until the next trial that changes it).
void Steps(std::ostringstream& os, const Panel& p, const std::vector<std::pair<int, double>>& pts, int end,
           const char* color) {
  if (pts.empty()) return;
  os << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
  for (size_t i = 0; i < pts.size(); ++i) {
    if (i > 0) os << Num(p.X(pts[i].first)) << "," << Num(p.Y(pts[i - 1].second)) << " ";
    os << Num(p.X(pts[i].first)) << "," << Num(p.Y(pts[i].second)) << " ";
  }
  os << Num(p.X(end)) << "," << Num(p.Y(pts.back().second)) << "\"/>\n";
}

}  // namespace

std::string TuningPlotSvg(const TuningPlot& plot) {
  int trials = std::max(plot.trials, 1);
  double height = kTop + 2 * kPanel + kGap + 50;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << kLeft << "\" y=\"22\" font-size=\"15\">" << Escape(plot.title) << "</text>\n";

  // Top: the model's estimated time, in ms.
  double lo = 1e300, hi = 0;
  for (const auto& [t, us] : plot.model_us) {
    lo = std::min(lo, us / 1000);
    hi = std::max(hi, us / 1000);
  }
  if (plot.model_us.empty()) lo = 0, hi = 1;
  double pad = std::max((hi - lo) * 0.1, hi * 0.01);
  Panel top{kTop, std::max(0.0, lo - pad), hi + pad, trials};
  Axes(os, top, "estimated model time (ms)");
  std::vector<std::pair<int, double>> ms;
  for (const auto& [t, us] : plot.model_us) ms.push_back({t, us / 1000});
  Steps(os, top, ms, trials, "#000");

  // Below: each task's best as a share of its default.
  double rlo = 100;
  for (const auto& s : plot.tasks)
    for (const auto& [t, us] : s.points)
      if (s.default_us > 0) rlo = std::min(rlo, 100 * us / s.default_us);
  Panel bottom{kTop + kPanel + kGap, std::max(0.0, std::floor(rlo / 5) * 5 - 5), 102, trials};
  Axes(os, bottom, "task best / default (%)");
  for (size_t i = 0; i < plot.tasks.size(); ++i) {
    const PlotSeries& s = plot.tasks[i];
    if (!(s.default_us > 0)) continue;
    const char* color = kColors[i % (sizeof kColors / sizeof kColors[0])];
    std::vector<std::pair<int, double>> pts = {{0, 100}};
    for (const auto& [t, us] : s.points) pts.push_back({t, 100 * us / s.default_us});
    Steps(os, bottom, pts, trials, color);
    double ly = bottom.top + 12 + 16 * static_cast<double>(i);
    if (ly > bottom.top + kPanel + 40) continue;  // the legend is full
    os << "<line x1=\"" << kWidth - kRight + 10 << "\" y1=\"" << ly - 4 << "\" x2=\"" << kWidth - kRight + 30
       << "\" y2=\"" << ly - 4 << "\" stroke=\"" << color << "\" stroke-width=\"2\"/>\n";
    os << "<text x=\"" << kWidth - kRight + 34 << "\" y=\"" << ly << "\">" << Escape(s.name) << "</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace tune
}  // namespace kiln
