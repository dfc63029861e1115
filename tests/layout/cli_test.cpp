// The layout and divide verbs end to end: outputs, exit codes, one-line errors on bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "core/atomic_file.h"
#include "core/json_reader.h"

namespace sp {
namespace {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

CliRun run_cli(const std::string& args) {
  // Unique per call: ctest runs tests of this file in parallel processes.
  static int calls = 0;
  const std::string err_path = ::testing::TempDir() + "scratchplan_layout_cli_err_" + std::to_string(getpid()) + "_" +
                               std::to_string(calls++) + ".txt";
  const std::string cmd = std::string(SCRATCHPLAN_CLI) + " " + args + " 2>" + err_path;
  CliRun r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(f);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream e(err_path);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  std::remove(err_path.c_str());
  return r;
}

std::string example(const std::string& name) {
  return std::string(SCRATCHPLAN_SOURCE_DIR) + "/examples/programs/" + name + ".json";
}

void expect_bad(const std::string& args, const std::string& fragment) {
  CliRun r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << args << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
}

TEST(LayoutCli, PrintsSeedLayoutAndDma) {
  CliRun r = run_cli("layout --size 5,100,150 --dtype fp16");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("device_size=[100, 3, 5, 64], stride_map =[150, 64, 15000, 1]"), std::string::npos) << r.out;
  CliRun o = run_cli("layout --size 5,100,150 --dtype fp16 --dim-order 1,0,2");
  EXPECT_NE(o.out.find("device_size=[5, 3, 100, 64], stride_map =[15000, 64, 150, 1]"), std::string::npos) << o.out;
  CliRun d = run_cli("layout --size 1024,256 --dtype fp16 --dma");
  EXPECT_NE(d.out.find("((4, 1024, 64), (65536, 64, 1), (64, 256, 1))"), std::string::npos) << d.out;
  CliRun j = run_cli("layout --size 5,100,150 --dma --json");
  EXPECT_EQ(j.code, 0);
  auto js = parse_json_text(j.out, "stdout");
  ASSERT_TRUE(js.ok()) << j.out;
  EXPECT_EQ((*js)["device_bytes"], 192000);
  EXPECT_EQ((*js)["dma_host_to_device"].size(), 2u);
}

TEST(LayoutCli, BadInputExitsTwoWithOneLine) {
  expect_bad("layout --size 5,0,150", "--size 5,0,150: 0 is below 1");
  expect_bad("layout --size 5,-3", "is below 1");
  expect_bad("layout --size 5,x", "'x' is not an integer");
  expect_bad("layout --size 5,100 --dtype fp17", "unknown dtype 'fp17'");
  expect_bad("layout --size 5,100 --dtype fp9", "no device stick geometry");
  expect_bad("layout --size 5,100,150 --dim-order 1,1,2", "not a permutation");
  expect_bad("layout --size 5,100,150 --dim-order 0,1", "not a permutation");
  // Sizes whose strides overflow int64 (the fuzzer's case; UBSan flagged the stride product).
  expect_bad("layout --size 100,3,3,4611686018427387904 --dim-order 0,1,2,3", "larger than 2^40");
  expect_bad("layout --size 100,3,3,4611686018427387904 --dim-order 0,4,-1,0 --dma --json", "larger than 2^40");
}

TEST(DivideCli, DividesExamplesAndRejectsBadInput) {
  CliRun r = run_cli("divide " + example("moe_mlp") + " --cores 32");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("expert_up (matmul): 32 cores, splits d0=1 d1=1 d2=8 d3=4 (span floors d0=1 d1=1 d2=1 d3=4)"),
            std::string::npos)
      << r.out;
  CliRun j = run_cli("divide " + example("softmax_dim0") + " --cores 8 --json");
  EXPECT_EQ(j.code, 0) << j.err;
  auto js = parse_json_text(j.out, "stdout");
  ASSERT_TRUE(js.ok());
  EXPECT_EQ((*js)["ops"][0]["cores"], 8);
  EXPECT_GT((*js)["ops"][0]["candidates"].size(), 1u);
  expect_bad("divide " + example("matmul") + " --cores 33", "expected an integer 1..32");
  expect_bad("divide " + example("matmul") + " --cores 0", "expected an integer 1..32");
  expect_bad("divide /nonexistent/p.json", "/nonexistent/p.json");
  // An indexing map that does not match its operand's rank.
  const std::string bad = ::testing::TempDir() + "scratchplan_layout_cli_bad_program_" + std::to_string(getpid()) + ".json";
  std::ifstream in(example("matmul"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::string from = "\"(d0, d1, d2) -> (d0, d2)\"";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "\"(d0, d1, d2) -> (d0)\"");
  ASSERT_TRUE(write_file_atomic(bad, text).ok());
  expect_bad("divide " + bad, "map has 1 results but tensor 'a' has rank 2");
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace sp
