// A plain C++ implementation of the ONNX LSTM, GRU and RNN equations on
// doubles (layout 0), the reference of the operator tests
// (tests/ops/op_rnn_test.cc) and the ONNX end-to-end tests
// (tests/onnx/onnx_rnn_e2e_test.cc). Written from the ONNX operator
// documents, independently of compiler/relax/op_rnn.cc.
#ifndef KILN_TESTS_OPS_RNN_REFERENCE_H_
#define KILN_TESTS_OPS_RNN_REFERENCE_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rnnref {

struct Act {
  std::string name;  // as ONNX spells it
  double alpha = 0, beta = 0;
  int params = 0;  // how many of alpha, beta the op text carries
};

inline double Apply(const Act& a, double x) {
  const std::string& n = a.name;
  if (n == "Relu") return x > 0 ? x : 0;
  if (n == "Tanh") return std::tanh(x);
  if (n == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (n == "Affine") return a.alpha * x + a.beta;
  if (n == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (n == "ThresholdedRelu") return x > a.alpha ? x : 0;
  if (n == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (n == "HardSigmoid") return std::min(std::max(a.alpha * x + a.beta, 0.0), 1.0);
  if (n == "Elu") return x >= 0 ? x : a.alpha * (std::exp(x) - 1);
  if (n == "Softsign") return x / (1 + std::fabs(x));
  if (n == "Softplus") return std::log(1 + std::exp(x));
  ADD_FAILURE() << "unknown activation " << n;
  return 0;
}

// One case. `layout`, `symbolic` and `f64` say how a test feeds the operator; the
// reference itself works in layout 0.
struct Spec {
  std::string cell;  // "lstm", "gru", "rnn"
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t t = 4, b = 3, in = 5, h = 6;
  bool lens = false;
  bool h0_batch1 = false;  // initial states of batch 1, broadcast
  std::vector<Act> acts;   // empty: the defaults; else per direction (or once for both)
  double clip = 0;         // 0: none
  bool input_forget = false, lbr = false;
  bool symbolic = false;  // T and B as symbolic dims
  bool f64 = false;       // float64 tensors (else float32)
};

inline int Gates(const Spec& s) { return s.cell == "lstm" ? 4 : s.cell == "gru" ? 3 : 1; }
inline int64_t Dirs(const Spec& s) { return s.direction == "bidirectional" ? 2 : 1; }

inline std::vector<Act> Acts(const Spec& s) {
  std::vector<Act> a = s.acts;
  if (a.empty()) {
    if (s.cell == "lstm") a = {{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
    if (s.cell == "gru") a = {{"Sigmoid"}, {"Tanh"}};
    if (s.cell == "rnn") a = {{"Tanh"}};
  }
  size_t per = s.cell == "lstm" ? 3 : s.cell == "gru" ? 2 : 1;
  std::vector<Act> once = a;
  if (a.size() == per && Dirs(s) == 2) a.insert(a.end(), once.begin(), once.end());
  return a;
}

// The ONNX data of one case, layout 0, as doubles.
struct Data {
  std::vector<double> x, w, r, bias, h0, c0, p;  // x [T,B,I] w [D,GH,I] r [D,GH,H] bias [D,2GH] h0/c0 [D,B0,H] p [D,3H]
  std::vector<int64_t> lens;
};

// Y [T, D, B, H], Y_h and Y_c [D, B, H] (layout 0), by the ONNX equations.
inline void Reference(const Spec& s, const Data& v, std::vector<double>* y, std::vector<double>* yh, std::vector<double>* yc) {
  int64_t nd = Dirs(s), g = Gates(s), H = s.h, gh = g * H, I = s.in, B = s.b, T = s.t;
  std::vector<Act> acts = Acts(s);
  size_t per = acts.size() / static_cast<size_t>(nd);
  y->assign(static_cast<size_t>(T * nd * B * H), 0.0);
  yh->assign(static_cast<size_t>(nd * B * H), 0.0);
  yc->assign(yh->size(), 0.0);
  auto clip = [&](double x) { return s.clip > 0 ? std::min(std::max(x, -s.clip), s.clip) : x; };
  for (int64_t d = 0; d < nd; ++d) {
    bool rev = s.direction == "reverse" || d == 1;
    auto f = [&](int which, double x) { return Apply(acts[d * per + which], clip(x)); };
    for (int64_t b = 0; b < B; ++b) {
      int64_t at = (d * (s.h0_batch1 ? 1 : B) + (s.h0_batch1 ? 0 : b)) * H;
      std::vector<double> h(v.h0.begin() + at, v.h0.begin() + at + H);
      std::vector<double> c(v.c0.begin() + at, v.c0.begin() + at + H);
      int64_t len = v.lens[b];
      for (int64_t step = 0; step < len; ++step) {
        int64_t t = rev ? len - 1 - step : step;
        std::vector<double> xw(gh), hr(gh);
        for (int64_t n = 0; n < gh; ++n) {
          double a = v.bias[d * 2 * gh + n], q = v.bias[d * 2 * gh + gh + n];
          for (int64_t i = 0; i < I; ++i) a += v.x[(t * B + b) * I + i] * v.w[(d * gh + n) * I + i];
          for (int64_t k = 0; k < H; ++k) q += h[k] * v.r[(d * gh + n) * H + k];
          xw[n] = a;
          hr[n] = q;
        }
        std::vector<double> hn(H), cn(H);
        for (int64_t j = 0; j < H; ++j) {
          if (s.cell == "lstm") {
            const double* P = &v.p[d * 3 * H];
            double ig = f(0, xw[j] + hr[j] + P[j] * c[j]);
            double fg = s.input_forget ? 1 - ig : f(0, xw[2 * H + j] + hr[2 * H + j] + P[2 * H + j] * c[j]);
            double cg = f(1, xw[3 * H + j] + hr[3 * H + j]);
            cn[j] = fg * c[j] + ig * cg;
            double og = f(0, xw[H + j] + hr[H + j] + P[H + j] * cn[j]);
            hn[j] = og * f(2, cn[j]);
          } else if (s.cell == "gru") {
            double z = f(0, xw[j] + hr[j]);
            double r = f(0, xw[H + j] + hr[H + j]);
            double cand;
            if (s.lbr) {
              cand = f(1, xw[2 * H + j] + r * hr[2 * H + j]);
            } else {
              double q = v.bias[d * 2 * gh + gh + 2 * H + j];
              for (int64_t k = 0; k < H; ++k) {
                double rk = f(0, xw[H + k] + hr[H + k]);
                q += rk * h[k] * v.r[(d * gh + 2 * H + j) * H + k];
              }
              cand = f(1, xw[2 * H + j] + q);
            }
            hn[j] = (1 - z) * cand + z * h[j];
          } else {
            hn[j] = f(0, xw[j] + hr[j]);
          }
        }
        h = hn;
        if (s.cell == "lstm") c = cn;
        for (int64_t j = 0; j < H; ++j) (*y)[((t * nd + d) * B + b) * H + j] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        (*yh)[(d * B + b) * H + j] = h[j];
        (*yc)[(d * B + b) * H + j] = c[j];
      }
    }
  }
}

}  // namespace rnnref
}  // namespace kiln

#endif  // KILN_TESTS_OPS_RNN_REFERENCE_H_
