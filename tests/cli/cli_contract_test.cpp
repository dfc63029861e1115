// The CLI's promises across verbs (issue 11 items 9-12 and 14): output paths checked before any
// work and all outputs or none; one flag rule per kind of value; unknown JSON keys rejected with
// a hint in every reader; one-line located errors; "-" for stdin/stdout; format/version keys.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <tuple>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace sp::testing {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = SCRATCHPLAN_SOURCE_DIR;
const std::string kSoftmax = kSrc + "/examples/programs/softmax_lastdim.json";
const std::string kMlp = kSrc + "/examples/mlsys/mlp_block.json";
const std::string kMlpSolution = kSrc + "/examples/mlsys/mlp_block_solution.json";
const std::string kKernel = kSrc + "/examples/nki/load_exp.json";

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void expect_one_line_exit2(const CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 400u) << r.err;
}

std::string alloc_problem() {
  return temp_file("contract_alloc.json",
                   R"({"capacity": 1000, "buffers": [{"id": "a", "start": 0, "end": 2, "size": 100},
                       {"id": "b", "start": 1, "end": 3, "size": 200}]})");
}

// ---- item 9: output paths ----------------------------------------------------------------------

TEST(CliContract, UnwritableOutputFailsAtOnceWithExit2) {
  const std::string bad = (fs::temp_directory_path() / "sp_no_such_dir" / "plan.json").string();
  struct Case {
    std::string args;
  };
  const std::vector<std::string> cases = {
      "plan " + kSoftmax + " --time-limit 30 -o " + bad,
      "schedule " + kMlp + " --time-limit 30 -o " + bad,
      "alloc " + alloc_problem() + " --time-limit 30 -o " + bad,
      "nki plan " + kKernel + " --time-limit 30 -o " + bad,
      "nki check " + kKernel + " --svg " + bad,
  };
  for (const auto& args : cases) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = run_cli(args);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect_one_line_exit2(r, "sp_no_such_dir");
    EXPECT_LT(s, 15.0) << args;  // not after the 30 s budget
  }
}

TEST(CliContract, FailingSvgLeavesNoPlanBehind) {
  const std::string out = (fs::temp_directory_path() / ("sp_contract_" + std::to_string(::getpid()) + ".json")).string();
  fs::remove(out);
  const std::string dir_as_svg = fs::temp_directory_path().string();  // a directory cannot be written as a file
  for (const std::string& args :
       {"plan " + kSoftmax + " --time-limit 0.1 -o " + out + " --svg " + dir_as_svg,
        "alloc " + alloc_problem() + " -o " + out + " --svg " + dir_as_svg,
        "nki plan " + kKernel + " --time-limit 0.1 -o " + out + " --svg " + dir_as_svg}) {
    auto r = run_cli(args);
    expect_one_line_exit2(r, "is a directory");
    EXPECT_FALSE(fs::exists(out)) << args;
  }
  auto same = run_cli("plan " + kSoftmax + " -o " + out + " --svg " + out);
  expect_one_line_exit2(same, "same file");
}

// ---- item 10: flag values ----------------------------------------------------------------------

TEST(CliContract, OutOfRangeFlagsAreRejected) {
  const std::string p = alloc_problem();
  for (const std::string& args : {
           "plan " + kSoftmax + " --cores -1", "plan " + kSoftmax + " --cores 0", "plan " + kSoftmax + " --stage 0",
           "plan " + kSoftmax + " --stage 5", "plan " + kSoftmax + " --capacity -5", "plan " + kSoftmax + " --hbm-gbps 0",
           "plan " + kSoftmax + " --hbm-gbps nan", "plan " + kSoftmax + " --time-limit -1",
           "schedule " + kMlp + " -o x.json --time-limit -1", "schedule " + kMlp + " -o x.json --time-limit nan",
           "schedule " + kMlp + " -o x.json --threads 1000", "schedule " + kMlp + " -o x.json --threads 0",
           "schedule " + kMlp + " -o x.json --max-segment-ops 0",
           "schedule " + kMlp + " -o x.json --iterations 10 --time-limit 1", "alloc " + p + " -o x.json --capacity -5",
           "alloc " + p + " -o x.json --time-limit inf", "alloc " + p + " -o x.json --objective select --minimize",
           "alloc " + p + " -o x.json --solver nope", "alloc " + p + " -o x.json --solver sweep --seed 3",
           "alloc " + p + " -o x.json --solver greedy --threads 2", "alloc " + p + " -o x.json --solver annealing --exact-off memo",
           "alloc " + p + " -o x.json --solver exact --iterations 5", "alloc " + p + " -o x.json --exact-off nope", "divide " + kSoftmax + " --cores 33",
           "nki plan " + kKernel + " --max-buffers 0", "nki plan " + kKernel + " --single --max-buffers 4",
           "nki plan " + kKernel + " --time-limit nan"}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_LT(r.err.size(), 200u) << args << "\n" << r.err;  // no 300-digit ranges
  }
  auto cap = run_cli("plan " + kSoftmax + " --capacity -5");
  EXPECT_NE(cap.err.find("--capacity"), std::string::npos) << cap.err;
  EXPECT_NE(cap.err.find("-5"), std::string::npos) << cap.err;
}

// ---- item 11: unknown keys ---------------------------------------------------------------------

TEST(CliContract, UnknownKeysAreRejectedWithAHint) {
  auto prog = nlohmann::json::parse(slurp(kSoftmax));
  prog["tensors"][5].erase("graph_output");
  prog["tensors"][5]["graph_ouput"] = true;
  auto r = run_cli("plan " + temp_file("typo_prog.json", prog.dump()));
  expect_one_line_exit2(r, "$.tensors[5].graph_ouput: unknown key \"graph_ouput\" (did you mean \"graph_output\"?)");
  r = run_cli("divide " + temp_file("typo_prog.json", prog.dump()));
  expect_one_line_exit2(r, "did you mean \"graph_output\"");

  r = run_cli("plan " + kSoftmax + " --hardware " + temp_file("typo_hw.json", R"({"lx_byts": 1048576})"));
  expect_one_line_exit2(r, "did you mean \"lx_bytes\"");

  auto kernel = nlohmann::json::parse(slurp(kSrc + "/examples/nki/mod_alloc_double.json"));
  for (auto& t : kernel["tensors"])
    if (t.contains("alloc")) {
      t["alocc"] = t["alloc"];
      t.erase("alloc");
      break;
    }
  r = run_cli("nki check " + temp_file("typo_kernel.json", kernel.dump()));
  expect_one_line_exit2(r, "did you mean \"alloc\"");
  auto other = nlohmann::json::parse(slurp(kSrc + "/examples/nki/mod_alloc_double.json"));
  for (auto& t : other["tensors"])
    if (t.contains("alloc")) {
      t["alloc"]["byte_addr"] = "idx * 4";  // a func key on a mod_alloc: was silently ignored
      break;
    }
  r = run_cli("nki check " + temp_file("other_kind.json", other.dump()));
  expect_one_line_exit2(r, ".alloc.byte_addr: does not apply to a mod_alloc allocation");
  kernel["hardware"] = {{"partitons", 128}};  // inline hardware: located once, not "file: $.hardware: file: ..."
  const std::string k2 = temp_file("typo_inline_hw.json", kernel.dump());
  r = run_cli("nki check " + k2);
  expect_one_line_exit2(r, k2 + ": $.hardware.partitons: unknown key \"partitons\" (did you mean \"partitions\"?)");
  EXPECT_EQ(r.err.find(k2), r.err.rfind(k2)) << r.err;

  auto problem = nlohmann::json::parse(slurp(kMlp));
  problem["fast_memory_capacty"] = 1;
  r = run_cli("schedule " + temp_file("typo_problem.json", problem.dump()) + " -o x.json");
  expect_one_line_exit2(r, "did you mean \"fast_memory_capacity\"");

  auto sol = nlohmann::json::parse(slurp(kMlpSolution));
  sol["traversal_order"] = sol["traversal_orders"];
  sol.erase("traversal_orders");
  r = run_cli("evaluate " + kMlp + " " + temp_file("typo_sol.json", sol.dump()));
  expect_one_line_exit2(r, "did you mean \"traversal_orders\"");

  r = run_cli("alloc " + temp_file("typo_alloc.json", R"({"capacity": 10, "buffers": [{"id": "a", "start": 0, "end": 1, "szie": 4}]})") +
              " -o x.json");
  expect_one_line_exit2(r, "did you mean \"size\"");

  // Known keys that the chosen form would ignore are errors too.
  r = run_cli("alloc " + temp_file("mixed_alloc.json", R"({"capacity": 10, "buffers": [{"id": "a", "uses": [0, 2], "end": 9, "size": 4}]})") +
              " -o x.json");
  expect_one_line_exit2(r, "$.buffers[0].end: does not apply to a buffer given by \"uses\"");
  r = run_cli("alloc " + temp_file("mixed_alloc.json", R"({"capacity": 10, "buffers": [{"id": "a", "start": 0, "end": 2, "size": 4, "lifetime_end_override": 5}]})") +
              " -o x.json");
  expect_one_line_exit2(r, "$.buffers[0].lifetime_end_override: applies to a buffer given by \"uses\" only");
  auto three = nlohmann::json::parse(slurp(kMlp));
  three["native_granularity"] = {128, 128, 64};  // a third entry was silently ignored
  r = run_cli("schedule " + temp_file("three_native.json", three.dump()) + " -o x.json");
  expect_one_line_exit2(r, "$.native_granularity: expected [w, h], got 3 entries");
  r = run_cli("plan " + kSoftmax + " --hardware " + temp_file("derived_hw.json", R"({"usable_lx_bytes": 1000000})"));
  expect_one_line_exit2(r, "$.usable_lx_bytes: is derived from the other keys (1625344 here)");
}

TEST(CliContract, ExtensionKeysStartingWithUnderscoreAreIgnored) {
  auto prog = nlohmann::json::parse(slurp(kSoftmax));
  prog["_comment"] = "written by a tool";
  prog["tensors"][0]["_origin"] = {{"file", "model.py"}};
  auto r = run_cli("divide " + temp_file("ext_prog.json", prog.dump()) + " --cores 4");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// ---- item 12: error text -----------------------------------------------------------------------

TEST(CliContract, ErrorsAreOneLocatedLine) {
  const std::string dir = fs::temp_directory_path().string();
  auto r = run_cli("plan " + dir);
  expect_one_line_exit2(r, "is a directory");
  r = run_cli("evaluate " + dir + " " + kMlpSolution);
  expect_one_line_exit2(r, "is a directory");
  r = run_cli("plan /nonexistent/prog.json");
  expect_one_line_exit2(r, "/nonexistent/prog.json: cannot open file for reading");
  r = run_cli("divide " + temp_file("trunc.json", slurp(kSoftmax).substr(0, 200)));
  expect_one_line_exit2(r, "trunc.json:");
  // An invalid schedule: exit 2 with the report on stdout and one line on stderr.
  auto sol = nlohmann::json::parse(slurp(kMlpSolution));
  sol["granularities"][0] = {1, 1, 100000};
  r = run_cli("evaluate " + kMlp + " " + temp_file("bad_sol.json", sol.dump()));
  expect_one_line_exit2(r, "invalid schedule");
  // A mistyped verb is named (it was "A subcommand is required").
  r = run_cli("shedule " + kMlp);
  expect_one_line_exit2(r, "unknown verb 'shedule' (did you mean 'schedule'?)");
  // An operator the affine grammar lacks is named, not reported as a missing ')'.
  auto fk = nlohmann::json::parse(slurp(kSrc + "/examples/nki/simple_1d_alloc_func.json"));
  for (auto& t : fk["tensors"])
    if (t.contains("alloc") && t["alloc"]["kind"] == "func") {
      t["alloc"]["byte_addr"] = "(idx % 2) * 1024";
      break;
    }
  r = run_cli("nki check " + temp_file("mod_func.json", fk.dump()));
  expect_one_line_exit2(r, "unsupported operator '%' at column 6");
  // A kernel with violations: one line on stderr too.
  r = run_cli("nki check " + kSrc + "/examples/nki/overlap_t0_t1.json");
  expect_one_line_exit2(r, "allocation violation");
}

// One prefix for every one-line error, whichever part produced it (README, "Conventions of
// every verb"): the flag parser, the verb lookup, the verbs, the scheduler front end shared with
// mlsys. It used to be "scratchplan: " from the parser and "error: " from the rest.
TEST(CliContract, EveryErrorLineStartsWithTheProgramName) {
  const std::string p = alloc_problem();
  for (const std::string& args : {
           "alloc " + p + " --bogus -o x.json",              // parser: unknown flag
           "plan " + kSoftmax + " --cores 0",                // parser: flag validator
           "alloc " + p,                                     // parser: missing -o
           "shedule " + kMlp,                                // verb lookup
           "nki chek " + kKernel,                            // sub-verb lookup
           std::string("plan /nonexistent/prog.json"),       // a verb's fail()
           "alloc " + p + " --capacity 150 -o x.json",       // infeasible pack
           std::string("schedule /nonexistent/p.json -o x.json"),  // the scheduler front end
           "nki check " + kSrc + "/examples/nki/overlap_t0_t1.json",  // a verdict
       }) {
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("scratchplan: ", 0), 0u) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find("error: "), std::string::npos) << args << "\n" << r.err;
  }
  // The contest entry point names itself the same way.
  for (const std::string& args : {std::string("/nonexistent/p.json x.json"), kMlp + " x.json --bogus",
                                  "MLSYS_TIME_LIMIT=nan " + std::string(SCRATCHPLAN_MLSYS) + " " + kMlp + " x.json"}) {
    auto r = args.rfind("MLSYS_TIME_LIMIT", 0) == 0 ? run_program("", args) : run_program(SCRATCHPLAN_MLSYS, args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("mlsys: ", 0), 0u) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find("error: "), std::string::npos) << args << "\n" << r.err;
  }
}

// --help names the program as the user types it, not by the binary's build path, and the top
// level mentions the contest entry point the build installs beside it.
TEST(CliContract, HelpNamesTheProgramNotItsPath) {
  for (const auto& [program, args, usage] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {SCRATCHPLAN_CLI, "--help", "Usage: scratchplan [OPTIONS] SUBCOMMAND"},
           {SCRATCHPLAN_CLI, "alloc --help", "Usage: scratchplan alloc [OPTIONS] input"},
           {SCRATCHPLAN_CLI, "nki plan --help", "Usage: scratchplan nki plan [OPTIONS]"},
           {SCRATCHPLAN_MLSYS, "--help", "Usage: mlsys [OPTIONS] input output"}}) {
    auto r = run_program(program, args);
    EXPECT_EQ(r.exit_code, 0) << args << r.err;
    EXPECT_NE(r.out.find(usage), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find(program), std::string::npos) << args << "\n" << r.out;
  }
  auto r = run_cli("--help");
  EXPECT_NE(r.out.find("mlsys INPUT.json OUTPUT.json"), std::string::npos) << r.out;
  EXPECT_EQ(run_cli("alloc --help").out.find("mlsys INPUT.json"), std::string::npos);  // the top level only
}

// Found by the end-to-end fuzzer: a 2^62-byte buffer made every heuristic leave it unplaced
// (exit 1, "invalid plan"), three of them overflowed the validator (exit 0 with two at one
// offset), and two short lifetimes 10^12 ticks apart made the sweep allocate a bucket per tick.
TEST(CliContract, AllocValuesPastTheDocumentedBoundsAreBadInput) {
  const std::string huge = "4611686018427387904";  // 2^62
  const std::string csv = temp_file("huge.csv", "id,lower,upper,size\na,0,2," + huge + "\nb,0,2," + huge + "\nc,0,2," + huge + "\n");
  for (const char* flags : {" --objective select", " --objective pack", " --solver firstfit", " --solver sweep"}) {
    auto r = run_cli("alloc " + csv + " --capacity " + huge + " -o x.json" + flags);
    expect_one_line_exit2(r, "huge.csv:2: buffer 'a': size, alignment or pinned end above 2^60 bytes");
  }
  std::string many = "id,lower,upper,size\n";
  for (int i = 0; i < 4; ++i) many += "b" + std::to_string(i) + ",0,2," + std::to_string(int64_t{1} << 59) + "\n";
  auto r = run_cli("alloc " + temp_file("sum.csv", many) + " --capacity 1000 -o x.json");
  expect_one_line_exit2(r, "add up to more than 2^60 bytes");
  r = run_cli("alloc " + temp_file("time.csv", "id,lower,upper,size\na,0,4611686018427387904,8\n") + " --capacity 10 -o x.json");
  expect_one_line_exit2(r, "lifetime outside");
  r = run_cli("alloc " + temp_file("dup.csv", "id,lower,upper,size\na,0,2,4\nb,0,2,4\na,1,3,5\n") + " --capacity 100 -o x.json");
  expect_one_line_exit2(r, "dup.csv:4: duplicate id 'a' (first on line 2)");
  const std::string out = temp_file("sparse_out.json", "");
  fs::remove(out);
  r = run_cli("alloc " + temp_file("sparse.csv", "id,lower,upper,size\na,0,1,4\nb,1000000000000,1000000000001,4\n") +
              " --capacity 100 --solver sweep -o " + out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
}

// Values that made every latency or time estimate inf (written as JSON null) are refused.
TEST(CliContract, ValuesThatWouldGiveInfiniteTimesAreBadInput) {
  auto problem = nlohmann::json::parse(slurp(kMlp));
  problem["slow_memory_bandwidth"] = 1e-320;
  auto r = run_cli("schedule " + temp_file("tiny_bw.json", problem.dump()) + " -o x.json");
  expect_one_line_exit2(r, "$.slow_memory_bandwidth: expected a bandwidth between 1e-100 and 1e100");
  r = run_cli("evaluate " + temp_file("tiny_bw.json", problem.dump()) + " " + kMlpSolution);
  expect_one_line_exit2(r, "slow_memory_bandwidth");
  problem = nlohmann::json::parse(slurp(kMlp));
  problem["base_costs"][0] = 1e308;
  r = run_cli("schedule " + temp_file("huge_cost.json", problem.dump()) + " -o x.json");
  expect_one_line_exit2(r, "$.base_costs[0]: expected a cost between 0 and 1e100");
  for (const auto& [hw, needle] : std::vector<std::pair<std::string, std::string>>{
           {R"({"hbm_bytes_per_s": 1e-320})", "$.hbm_bytes_per_s: expected bytes per second in [1, 1e18]"},
           {R"({"core_flops_per_s": 1e-320})", "$.core_flops_per_s"},
           {R"({"op_overhead_s": 1e300})", "$.op_overhead_s"},
           {R"({"lx_bytes": 9223372036854775807})", "$.lx_bytes: expected a byte count 0..2^62"},
           {R"({"alignment": 4611686018427387904})", "$.alignment: expected a power of two"}}) {
    r = run_cli("plan " + kSoftmax + " --hardware " + temp_file("inf_hw.json", hw) + " -o x.json");
    expect_one_line_exit2(r, needle);
  }
  r = run_cli("plan " + kSoftmax + " --hbm-gbps 1e-12");
  expect_one_line_exit2(r, "--hbm-gbps");
}

// Errors the planners find in a file's contents name the file (they used to say only "op ...").
TEST(CliContract, PlannerErrorsNameTheInputFile) {
  auto r = run_cli("plan " + kSoftmax + " --hardware " + temp_file("span_hw.json", R"({"span_limit": 1})") + " -o x.json");
  expect_one_line_exit2(r, kSoftmax + ": op 'row_max': no split");
  r = run_cli("divide " + kSoftmax + " --cores 1 < /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto problem = nlohmann::json::parse(slurp(kMlp));
  problem["fast_memory_capacity"] = 2;
  const std::string small = temp_file("small_fast.json", problem.dump());
  r = run_cli("schedule " + small + " -o x.json");
  expect_one_line_exit2(r, small + ": op 0 (MatMul) cannot be scheduled");
}

// A failed pack printed four lines, including a summary of a plan that was never written.
TEST(CliContract, FailedPackIsOneLine) {
  const std::string p = temp_file("tight.json", R"({"buffers": [{"id": "a", "start": 0, "end": 2, "size": 100},
                                                      {"id": "b", "start": 1, "end": 3, "size": 200}]})");
  for (const std::string& out : {std::string(" -o -"), " -o " + temp_file("tight_out.json", "")}) {
    auto r = run_cli("alloc " + p + " --capacity 250" + out);
    expect_one_line_exit2(r, "tight.json: no plan within capacity 250 (proven infeasible; lower bound 300); no output written");
    EXPECT_EQ(r.out, "");
  }
}

// ---- item 14: "-" and format/version -----------------------------------------------------------

TEST(CliContract, DashIsStdinAndStdout) {
  auto r = run_cli("plan - -o - --time-limit 0.1 --report < " + kSoftmax);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plan = nlohmann::json::parse(r.out);  // stdout is pure JSON; the report went to stderr
  EXPECT_EQ(plan["format"], "scratchplan-lx-plan");
  EXPECT_NE(r.err.find("HBM"), std::string::npos) << r.err;

  r = run_cli("schedule - -o - --time-limit 0.2 --threads 1 < " + kMlp);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = nlohmann::json::parse(r.out);
  EXPECT_EQ(s["format"], "mlsys2026-solution");
  EXPECT_NE(r.err.find("total latency"), std::string::npos) << r.err;
  const std::string sol = temp_file("stdout_sol.json", r.out);
  r = run_cli("evaluate - " + sol + " < " + kMlp);  // our own output read back
  EXPECT_EQ(r.exit_code, 0) << r.err;

  r = run_cli("alloc - --capacity 1000 -o - < " + alloc_problem());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["format"], "scratchplan-alloc-plan");

  r = run_cli("nki plan - -o - --time-limit 0.2 < " + kKernel);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string planned = temp_file("stdout_kernel.json", r.out);
  EXPECT_EQ(nlohmann::json::parse(r.out)["format"], "scratchplan-nki-kernel");
  r = run_cli("nki check " + planned);  // the planned kernel is read back and is clean
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;

  r = run_cli("evaluate - - < " + kMlp);
  expect_one_line_exit2(r, "standard input was already read");
  r = run_cli("plan " + kSoftmax + " -o - --svg -");
  expect_one_line_exit2(r, "standard output");
}

TEST(CliContract, JsonOutputsCarryFormatAndVersion) {
  for (const auto& [args, format] : std::vector<std::pair<std::string, std::string>>{
           {"evaluate " + kMlp + " " + kMlpSolution + " --json", "scratchplan-evaluation"},
           {"divide " + kSoftmax + " --cores 4 --json", "scratchplan-division"},
           {"layout --size 5,100,150 --dtype fp16 --json", "scratchplan-layout"},
           {"nki check " + kKernel + " --json", "scratchplan-nki-check"},
           {"nki plan " + kKernel + " --json --time-limit 0.1", "scratchplan-nki-plan-summary"}}) {
    auto r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << args << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["format"], format) << args;
    EXPECT_EQ(j["version"], 1) << args;
  }
}

}  // namespace
}  // namespace sp::testing
