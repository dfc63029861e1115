// Where users' own numbers and mistakes come in: repeated keys, deep nesting, pins past the
// capacity, pins in the bounds, every solver answering at scale, a proven schedule stopping, and
// the smaller help and message fixes (each exits 2 with one located line, or says what exists).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "cli/cli_test_util.h"

namespace sp::testing {
namespace {

const std::string kSrc = SCRATCHPLAN_SOURCE_DIR;

void expect_one_line_exit2(const CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(CliEdges, RepeatedKeyIsRefusedInEveryReader) {
  const std::string alloc = temp_file("dup_alloc.json", R"({"buffers": [{"id": "q", "size": 600, "size": 10, "start": 0, "end": 2}]})");
  expect_one_line_exit2(run_cli("alloc " + alloc + " --minimize -o -"), "dup_alloc.json: $.buffers[0]: duplicate key \"size\"");
  const std::string program = temp_file("dup_prog.json", R"({"tensors": {"x": {"shape": [4], "shape": [8]}}})");
  expect_one_line_exit2(run_cli("plan " + program + " -o -"), "dup_prog.json: $.tensors.x: duplicate key \"shape\"");
  const std::string hw = temp_file("dup_hw.json", R"({"lx_bytes": 1048576, "lx_bytes": 2097152})");
  expect_one_line_exit2(run_cli("plan " + kSrc + "/examples/programs/softmax_lastdim.json --hardware " + hw + " -o -"),
                        "duplicate key \"lx_bytes\"");
}

TEST(CliEdges, DeepNestingIsRefusedNotACrash) {
  // A kernel with 20,000 nested loop bodies ended in SIGSEGV.
  std::string body = "[]";
  for (int i = 0; i < 20000; ++i) body = "[{\"loop\": \"i\", \"body\": " + body + "}]";
  const std::string kernel = temp_file("deep_kernel.json", "{\"body\": " + body + "}");
  expect_one_line_exit2(run_cli("nki check " + kernel), "nesting deeper than 512 levels");
  const std::string alloc = temp_file("deep_alloc.json", std::string(30000, '[') + std::string(30000, ']'));
  expect_one_line_exit2(run_cli("alloc " + alloc + " --minimize -o -"), "deep_alloc.json: $[0]");
}

TEST(CliEdges, PinPastTheCapacityIsBadInputAndPinsBoundTheHeight) {
  const std::string p = temp_file("pin.json", R"({"buffers": [{"id": "pinned", "size": 40, "start": 0, "end": 4, "offset": 80},
                                                 {"id": "b", "size": 10, "start": 0, "end": 4}]})");
  for (const char* solver : {"auto", "firstfit", "exact", "annealing"})
    expect_one_line_exit2(run_cli("alloc " + p + " --capacity 100 --objective select --solver " + solver + " -o -"),
                          "buffer 'pinned': pinned at offset 80 with size 40, it ends at 120, past the capacity 100");
  const CommandResult r = run_cli("alloc " + p + " --minimize -o /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("height: 120 (lower bound 120, proven optimal)"), std::string::npos) << r.out;
}

TEST(CliEdges, CsvUnderAnotherNameIsReadByContent) {
  const std::string p = temp_file("buffers.txt", "id,lower,upper,size\na,0,2,16\nb,1,3,16\n");
  const CommandResult r = run_cli("alloc " + p + " --minimize -o /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("height: 32"), std::string::npos) << r.out;
}

TEST(CliEdges, UnknownFlagGetsADidYouMean) {
  expect_one_line_exit2(run_cli("alloc x.csv --capacty 100 -o -"), "unknown flag '--capacty' (did you mean '--capacity'?)");
  expect_one_line_exit2(run_cli("plan x.json --coers 4 -o -"), "unknown flag '--coers' (did you mean '--cores'?)");
  const CommandResult far = run_cli("layout --size 4 --zzzzzzzzzz");
  expect_one_line_exit2(far, "unknown flag '--zzzzzzzzzz' (flags: ");
}

TEST(CliEdges, HelpAndMessagesSayWhatExists) {
  const CommandResult help = run_cli("alloc --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("online"), std::string::npos);
  EXPECT_NE(help.out.find("(default: 10)"), std::string::npos);
  EXPECT_NE(help.out.find("- for standard input"), std::string::npos);
  expect_one_line_exit2(run_cli("plan " + kSrc + "/examples/programs/softmax_lastdim.json --hardware tpu -o -"),
                        "unknown hardware 'tpu' (expected spyre, or the path of a hardware JSON file)");
  const CommandResult v = run_program(SCRATCHPLAN_MLSYS, "--version");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("scratchplan"), std::string::npos);
}

TEST(CliEdges, FirstSubgraphsMissingInputNamesNoSubgraphMinusOne) {
  // Subgraph 0 reads the tensor subgraph 1 produces: it used to say "not retained by subgraph -1".
  const std::string solution = temp_file("e_s.json", R"({"subgraphs": [[1], [0]], "granularities": [[128, 128, 1], [128, 128, 1]],
    "tensors_to_retain": [[], []], "traversal_orders": [null, null], "subgraph_latencies": [0, 0]})");
  const CommandResult r = run_cli("evaluate " + kSrc + "/tests/data/mlsys2026/examples/ex1_problem.json " + solution);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("subgraph 0: input tensor 1 is not available (not in slow memory, and no subgraph runs before this one"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("subgraph -1"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("subgraph -1"), std::string::npos) << r.err;
}

// A proven optimum ends the search: schedule, mlsys and plan at the lower bound return well before
// a long limit (schedule ran to its limit after printing "gap 0.00 %").
TEST(CliEdges, ProvenOptimumStopsTheSearch) {
  const std::string problem = kSrc + "/tests/data/mlsys2026/benchmarks/mlsys-2026-1.json";
  auto timed = [](auto&& run) {
    const auto t0 = std::chrono::steady_clock::now();
    CommandResult r = run();
    return std::make_pair(r, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };
  auto [s, s_wall] = timed([&] { return run_cli("schedule " + problem + " -o /dev/null --time-limit 60 --verbose"); });
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.err.find("gap 0.00%"), std::string::npos) << s.err;
  EXPECT_LT(s_wall, 20.0);  // (a third of the limit: far from it even on a loaded machine)
  auto [m, m_wall] = timed([&] { return run_program(SCRATCHPLAN_MLSYS, problem + " /dev/null --time-limit 60"); });
  EXPECT_EQ(m.exit_code, 0) << m.err;
  EXPECT_LT(m_wall, 20.0);
  auto [p, p_wall] = timed([&] {
    return run_cli("plan " + kSrc + "/examples/programs/softmax_lastdim.json --cores 32 -o /dev/null --time-limit 60 --report");
  });
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_LT(p_wall, 20.0);
}

}  // namespace
}  // namespace sp::testing
