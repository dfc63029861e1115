#include "core/json_reader.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace sp {

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad_input(path + ": cannot open file for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return bad_input(path + ": read error");
  return ss.str();
}

Result<Json> parse_json_text(const std::string& text, const std::string& source) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return bad_input(source + ": empty file, expected a JSON document");
  try {
    return Json::parse(text);
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
  return parse_json_text(*text, path);
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
