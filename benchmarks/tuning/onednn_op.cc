// oneDNN's primitive for one operator of benchmarks/tuning/worst_shapes.py,
// timed the way that script times Kiln: plain layouts (NCHW / OIHW / row
// major, the same memory contract as Kiln's kernels; no reorder to blocked
// layouts), float32, inputs filled once, warm-up calls, then the median of
// the timed calls in microseconds on stdout. One thread when the script sets
// OMP_NUM_THREADS=1. Built by worst_shapes.py with the system's libdnnl:
//   c++ -O2 -std=c++17 onednn_op.cc -ldnnl -o onednn_op
// Usage:
//   onednn_op conv N C H W O KH KW SH SW PT PL PB PR GROUPS BIAS RELU
//   onednn_op matmul M K N BIAS RELU
//   onednn_op softmax ROWS COLS
//   onednn_op maxpool N C H W K S P
//   onednn_op mean ROWS COLS          (mean over the last axis)
// plus `--calls N` (timed calls, default 200), `--warmup N` (default 20) and,
// for conv, `--blocked`: the layouts oneDNN prefers (format_tag any, e.g.
// nChw16c) for the input, weights and output, the reorders not timed (what a
// framework that keeps blocked layouts between layers pays).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

namespace {

void Fill(const memory& m, int seed) {
  auto* p = static_cast<float*>(m.get_data_handle());
  size_t n = m.get_desc().get_size() / sizeof(float);
  uint32_t s = 12345u + 977u * static_cast<uint32_t>(seed);
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = static_cast<float>((s >> 9) & 0xffff) / 65536.0f - 0.5f;
  }
}

int Usage() {
  std::fprintf(stderr,
               "usage: onednn_op conv N C H W O KH KW SH SW PT PL PB PR GROUPS BIAS RELU | matmul M K N BIAS RELU |"
               " softmax ROWS COLS | maxpool N C H W K S P | mean ROWS COLS [--calls N] [--warmup N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  int calls = 200, warmup = 20;
  bool blocked = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--blocked") {
      blocked = true;
    } else if ((a == "--calls" || a == "--warmup") && i + 1 < argc) {
      (a == "--calls" ? calls : warmup) = std::atoi(argv[++i]);
    } else {
      pos.push_back(a);
    }
  }
  if (pos.empty() || calls < 1) return Usage();
  std::vector<int64_t> v;
  for (size_t i = 1; i < pos.size(); ++i) v.push_back(std::atoll(pos[i].c_str()));
  const std::string& kind = pos[0];

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  auto add = [&](int arg, const memory::desc& md, int seed) {
    memory m(md, eng);
    Fill(m, seed);
    args.insert({arg, m});
  };
  dnnl::primitive_attr attr;
  auto relu_attr = [&](bool relu) {
    if (!relu) return;
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
  };

  if (kind == "conv" && v.size() == 16) {
    int64_t n = v[0], c = v[1], h = v[2], w = v[3], o = v[4], kh = v[5], kw = v[6], sh = v[7], sw = v[8];
    int64_t pt = v[9], pl = v[10], pb = v[11], pr = v[12], g = v[13];
    bool bias = v[14] != 0, relu = v[15] != 0;
    int64_t oh = (h + pt + pb - kh) / sh + 1, ow = (w + pl + pr - kw) / sw + 1;
    memory::desc x({n, c, h, w}, dt::f32, blocked ? tag::any : tag::nchw);
    memory::desc y({n, o, oh, ow}, dt::f32, blocked ? tag::any : tag::nchw);
    memory::desc wt = g == 1 ? memory::desc({o, c, kh, kw}, dt::f32, blocked ? tag::any : tag::oihw)
                             : memory::desc({g, o / g, c / g, kh, kw}, dt::f32, blocked ? tag::any : tag::goihw);
    memory::desc b({o}, dt::f32, tag::x);
    relu_attr(relu);
    auto d = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                   dnnl::algorithm::convolution_direct, x, wt, b, y, {sh, sw},
                                                   {pt, pl}, {pb, pr})
                  : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                   dnnl::algorithm::convolution_direct, x, wt, y, {sh, sw},
                                                   {pt, pl}, {pb, pr});
    dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
    prim = dnnl::convolution_forward(pd);
    add(DNNL_ARG_SRC, pd.src_desc(), 1);  // the layouts it chose (plain unless --blocked)
    add(DNNL_ARG_WEIGHTS, pd.weights_desc(), 2);
    if (bias) add(DNNL_ARG_BIAS, b, 3);
    add(DNNL_ARG_DST, pd.dst_desc(), 4);
  } else if (kind == "matmul" && v.size() == 5) {
    int64_t m = v[0], k = v[1], n = v[2];
    bool bias = v[3] != 0, relu = v[4] != 0;
    memory::desc a({m, k}, dt::f32, tag::ab), bw({k, n}, dt::f32, tag::ab), c({m, n}, dt::f32, tag::ab);
    memory::desc b({1, n}, dt::f32, tag::ab);
    relu_attr(relu);
    auto d = bias ? dnnl::matmul::desc(a, bw, b, c) : dnnl::matmul::desc(a, bw, c);
    dnnl::matmul::primitive_desc pd(d, attr, eng);
    prim = dnnl::matmul(pd);
    add(DNNL_ARG_SRC, a, 1);
    add(DNNL_ARG_WEIGHTS, bw, 2);
    if (bias) add(DNNL_ARG_BIAS, b, 3);
    add(DNNL_ARG_DST, c, 4);
  } else if (kind == "softmax" && v.size() == 2) {
    memory::desc x({v[0], v[1]}, dt::f32, tag::ab);
    dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, x, 1);
    dnnl::softmax_forward::primitive_desc pd(d, eng);
    prim = dnnl::softmax_forward(pd);
    add(DNNL_ARG_SRC, x, 1);
    add(DNNL_ARG_DST, x, 2);
  } else if (kind == "maxpool" && v.size() == 7) {
    int64_t n = v[0], c = v[1], h = v[2], w = v[3], k = v[4], s = v[5], p = v[6];
    int64_t oh = (h + 2 * p - k) / s + 1, ow = (w + 2 * p - k) / s + 1;
    memory::desc x({n, c, h, w}, dt::f32, tag::nchw), y({n, c, oh, ow}, dt::f32, tag::nchw);
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, x, y, {s, s},
                                  {k, k}, {p, p}, {p, p});
    dnnl::pooling_forward::primitive_desc pd(d, eng);
    prim = dnnl::pooling_forward(pd);
    add(DNNL_ARG_SRC, x, 1);
    add(DNNL_ARG_DST, y, 2);
  } else if (kind == "mean" && v.size() == 2) {
    memory::desc x({v[0], v[1]}, dt::f32, tag::ab), y({v[0], 1}, dt::f32, tag::ab);
    dnnl::reduction::desc d(dnnl::algorithm::reduction_mean, x, y, 0.0f, 0.0f);
    dnnl::reduction::primitive_desc pd(d, eng);
    prim = dnnl::reduction(pd);
    add(DNNL_ARG_SRC, x, 1);
    add(DNNL_ARG_DST, y, 2);
  } else {
    return Usage();
  }

  for (int i = 0; i < warmup; ++i) prim.execute(strm, args);
  strm.wait();
  std::vector<double> us(calls);
  for (int i = 0; i < calls; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    prim.execute(strm, args);
    strm.wait();
    us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  std::nth_element(us.begin(), us.begin() + calls / 2, us.end());
  std::printf("%.3f\n", us[calls / 2]);
  return 0;
}
