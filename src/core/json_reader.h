// Reading JSON input with errors that locate the problem: a syntax error names the file, line
// and column; a type error names the file and the JSON path ($.ops[3].size) and what was expected.
// Inside readers a JsonInputError is thrown; read_* entry points turn it into Result errors.
// Strict input: every reader lists the keys of each object it reads (expect_keys); any other key
// is rejected with a did-you-mean hint, except extension keys, which start with "_" and are
// ignored everywhere (comments, tool annotations). A path of "-" reads standard input.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/result.h"

namespace sp {

using Json = nlohmann::json;

// Thrown only inside readers; never crosses the library API.
struct JsonInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Deepest nesting of arrays and objects any reader accepts: far beyond real inputs (a kernel's
// loop nest is a few levels), low enough that the recursive readers stay within their stacks.
inline constexpr std::size_t kMaxJsonDepth = 512;

// Parses text as JSON; `source` names the file in error messages. A key repeated in one object
// and nesting deeper than kMaxJsonDepth are bad input (named by their JSON path), so that a typo
// never silently changes what is read.
Result<Json> parse_json_text(const std::string& text, const std::string& source);
// Reads and parses a file ("-": standard input).
Result<Json> read_json_file(const std::string& path);
// Reads a whole file into a string ("-": standard input, which can be read only once per process).
// A directory, a missing file or an unreadable one is a one-line bad-input error.
Result<std::string> read_text_file(const std::string& path);
// The name of `path` in messages: "<stdin>" for "-", else the path.
std::string input_name(const std::string& path);

// A key the readers ignore: it starts with "_" (e.g. "_comment", "_generator").
bool is_extension_key(const std::string& key);
// The candidate closest to `word` by edit distance when it is close enough to be a likely typo
// (distance <= max(1, |word| / 3)), else "".
std::string closest_word(const std::string& word, const std::vector<std::string>& candidates);

// A located view of one JSON node.
class JsonCursor {
 public:
  JsonCursor(const Json& node, std::string source, std::string path = "$")
      : node_(&node), source_(std::move(source)), path_(std::move(path)) {}

  const Json& node() const { return *node_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return source_; }

  bool has(const std::string& key) const;                 // object with this key, not null
  JsonCursor at(const std::string& key) const;            // required member
  JsonCursor at(std::size_t index) const;                 // array element
  std::size_t array_size() const;                         // requires an array
  std::vector<JsonCursor> elements() const;               // requires an array
  void require_object() const;
  // Requires an object whose keys are all in `known` or extension keys; otherwise fails at the
  // first unknown key: unknown key "graph_ouput" (did you mean "graph_output"?).
  void expect_keys(const std::vector<std::string>& known) const;
  // Optional "format"/"version" header of our own files: when present they must match.
  void expect_format(const std::string& format, int64_t version) const;
  bool is_null() const { return node_->is_null(); }

  int64_t as_int() const;                                 // integral number
  int64_t as_int_at_least(int64_t min) const;             // integral number >= min
  double as_number() const;                               // any finite number
  std::string as_string() const;
  bool as_bool() const;
  std::vector<int64_t> as_int_array(int64_t min) const;   // array of integers >= min

  // Throws JsonInputError "<source>: <path>: <what>".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const Json* node_;
  std::string source_;
  std::string path_;
};

// Short description of a JSON value for "got ..." parts of messages.
std::string describe_json(const Json& j);

}  // namespace sp
