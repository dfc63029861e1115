#include "core/json_reader.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unordered_set>

namespace sp {

std::string input_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

namespace {
// A UTF-8 byte-order mark (Windows tools write one before CSV and JSON text) is not content.
std::string without_bom(std::string text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  return text;
}
}  // namespace

Result<std::string> read_text_file(const std::string& path) {
  if (path.empty()) return bad_input("empty file name, expected a path or - for standard input");
  std::ostringstream ss;
  if (path == "-") {
    // Two arguments cannot both be standard input: the second would silently read nothing.
    static std::atomic<bool> used{false};
    if (used.exchange(true)) return bad_input("<stdin>: standard input was already read by another argument");
    ss << std::cin.rdbuf();
    return without_bom(ss.str());
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return bad_input(path + ": is a directory, expected a file");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return bad_input(path + ": cannot open file for reading" + (err ? std::string(": ") + std::strerror(err) : ""));
  }
  ss << in.rdbuf();
  if (in.bad()) return bad_input(path + ": read error");
  return without_bom(ss.str());
}

bool is_extension_key(const std::string& key) { return !key.empty() && key[0] == '_'; }

namespace {
// Optimal-string-alignment distance: a swap of two neighbours ("szie") counts as one edit.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}
}  // namespace

std::string closest_word(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  // Up to two edits (a third of the word for long keys), and never more edits than half the word.
  std::size_t best_d = std::min(std::max<std::size_t>(2, word.size() / 3), std::max<std::size_t>(1, word.size() / 2)) + 1;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

namespace {
// Thrown by the parse callback: a repeated key or nesting past kMaxJsonDepth, at `path`.
struct StructureError {
  std::string path, what;
};

// Builds the document as nlohmann's own DOM parser does (every event is passed on) and refuses
// what it would accept silently: a key repeated in one object (the last value would win) and
// nesting deep enough to exhaust a recursive reader's stack. Keeps the JSON path of the current
// node so that the error names where it is. (A SAX handler: nlohmann's parser callback made a
// 300k-buffer document 250 times slower to read.)
class GuardedDomParser {
 public:
  explicit GuardedDomParser(Json& result) : dom_(result, true) {}
  bool null() { return value_done(dom_.null()); }
  bool boolean(bool v) { return value_done(dom_.boolean(v)); }
  bool number_integer(Json::number_integer_t v) { return value_done(dom_.number_integer(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return value_done(dom_.number_unsigned(v)); }
  bool number_float(Json::number_float_t v, const std::string& text) { return value_done(dom_.number_float(v, text)); }
  bool string(std::string& v) { return value_done(dom_.string(v)); }
  bool binary(Json::binary_t& v) { return value_done(dom_.binary(v)); }
  bool start_object(std::size_t n) {
    open(true);
    return dom_.start_object(n);
  }
  bool key(std::string& k) {
    Frame& f = frames_.back();
    // Objects are small: a scan, until an object with many keys (a map by name) gets a set.
    bool repeated = false;
    if (f.keys.size() < 16) {
      repeated = std::find(f.keys.begin(), f.keys.end(), k) != f.keys.end();
    } else {
      if (f.many.empty()) f.many.insert(f.keys.begin(), f.keys.end());
      repeated = !f.many.insert(k).second;
    }
    if (repeated) throw StructureError{path(frames_.size() - 1), "duplicate key \"" + k + "\" (each key may appear once)"};
    f.keys.push_back(k);
    return dom_.key(k);
  }
  bool end_object() {
    frames_.pop_back();
    return value_done(dom_.end_object());
  }
  bool start_array(std::size_t n) {
    open(false);
    return dom_.start_array(n);
  }
  bool end_array() {
    frames_.pop_back();
    return value_done(dom_.end_array());
  }
  template <class Exception>  // (the parser passes the concrete type: parse_error carries the byte)
  bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    return dom_.parse_error(position, token, e);  // (throws the parse_error, as Json::parse does)
  }

 private:
  struct Frame {
    bool object;                    // an object (keys) or an array (indices)
    std::size_t index;              // array: the index of the element being read
    std::vector<std::string> keys;  // object: keys seen so far (the last one: the member being read)
    std::unordered_set<std::string> many;  // object: the same keys, once there are 16 or more
  };
  void open(bool object) {
    if (frames_.size() >= kMaxJsonDepth)
      throw StructureError{path(frames_.size()), "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
    frames_.push_back({object, 0, {}, {}});
  }
  bool value_done(bool ok) {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return ok;
  }
  // The path of frame `n` (frames 0..n-1 lead to it; n == size: the node being read now).
  std::string path(std::size_t n) const {
    std::string s = "$";
    for (std::size_t i = 0; i < n; ++i)
      s += frames_[i].object ? "." + frames_[i].keys.back() : "[" + std::to_string(frames_[i].index) + "]";
    return s;
  }
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<Frame> frames_;
};
}  // namespace

Result<Json> parse_json_text(const std::string& text, const std::string& source) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return bad_input(source + ": empty file, expected a JSON document");
  try {
    Json result;
    GuardedDomParser guard(result);
    Json::sax_parse(text, &guard);
    return result;
  } catch (const StructureError& e) {
    return bad_input(source + ": " + e.path + ": " + e.what);
  } catch (const Json::parse_error& e) {
    // Turn the byte offset into line:column for the user.
    std::size_t byte = e.byte == 0 ? 0 : e.byte - 1;
    if (byte > text.size()) byte = text.size();
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < byte; ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    std::string what = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line..."; keep the tail.
    auto pos = what.find(": ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    return bad_input(source + ":" + std::to_string(line) + ":" + std::to_string(col) + ": invalid JSON: " + what);
  } catch (const std::exception& e) {
    return bad_input(source + ": invalid JSON: " + e.what());
  }
}

Result<Json> read_json_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return parse_json_text(*text, input_name(path));
}

std::string describe_json(const Json& j) {
  std::string s;
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: s = j.dump(); break;
    case Json::value_t::boolean: return j.get<bool>() ? "true" : "false";
    default: s = j.dump(); break;
  }
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

void JsonCursor::fail(const std::string& what) const {
  throw JsonInputError(source_ + ": " + path_ + ": " + what);
}

bool JsonCursor::has(const std::string& key) const {
  return node_->is_object() && node_->contains(key) && !(*node_)[key].is_null();
}

void JsonCursor::require_object() const {
  if (!node_->is_object()) fail("expected an object, got " + describe_json(*node_));
}

void JsonCursor::expect_keys(const std::vector<std::string>& known) const {
  require_object();
  for (const auto& [key, value] : node_->items()) {
    if (is_extension_key(key) || std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string hint = closest_word(key, known);
    std::string what = "unknown key \"" + key + "\"";
    if (!hint.empty()) {
      what += " (did you mean \"" + hint + "\"?)";
    } else {
      what += " (expected";
      for (std::size_t i = 0; i < known.size() && i < 12; ++i) what += (i ? ", " : " ") + known[i];
      what += known.size() > 12 ? ", ...; " : "; ";
      what += "keys starting with _ are ignored)";
    }
    // A key with control or non-ASCII characters is quoted so the message stays one line.
    const bool plain = std::all_of(key.begin(), key.end(), [](char ch) { return ch >= 0x20 && ch < 0x7f; });
    const std::string shown = plain ? key : Json(key).dump(-1, ' ', true);
    if (!plain) what = "unknown key " + shown;
    JsonCursor(value, source_, path_ + "." + shown).fail(what);
  }
}

void JsonCursor::expect_format(const std::string& format, int64_t version) const {
  if (has("format") && at("format").as_string() != format)
    at("format").fail("expected \"" + format + "\", got " + describe_json(at("format").node()));
  if (has("version") && at("version").as_int() != version)
    at("version").fail("expected version " + std::to_string(version) + ", got " + describe_json(at("version").node()));
}

JsonCursor JsonCursor::at(const std::string& key) const {
  require_object();
  auto it = node_->find(key);
  if (it == node_->end()) fail("missing required field \"" + key + "\"");
  return JsonCursor(*it, source_, path_ + "." + key);
}

JsonCursor JsonCursor::at(std::size_t index) const {
  if (!node_->is_array()) fail("expected an array, got " + describe_json(*node_));
  if (index >= node_->size()) fail("index " + std::to_string(index) + " out of range");
  return JsonCursor((*node_)[index], source_, path_ + "[" + std::to_string(index) + "]");
}

std::size_t JsonCursor::array_size() const {
  if (!node_->is_array()) fail("expected an array, got " + describe_json(*node_));
  return node_->size();
}

std::vector<JsonCursor> JsonCursor::elements() const {
  std::vector<JsonCursor> out;
  std::size_t n = array_size();
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.emplace_back((*node_)[i], source_, path_ + "[" + std::to_string(i) + "]");
  return out;
}

int64_t JsonCursor::as_int() const {
  const Json& j = *node_;
  if (j.is_number_integer()) {
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail("expected an integer, got a number out of range");
    return j.get<int64_t>();
  }
  if (j.is_number_float()) {
    double d = j.get<double>();
    // 128.0 is accepted as 128: some writers emit integral floats.
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  fail("expected an integer, got " + describe_json(j));
}

int64_t JsonCursor::as_int_at_least(int64_t min) const {
  int64_t v = as_int();
  if (v < min) {
    if (min == 1) fail("expected a positive integer, got " + std::to_string(v));
    if (min == 0) fail("expected a non-negative integer, got " + std::to_string(v));
    fail("expected an integer >= " + std::to_string(min) + ", got " + std::to_string(v));
  }
  return v;
}

double JsonCursor::as_number() const {
  if (!node_->is_number()) fail("expected a number, got " + describe_json(*node_));
  double d = node_->get<double>();
  if (!std::isfinite(d)) fail("expected a finite number");
  return d;
}

std::string JsonCursor::as_string() const {
  if (!node_->is_string()) fail("expected a string, got " + describe_json(*node_));
  return node_->get<std::string>();
}

bool JsonCursor::as_bool() const {
  if (!node_->is_boolean()) fail("expected true or false, got " + describe_json(*node_));
  return node_->get<bool>();
}

std::vector<int64_t> JsonCursor::as_int_array(int64_t min) const {
  std::vector<int64_t> out;
  for (const auto& e : elements()) out.push_back(e.as_int_at_least(min));
  return out;
}

}  // namespace sp
