// scratchplan.workdiv: multi-core work division of a tensor program (src/workdiv), the `divide` verb.
#include <pybind11/stl.h>

#include "common.h"
#include "program/layout_compat.h"
#include "program/program.h"
#include "workdiv/report.h"
#include "workdiv/workdiv.h"

namespace sp::bindings {

namespace {

struct DivideResult {
  program::Program program;
  workdiv::Division division;
  std::vector<program::LayoutIssue> issues;
  bool candidates = false;
};

}  // namespace

void bind_workdiv(py::module_& m) {
  py::class_<DivideResult>(m, "DivideResult")
      .def("to_json", [](const DivideResult& r) {
        return workdiv::division_report_json(r.program, r.division, r.issues).dump(1) + "\n";
      })
      .def("report", [](const DivideResult& r) {
        return workdiv::division_report_text(r.program, r.division, r.issues, r.candidates);
      });
  m.def(
      "workdiv_divide",
      [](const Doc& d, int cores, bool candidates, bool span_reduction, bool work_distribution) {
        py::gil_scoped_release nogil;
        if (cores < 1 || cores > workdiv::kMaxCores)
          throw BadInputError("--cores " + std::to_string(cores) + ": expected 1..32 (SENCORES range)");
        DivideResult r;
        r.program = load_program_doc(d);
        workdiv::Options opt;
        opt.max_cores = cores;
        opt.candidates = true;  // the JSON always carries the menus (as divide --json)
        opt.span_reduction = span_reduction;
        opt.work_distribution = work_distribution;
        r.division = take(workdiv::divide(r.program, opt));
        r.issues = take(program::check_program_layouts(r.program));
        r.candidates = candidates;
        return r;
      },
      py::arg("program"), py::arg("cores"), py::arg("candidates"), py::arg("span_reduction"), py::arg("work_distribution"));
}

}  // namespace sp::bindings
