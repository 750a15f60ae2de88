// Status and Result<T>: the one error vocabulary of Kiln.
//
// A Status is OK (no allocation, a null pointer) or carries a code and a message.
// User errors (bad file, wrong shape, missing function) are Statuses; broken
// internal invariants use KILN_CHECK, which aborts with a location because
// continuing would compute garbage.
//
// Thread-compatible: a Status is a value; copies are independent.
#ifndef KILN_RUNTIME_STATUS_H_
#define KILN_RUNTIME_STATUS_H_

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace kiln {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,   // the caller passed something wrong (shape, dtype, value)
  kNotFound = 2,          // a named function, kernel, file or key does not exist
  kOutOfRange = 3,        // an index or size beyond its bound
  kDataLoss = 4,          // a corrupt or truncated file
  kUnimplemented = 5,     // valid input that Kiln does not support yet
  kFailedPrecondition = 6,// the object is not in a state that allows the call
  kResourceExhausted = 7, // out of memory or another capped resource
  kInternal = 8,          // a bug in Kiln; should not be reachable by any input
  kIncompatible = 9,      // a file for another format version, ABI or CPU
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);
  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "NotFound: message" or "OK".
  std::string ToString() const;

  // Prefixes the message with context ("loading model.vmfb: ..."); no-op on OK.
  Status& Annotate(const std::string& context);

  Status(const Status& other) : rep_(other.rep_ ? new Rep(*other.rep_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) rep_.reset(other.rep_ ? new Rep(*other.rep_) : nullptr);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

// printf-style message builder for error paths.
std::string StrFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

inline Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status OutOfRange(std::string m) { return Status(StatusCode::kOutOfRange, std::move(m)); }
inline Status DataLoss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
inline Status FailedPrecondition(std::string m) { return Status(StatusCode::kFailedPrecondition, std::move(m)); }
inline Status ResourceExhausted(std::string m) { return Status(StatusCode::kResourceExhausted, std::move(m)); }
inline Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status Incompatible(std::string m) { return Status(StatusCode::kIncompatible, std::move(m)); }

// Result<T>: a value or a non-OK Status. Never both, never neither.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : has_value_(true) { new (&storage_) T(std::move(value)); }  // NOLINT
  Result(Status status) : status_(std::move(status)) {                          // NOLINT
    if (status_.ok()) status_ = Internal("Result constructed from an OK status without a value");
  }
  Result(const Result& o) : status_(o.status_), has_value_(o.has_value_) {
    if (has_value_) new (&storage_) T(o.value());
  }
  Result(Result&& o) noexcept : status_(std::move(o.status_)), has_value_(o.has_value_) {
    if (has_value_) new (&storage_) T(std::move(o.value()));
  }
  Result& operator=(Result o) {
    Reset();
    status_ = std::move(o.status_);
    has_value_ = o.has_value_;
    if (has_value_) new (&storage_) T(std::move(o.value()));
    return *this;
  }
  ~Result() { Reset(); }

  bool ok() const { return has_value_; }
  const Status& status() const { return status_; }
  Status TakeStatus() { return std::move(status_); }

  T& value() & { return *reinterpret_cast<T*>(&storage_); }
  const T& value() const& { return *reinterpret_cast<const T*>(&storage_); }
  T&& value() && { return std::move(*reinterpret_cast<T*>(&storage_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void Reset() {
    if (has_value_) reinterpret_cast<T*>(&storage_)->~T();
    has_value_ = false;
  }
  Status status_;
  bool has_value_ = false;
  typename std::aligned_storage<sizeof(T), alignof(T)>::type storage_;
};

[[noreturn]] void CheckFailed(const char* file, int line, const char* cond, const std::string& msg);

}  // namespace kiln

#define KILN_CONCAT_INNER_(a, b) a##b
#define KILN_CONCAT_(a, b) KILN_CONCAT_INNER_(a, b)

// Returns the status of `expr` if it is not OK.
#define KILN_RETURN_IF_ERROR(expr)                 \
  do {                                             \
    ::kiln::Status kiln_status_ = (expr);          \
    if (!kiln_status_.ok()) return kiln_status_;   \
  } while (0)

// Same, prefixing the message with printf-style context.
#define KILN_RETURN_IF_ERROR_CTX(expr, ...)                                   \
  do {                                                                        \
    ::kiln::Status kiln_status_ = (expr);                                     \
    if (!kiln_status_.ok()) {                                                 \
      kiln_status_.Annotate(::kiln::StrFormat(__VA_ARGS__));                  \
      return kiln_status_;                                                    \
    }                                                                         \
  } while (0)

// `KILN_ASSIGN_OR_RETURN(auto x, MakeX());`
#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL_(KILN_CONCAT_(kiln_result_, __LINE__), lhs, expr)
#define KILN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.TakeStatus();           \
  lhs = std::move(tmp).value()

// Internal invariant; a failure is a Kiln bug, never a user error.
#define KILN_CHECK(cond, ...)                                                        \
  do {                                                                               \
    if (!(cond)) ::kiln::CheckFailed(__FILE__, __LINE__, #cond, ::kiln::StrFormat("" __VA_ARGS__)); \
  } while (0)

#endif  // KILN_RUNTIME_STATUS_H_
