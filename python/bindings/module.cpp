// The extension module scratchplan._core: one bind_<module> per C++ module (python/bindings/*.cpp).
// The pure-Python package (python/scratchplan) wraps these functions in the public API.
#include "common.h"

PYBIND11_MODULE(_core, m) {
  using namespace sp::bindings;
  m.doc() = "scratchplan C++ engines (use the scratchplan package, not this module)";
  py::register_exception<BadInputError>(m, "BadInput", PyExc_ValueError);
  py::class_<Doc>(m, "Doc")
      .def(py::init([](std::string data, std::string source, bool is_path) {
             return Doc{std::move(data), std::move(source), is_path};
           }),
           py::arg("data"), py::arg("source"), py::arg("is_path"))
      .def_readonly("data", &Doc::data)
      .def_readonly("source", &Doc::source)
      .def_readonly("is_path", &Doc::is_path);
  bind_alloc(m);
  bind_lx(m);
  bind_nki(m);
  bind_program(m);
  bind_layout(m);
  bind_workdiv(m);
  bind_mlsys(m);
}
