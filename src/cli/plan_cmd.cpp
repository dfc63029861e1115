// scratchplan plan PROGRAM.json [--hardware spyre|FILE.json] [--cores N] [--time-limit S] -o PLAN.json
// [--report] [--svg PICTURE.svg] [--trace FILE.json] [--stage 1..4] [--no-<technique>]: LX planning of a whole program.
#include <iostream>

#include "cli/options.h"
#include "cli/verbs.h"
#include "core/outputs.h"
#include "lx/lx.h"
#include "program/program.h"

namespace sp::cli {
namespace {

struct PlanArgs {
  std::string program_path;
  std::string hardware = "spyre";
  std::string out_path;
  std::string svg_path;
  std::string trace_path;
  int cores = -1;
  double time_limit = 2.0;
  int stage = 0;  // 0 = everything; 1..4 = the seed's stages
  bool report = false;
  bool no_in_place = false, no_clone_inputs = false, no_clone_outputs = false, no_eviction = false;
  bool no_reorder = false, no_coopt = false, no_layout_inference = false, no_fewer_cores = false;
  int64_t capacity = -1;
  double hbm_bandwidth = -1;
};

int run_plan(const PlanArgs& a) {
  OutputSet outputs;
  if (Status st = outputs.add("-o", a.out_path); !st) return fail(st.error());
  if (Status st = outputs.add("--svg", a.svg_path); !st) return fail(st.error());
  if (Status st = outputs.add("--trace", a.trace_path); !st) return fail(st.error());
  std::ostream& human = outputs.uses_stdout() ? std::cerr : std::cout;
  auto hw = lx::load_hardware(a.hardware);
  if (!hw) return fail(hw.error());
  if (a.capacity >= 0) hw->capacity_override = a.capacity;
  if (a.hbm_bandwidth > 0) hw->hbm_bytes_per_s = a.hbm_bandwidth * 1e9;
  int cores = a.cores < 0 ? hw->max_cores : a.cores;
  if (cores < 1 || cores > hw->max_cores)
    return fail(bad_input("--cores " + std::to_string(cores) + ": hardware '" + hw->name + "' has 1.." +
                          std::to_string(hw->max_cores) + " cores"));
  auto p = program::read_program(a.program_path);
  if (!p) return fail(p.error());
  lx::Options o = a.stage ? lx::stage_options(a.stage) : lx::Options{};
  o.cores = cores;
  o.time_limit = a.time_limit;
  if (a.no_in_place) o.in_place = false;
  if (a.no_clone_inputs) o.clone_inputs = false;
  if (a.no_clone_outputs) o.clone_outputs = false;
  if (a.no_eviction) o.eviction = false;
  if (a.no_reorder) o.reorder = false;
  if (a.no_coopt) o.coopt = false;
  if (a.no_fewer_cores) o.fewer_cores = false;
  if (a.no_layout_inference) o.infer_layouts = false;
  auto plan = lx::plan_program(*p, *hw, o);
  if (!plan) return fail(located(plan.error(), a.program_path));
  if (!a.out_path.empty()) outputs.set(a.out_path, lx::plan_json_text(*plan));
  if (!a.svg_path.empty()) outputs.set(a.svg_path, lx::plan_svg(*plan));
  if (!a.trace_path.empty()) outputs.set(a.trace_path, lx::plan_trace(*plan));
  if (Status st = outputs.commit(); !st) return fail(st.error());
  if (a.report) {
    human << lx::plan_report(*plan);
  } else {
    const auto& t = plan->totals;
    human << p->name << ": HBM " << t.hbm_read + t.hbm_write << " B (all-HBM " << t.baseline_hbm << " B, lower bound "
              << t.lower_bound_hbm << " B), estimated " << t.time_s * 1e6 << " us\n";
  }
  return kExitOk;
}

}  // namespace

void register_plan(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "LX scratchpad planning of a tensor program (docs/lx.md)");
  cmd->add_option("program", args->program_path, "Program JSON (docs/program.md; - for stdin)")->required();
  cmd->add_option("--hardware", args->hardware, "spyre (built-in) or a hardware JSON file");
  cmd->add_option("--cores", args->cores, "Cores for work division (default: the hardware's maximum)")
      ->check(count_in(1, 32));
  cmd->add_option("--time-limit", args->time_limit,
                  "Seconds of anytime search (default 2): exact placement, split co-optimization, reordering and "
                  "eviction stop by then. On top comes a fixed part linear in the program (reading, layouts, work "
                  "division, one heuristic placement, the checker, writing; docs/lx.md)")->check(seconds());
  cmd->add_option("-o,--output", args->out_path, "Write the plan JSON here (- for stdout)");
  cmd->add_option("--svg", args->svg_path, "Write an SVG of LX address x op index");
  cmd->add_option("--trace", args->trace_path,
                  "Write a Chrome trace (Perfetto), in us: ops on the cores they run on with their HBM bytes, LX "
                  "bytes in use per core");
  cmd->add_flag("--report", args->report, "Print a readable summary");
  cmd->add_option("--stage", args->stage,
                  "Seed stage only: 1 LX off, 2 reduction outputs pinned, 3 + in-place, 4 + clone inputs")
      ->check(count_in(1, 4));
  cmd->add_option("--capacity", args->capacity, "Override the usable LX bytes per core")->check(byte_size());
  cmd->add_option("--hbm-gbps", args->hbm_bandwidth, "Override the HBM bandwidth (GB/s)")->check(bandwidth_gbps());
  cmd->add_flag("--no-in-place", args->no_in_place, "Disable in-place reuse");
  cmd->add_flag("--no-clone-inputs", args->no_clone_inputs, "Disable input clones");
  cmd->add_flag("--no-clone-outputs", args->no_clone_outputs, "Disable output clones");
  cmd->add_flag("--no-eviction", args->no_eviction, "Disable eviction and reload");
  cmd->add_flag("--no-reorder", args->no_reorder, "Disable op reordering");
  cmd->add_flag("--no-coopt", args->no_coopt, "Keep work division's seed splits");
  cmd->add_flag("--no-fewer-cores", args->no_fewer_cores,
                "Plan at exactly --cores N (default: also at the powers of two below N, keeping the fastest)");
  cmd->add_flag("--no-layout-inference", args->no_layout_inference,
                "Keep the default layout of tensors the program leaves open");
  cmd->callback([args, &exit_code] { exit_code = run_plan(*args); });
}

}  // namespace sp::cli
