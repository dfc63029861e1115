#include "cli/options.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/json_reader.h"

namespace sp::cli {
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

std::string shown(const std::string& s) { return s.size() > 24 ? s.substr(0, 21) + "..." : s; }

}  // namespace

CLI::Validator count_in(int64_t lo, int64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& in) -> std::string {
        int64_t v = 0;
        if (!parse_integer(in, v) || v < lo || v > hi) return "expected an integer " + range + ", got " + shown(in);
        return {};
      },
      "INT in " + range);
}

CLI::Validator seconds() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        double v = 0;
        if (!parse_number(in, v) || !std::isfinite(v) || v < 0 || v > kMaxSeconds)
          return "expected seconds, a finite number 0..1e6, got " + shown(in);
        return {};
      },
      "SECONDS >= 0");
}

CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        int64_t v = 0;
        if (!parse_integer(in, v) || v < 0 || v > kMaxBytes) return "expected a byte count 0..2^62, got " + shown(in);
        return {};
      },
      "BYTES");
}

CLI::Validator bandwidth_gbps() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        double v = 0;
        if (!parse_number(in, v) || !(v >= kMinGbps && v <= kMaxGbps))
          return "expected a bandwidth in GB/s, 1e-9..1e9, got " + shown(in);
        return {};
      },
      "GB/s");
}

CLI::Validator thread_count() { return count_in(1, kMaxThreads); }

Error located(Error e, const std::string& input_path) {
  const std::string name = input_name(input_path);
  const bool named = e.message.rfind(name + ":", 0) == 0 || e.message.rfind(name + " ", 0) == 0;
  if (e.kind == ErrorKind::kBadInput && !named && e.message.rfind("-", 0) != 0) e.message = name + ": " + e.message;
  return e;
}

int fail(const Error& e) {
  std::string m = e.message;
  for (char& c : m)
    if (c == '\n' || c == '\r') c = ' ';
  std::cout.flush();  // a report already printed comes before the error line when both share a pipe
  std::cerr << "error: " << m << "\n";
  return exit_code(e);
}

}  // namespace sp::cli
