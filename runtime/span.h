// Span<T>: a non-owning view of contiguous elements (C++17 has no std::span).
#ifndef KILN_RUNTIME_SPAN_H_
#define KILN_RUNTIME_SPAN_H_

#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <vector>

namespace kiln {

template <typename T>
class Span {
 public:
  constexpr Span() = default;
  constexpr Span(T* data, size_t size) : data_(data), size_(size) {}
  template <typename U>
  Span(const std::vector<U>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  template <typename U>
  Span(std::vector<U>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  // For read-only spans only: the list lives until the end of the full
  // expression, so `f({1, 2, 3})` is fine and storing the span is not.
  template <typename U = T, typename = std::enable_if_t<std::is_const<U>::value>>
  Span(std::initializer_list<std::remove_const_t<U>> l) : data_(l.begin()), size_(l.size()) {}  // NOLINT
  template <size_t N>
  constexpr Span(T (&a)[N]) : data_(a), size_(N) {}  // NOLINT

  constexpr T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }
  Span subspan(size_t offset, size_t count) const { return Span(data_ + offset, count); }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_SPAN_H_
