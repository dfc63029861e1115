// Errors and results shared by every module: the library never lets an exception escape its
// API; it returns Result<T>, whose Error says what kind of failure it was (mapped to exit codes).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace sp {

enum class ErrorKind {
  kBadInput,    // malformed or inconsistent input, or an infeasible request: exit 2
  kInternal,    // a bug or an environment failure (I/O): exit 1
};

struct Error {
  ErrorKind kind = ErrorKind::kInternal;  // what went wrong, for the exit code
  std::string message;                     // one line: where and what was expected
};

inline Error bad_input(std::string message) { return {ErrorKind::kBadInput, std::move(message)}; }
inline Error internal_error(std::string message) { return {ErrorKind::kInternal, std::move(message)}; }

// Process exit codes used by the CLI.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;

inline int exit_code(const Error& e) { return e.kind == ErrorKind::kBadInput ? kExitBadInput : kExitInternal; }

// A value or an Error. Deliberately small: ok(), value(), error().
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace sp
