#include "runtime/kernel_cost.h"

#include <cctype>
#include <cmath>

namespace kiln {
namespace {

// Recursive descent over the grammar of kernel_cost.h; any error makes the
// whole value unknown.
class CostParser {
 public:
  CostParser(const std::string& text, const std::vector<KernelCostArg>& args) : s_(text), args_(args) {}

  std::optional<double> Parse() {
    std::optional<double> v = Expr();
    Skip();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void Skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool Eat(const char* token) {
    Skip();
    size_t n = std::char_traits<char>::length(token);
    if (s_.compare(pos_, n, token) != 0) return false;
    pos_ += n;
    return true;
  }
  std::optional<int64_t> Int() {
    Skip();
    size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (start == pos_ || pos_ - start > 18) return std::nullopt;
    return std::stoll(s_.substr(start, pos_ - start));
  }
  std::optional<double> Expr() {
    std::optional<double> v = Term();
    while (v) {
      if (Eat("+")) {
        std::optional<double> r = Term();
        v = r ? std::optional<double>(*v + *r) : std::nullopt;
      } else if (Eat("-")) {
        std::optional<double> r = Term();
        v = r ? std::optional<double>(*v - *r) : std::nullopt;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<double> Term() {
    std::optional<double> v = Atom();
    while (v) {
      if (Eat("//")) {
        std::optional<double> r = Atom();
        if (!r || *r == 0) return std::nullopt;
        v = std::floor(*v / *r);
      } else if (Eat("*")) {
        std::optional<double> r = Atom();
        v = r ? std::optional<double>(*v * *r) : std::nullopt;
      } else if (Eat("%")) {
        std::optional<double> r = Atom();
        if (!r || *r == 0) return std::nullopt;
        v = *v - std::floor(*v / *r) * *r;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<double> Atom() {
    if (Eat("(")) {
      std::optional<double> v = Expr();
      if (!Eat(")")) return std::nullopt;
      return v;
    }
    bool is_min = Eat("min");
    if (is_min || Eat("max")) {
      if (!Eat("(")) return std::nullopt;
      std::optional<double> a = Expr();
      if (!a || !Eat(",")) return std::nullopt;
      std::optional<double> b = Expr();
      if (!b || !Eat(")")) return std::nullopt;
      return is_min ? std::min(*a, *b) : std::max(*a, *b);
    }
    if (Eat("$")) {
      std::optional<int64_t> p = Int();
      if (!p || *p >= static_cast<int64_t>(args_.size())) return std::nullopt;
      const KernelCostArg& a = args_[static_cast<size_t>(*p)];
      if (pos_ < s_.size() && s_[pos_] == '.') {
        ++pos_;
        std::optional<int64_t> d = Int();
        if (!d || !a.is_tensor || *d >= static_cast<int64_t>(a.dims.size())) return std::nullopt;
        return static_cast<double>(a.dims[static_cast<size_t>(*d)]);
      }
      if (a.is_tensor) return std::nullopt;
      return static_cast<double>(a.value);
    }
    std::optional<int64_t> i = Int();
    if (!i) return std::nullopt;
    return static_cast<double>(*i);
  }

  const std::string& s_;
  const std::vector<KernelCostArg>& args_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<double> EvaluateKernelCost(const std::string& expr, const std::vector<KernelCostArg>& args) {
  if (expr.empty()) return std::nullopt;
  return CostParser(expr, args).Parse();
}

}  // namespace kiln
