// scratchplan.mlsys: the MLSys 2026 problem, exact evaluator and scheduler (src/mlsys), the
// `evaluate` and `schedule` verbs.
#include <pybind11/stl.h>

#include <algorithm>
#include <thread>

#include "common.h"
#include "mlsys/evaluator.h"
#include "mlsys/problem.h"
#include "mlsys/report.h"
#include "mlsys/scheduler.h"
#include "mlsys/solution.h"
#include "mlsys/trace.h"

namespace sp::bindings {
namespace {

mlsys::Problem load_problem(const Doc& d) {
  if (d.is_path) return take(mlsys::read_problem(d.data));
  Json j = take(parse_json_text(d.data, d.source));
  return take(mlsys::problem_from_json(j, d.source));
}

mlsys::Solution load_solution(const Doc& d, const mlsys::Problem& p) {
  if (d.is_path) return take(mlsys::read_solution(d.data, p));
  Json j = take(parse_json_text(d.data, d.source));
  return take(mlsys::solution_from_json(j, p, d.source));
}

mlsys::MatMulCompute mm(const std::string& s) {
  if (s == "opk") return mlsys::MatMulCompute::kOpK;
  if (s == "native") return mlsys::MatMulCompute::kNative;
  throw BadInputError("--mm-compute: " + s + " not in {opk,native}");
}

struct EvalResult {
  mlsys::Evaluation ev;
  std::string mm_compute;
  bool verbose = false, check_reported = false;
  mlsys::Problem problem;  // kept for trace()
  mlsys::Solution solution;
};

struct ScheduleOut {
  mlsys::ScheduleResult r;
  mlsys::Problem problem;  // kept for trace()
  mlsys::RuleOptions rules;
};

}  // namespace

void bind_mlsys(py::module_& m) {
  py::class_<EvalResult>(m, "Evaluation")
      .def_property_readonly("valid", [](const EvalResult& e) { return e.ev.valid; })
      .def_property_readonly("total", [](const EvalResult& e) { return e.ev.total; })
      .def_property_readonly("errors", [](const EvalResult& e) { return e.ev.errors; })
      .def_property_readonly("warnings", [](const EvalResult& e) { return e.ev.warnings; })
      .def_property_readonly("reported_mismatches", [](const EvalResult& e) { return mlsys::reported_mismatches(e.ev); })
      .def("to_json", [](const EvalResult& e) {
        return mlsys::evaluation_report_json(e.ev, e.mm_compute, e.verbose, e.check_reported).dump(1) + "\n";
      })
      .def("report", [](const EvalResult& e) { return mlsys::evaluation_report_text(e.ev, e.verbose, e.check_reported); })
      .def("trace", [](const EvalResult& e) { return mlsys::solution_trace(e.problem, e.solution, e.ev, "evaluate"); });
  py::class_<ScheduleOut>(m, "Schedule")
      .def_property_readonly("total", [](const ScheduleOut& s) { return s.r.stats.total; })
      .def_property_readonly("first_valid_s", [](const ScheduleOut& s) { return s.r.stats.first_valid_s; })
      .def_property_readonly("final_s", [](const ScheduleOut& s) { return s.r.stats.final_s; })
      .def_property_readonly("iterations", [](const ScheduleOut& s) { return s.r.stats.iterations; })
      .def_property_readonly("lower_bound", [](const ScheduleOut& s) { return s.r.stats.bounds.combined; })
      .def("to_json", [](const ScheduleOut& s) { return mlsys::solution_to_json(s.r.solution).dump(1) + "\n"; })
      .def("trace", [](const ScheduleOut& s) {
        return mlsys::solution_trace(s.problem, s.r.solution, mlsys::evaluate(s.problem, s.r.solution, s.rules), "schedule");
      });

  m.def(
      "mlsys_evaluate",
      [](const Doc& problem, const Doc& solution, bool verbose, bool check_reported, std::string mm_compute,
         bool allow_super_native, bool spill_ephemeral, bool resident_only_if_consumed, bool strict_ephemeral,
         bool no_reuse_for_null_traversal) {
        mlsys::RuleOptions rules;
        rules.mm_compute = mm(mm_compute);
        rules.allow_super_native = allow_super_native;
        rules.spill_ephemeral = spill_ephemeral;
        rules.resident_only_if_consumed = resident_only_if_consumed;
        rules.strict_ephemeral = strict_ephemeral;
        rules.no_reuse_for_null_traversal = no_reuse_for_null_traversal;
        py::gil_scoped_release nogil;
        mlsys::Problem p = load_problem(problem);
        mlsys::Solution s = load_solution(solution, p);
        mlsys::Evaluation ev = mlsys::evaluate(p, s, rules);
        return EvalResult{std::move(ev), mm_compute, verbose, check_reported, std::move(p), std::move(s)};
      },
      py::arg("problem"), py::arg("solution"), py::arg("verbose"), py::arg("check_reported"), py::arg("mm_compute"),
      py::arg("allow_super_native"), py::arg("spill_ephemeral"), py::arg("resident_only_if_consumed"),
      py::arg("strict_ephemeral"), py::arg("no_reuse_for_null_traversal"));
  m.def(
      "mlsys_schedule",
      [](const Doc& problem, double time_limit, int64_t iterations, int threads, uint64_t seed, int max_segment_ops,
         std::string mm_compute) {
        mlsys::SchedulerOptions o;
        o.rules.mm_compute = mm(mm_compute);
        o.iterations = iterations;
        o.seed = seed;
        o.max_segment_ops = max_segment_ops;
        o.threads = threads <= 0 ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) : threads;
        mlsys::Problem p;
        {
          py::gil_scoped_release nogil;
          p = load_problem(problem);
        }
        // As run_schedule_to_file: no limit and no iteration budget -> a budget from the problem size.
        o.time_limit_s = time_limit < 0 && iterations < 0 ? mlsys::default_time_limit(p) : time_limit;
        mlsys::ScheduleResult r = run_cancellable([&] { return take(mlsys::schedule(p, o)); });
        return ScheduleOut{std::move(r), std::move(p), o.rules};
      },
      py::arg("problem"), py::arg("time_limit"), py::arg("iterations"), py::arg("threads"), py::arg("seed"),
      py::arg("max_segment_ops"), py::arg("mm_compute"));
}

}  // namespace sp::bindings
