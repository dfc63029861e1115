// scratchplan.lx: LX scratchpad planning of whole programs (src/lx), the `plan` verb.
#include <pybind11/stl.h>

#include <sstream>

#include "common.h"
#include "lx/coopt.h"
#include "lx/lx.h"
#include "program/program.h"

namespace sp::bindings {
namespace {

struct LxArgs {
  int cores = -1;
  double time_limit = 2.0;
  int stage = 0;
  int64_t capacity = -1;
  double hbm_gbps = -1;
  bool in_place = true, clone_inputs = true, clone_outputs = true, eviction = true, reorder = true, coopt = true;
  bool layout_inference = true;
  bool fewer_cores = true;
};

lx::Hardware load_lx_hardware(const Doc& hw) {
  if (hw.is_path) return take(lx::load_hardware(hw.data));  // "spyre" or a file, as the CLI
  Json j = take(parse_json_text(hw.data, hw.source));
  return take(lx::hardware_from_json(j, hw.source));
}

// The CLI's `plan` verb: same checks in the same order, same messages.
lx::Plan plan(const Doc& prog, const Doc& hwdoc, const LxArgs& a) {
  lx::Hardware hw;
  program::Program p;
  lx::Options o;
  {
    py::gil_scoped_release nogil;
    hw = load_lx_hardware(hwdoc);
    if (a.capacity >= 0) hw.capacity_override = a.capacity;
    if (a.hbm_gbps > 0) hw.hbm_bytes_per_s = a.hbm_gbps * 1e9;
    int cores = a.cores < 0 ? hw.max_cores : a.cores;
    if (cores < 1 || cores > hw.max_cores)
      throw BadInputError("--cores " + std::to_string(cores) + ": hardware '" + hw.name + "' has 1.." +
                          std::to_string(hw.max_cores) + " cores");
    if (a.stage < 0 || a.stage > 4) throw BadInputError("--stage " + std::to_string(a.stage) + ": expected 1..4");
    if (a.time_limit < 0) throw BadInputError("--time-limit must be >= 0");
    p = load_program_doc(prog);
    o = a.stage ? lx::stage_options(a.stage) : lx::Options{};
    o.cores = cores;
    o.time_limit = a.time_limit;
    if (!a.in_place) o.in_place = false;
    if (!a.clone_inputs) o.clone_inputs = false;
    if (!a.clone_outputs) o.clone_outputs = false;
    if (!a.eviction) o.eviction = false;
    if (!a.reorder) o.reorder = false;
    if (!a.coopt) o.coopt = false;
    if (!a.layout_inference) o.infer_layouts = false;
    if (!a.fewer_cores) o.fewer_cores = false;
  }
  return run_cancellable([&] { return take(lx::plan_program(p, hw, o)); });
}

}  // namespace

void bind_lx(py::module_& m) {
  py::class_<lx::CdSolution>(m, "CdSolution")
      .def_readonly("division", &lx::CdSolution::division)
      .def_readonly("address", &lx::CdSolution::address)
      .def_readonly("reason", &lx::CdSolution::reason)
      .def_readonly("hbm_bytes", &lx::CdSolution::hbm_bytes)
      .def_readonly("seed_hbm_bytes", &lx::CdSolution::seed_hbm_bytes)
      .def_readonly("lower_bound", &lx::CdSolution::lower_bound)
      .def_readonly("evaluations", &lx::CdSolution::evaluations)
      .def_readonly("proven_optimal", &lx::CdSolution::proven_optimal);
  // Joint core division + placement over torch-spyre CoreDivisionBuffers (capture format).
  m.def(
      "lx_cd_solve",
      [](const Doc& buffers, int64_t capacity, int64_t alignment, double time_limit) {
        if (capacity < 0) throw BadInputError("capacity must be >= 0");
        if (alignment < 1) throw BadInputError("alignment must be >= 1");
        if (time_limit < 0) throw BadInputError("time_limit must be >= 0");
        lx::CdProblem p;
        {
          py::gil_scoped_release nogil;
          Json j = take(load_json(buffers));
          p = take(lx::division_problem_from_json(j, buffers.name(), capacity, alignment));
        }
        lx::CdSolution s = run_cancellable([&] { return take(lx::solve_divisions(p, time_limit)); });
        check(lx::check_division_plan(p, s.division, s.address));  // independent check before returning
        return s;
      },
      py::arg("buffers"), py::arg("capacity"), py::arg("alignment"), py::arg("time_limit"));

  py::class_<lx::LadderSolution>(m, "LadderSolution")
      .def_readonly("division", &lx::LadderSolution::division)
      .def_readonly("address", &lx::LadderSolution::address)
      .def_readonly("reason", &lx::LadderSolution::reason)
      .def_readonly("residency_cost", &lx::LadderSolution::residency_cost)
      .def_readonly("cuts", &lx::LadderSolution::cuts)
      .def_readonly("cores", &lx::LadderSolution::cores)
      .def_readonly("split_sq", &lx::LadderSolution::split_sq)
      .def_readonly("tiles", &lx::LadderSolution::tiles)
      .def_readonly("objective", &lx::LadderSolution::objective)
      .def_readonly("optimal", &lx::LadderSolution::optimal)
      .def_readonly("variables", &lx::LadderSolution::variables)
      .def_readonly("constraints", &lx::LadderSolution::constraints)
      .def_readonly("assignments", &lx::LadderSolution::assignments)
      .def_readonly("seconds", &lx::LadderSolution::seconds)
      .def_property_readonly("served", [](const lx::LadderSolution& s) {
        std::vector<std::tuple<int, int, int>> out;  // (consumer, parent, copy)
        for (const auto& v : s.served) out.emplace_back(v.consumer, v.parent, v.copy);
        return out;
      });
  // torch-spyre's September joint contract: the objective ladder, or a lowered cost expression
  // (JSON tree, "" = none). The plan is checked by check_division_plan inside the engine and here again.
  m.def(
      "lx_cd_ladder",
      [](const Doc& buffers, int64_t capacity, int64_t alignment, double time_limit, const std::string& cost,
         bool disjoint_groups, bool exact) {
        if (capacity < 0) throw BadInputError("capacity must be >= 0");
        if (alignment < 1) throw BadInputError("alignment must be >= 1");
        if (time_limit < 0) throw BadInputError("time_limit must be >= 0");
        lx::CdProblem p;
        lx::CdExpr e;
        {
          py::gil_scoped_release nogil;
          Json j = take(load_json(buffers));
          p = take(lx::division_problem_from_json(j, buffers.name(), capacity, alignment));
          if (!cost.empty())
            e = take(lx::cost_expr_from_json(take(parse_json_text(cost, "<cost_expr>")), "<cost_expr>",
                                            static_cast<int>(p.buffers.size())));
        }
        lx::LadderOptions o;
        o.time_limit = time_limit;
        o.cost = cost.empty() ? nullptr : &e;
        o.disjoint_groups = disjoint_groups;
        o.exact = exact;
        lx::LadderSolution s = run_cancellable([&] { return take(lx::solve_division_ladder(p, o)); });
        check(lx::check_division_plan(p, s.division, s.address, s.served));  // independent check before returning
        return s;
      },
      py::arg("buffers"), py::arg("capacity"), py::arg("alignment"), py::arg("time_limit"), py::arg("cost"),
      py::arg("disjoint_groups"), py::arg("exact") = true);

  py::class_<lx::Plan>(m, "LxPlan")
      .def_property_readonly("name", [](const lx::Plan& p) { return p.graph.name; })
      .def_property_readonly("capacity", [](const lx::Plan& p) { return p.capacity; })
      .def_property_readonly("solver", [](const lx::Plan& p) { return p.solver; })
      .def_property_readonly("proven_optimal", [](const lx::Plan& p) { return p.proven_optimal; })
      .def_property_readonly("hbm_bytes", [](const lx::Plan& p) { return p.totals.hbm_read + p.totals.hbm_write; })
      .def_property_readonly("baseline_hbm_bytes", [](const lx::Plan& p) { return p.totals.baseline_hbm; })
      .def_property_readonly("lower_bound_hbm_bytes", [](const lx::Plan& p) { return p.totals.lower_bound_hbm; })
      .def_property_readonly("cores_lower_bound_hbm_bytes", [](const lx::Plan& p) { return p.totals.cores_lower_bound_hbm; })
      .def_property_readonly("time_lower_bound_hbm_bytes", [](const lx::Plan& p) { return p.totals.time_lower_bound_hbm; })
      .def_property_readonly("split_lower_bound_hbm_bytes", [](const lx::Plan& p) { return p.totals.split_lower_bound_hbm; })
      .def_property_readonly("time_s", [](const lx::Plan& p) { return p.totals.time_s; })
      .def("summary", [](const lx::Plan& p) {
        const auto& t = p.totals;
        std::ostringstream os;
        os << p.graph.name << ": HBM " << t.hbm_read + t.hbm_write << " B (all-HBM " << t.baseline_hbm << " B, lower bound "
           << t.lower_bound_hbm << " B), estimated " << t.time_s * 1e6 << " us\n";
        return os.str();
      })
      .def("to_json", [](const lx::Plan& p) { return lx::plan_json_text(p); })
      .def("report", [](const lx::Plan& p) { return lx::plan_report(p); })
      .def("svg", [](const lx::Plan& p) { return lx::plan_svg(p); })
      .def("trace", [](const lx::Plan& p) { return lx::plan_trace(p); })
      .def("check", [](const lx::Plan& p) {
        const lx::PlanCheck c = lx::check_plan(p);
        if (!c.ok()) check(Status(internal_error(c.violations.front().message)));
      });

  m.def(
      "lx_plan",
      [](const Doc& prog, const Doc& hw, int cores, double time_limit, int stage, int64_t capacity, double hbm_gbps,
         bool in_place, bool clone_inputs, bool clone_outputs, bool eviction, bool reorder, bool coopt,
         bool layout_inference, bool fewer_cores) {
        return plan(prog, hw,
                    LxArgs{cores, time_limit, stage, capacity, hbm_gbps, in_place, clone_inputs, clone_outputs, eviction,
                           reorder, coopt, layout_inference, fewer_cores});
      },
      py::arg("program"), py::arg("hardware"), py::arg("cores"), py::arg("time_limit"), py::arg("stage"),
      py::arg("capacity"), py::arg("hbm_gbps"), py::arg("in_place"), py::arg("clone_inputs"), py::arg("clone_outputs"),
      py::arg("eviction"), py::arg("reorder"), py::arg("coopt"), py::arg("layout_inference"),
      py::arg("fewer_cores") = true);
}

}  // namespace sp::bindings
