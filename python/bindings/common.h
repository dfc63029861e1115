// Shared by every bindings file: errors (Result -> scratchplan.BadInput / RuntimeError), JSON
// documents that arrive as a path or as JSON text from a dict, and running a long call on a
// worker thread with the GIL released while the caller's thread watches for Ctrl-C.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "core/deadline.h"
#include "core/json_reader.h"
#include "core/result.h"

namespace sp::bindings {

namespace py = pybind11;

// A message in Python's words: each command-line flag "--time-limit" becomes the keyword
// argument that sets it, "time_limit", and "give --capacity N" becomes "pass capacity=N" (the
// engines' checks and messages are shared with the CLI).
inline std::string python_words(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (std::size_t i = 0; i < message.size(); ++i) {
    if (message.compare(i, 7, "give --") == 0) {
      const std::size_t flag_end = message.find(' ', i + 7);
      if (flag_end != std::string::npos) {
        out += "pass ";
        for (std::size_t k = i + 7; k < flag_end; ++k) out += message[k] == '-' ? '_' : message[k];
        out += '=';
        i = flag_end;  // (the value follows the '=')
        continue;
      }
    }
    const bool starts_word = i == 0 || message[i - 1] == ' ' || message[i - 1] == '(' || message[i - 1] == '\'';
    if (starts_word && message.compare(i, 2, "--") == 0 && i + 2 < message.size() && std::islower(static_cast<unsigned char>(message[i + 2]))) {
      i += 2;
      for (; i < message.size() && (std::islower(static_cast<unsigned char>(message[i])) || message[i] == '-'); ++i)
        out += message[i] == '-' ? '_' : message[i];
      --i;
      continue;
    }
    out += message[i];
  }
  return out;
}

// Translated to scratchplan.BadInput (a ValueError) with the CLI's one-line message, in Python's words.
struct BadInputError : std::runtime_error {
  explicit BadInputError(const std::string& message) : std::runtime_error(python_words(message)) {}
};


[[noreturn]] inline void raise(const Error& e) {
  if (e.kind == ErrorKind::kBadInput) throw BadInputError(e.message);
  throw std::runtime_error(e.message);  // RuntimeError: an internal error
}

template <class T>
T take(Result<T>&& r) {
  if (!r) raise(r.error());
  return std::move(r).value();
}

inline void check(const Status& s) {
  if (!s) raise(s.error());
}

// A JSON document from Python: a path (read with the CLI's reader, so errors name the file) or
// JSON text produced by json.dumps of a dict, named `source` in messages ("<program>").
struct Doc {
  std::string data;    // path or JSON text
  std::string source;  // name in error messages when data is text
  bool is_path = false;
  const std::string& name() const { return is_path ? data : source; }
};

inline Result<Json> load_json(const Doc& d) {
  return d.is_path ? read_json_file(d.data) : parse_json_text(d.data, d.source);
}

// Runs f() on a worker thread while the calling thread waits with the GIL released, waking every
// 20 ms to run Python's signal handlers. When one raises (Ctrl-C -> KeyboardInterrupt) the worker's
// cancellation flag is set -- every Deadline the engines create under it expires -- the worker is
// joined and the Python exception propagates. Exceptions of f() are rethrown here.
template <class F>
auto run_cancellable(F&& f) -> decltype(f()) {
  using R = decltype(f());
  std::atomic<bool> cancel{false};
  std::optional<R> out;
  std::exception_ptr err;
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread worker([&] {
    CancelScope scope(&cancel);
    try {
      out.emplace(f());
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(m);
    done = true;
    cv.notify_all();
  });
  bool interrupted = false;
  for (;;) {
    bool finished;
    {
      py::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(m);
      finished = cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return done; });
    }
    if (finished) break;
    if (PyErr_CheckSignals() != 0) {
      interrupted = true;
      cancel = true;
      break;
    }
  }
  {
    py::gil_scoped_release nogil;
    worker.join();
  }
  if (interrupted) throw py::error_already_set();
  if (err) std::rethrow_exception(err);
  return std::move(*out);
}


}  // namespace sp::bindings

namespace sp::program {
struct Program;
}

namespace sp::bindings {

// A program from a path or JSON text (program.cpp), with the CLI's reader and messages.
program::Program load_program_doc(const Doc& d);

void bind_alloc(py::module_& m);
void bind_lx(py::module_& m);
void bind_nki(py::module_& m);
void bind_program(py::module_& m);
void bind_layout(py::module_& m);
void bind_workdiv(py::module_& m);
void bind_mlsys(py::module_& m);

}  // namespace sp::bindings
