// The command-line front ends: `scratchplan schedule` and the contest's `mlsys`. Exit codes,
// the infeasible-problem message, no file on failure, and a file that is valid whenever it is
// read while the search runs.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/atomic_file.h"
#include "mlsys/scheduler_test_util.h"

namespace sp::mlsys {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("sp_sched_" + std::to_string(::getpid()) + "_" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

int run(const std::string& cmd, std::string* err = nullptr) {
  const std::string full = cmd + " 2>" + "/tmp/sp_sched_err_" + std::to_string(::getpid());
  const int st = std::system(full.c_str());
  if (err) {
    std::ifstream in("/tmp/sp_sched_err_" + std::to_string(::getpid()));
    err->assign(std::istreambuf_iterator<char>(in), {});
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(SchedCli, WritesAValidExactSchedule) {
  TempDir t;
  const std::string out = (t.dir / "s.json").string();
  const std::string prob = testing::data_path("benchmarks/mlsys-2026-1.json");
  ASSERT_EQ(run(std::string(SCRATCHPLAN_CLI) + " schedule " + prob + " -o " + out + " --iterations 30 --threads 1"), 0);
  EXPECT_EQ(run(std::string(SCRATCHPLAN_CLI) + " evaluate " + prob + " " + out + " --check-reported > /dev/null"), 0);
}

TEST(SchedCli, VerbosePrintsLowerBounds) {
  TempDir t;
  std::string err;
  const std::string prob = testing::data_path("examples/ex3_problem.json");
  ASSERT_EQ(run(std::string(SCRATCHPLAN_CLI) + " schedule " + prob + " -o " + (t.dir / "s.json").string() +
                    " --iterations 10 --verbose",
                &err),
            0);
  EXPECT_NE(err.find("lower bounds: compute 4500.0, memory 3276.8, combined 4500.0"), std::string::npos) << err;
}

TEST(SchedCli, InfeasibleProblemExitsTwoNamingOpAndCapacityWithoutOutput) {
  TempDir t;
  const fs::path prob = t.dir / "p.json";
  ASSERT_TRUE(write_file_atomic(prob.string(), R"({"widths":[64,64,64],"heights":[64,64,64],"inputs":[[0,1]],"outputs":[[2]],
    "base_costs":[10],"op_types":["MatMul"],"fast_memory_capacity":2,"slow_memory_bandwidth":1,"native_granularity":[128,128]})")
                  .ok());
  const fs::path out = t.dir / "s.json";
  std::string err;
  EXPECT_EQ(run(std::string(SCRATCHPLAN_CLI) + " schedule " + prob.string() + " -o " + out.string() + " --iterations 5", &err), 2);
  EXPECT_NE(err.find("op 0 (MatMul)"), std::string::npos) << err;
  EXPECT_NE(err.find("needs 3 elements"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(run(std::string(SCRATCHPLAN_MLSYS) + " " + prob.string() + " " + out.string() + " --time-limit 1", &err), 2);
  EXPECT_FALSE(fs::exists(out));
}

TEST(SchedCli, MalformedProblemIsBadInput) {
  TempDir t;
  const fs::path prob = t.dir / "p.json";
  ASSERT_TRUE(write_file_atomic(prob.string(), "{\"widths\": [1,").ok());
  std::string err;
  EXPECT_EQ(run(std::string(SCRATCHPLAN_CLI) + " schedule " + prob.string() + " -o " + (t.dir / "s.json").string(), &err), 2);
  EXPECT_FALSE(err.empty());
}

TEST(SchedCli, ContestEntryPointFileIsValidWheneverRead) {
  TempDir t;
  const std::string prob = testing::data_path("benchmarks/mlsys-2026-5.json");
  const fs::path out = t.dir / "s.json";
  Problem p = testing::load_problem("benchmarks/mlsys-2026-5.json");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl(SCRATCHPLAN_MLSYS, "mlsys", prob.c_str(), out.c_str(), "--time-limit", "2", "--threads", "1", nullptr);
    ::_exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  int reads = 0;
  bool first_seen_in_time = false;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (fs::exists(out)) {
      if (!reads) first_seen_in_time = std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1500);
      auto s = read_solution(out.string(), p);
      ASSERT_TRUE(s.ok()) << s.error().message;  // never a partial file
      testing::expect_exact(p, *s);
      ++reads;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_GT(reads, 0);
  // 0.5 s is the target; allow slack for a loaded CI machine and sanitizer builds.
  EXPECT_TRUE(first_seen_in_time);
  auto s = read_solution(out.string(), p);
  ASSERT_TRUE(s.ok());
  testing::expect_exact(p, *s);
}

// Sanitizer builds simulate several times slower.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kSlowdown = 5.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(undefined_behavior_sanitizer)
constexpr double kSlowdown = 5.0;
#else
constexpr double kSlowdown = 1.0;
#endif
#else
constexpr double kSlowdown = 1.0;
#endif

// Issue 11 item 2: the first valid schedule of a single 16384^3 MatMul used to take 2.8 s at
// --time-limit 1 (several full simulations of 2M steps each). Every simulation is now guarded
// by its predicted cost, so the run ends near the limit (generous margin for a loaded machine).
TEST(SchedCli, TimeLimitHoldsOnAHugeMatMul) {
  TempDir t;
  const fs::path prob = t.dir / "p.json";
  ASSERT_TRUE(write_file_atomic(prob.string(), R"({"widths":[16384,16384,16384],"heights":[16384,16384,16384],
    "inputs":[[0,1]],"outputs":[[2]],"base_costs":[1000],"op_types":["MatMul"],"fast_memory_capacity":50000,
    "slow_memory_bandwidth":10,"native_granularity":[128,128]})")
                  .ok());
  const fs::path out = t.dir / "s.json";
  for (const std::string& cmd : {std::string(SCRATCHPLAN_MLSYS) + " " + prob.string() + " " + out.string() + " --time-limit 1",
                                 std::string(SCRATCHPLAN_CLI) + " schedule " + prob.string() + " -o " + out.string() + " --time-limit 1"}) {
    fs::remove(out);
    // Wall time depends on the machine's load; the CPU time the run needs does not (much). The
    // run is single-threaded, so a run that honours the 1 s limit uses at most about 1 s of CPU
    // (before the guard: seven 2M-step simulations, 2.8 s). The bound is the limit plus a margin,
    // not a measured time: runs took 0.37 s of CPU on one machine and 0.70-0.87 s on a slower one.
    auto cpu = [] {
      struct rusage ru {};
      ::getrusage(RUSAGE_CHILDREN, &ru);
      return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    };
    const double cpu0 = cpu();
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(run(cmd + " > /dev/null"), 0) << cmd;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The CPU bound holds for optimized builds only: sanitizers slow the simulations by an
    // amount that varies per machine (ASan measured 4.1 s), and the time guard's prediction
    // then still holds the wall limit below.
    // 1.5, not 1.2: beside another test under ctest -j2 the same run used 1.204 s of CPU
    // (0.83-0.89 s alone); the regression this guards against took 2.8 s.
    if (kSlowdown == 1.0) {
      EXPECT_LT(cpu() - cpu0, 1.5) << cmd;
    }
    EXPECT_LT(secs, 6.0 * kSlowdown) << cmd;
    Problem p = *read_problem(prob.string());
    auto s = read_solution(out.string(), p);
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(evaluate(p, *s).valid);
  }
}

// Issue 11 item 6: with fast memory 1000-1300 mlp_block was reported unschedulable ("no
// granularity fits") although per-op [16,16,16] tiles fit (total 883,200). The feasibility probe
// now looks at the granularities with the smallest working-set bound, so it finds a schedule.
TEST(SchedCli, TinyCapacityMlpBlockIsScheduled) {
  TempDir t;
  // examples/mlsys/mlp_block.json
  const std::string text = R"({"widths": [256, 512, 512, 512, 256, 256, 256], "heights": [128, 256, 128, 128, 512, 128, 128],
    "inputs": [[0, 1], [2], [3, 4], [5, 0]], "outputs": [[2], [3], [5], [6]], "base_costs": [2000, 300, 2000, 300],
    "op_types": ["MatMul", "Pointwise", "MatMul", "Pointwise"], "fast_memory_capacity": 100000,
    "slow_memory_bandwidth": 20, "native_granularity": [128, 128]})";
  const std::string key = "\"fast_memory_capacity\": 100000";
  ASSERT_NE(text.find(key), std::string::npos);
  for (int cap : {1000, 1300}) {
    std::string mod = text;
    mod.replace(mod.find(key), key.size(), "\"fast_memory_capacity\": " + std::to_string(cap));
    const fs::path prob = t.dir / ("p" + std::to_string(cap) + ".json");
    const fs::path out = t.dir / "s.json";
    ASSERT_TRUE(write_file_atomic(prob.string(), mod).ok());
    ASSERT_EQ(run(std::string(SCRATCHPLAN_CLI) + " schedule " + prob.string() + " -o " + out.string() +
                  " --iterations 5 --threads 1 > /dev/null"),
              0)
        << cap;
    Problem p = *read_problem(prob.string());
    auto s = read_solution(out.string(), p);
    ASSERT_TRUE(s.ok());
    Evaluation ev = evaluate(p, *s);
    EXPECT_TRUE(ev.valid);
    EXPECT_LT(ev.total, 883200.0) << cap;  // the per-op [16,16,16] schedule
  }
}

// Issue 11 item 6: exit 2 says plainly when the search gave up rather than proved infeasibility
// (granularity 1x1x1 would fit in 4 elements, but takes 4096^3 steps).
TEST(SchedCli, GaveUpIsNotReportedAsProof) {
  TempDir t;
  const fs::path prob = t.dir / "p.json";
  ASSERT_TRUE(write_file_atomic(prob.string(), R"({"widths":[4096,4096,4096],"heights":[4096,4096,4096],"inputs":[[0,1]],
    "outputs":[[2]],"base_costs":[10],"op_types":["MatMul"],"fast_memory_capacity":4,"slow_memory_bandwidth":1,
    "native_granularity":[128,128]})")
                  .ok());
  const fs::path out = t.dir / "s.json";
  std::string err;
  EXPECT_EQ(run(std::string(SCRATCHPLAN_CLI) + " schedule " + prob.string() + " -o " + out.string() + " --time-limit 2", &err), 2);
  EXPECT_NE(err.find("the search gave up"), std::string::npos) << err;
  EXPECT_NE(err.find("no proof that none fits"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(fs::exists(out));
}

// Issue 11 item 13: a bandwidth of 1e-320 made latencies infinite (written as JSON null).
// Such input is refused with one line naming the field; nothing is written.
TEST(SchedCli, BandwidthThatMakesLatenciesInfiniteIsBadInput) {
  TempDir t;
  for (const std::string& field : {std::string(R"("slow_memory_bandwidth":1e-320,"base_costs":[10])"),
                                   std::string(R"("slow_memory_bandwidth":1,"base_costs":[1e300])")}) {
    const fs::path prob = t.dir / "p.json";
    ASSERT_TRUE(write_file_atomic(prob.string(), R"({"widths":[64,64,64],"heights":[64,64,64],"inputs":[[0,1]],"outputs":[[2]],)" +
                                                     field + R"(,"op_types":["MatMul"],"fast_memory_capacity":20000,"native_granularity":[128,128]})")
                    .ok());
    const fs::path out = t.dir / "s.json";
    std::string err;
    EXPECT_EQ(run(std::string(SCRATCHPLAN_CLI) + " schedule " + prob.string() + " -o " + out.string() + " --iterations 1", &err), 2);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("latencies must stay finite"), std::string::npos) << err;
    EXPECT_NE(err.find(field.find("1e-320") != std::string::npos ? "slow_memory_bandwidth" : "base_costs"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(out));
  }
}

// Issue 11 item 14: `schedule` prints its total on success.
TEST(SchedCli, SchedulePrintsItsTotal) {
  TempDir t;
  const std::string prob = testing::data_path("examples/ex1_problem.json");
  const fs::path so = t.dir / "stdout.txt";
  ASSERT_EQ(run(std::string(SCRATCHPLAN_CLI) + " schedule " + prob + " -o " + (t.dir / "s.json").string() +
                " --iterations 5 --threads 1 > " + so.string()),
            0);
  std::ifstream in(so);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("total latency: "), std::string::npos) << text;
}

}  // namespace
}  // namespace sp::mlsys
