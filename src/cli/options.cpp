#include "cli/options.h"

#include "core/flags.h"

#include "core/json_reader.h"

namespace sp::cli {

CLI::Validator count_in(int64_t lo, int64_t hi) {
  return CLI::Validator([lo, hi](std::string& in) { return flags::count_error(in, lo, hi); },
                        "INT in " + std::to_string(lo) + ".." + std::to_string(hi));
}

CLI::Validator seconds() {
  return CLI::Validator([](std::string& in) { return flags::seconds_error(in); }, "SECONDS >= 0");
}

CLI::Validator byte_size() {
  return CLI::Validator([](std::string& in) { return flags::bytes_error(in); }, "BYTES");
}

CLI::Validator bandwidth_gbps() {
  return CLI::Validator([](std::string& in) { return flags::gbps_error(in); }, "GB/s > 0");
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
  std::cerr << kErrorPrefix << m << "\n";
  return exit_code(e);
}

}  // namespace sp::cli
