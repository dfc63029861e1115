// scratchplan.program: the tensor program format (src/program) shared by divide and plan.
#include <pybind11/stl.h>

#include "common.h"
#include "program/builder.h"
#include "program/program.h"

namespace sp::bindings {

program::Program load_program_doc(const Doc& d) {
  if (d.is_path) return take(program::read_program(d.data));
  Json j = take(parse_json_text(d.data, d.source));
  return take(program::program_from_json(j, d.source));
}

void bind_program(py::module_& m) {
  py::class_<program::Program>(m, "Program")
      .def_readonly("name", &program::Program::name)
      .def_property_readonly("num_ops", [](const program::Program& p) { return p.ops.size(); })
      .def_property_readonly("num_tensors", [](const program::Program& p) { return p.tensors.size(); })
      .def("to_json", [](const program::Program& p) { return program::program_to_json(p).dump(1) + "\n"; })
      .def("text", [](const program::Program& p) { return program::program_to_text(p); });
  m.def(
      "program_load", [](const Doc& d) {
        py::gil_scoped_release nogil;
        return load_program_doc(d);
      },
      py::arg("doc"));
  m.def("program_example_names", &program::example_names);
  m.def(
      "program_example", [](const std::string& name) { return take(program::example_program(name)); }, py::arg("name"));
  m.def(
      "program_synthetic",
      [](int num_ops, uint64_t seed) {
        if (num_ops < 1 || num_ops > 100000) throw BadInputError("num_ops " + std::to_string(num_ops) + ": expected 1..100000");
        return take(program::synthetic_program(num_ops, seed));
      },
      py::arg("num_ops"), py::arg("seed"));
}

}  // namespace sp::bindings
