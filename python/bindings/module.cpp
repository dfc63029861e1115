// The extension module scratchplan._core: one bind_<module> per C++ module (python/bindings/*.cpp).
// The pure-Python package (python/scratchplan) wraps these functions in the public API.
#include <pybind11/stl.h>

#include "common.h"
#include "core/flags.h"

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
  // The CLI's rule for each kind of option value (core/flags.h), so a keyword argument is rejected
  // as the CLI rejects the same flag, named as the keyword ("cores: expected an integer 1..32, got 40").
  m.def(
      "check_flag",
      [](const std::string& flag, const std::string& kind, const std::string& text, int64_t lo, int64_t hi,
         std::vector<std::string> words) {
        std::string why;
        if (kind == "count") why = sp::flags::count_error(text, lo, hi);
        else if (kind == "seconds") why = sp::flags::seconds_error(text);
        else if (kind == "bytes") why = sp::flags::bytes_error(text);
        else if (kind == "gbps") why = sp::flags::gbps_error(text);
        else if (kind == "enum") why = sp::flags::member_error(text, words);
        else throw std::invalid_argument("check_flag: unknown kind " + kind);
        if (!why.empty()) throw BadInputError(flag + ": " + why);
      },
      py::arg("flag"), py::arg("kind"), py::arg("text"), py::arg("lo") = 0, py::arg("hi") = 0,
      py::arg("words") = std::vector<std::string>{});
  bind_alloc(m);
  bind_lx(m);
  bind_nki(m);
  bind_program(m);
  bind_layout(m);
  bind_workdiv(m);
  bind_mlsys(m);
}
