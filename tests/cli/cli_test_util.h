// Helpers for tests that run the scratchplan binary: temp files and captured output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace sp::testing {

struct CommandResult {
  int exit_code = -1;   // process exit status, -1 if it did not exit normally
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs `<program> <args>` through the shell; stdout and stderr are captured separately.
inline CommandResult run_program(const std::string& program, const std::string& args) {
  namespace fs = std::filesystem;
  static int counter = 0;
  fs::path dir = fs::temp_directory_path() / ("sp_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string base = (dir / std::to_string(counter++)).string();
  std::string cmd = program + " " + args + " >" + base + ".out 2>" + base + ".err";
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  fs::remove(base + ".out");
  fs::remove(base + ".err");
  return r;
}

// Runs `scratchplan <args>`.
inline CommandResult run_cli(const std::string& args) { return run_program(SCRATCHPLAN_CLI, args); }

// A file in a per-process temp directory holding `content`.
inline std::string temp_file(const std::string& name, const std::string& content) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sp_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p) << content;
  return p.string();
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace sp::testing
