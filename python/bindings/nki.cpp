// scratchplan.nki: NeuronCore SBUF/PSUM kernels (src/nki), the `nki check` and `nki plan` verbs.
#include <pybind11/stl.h>

#include "common.h"
#include "nki/check.h"
#include "nki/plan.h"
#include "nki/report.h"
#include "nki/svg.h"
#include "nki/trace.h"

namespace sp::bindings {
namespace {

struct NkiCheck {
  std::string label;  // kernel path or "<kernel>"
  nki::Kernel kernel;
  nki::CheckReport report;
};

struct NkiPlan {
  std::string label;
  nki::PlanResult result;
};

// The CLI's load(): an optional hardware document, then the kernel read against it.
nki::Kernel load_kernel(const Doc& k, const std::optional<Doc>& hwdoc) {
  py::gil_scoped_release nogil;
  std::optional<nki::Hardware> hw;
  if (hwdoc) {
    if (hwdoc->is_path) {
      hw = take(nki::read_hardware_file(hwdoc->data));
    } else {
      Json j = take(parse_json_text(hwdoc->data, hwdoc->source));
      hw = take(nki::hardware_from_json(JsonCursor(j, hwdoc->source)));
    }
  }
  if (k.is_path) return take(nki::read_kernel(k.data, hw ? &*hw : nullptr));
  Json j = take(parse_json_text(k.data, k.source));
  return take(nki::kernel_from_json(j, k.source, hw ? &*hw : nullptr));
}

}  // namespace

void bind_nki(py::module_& m) {
  py::class_<NkiCheck>(m, "NkiCheck")
      .def_property_readonly("clean", [](const NkiCheck& c) { return c.report.clean(); })
      .def_property_readonly("distinct_violations", [](const NkiCheck& c) { return c.report.distinct_violations; })
      .def_property_readonly("executions", [](const NkiCheck& c) { return c.report.executions; })
      .def("to_json", [](const NkiCheck& c) { return nki::check_report_to_json(c.label, c.kernel, c.report).dump(1) + "\n"; })
      .def("report", [](const NkiCheck& c) { return nki::check_report_text(c.label, c.kernel, c.report); })
      .def("svg", [](const NkiCheck& c) { return nki::check_svg(c.kernel, c.report); })
      .def("to_trace",
           [](const NkiCheck& c) {
             py::gil_scoped_release nogil;  // simulates the kernel's timeline
             return nki::check_trace(c.label, c.kernel, c.report);
           })
      .def("placements", [](const NkiCheck& c) {
        py::dict d;
        for (std::size_t t = 0; t < c.kernel.tensors.size(); ++t) {
          if (c.report.placements[t].empty()) continue;
          py::list l;
          for (const auto& p : c.report.placements[t]) l.append(py::make_tuple(p.start_partition, p.byte_addr));
          d[py::str(c.kernel.tensors[t].name)] = l;
        }
        return d;
      });
  py::class_<NkiPlan>(m, "NkiPlan")
      .def_property_readonly("simulated_cycles", [](const NkiPlan& p) { return p.result.planned.makespan; })
      .def_property_readonly("single_buffered_cycles", [](const NkiPlan& p) { return p.result.baseline.makespan; })
      .def("to_json", [](const NkiPlan& p) { return nki::plan_result_to_json(p.label, p.result).dump(1) + "\n"; })
      .def("kernel_json", [](const NkiPlan& p) { return nki::kernel_to_json(p.result.kernel).dump(1) + "\n"; })
      .def("report", [](const NkiPlan& p) { return nki::plan_result_text(p.label, p.result); })
      .def("svg", [](const NkiPlan& p) { return nki::plan_svg(p.result); })
      .def("to_trace", [](const NkiPlan& p) { return nki::plan_trace(p.label, p.result); });

  // A launch over logical cores: one picture / timeline of every core's result, in core order.
  m.def("nki_cores_svg", [](const std::vector<const NkiPlan*>& cores) {
    std::vector<const nki::PlanResult*> r;
    for (const NkiPlan* p : cores) r.push_back(&p->result);
    return nki::plan_svg(r);
  });
  m.def("nki_cores_svg", [](const std::vector<const NkiCheck*>& cores) {
    std::vector<const nki::Kernel*> k;
    std::vector<const nki::CheckReport*> r;
    for (const NkiCheck* c : cores) {
      k.push_back(&c->kernel);
      r.push_back(&c->report);
    }
    return nki::check_svg(k, r);
  });
  m.def("nki_cores_trace", [](const std::vector<const NkiPlan*>& cores) {
    std::vector<const nki::PlanResult*> r;
    for (const NkiPlan* p : cores) r.push_back(&p->result);
    return nki::plan_trace(cores.empty() ? std::string() : cores.front()->label, r);
  });
  m.def("nki_cores_trace", [](const std::vector<const NkiCheck*>& cores) {
    py::gil_scoped_release nogil;  // simulates each core's timeline
    std::vector<const nki::Kernel*> k;
    std::vector<const nki::CheckReport*> r;
    for (const NkiCheck* c : cores) {
      k.push_back(&c->kernel);
      r.push_back(&c->report);
    }
    return nki::check_trace(cores.empty() ? std::string() : cores.front()->label, k, r);
  });

  m.def("nki_default_cycle_model", [] {
    py::dict d;
    for (const auto& [n, v] : nki::default_cycle_model()) d[py::str(n)] = v;
    return d;
  });
  m.def("nki_builtin_hardware", [](const std::string& name) {
    // the C++ description of a built-in core, as JSON text (the tracer's stand-ins read it)
    return nki::hardware_to_json(take(nki::builtin_hardware(name))).dump();
  });
  m.def(
      "nki_check",
      [](const Doc& k, std::optional<Doc> hw) {
        nki::Kernel kernel = load_kernel(k, hw);
        nki::CheckReport rep = run_cancellable([&] { return take(nki::check_kernel(kernel)); });
        return NkiCheck{k.name(), std::move(kernel), std::move(rep)};
      },
      py::arg("kernel"), py::arg("hardware"));
  m.def(
      "nki_plan",
      [](const Doc& k, std::optional<Doc> hw, int max_buffers, bool single, bool in_order, bool keep_direct,
         double time_limit) {
        if (max_buffers < 1 || max_buffers > 1024)
          throw BadInputError("--max-buffers: Value " + std::to_string(max_buffers) + " not in range [1 - 1024]");
        if (time_limit < 0) throw BadInputError("--time-limit: Value " + std::to_string(time_limit) + " should be a non-negative number");
        nki::Kernel kernel = load_kernel(k, hw);
        nki::PlanOptions opt;
        opt.max_buffers = max_buffers;
        opt.multi_buffer = !single;
        opt.time_limit_s = time_limit;
        opt.scheduler = in_order ? nki::Scheduler::kInOrder : nki::Scheduler::kDataflow;
        opt.keep_direct = keep_direct;
        nki::PlanResult r = run_cancellable([&] { return take(nki::plan_kernel(kernel, opt)); });
        return NkiPlan{k.name(), std::move(r)};
      },
      py::arg("kernel"), py::arg("hardware"), py::arg("max_buffers"), py::arg("single"), py::arg("in_order"),
      py::arg("keep_direct"), py::arg("time_limit"));
}

}  // namespace sp::bindings
