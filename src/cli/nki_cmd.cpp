// scratchplan nki check KERNEL.json | nki plan KERNEL.json: NeuronCore SBUF/PSUM allocation.
// check exits 0 when the kernel is clean, 2 when it has violations or is malformed;
// plan exits 0 with a validated plan, 2 for bad input or a kernel that cannot fit.
#include <cstdio>
#include <iostream>

#include "cli/verbs.h"
#include "core/atomic_file.h"
#include "nki/check.h"
#include "nki/plan.h"
#include "nki/svg.h"

namespace sp::cli {
namespace {

struct NkiArgs {
  std::string kernel_path;
  std::string hardware_path;
  std::string out_path;
  std::string svg_path;
  bool json = false;
  int max_buffers = 8;
  bool single = false;
  bool in_order = false;
  bool keep_direct = false;
  double time_limit = 10.0;
};

int fail(const Error& e) {
  std::cerr << "error: " << e.message << "\n";
  return exit_code(e);
}

Result<nki::Kernel> load(const NkiArgs& a) {
  if (a.hardware_path.empty()) return nki::read_kernel(a.kernel_path);
  auto hw = nki::read_hardware_file(a.hardware_path);
  if (!hw) return hw.error();
  return nki::read_kernel(a.kernel_path, &*hw);
}

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * v);
  return b;
}

int run_check(const NkiArgs& a) {
  auto k = load(a);
  if (!k) return fail(k.error());
  auto rep = nki::check_kernel(*k);
  if (!rep) return fail(rep.error());
  if (!a.svg_path.empty()) {
    auto st = write_file_atomic(a.svg_path, nki::check_svg(*k, *rep));
    if (!st) return fail(st.error());
  }
  if (a.json) {
    Json out;
    out["kernel"] = a.kernel_path;
    out["hardware"] = k->hw.name;
    out["clean"] = rep->clean();
    out["executions"] = rep->executions;
    out["distinct_violations"] = rep->distinct_violations;
    Json vs = Json::array();
    for (const auto& v : rep->violations) {
      Json vj = {{"kind", nki::violation_kind_name(v.kind)}, {"tensor", v.tensor}, {"block", v.block},
                 {"instruction", v.instruction}, {"iteration", v.iteration}, {"occurrences", v.occurrences},
                 {"message", v.message}};
      if (!v.by_tensor.empty()) vj["overwritten_by"] = {{"tensor", v.by_tensor}, {"block", v.by_block}};
      vs.push_back(vj);
    }
    out["violations"] = vs;
    std::cout << out.dump(1) << "\n";
  } else {
    std::cout << "kernel: " << a.kernel_path << " (" << k->hw.name << "), " << k->tensors.size() << " tensors, "
              << k->loops.size() << " loops, " << rep->executions << " instruction executions simulated\n";
    int automatic = 0;
    for (const auto& t : k->tensors)
      automatic += t.buffer != nki::Buffer::kHbm && t.alloc.kind == nki::AllocKind::kAuto;
    if (automatic > 0)
      std::cout << automatic << " tensors use automatic allocation: their addresses are the compiler's, not checked\n";
    std::cout << "violations: " << rep->distinct_violations << "\n";
    for (const auto& v : rep->violations) std::cout << "  " << v.message << "\n";
    if (static_cast<int64_t>(rep->violations.size()) < rep->distinct_violations)
      std::cout << "  ... " << rep->distinct_violations - static_cast<int64_t>(rep->violations.size()) << " more\n";
  }
  return rep->clean() ? kExitOk : kExitBadInput;
}

int run_plan(const NkiArgs& a) {
  auto k = load(a);
  if (!k) return fail(k.error());
  nki::PlanOptions opt;
  opt.max_buffers = a.max_buffers;
  opt.multi_buffer = !a.single;
  opt.time_limit_s = a.time_limit;
  opt.scheduler = a.in_order ? nki::Scheduler::kInOrder : nki::Scheduler::kDataflow;
  opt.keep_direct = a.keep_direct;
  auto plan = nki::plan_kernel(*k, opt);
  if (!plan) return fail(plan.error());
  const nki::PlanResult& p = *plan;
  if (!a.out_path.empty()) {
    auto st = write_file_atomic(a.out_path, nki::kernel_to_json(p.kernel).dump(1) + "\n");
    if (!st) return fail(st.error());
  }
  if (!a.svg_path.empty()) {
    auto st = write_file_atomic(a.svg_path, nki::plan_svg(p));
    if (!st) return fail(st.error());
  }
  const double speedup = p.planned.makespan ? static_cast<double>(p.baseline.makespan) / p.planned.makespan : 1.0;
  if (a.json) {
    Json out;
    out["kernel"] = a.kernel_path;
    out["hardware"] = k->hw.name;
    out["simulated_cycles"] = p.planned.makespan;
    out["single_buffered_cycles"] = p.baseline.makespan;
    out["speedup"] = speedup;
    out["sbuf_bytes_per_partition"] = p.sbuf_bytes;
    out["psum_banks"] = p.psum_banks;
    out["evaluations"] = p.evaluations;
    out["timeline"] = p.scheduler == nki::Scheduler::kInOrder ? "in-order" : "dataflow";
    out["input_allocation_cycles"] = p.has_input ? Json(p.input.makespan) : Json(nullptr);
    Json util;
    for (int e = 0; e < nki::kNumEngines; ++e)
      util[nki::engine_name(static_cast<nki::Engine>(e))] = {{"planned", p.planned.utilization(e)},
                                                             {"single_buffered", p.baseline.utilization(e)}};
    out["utilization"] = util;
    Json ts = Json::array();
    const Json planned = nki::kernel_to_json(p.kernel);
    for (const auto& tp : p.plans) {
      const auto& t = p.kernel.tensors[tp.tensor];
      ts.push_back({{"tensor", t.name}, {"buffer", nki::buffer_name(t.buffer)}, {"tiles", tp.tiles},
                    {"min_tiles", tp.min_tiles}, {"kept", tp.kept}, {"partition", tp.partition}, {"base", tp.base}, {"stride", tp.stride},
                    {"alloc", planned["tensors"][tp.tensor]["alloc"]}});
    }
    out["tensors"] = ts;
    std::cout << out.dump(1) << "\n";
    return kExitOk;
  }
  std::cout << "kernel: " << a.kernel_path << " (" << k->hw.name << ")\n";
  std::printf("%-16s %-5s %6s %6s %10s  %s\n", "tensor", "buf", "tiles", "min", "tile size", "allocation");
  for (const auto& tp : p.plans) {
    const auto& t = p.kernel.tensors[tp.tensor];
    const auto& al = t.alloc;
    const bool psum = t.buffer == nki::Buffer::kPsum;
    std::string how;
    if (tp.kept)
      how = std::string("kept: ") + nki::alloc_kind_name(al.kind) + " (" + std::to_string(tp.tiles) + " physical tiles)";
    else if (al.kind == nki::AllocKind::kModAlloc)
      how = psum ? "mod_alloc(base_bank=" + std::to_string(al.base_bank) + ", num_bank_tiles=(" + std::to_string(tp.tiles) + ",))"
                 : "mod_alloc(base_addr=" + std::to_string(al.base_addr) + ", base_partition=" +
                       std::to_string(al.base_partition) + ", num_free_tiles=(" + std::to_string(tp.tiles) + ",))";
    else
      how = "table: block b -> " + std::string(psum ? "bank " : "byte ") + std::to_string(tp.base) + " + (b mod " +
            std::to_string(tp.tiles) + ")" + (psum ? "" : " * " + std::to_string(tp.stride)) + ", partition " + std::to_string(tp.partition);
    std::printf("%-16s %-5s %6d %6d %10s  %s\n", t.name.c_str(), nki::buffer_name(t.buffer), tp.tiles, tp.min_tiles,
                (std::to_string(t.fbytes()) + " B").c_str(), how.c_str());
  }
  std::printf("SBUF used: %lld of %lld bytes per partition; PSUM banks used: %lld of %d\n",
              static_cast<long long>(p.sbuf_bytes), static_cast<long long>(k->hw.sbuf_usable()),
              static_cast<long long>(p.psum_banks), k->hw.psum_banks);
  std::printf("simulated time: %lld cycles (all single-buffered: %lld cycles, speedup %.3fx; %s timeline)\n",
              static_cast<long long>(p.planned.makespan), static_cast<long long>(p.baseline.makespan), speedup,
              p.scheduler == nki::Scheduler::kInOrder ? "in-order" : "dataflow");
  if (p.has_input)
    std::printf("the kernel's own allocation: %lld cycles\n", static_cast<long long>(p.input.makespan));
  std::cout << "engine utilization (planned / single-buffered):";
  for (int e = 0; e < nki::kNumEngines; ++e)
    if (p.planned.busy[e] > 0)
      std::cout << " " << nki::engine_name(static_cast<nki::Engine>(e)) << " " << pct(p.planned.utilization(e)) << " / "
                << pct(p.baseline.utilization(e));
  std::cout << "\nvalidated by nki check: clean\n";
  return kExitOk;
}

}  // namespace

void register_nki(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<NkiArgs>();
  CLI::App* nki = app.add_subcommand("nki", "NeuronCore SBUF/PSUM allocation: check a kernel or plan its buffers");
  nki->require_subcommand(1);
  CLI::App* check = nki->add_subcommand("check", "Find every allocation violation by exact simulation of the loop nest");
  CLI::App* plan = nki->add_subcommand("plan", "Choose buffer counts and addresses maximizing engine overlap");
  for (CLI::App* c : {check, plan}) {
    c->add_option("kernel", args->kernel_path, "Kernel JSON (docs/nki.md)")->required();
    c->add_option("--hardware", args->hardware_path, "Hardware description JSON (default: the kernel's, else NeuronCore-v2)");
    c->add_flag("--json", args->json, "Machine-readable output");
  }
  plan->add_option("-o,--output", args->out_path, "Write the kernel with the planned allocations");
  plan->add_option("--svg", args->svg_path, "Write engines x time and SBUF partitions x bytes as SVG");
  check->add_option("--svg", args->svg_path, "Write the memory map with the tiles of violations outlined as SVG");
  plan->add_option("--max-buffers", args->max_buffers, "Most physical tiles per tensor to try")->check(CLI::Range(1, 1024));
  plan->add_flag("--single", args->single, "Keep every tensor at its smallest legal tile count");
  plan->add_flag("--keep-direct", args->keep_direct,
                 "Keep the kernel's direct allocations and plan only the automatically allocated tensors");
  plan->add_flag("--in-order", args->in_order,
                 "Timeline runs each engine queue in program order (default: dataflow list scheduling)");
  plan->add_option("--time-limit", args->time_limit, "Search budget in seconds")->check(CLI::NonNegativeNumber);
  check->callback([args, &exit_code] { exit_code = run_check(*args); });
  plan->callback([args, &exit_code] { exit_code = run_plan(*args); });
}

}  // namespace sp::cli
