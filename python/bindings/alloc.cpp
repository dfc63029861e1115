// scratchplan.alloc: the allocation engine (src/alloc) over numpy arrays or problem files.
// Arrays cross without a Python object per buffer; the solve runs with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "alloc/generate.h"
#include "alloc/io.h"
#include "alloc/solver.h"
#include "common.h"

namespace sp::bindings {
namespace {

using I64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// A solved problem: the problem (for SVG/CSV/JSON output), the options and the result.
struct AllocResult {
  alloc::Problem problem;
  alloc::SolveOptions options;
  alloc::SolveResult result;
  std::string title;  // SVG title: the input name
};

// The keywords of every alloc entry point; threads and seed are None unless given.
struct AllocOptions {
  int64_t capacity = -1;  // -1: from the problem (JSON) or none
  bool minimize = false;
  std::string objective = "pack";
  std::string solver = "auto";
  double time_limit = 10.0;
  std::optional<int> threads;
  std::optional<uint64_t> seed;
  int64_t iterations = 0;
  std::vector<std::string> exact_off;
};

// The CLI's `alloc` verb after reading: the same request (alloc::prepare_solve), solve (with the
// independent validation inside), the same message when no plan exists. `spent` is the time the
// arguments took to read, counted against the limit as the CLI counts its reading.
AllocResult solve(alloc::Problem p, const AllocOptions& a, const std::string& input, double spent) {
  alloc::SolveRequest req;
  req.objective = a.objective, req.solver = a.solver, req.minimize = a.minimize, req.time_limit = a.time_limit;
  req.threads = a.threads.value_or(1), req.threads_given = a.threads.has_value();
  req.seed = a.seed.value_or(1), req.seed_given = a.seed.has_value();
  req.iterations = a.iterations, req.exact_off = a.exact_off, req.capacity = a.capacity;
  alloc::SolveOptions o = take(alloc::prepare_solve(p, req, input, spent));
  AllocResult out{std::move(p), std::move(o), {}, input};
  out.result = run_cancellable([&] { return take(alloc::solve(out.problem, out.options)); });
  if (out.options.objective == alloc::Objective::kPack && !out.result.feasible)
    throw BadInputError(alloc::no_plan_message(input, out.problem, out.result));
  // No second validation (in either front end): alloc::solve returns only a candidate that passed
  // the independent validator (alloc/validator.h); a repeat would add ~10 % to a 100k-buffer call
  // (docs/python.md, "Overhead").
  return out;
}

alloc::Problem from_arrays(const I64Array& sizes, const I64Array& starts, const I64Array& ends,
                           const std::optional<I64Array>& alignment, const std::optional<I64Array>& fixed,
                           const std::optional<I64Array>& costs) {
  const py::ssize_t n = sizes.size();
  auto same = [n](const I64Array& a, const char* what) {
    if (a.ndim() != 1 || a.size() != n)
      throw BadInputError(std::string(what) + ": expected a 1-d array of " + std::to_string(n) + " values (as sizes), got " +
                          std::to_string(a.size()));
  };
  if (sizes.ndim() != 1) throw BadInputError("sizes: expected a 1-d array");
  same(starts, "starts");
  same(ends, "ends");
  if (alignment) same(*alignment, "alignment");
  if (fixed) same(*fixed, "fixed_offsets");
  if (costs) same(*costs, "spill_costs");
  alloc::Problem p;
  p.buffers.resize(static_cast<std::size_t>(n));
  const int64_t* s = sizes.data();
  const int64_t* b = starts.data();
  const int64_t* e = ends.data();
  const int64_t* al = alignment ? alignment->data() : nullptr;
  const int64_t* fx = fixed ? fixed->data() : nullptr;
  const int64_t* c = costs ? costs->data() : nullptr;
  for (py::ssize_t i = 0; i < n; ++i) {
    alloc::Buffer& x = p.buffers[static_cast<std::size_t>(i)];
    x.id = std::to_string(i);
    x.size = s[i];
    x.start = b[i];
    x.end = e[i];
    if (al) x.alignment = al[i];
    if (fx) x.fixed_offset = fx[i] < 0 ? alloc::kNoFixedOffset : fx[i];
    if (c) {
      if (c[i] < 0) throw BadInputError("spill_costs[" + std::to_string(i) + "]: expected a cost >= 0, got " + std::to_string(c[i]));
      x.spill_cost = c[i];
    }
  }
  return p;
}

}  // namespace

void bind_alloc(py::module_& m) {
  py::class_<AllocResult>(m, "AllocResult")
      .def_property_readonly("offsets",
                             [](const AllocResult& r) {
                               const auto& off = r.result.placement.offsets;
                               py::array_t<int64_t> a(static_cast<py::ssize_t>(off.size()));
                               std::copy(off.begin(), off.end(), a.mutable_data());
                               return a;
                             })
      .def_property_readonly("height", [](const AllocResult& r) { return r.result.height; })
      .def_property_readonly("lower_bound", [](const AllocResult& r) { return r.result.lower_bound; })
      .def_property_readonly("proven", [](const AllocResult& r) { return r.result.proven_optimal; })
      .def_property_readonly("feasible", [](const AllocResult& r) { return r.result.feasible; })
      .def_property_readonly("spill_cost", [](const AllocResult& r) { return r.result.spill_cost; })
      .def_property_readonly("solver", [](const AllocResult& r) { return r.result.solver; })
      .def_property_readonly("objective", [](const AllocResult& r) { return alloc::objective_name(r.options); })
      .def_property_readonly("seconds", [](const AllocResult& r) { return r.result.seconds; })
      .def_property_readonly("nodes", [](const AllocResult& r) { return r.result.nodes; })
      .def_property_readonly("capacity", [](const AllocResult& r) {
        return r.problem.capacity == alloc::kUnbounded ? py::object(py::none()) : py::object(py::int_(r.problem.capacity));
      })
      .def_property_readonly("ids", [](const AllocResult& r) {
        std::vector<std::string> ids;
        for (const auto& b : r.problem.buffers) ids.push_back(b.id);
        return ids;
      })
      .def_property_readonly("spill_reasons", [](const AllocResult& r) { return r.result.placement.spill_reasons; })
      .def("to_json", [](const AllocResult& r) { return alloc::result_to_json_text(r.problem, r.result, r.options); })
      .def("to_csv", [](const AllocResult& r) { return alloc::plan_to_csv(r.problem, r.result.placement); })
      .def("svg", [](const AllocResult& r) {
        const bool mini = r.options.minimize && r.options.objective == alloc::Objective::kPack;  // as the CLI
        return alloc::plan_to_svg(r.problem, r.result.placement, r.title + " (" + r.result.solver + ")",
                                  mini ? r.result.lower_bound : -1);
      });

  auto opts = [](int64_t capacity, bool minimize, std::string objective, std::string solver, double time_limit,
                 std::optional<int> threads, std::optional<uint64_t> seed, int64_t iterations, std::vector<std::string> exact_off) {
    return AllocOptions{capacity, minimize, std::move(objective), std::move(solver), time_limit, threads,
                        seed, iterations, std::move(exact_off)};
  };
  m.def(
      "alloc_arrays",
      [opts](const I64Array& sizes, const I64Array& starts, const I64Array& ends, std::optional<I64Array> alignment,
             std::optional<I64Array> fixed, std::optional<I64Array> costs, int64_t capacity, bool minimize,
             std::string objective, std::string solver, double time_limit, std::optional<int> threads,
             std::optional<uint64_t> seed, int64_t iterations, std::vector<std::string> exact_off) {
        const Deadline reading(-1.0);
        alloc::Problem p = from_arrays(sizes, starts, ends, alignment, fixed, costs);
        return solve(std::move(p),
                     opts(capacity, minimize, std::move(objective), std::move(solver), time_limit, threads, seed,
                          iterations, std::move(exact_off)),
                     "<arrays>", reading.elapsed_seconds());
      },
      py::arg("sizes"), py::arg("starts"), py::arg("ends"), py::arg("alignment"), py::arg("fixed_offsets"),
      py::arg("spill_costs"), py::arg("capacity"), py::arg("minimize"), py::arg("objective"), py::arg("solver"),
      py::arg("time_limit"), py::arg("threads"), py::arg("seed"), py::arg("iterations"), py::arg("exact_off"));
  // The scale benchmarks' generator (alloc/generate.h) as arrays: sizes, starts, ends.
  m.def(
      "alloc_generate_stream",
      [](int n, uint64_t seed, int per_tick) {
        if (n < 1 || n > 100'000'000) throw BadInputError("n " + std::to_string(n) + ": expected 1..100000000");
        if (per_tick < 1) throw BadInputError("per_tick " + std::to_string(per_tick) + ": expected >= 1");
        alloc::Problem p = alloc::generate_stream(n, seed, per_tick);
        const auto m = static_cast<py::ssize_t>(p.buffers.size());
        py::array_t<int64_t> sizes(m), starts(m), ends(m);
        int64_t *s = sizes.mutable_data(), *b = starts.mutable_data(), *e = ends.mutable_data();
        for (py::ssize_t i = 0; i < m; ++i) {
          const alloc::Buffer& x = p.buffers[static_cast<std::size_t>(i)];
          s[i] = x.size, b[i] = x.start, e[i] = x.end;
        }
        return py::make_tuple(sizes, starts, ends);
      },
      py::arg("n"), py::arg("seed"), py::arg("per_tick"));
  // torch-spyre's in-place edge rules with their words ("" when legal): the drop-in checks its
  // buffer objects with the engine's own rule before converting them.
  m.def("alloc_in_place_edge_error", &alloc::in_place_edge_error, py::arg("child"), py::arg("parent"),
        py::arg("parent_end"), py::arg("child_start"), py::arg("parent_read_after_write"), py::arg("child_size"),
        py::arg("parent_size"));
  m.def(
      "alloc_doc",
      [opts](const Doc& d, int64_t capacity, bool minimize, std::string objective, std::string solver, double time_limit,
             std::optional<int> threads, std::optional<uint64_t> seed, int64_t iterations, std::vector<std::string> exact_off,
             int64_t alignment) {
        const Deadline reading(-1.0);
        alloc::Problem p;
        {
          py::gil_scoped_release nogil;
          if (d.is_path) {
            p = take(alloc::read_problem(d.data));
          } else {
            Json j = take(parse_json_text(d.data, d.source));
            p = take(alloc::problem_from_json(j, d.source));
          }
        }
        // The torch-spyre drop-in's alignment: any positive value, as in the library and in
        // torch-spyre (the JSON readers accept powers of two only).
        if (alignment == 0 || alignment < -1) throw BadInputError("alignment " + std::to_string(alignment) + ": expected >= 1");
        if (alignment > 0)
          for (auto& b : p.buffers) b.alignment = alignment;
        return solve(std::move(p),
                     opts(capacity, minimize, std::move(objective), std::move(solver), time_limit, threads, seed,
                          iterations, std::move(exact_off)),
                     d.name(), reading.elapsed_seconds());
      },
      py::arg("doc"), py::arg("capacity"), py::arg("minimize"), py::arg("objective"), py::arg("solver"),
      py::arg("time_limit"), py::arg("threads"), py::arg("seed"), py::arg("iterations"), py::arg("exact_off"),
      py::arg("alignment") = -1);
}

}  // namespace sp::bindings
