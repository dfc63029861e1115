// The alloc verb end to end: exit codes, written files, one-line errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "alloc/io.h"
#include "alloc/solver.h"
#include "alloc/validator.h"

namespace {

namespace fs = std::filesystem;

struct CliRun {
  int code;
  std::string out;
};

CliRun run_cli(const std::string& args) {
  std::string cmd = std::string(SCRATCHPLAN_CLI) + " alloc " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t k = fread(buf, 1, sizeof buf, f)) out.append(buf, k);
  int st = pclose(f);
  return {WEXITSTATUS(st), out};
}

fs::path tmp(const std::string& name, const std::string& content = "") {
  fs::path dir = fs::temp_directory_path() / ("scratchplan_alloc_cli_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  if (!content.empty()) std::ofstream(p) << content;
  return p;
}

const std::string kData = SCRATCHPLAN_DATA_DIR;

TEST(AllocCli, PacksChallengingCAndWritesValidCsv) {
  fs::path out = tmp("c.csv"), svg = tmp("c.svg");
  CliRun r = run_cli(kData + "/dsa/challenging/C.1048576.csv --capacity 1048576 --solver exact --time-limit 20 -o " + out.string() +
              " --svg " + svg.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto plan = sp::alloc::read_problem(out.string());  // offsets come back as fixed offsets
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  sp::alloc::Placement pl;
  for (auto& b : plan->buffers) {
    pl.offsets.push_back(b.fixed_offset);
    pl.spill_reasons.push_back("");
  }
  sp::alloc::Problem p = *plan;
  for (auto& b : p.buffers) b.fixed_offset = sp::alloc::kNoFixedOffset;
  p.capacity = 1048576;
  EXPECT_TRUE(sp::alloc::validate(p, pl, true).ok());
  std::ifstream s(svg);
  std::stringstream ss;
  ss << s.rdbuf();
  EXPECT_NE(ss.str().find("<svg"), std::string::npos);
}

TEST(AllocCli, BadInputExitsTwoWithOneLine) {
  fs::path bad = tmp("bad.csv", "id,lower,upper,size\n0,0,3,-1\n");
  CliRun r = run_cli(bad.string() + " --capacity 10 -o " + tmp("o.json").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bad.csv:2: size: expected >= 0, got -1"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
  fs::path cyc = tmp("align.json", R"({"buffers": [{"id": "a", "size": 1, "start": 0, "end": 1, "alignment": 6}]})");
  EXPECT_EQ(run_cli(cyc.string() + " --capacity 10 -o " + tmp("o.json").string()).code, 2);
  EXPECT_EQ(run_cli("/nonexistent.csv --capacity 10 -o " + tmp("o.json").string()).code, 2);
  EXPECT_EQ(run_cli(bad.string() + " --capacity 10 --solver nope -o x").code, 2);
}

TEST(AllocCli, InfeasiblePackReportsBound) {
  fs::path in = tmp("two.csv", "id,lower,upper,size\n0,0,3,6\n1,1,4,6\n");
  fs::path out = tmp("two_out.json");
  fs::remove(out);
  CliRun r = run_cli(in.string() + " --capacity 11 -o " + out.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("infeasible"), std::string::npos);
  EXPECT_NE(r.out.find("lower bound 12"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  CliRun s = run_cli(in.string() + " --capacity 11 --objective select -o " + out.string());
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_TRUE(fs::exists(out));
}

TEST(AllocCli, MinimizeProvesOptimalHeight) {
  fs::path in = tmp("three.csv", "id,lower,upper,size\n0,0,2,4\n1,1,3,4\n2,2,4,4\n");
  CliRun r = run_cli(in.string() + " --capacity 100 --minimize --solver exact -o " + tmp("m.json").string());
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("height: 8 (lower bound 8, proven optimal)"), std::string::npos) << r.out;
}

// --minimize without --capacity: the plan has no capacity, written null (not the internal sentinel).
TEST(AllocCli, MinimizeWithoutCapacityWritesNullCapacity) {
  fs::path in = tmp("nocap.csv", "id,lower,upper,size\n0,0,2,4\n1,1,3,4\n");
  fs::path out = tmp("nocap.json");
  CliRun r = run_cli(in.string() + " --minimize -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("\"capacity\": null,"), std::string::npos) << ss.str();
  EXPECT_EQ(ss.str().find("2305843009213693951"), std::string::npos) << ss.str();
}

// Without --threads the exact search keeps one worker (reproducible small plans) and the
// multi-start takes every hardware thread (0); a given --threads sets both.
TEST(AllocCli, ThreadsDefaultOneExactWorkerAndEveryCoreForTheMultiStart) {
  sp::alloc::SolveRequest req;
  auto o = sp::alloc::solve_options(req);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->threads, 1);
  EXPECT_EQ(o->sweep_threads, 0);
  req.threads = 3, req.threads_given = true;
  o = sp::alloc::solve_options(req);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->threads, 3);
  EXPECT_EQ(o->sweep_threads, 3);
  req.solver = "sweep";  // a solver that ignores it refuses the flag
  EXPECT_FALSE(sp::alloc::solve_options(req).ok());
}

}  // namespace
