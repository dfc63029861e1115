// scratchplan nki check KERNEL.json | nki plan KERNEL.json: NeuronCore SBUF/PSUM allocation.
// check exits 0 when the kernel is clean, 2 when it has violations or is malformed;
// plan exits 0 with a validated plan, 2 for bad input or a kernel that cannot fit.
#include <iostream>

#include "cli/options.h"
#include "cli/verbs.h"
#include "core/json_reader.h"
#include "core/outputs.h"
#include "nki/check.h"
#include "nki/plan.h"
#include "nki/report.h"
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

Result<nki::Kernel> load(const NkiArgs& a) {
  if (a.hardware_path.empty()) return nki::read_kernel(a.kernel_path);
  auto hw = nki::read_hardware_file(a.hardware_path);
  if (!hw) return hw.error();
  return nki::read_kernel(a.kernel_path, &*hw);
}

int run_check(const NkiArgs& a) {
  OutputSet outputs;
  if (Status st = outputs.add("--svg", a.svg_path); !st) return fail(st.error());
  auto k = load(a);
  if (!k) return fail(k.error());
  auto rep = nki::check_kernel(*k);
  if (!rep) return fail(located(rep.error(), a.kernel_path));
  outputs.set(a.svg_path, nki::check_svg(*k, *rep));
  if (Status st = outputs.commit(); !st) return fail(st.error());
  std::ostream& report = outputs.uses_stdout() ? std::cerr : std::cout;
  if (a.json)
    report << nki::check_report_to_json(input_name(a.kernel_path), *k, *rep).dump(1) << "\n";
  else
    report << nki::check_report_text(input_name(a.kernel_path), *k, *rep);
  if (rep->clean()) return kExitOk;
  // Exit 2 always comes with one line on stderr, so scripts can tell why without parsing stdout.
  return fail(bad_input(input_name(a.kernel_path) + ": " + std::to_string(rep->distinct_violations) +
                        " allocation violation(s), first: " + rep->violations.front().message));
}

int run_plan(const NkiArgs& a) {
  OutputSet outputs;
  if (Status st = outputs.add("-o", a.out_path); !st) return fail(st.error());
  if (Status st = outputs.add("--svg", a.svg_path); !st) return fail(st.error());
  std::ostream& human = outputs.uses_stdout() ? std::cerr : std::cout;
  auto k = load(a);
  if (!k) return fail(k.error());
  nki::PlanOptions opt;
  opt.max_buffers = a.max_buffers;
  opt.multi_buffer = !a.single;
  opt.time_limit_s = a.time_limit;
  opt.scheduler = a.in_order ? nki::Scheduler::kInOrder : nki::Scheduler::kDataflow;
  opt.keep_direct = a.keep_direct;
  auto plan = nki::plan_kernel(*k, opt);
  if (!plan) return fail(located(plan.error(), a.kernel_path));
  const nki::PlanResult& p = *plan;
  outputs.set(a.out_path, nki::kernel_to_json(p.kernel).dump(1) + "\n");
  if (!a.svg_path.empty()) outputs.set(a.svg_path, nki::plan_svg(p));
  if (Status st = outputs.commit(); !st) return fail(st.error());
  if (a.json)
    human << nki::plan_result_to_json(input_name(a.kernel_path), p).dump(1) << "\n";
  else
    human << nki::plan_result_text(input_name(a.kernel_path), p);
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
    c->add_option("kernel", args->kernel_path, "Kernel JSON (docs/nki.md; - for stdin)")->required();
    c->add_option("--hardware", args->hardware_path, "Hardware description JSON (default: the kernel's, else NeuronCore-v2)");
    c->add_flag("--json", args->json, "Machine-readable output");
  }
  plan->add_option("-o,--output", args->out_path, "Write the kernel with the planned allocations (- for stdout)");
  plan->add_option("--svg", args->svg_path, "Write engines x time and SBUF partitions x bytes as SVG");
  check->add_option("--svg", args->svg_path, "Write the memory map with the tiles of violations outlined as SVG");
  CLI::Option* max_buffers = plan->add_option("--max-buffers", args->max_buffers, "Most physical tiles per tensor to try")
                                 ->check(count_in(1, 1024));
  plan->add_flag("--single", args->single, "Keep every tensor at its smallest legal tile count")->excludes(max_buffers);
  plan->add_flag("--keep-direct", args->keep_direct,
                 "Keep the kernel's direct allocations and plan only the automatically allocated tensors");
  plan->add_flag("--in-order", args->in_order,
                 "Timeline runs each engine queue in program order (default: dataflow list scheduling)");
  plan->add_option("--time-limit", args->time_limit, "Search budget in seconds")->check(seconds());
  check->callback([args, &exit_code] { exit_code = run_check(*args); });
  plan->callback([args, &exit_code] { exit_code = run_plan(*args); });
}

}  // namespace sp::cli
