#include "core/flags.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace sp::flags {
namespace {

bool parse_integer(const std::string& s, int64_t& v) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

bool parse_number(const std::string& s, double& v) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// Long values are cut so the message stays one short line.
std::string shown(const std::string& s) { return s.size() > 24 ? s.substr(0, 21) + "..." : s; }

}  // namespace

std::string count_error(const std::string& in, int64_t lo, int64_t hi) {
  int64_t v = 0;
  if (!parse_integer(in, v) || v < lo || v > hi)
    return "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + shown(in);
  return {};
}

std::string seconds_error(const std::string& in) {
  double v = 0;
  if (!parse_number(in, v) || !std::isfinite(v) || v < 0 || v > kMaxSeconds)
    return "expected seconds, a finite number 0..1e6, got " + shown(in);
  return {};
}

std::string bytes_error(const std::string& in) {
  int64_t v = 0;
  if (!parse_integer(in, v) || v < 0 || v > kMaxBytes) return "expected a byte count 0..2^62, got " + shown(in);
  return {};
}

std::string gbps_error(const std::string& in) {
  double v = 0;
  if (!parse_number(in, v) || !(v >= kMinGbps && v <= kMaxGbps))
    return "expected a bandwidth in GB/s, 1e-9..1e9, got " + shown(in);
  return {};
}

std::string member_error(const std::string& in, const std::vector<std::string>& words) {
  for (const auto& w : words)
    if (w == in) return {};
  std::string set;
  for (std::size_t i = 0; i < words.size(); ++i) set += (i ? "," : "") + words[i];
  return in + " not in {" + set + "}";
}

}  // namespace sp::flags
