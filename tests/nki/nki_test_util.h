// Helpers shared by the NKI tests: bundled examples, inline kernels, running the CLI.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "nki/kernel.h"

namespace sp::nki::testing {

inline std::string example(const std::string& name) {
  return std::string(SCRATCHPLAN_SOURCE_DIR) + "/examples/nki/" + name;
}

inline Kernel load_example(const std::string& name) {
  auto k = read_kernel(example(name));
  EXPECT_TRUE(k.ok()) << (k.ok() ? "" : k.error().message);
  return k.ok() ? *k : Kernel{};
}

inline Result<Kernel> parse(const std::string& text) {
  auto j = parse_json_text(text, "inline.json");
  if (!j) return j.error();
  return kernel_from_json(*j, "inline.json");
}

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

inline CliRun run_cli(const std::string& args) {
  CliRun r;
  std::string cmd = std::string(SCRATCHPLAN_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string temp_file(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << content;
  return path;
}

}  // namespace sp::nki::testing
