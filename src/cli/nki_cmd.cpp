// scratchplan nki check KERNEL | nki plan KERNEL: NeuronCore SBUF/PSUM allocation. KERNEL is our
// JSON model or a Python NKI kernel (FILE.py[:FUNCTION] with --input shapes), traced by
// python/scratchplan/nki/tracer.py run under /usr/bin/python3 as a subprocess.
// check exits 0 when the kernel is clean, 2 when it has violations or is malformed;
// plan exits 0 with a validated plan, 2 for bad input or a kernel that cannot fit.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>

#include "cli/options.h"
#include "cli/verbs.h"
#include "core/json_reader.h"
#include "core/outputs.h"
#include "nki/check.h"
#include "nki/plan.h"
#include "nki/report.h"
#include "nki/svg.h"
#include "nki/trace.h"

namespace sp::cli {
namespace {

struct NkiArgs {
  std::string kernel_path;
  std::string hardware_path;
  std::string out_path;
  std::string svg_path;
  std::string trace_path;
  bool json = false;
  int max_buffers = 8;
  bool single = false;
  bool in_order = false;
  bool keep_direct = false;
  double time_limit = 10.0;         // plan: seconds for the whole run, tracing included
  double check_time_limit = 60.0;   // check: seconds for the tracing (the exact simulation follows)
  std::vector<std::string> inputs;  // Python kernels: NAME=D0xD1:DTYPE
  std::vector<std::string> kernel_args;  // Python kernels: NAME=EXPR (evaluated in the kernel module) for other parameters
  std::string grid;                 // Python kernels: SPMD grid G0xG1
  std::string rewrite_path;         // plan: the kernel source with the planned allocations
  std::string addresses_path;       // plan: the planned address map against the kernel's own (JSON)
  int lnc = 1;                      // Python kernels: logical cores of the launch (each traced and checked on its own)
  int core = 0;                     // the core being traced
  double stated_limit = 0;          // the verb's --time-limit as the user gave it (messages)
};

bool is_python_kernel(const std::string& path) { return std::regex_match(path, std::regex(R"(.*\.py(:[A-Za-z_]\w*)?)")); }

// The tracer script: $SCRATCHPLAN_PYTHONPATH, the build tree next to this binary, the source tree.
std::string tracer_script() {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots;
  if (const char* e = std::getenv("SCRATCHPLAN_PYTHONPATH"); e && *e) roots.emplace_back(e);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    roots.push_back(exe.parent_path() / "python");
    roots.push_back(exe.parent_path().parent_path() / "python");
  }
#ifdef SCRATCHPLAN_SOURCE_PYTHON
  roots.emplace_back(SCRATCHPLAN_SOURCE_PYTHON);
#endif
  for (const auto& r : roots) {
    fs::path p = r / "scratchplan" / "nki" / "tracer.py";
    if (fs::exists(p, ec)) return p.string();
  }
  return "";
}

std::string python_interpreter() {
  if (const char* e = std::getenv("SCRATCHPLAN_PYTHON"); e && *e) return e;
  return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

// Runs the tracer with `args` for at most `seconds`. Its result comes on a pipe at fd 3 ("ok" or
// "error" then the payload); the kernel's own prints go to our stderr (its fd 1 and 2 are ours). Past
// the limit the tracer stops itself naming the kernel line (it is given a deadline a little
// earlier), else it is killed at the limit.
Result<std::string> run_tracer(std::vector<std::string> args, const std::string& spec, double seconds, double stated) {
  const std::string script = tracer_script();
  if (script.empty())
    return bad_input("cannot find the NKI tracer (scratchplan/nki/tracer.py); set SCRATCHPLAN_PYTHONPATH to the "
                     "directory that contains the scratchplan package");
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const double own = std::max(0.01, seconds - std::min(0.15, seconds * 0.1));
  std::ostringstream lim;
  lim.precision(6);
  lim << own;
  std::vector<std::string> argv = {python_interpreter(), script};
  argv.insert(argv.end(), args.begin(), args.end());
  std::ostringstream st;
  st << stated;
  argv.insert(argv.end(), {"--time-limit", lim.str(), "--result-fd", "3"});
  if (args.front() == "trace") argv.insert(argv.end(), {"--stated-limit", st.str()});
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return bad_input("cannot start the tracer (pipe)");
  pid_t pid = fork();
  if (pid < 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return bad_input("cannot start the tracer (fork)");
  }
  if (pid == 0) {
    if (out_pipe[1] != 3) {
      dup2(out_pipe[1], 3);
      close(out_pipe[1]);
    }
    if (out_pipe[0] != 3) close(out_pipe[0]);
    dup2(2, 1);  // the kernel's prints (and the interpreter's) never reach our stdout
    std::vector<char*> cargv;
    for (auto& x : argv) cargv.push_back(const_cast<char*>(x.c_str()));
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  std::string out;
  char buf[1 << 16];
  bool expired = false;
  for (;;) {
    const double left = seconds - std::chrono::duration<double>(Clock::now() - started).count();
    if (left <= 0) {
      expired = true;
      break;
    }
    pollfd pf{out_pipe[0], POLLIN, 0};
    const int r = poll(&pf, 1, static_cast<int>(std::ceil(left * 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;  // timeout: re-checked at the top
    const ssize_t n = read(out_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(out_pipe[0]);
  if (expired) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::ostringstream secs;
  secs << stated;
  if (expired)
    return bad_input(spec + ": tracing took longer than the time limit of " + secs.str() +
                     " s (a loop that never ends?)");
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const auto nl = out.find('\n');
  const std::string kind = out.substr(0, nl == std::string::npos ? out.size() : nl);
  std::string payload = nl == std::string::npos ? "" : out.substr(nl + 1);
  if (code == 0 && kind == "ok") return payload;
  if (code == 127 && out.empty()) return bad_input("cannot run " + argv[0] + " for the NKI tracer");
  while (!payload.empty() && payload.back() == '\n') payload.pop_back();
  if (kind == "error" && code == 2) return bad_input(payload.empty() ? "the tracer rejected the kernel" : payload);
  if (kind == "error") return internal_error("NKI tracer failed (exit " + std::to_string(code) + "): " + payload);
  // No result at all: the kernel ended the interpreter itself (os._exit, a signal, a crash).
  return bad_input(spec + ": the tracer ended without a result (exit " +
                   (WIFEXITED(status) ? std::to_string(code) : "by signal " + std::to_string(WTERMSIG(status))) +
                   "): the kernel ended the interpreter (os._exit?) or crashed it; its output is on stderr");
}

// --hardware NAME (trn1, trn2, ...) unless a file of that name exists.
bool builtin_hw(const NkiArgs& a) {
  std::error_code ec;
  return nki::is_builtin_hardware_name(a.hardware_path) && !std::filesystem::exists(a.hardware_path, ec);
}

std::vector<std::string> tracer_args(const NkiArgs& a, const std::string& verb, const std::string& spec) {
  std::vector<std::string> v = {verb, spec};
  for (const auto& i : a.inputs) v.insert(v.end(), {"--input", i});
  for (const auto& i : a.kernel_args) v.insert(v.end(), {"--arg", i});
  if (!a.grid.empty()) v.insert(v.end(), {"--grid", a.grid});
  if (a.lnc > 1) v.insert(v.end(), {"--lnc", std::to_string(a.lnc), "--core", std::to_string(a.core)});
  // The default core's description: the tracer's numbers (tile sizes, cycle model) are never its own.
  v.insert(v.end(), {"--hardware-defaults", nki::hardware_to_json(*nki::builtin_hardware("trn1")).dump()});
  if (builtin_hw(a)) {
    // the built-in description itself, so the tracer's nl.tile_size is the checker's
    v.insert(v.end(), {"--hardware-json", nki::hardware_to_json(*nki::builtin_hardware(a.hardware_path)).dump()});
  } else if (!a.hardware_path.empty()) {
    v.insert(v.end(), {"--hardware", a.hardware_path});
  }
  return v;
}

Result<nki::Kernel> trace_python(const NkiArgs& a, const std::string& spec, const nki::Hardware* hw, double seconds) {
  auto text = run_tracer(tracer_args(a, "trace", spec), spec, seconds, a.stated_limit);
  if (!text) return text.error();
  auto j = parse_json_text(*text, spec);
  if (!j) return internal_error("the NKI tracer wrote malformed JSON: " + j.error().message);
  return nki::kernel_from_json(*j, spec, hw);
}

Result<nki::Kernel> load(const NkiArgs& a, double seconds) {
  std::optional<nki::Hardware> hw;
  if (builtin_hw(a)) {
    hw = *nki::builtin_hardware(a.hardware_path);
  } else if (!a.hardware_path.empty()) {
    auto h = nki::read_hardware_file(a.hardware_path);
    if (!h) return h.error();
    hw = *h;
  }
  if (is_python_kernel(a.kernel_path)) return trace_python(a, a.kernel_path, hw ? &*hw : nullptr, seconds);
  if (!a.inputs.empty() || !a.grid.empty() || !a.kernel_args.empty())
    return bad_input(std::string(!a.inputs.empty() ? "--input" : !a.grid.empty() ? "--grid" : "--arg") +
                     " applies to Python kernels (FILE.py[:FUNCTION]), not to the JSON model " + a.kernel_path);
  if (!a.rewrite_path.empty())
    return bad_input("--rewrite applies to Python kernels (FILE.py[:FUNCTION]), not to the JSON model " + a.kernel_path);
  return nki::read_kernel(a.kernel_path, hw ? &*hw : nullptr);
}

// The kernel source with the planned allocations, after checking that it traces and checks clean.
Result<std::string> rewrite_source(const NkiArgs& a, const nki::PlanResult& p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  char dir_t[] = "/tmp/scratchplan-rewrite-XXXXXX";
  if (!mkdtemp(dir_t)) return bad_input("cannot create a temporary directory for --rewrite");
  const fs::path dir(dir_t);
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(d, e);
    }
  } cleanup{dir};
  const fs::path planned = dir / "planned.json";
  std::ofstream(planned) << nki::kernel_to_json(p.kernel).dump() << "\n";
  std::vector<std::string> args = tracer_args(a, "rewrite", a.kernel_path);
  args.insert(args.end(), {"--planned", planned.string()});
  // --rewrite's two traces come on top of --time-limit (its help says so), bounded as nki check is
  const double bound = std::max(a.time_limit, a.check_time_limit);
  auto src = run_tracer(args, a.kernel_path, bound, bound);
  if (!src) return src.error();
  // Same file name in the temporary directory, so the check names the same lines.
  std::smatch m;
  std::regex_match(a.kernel_path, m, std::regex(R"((.*\.py)(:[A-Za-z_]\w*)?)"));
  const fs::path copy = dir / fs::path(m[1].str()).filename();
  std::ofstream(copy) << *src;
  nki::Hardware hw = p.kernel.hw;
  NkiArgs again_args = a;
  again_args.stated_limit = bound;
  auto again = trace_python(again_args, copy.string() + m[2].str(), &hw, bound);
  if (!again) return internal_error("the rewritten kernel does not trace: " + again.error().message);
  auto rep = nki::check_kernel(*again);
  if (!rep) return rep.error();
  if (!rep->clean())
    return internal_error("the rewritten kernel does not check clean: " + rep->violations.front().message);
  return *src;
}

// The planned address of every SBUF/PSUM tensor next to the kernel's own, in the new API's terms
// (address = [start_partition, byte]; PSUM bytes count from bank 0), with both simulated cycles.
Json address_map(const std::string& label, const nki::Kernel& own, const nki::PlanResult& p) {
  Json out;
  out["format"] = "scratchplan-nki-addresses";
  out["version"] = 1;
  out["kernel"] = label;
  out["hardware"] = p.kernel.hw.name;
  out["planned_cycles"] = p.planned.makespan;
  out["own_cycles"] = p.has_input ? Json(p.input.makespan) : Json(nullptr);
  if (p.input_compiler_placed_by_planner) out["own_compiler_placed_by_planner"] = true;  // (absent: false)
  Json ts = Json::array();
  for (const nki::TensorPlan& tp : p.plans) {
    const nki::Tensor& t = p.kernel.tensors[static_cast<std::size_t>(tp.tensor)];
    Json j;
    j["tensor"] = t.name;
    j["buffer"] = nki::memory_name(t.buffer);
    j["source"] = t.source;
    j["tiles"] = tp.tiles;
    auto addrs = [](const std::vector<nki::TilePlacement>& pl) {
      Json a = Json::array();
      for (const auto& x : pl) a.push_back({x.start_partition, x.byte_addr});
      return a;
    };
    j["address"] = addrs(nki::evaluate_allocation(p.kernel, t));
    const auto& ot = own.tensors[static_cast<std::size_t>(tp.tensor)];
    j["own_address"] = ot.alloc.kind == nki::AllocKind::kAuto ? Json(nullptr) : addrs(nki::evaluate_allocation(own, ot));
    ts.push_back(j);
  }
  out["tensors"] = ts;
  return out;
}

// --lnc N: each logical core is traced on its own (nl.program_id(0) = its id) and checked on its
// own SBUF and PSUM; the report, the picture and the timeline have a section per core.
int run_check(const NkiArgs& given) {
  NkiArgs a = given;
  a.stated_limit = a.check_time_limit;
  OutputSet outputs;
  if (Status st = outputs.add("--svg", a.svg_path); !st) return fail(st.error());
  if (Status st = outputs.add("--trace", a.trace_path); !st) return fail(st.error());
  if (a.lnc > 1 && !is_python_kernel(a.kernel_path))
    return fail(bad_input("--lnc applies to Python kernels (FILE.py[:FUNCTION]), not to the JSON model " + a.kernel_path));
  const auto started = std::chrono::steady_clock::now();
  std::vector<nki::Kernel> ks;
  std::vector<nki::CheckReport> reps;
  for (int core = 0; core < a.lnc; ++core) {
    NkiArgs ac = a;
    ac.core = core;
    const double left =
        a.check_time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    auto k = load(ac, std::max(0.01, left));
    if (!k) return fail(k.error());
    auto rep = nki::check_kernel(*k);
    if (!rep) return fail(located(rep.error(), a.kernel_path));
    ks.push_back(std::move(*k));
    reps.push_back(std::move(*rep));
  }
  const std::string label = input_name(a.kernel_path);
  auto core_label = [&](std::size_t c) {
    return a.lnc > 1 ? label + " [logical core " + std::to_string(c) + " of " + std::to_string(a.lnc) + "]" : label;
  };
  std::vector<const nki::Kernel*> kp;
  std::vector<const nki::CheckReport*> rp;
  for (std::size_t c = 0; c < ks.size(); ++c) {
    kp.push_back(&ks[c]);
    rp.push_back(&reps[c]);
  }
  if (!a.svg_path.empty()) outputs.set(a.svg_path, nki::check_svg(kp, rp));
  if (!a.trace_path.empty()) outputs.set(a.trace_path, nki::check_trace(label, kp, rp));
  if (Status st = outputs.commit(); !st) return fail(st.error());
  std::ostream& report = outputs.uses_stdout() ? std::cerr : std::cout;
  if (a.json && a.lnc == 1) {
    report << nki::check_report_to_json(label, ks[0], reps[0]).dump(1) << "\n";
  } else if (a.json) {
    Json cores = Json::array();
    bool clean = true;
    for (std::size_t c = 0; c < reps.size(); ++c) {
      Json j = nki::check_report_to_json(core_label(c), ks[c], reps[c]);
      j["logical_core"] = static_cast<int64_t>(c);
      clean = clean && reps[c].clean();
      cores.push_back(j);
    }
    Json out;
    out["format"] = "scratchplan-nki-check-cores";
    out["version"] = 1;
    out["kernel"] = label;
    out["logical_cores"] = a.lnc;
    out["clean"] = clean;
    out["cores"] = cores;
    report << out.dump(1) << "\n";
  } else {
    for (std::size_t c = 0; c < reps.size(); ++c) report << nki::check_report_text(core_label(c), ks[c], reps[c]);
  }
  for (std::size_t c = 0; c < reps.size(); ++c)
    if (!reps[c].clean())
      // Exit 2 always comes with one line on stderr, so scripts can tell why without parsing stdout.
      return fail(bad_input(core_label(c) + ": " + std::to_string(reps[c].distinct_violations) +
                            " allocation violation(s), first: " + reps[c].violations.front().message));
  return kExitOk;
}

// `text` / `json`: where a core of a multi-core plan puts its report (printed once every core
// has planned); null: printed here. `kept`: where the plan goes for the launch's pictures.
int run_plan_core(const NkiArgs& a, std::ostream* text = nullptr, Json* json = nullptr, nki::PlanResult* kept = nullptr) {
  OutputSet outputs;
  if (Status st = outputs.add("-o", a.out_path); !st) return fail(st.error());
  if (Status st = outputs.add("--svg", a.svg_path); !st) return fail(st.error());
  if (Status st = outputs.add("--rewrite", a.rewrite_path); !st) return fail(st.error());
  if (Status st = outputs.add("--trace", a.trace_path); !st) return fail(st.error());
  if (Status st = outputs.add("--addresses", a.addresses_path); !st) return fail(st.error());
  if (std::error_code ec; !a.rewrite_path.empty() &&
      std::filesystem::equivalent(a.rewrite_path, std::regex_replace(a.kernel_path, std::regex(R"(:[A-Za-z_]\w*$)"), ""), ec))
    return fail(bad_input("--rewrite " + a.rewrite_path + " is the kernel's own source; write the plan to another file"));
  std::ostream& human = text ? *text : outputs.uses_stdout() ? std::cerr : std::cout;
  const auto started = std::chrono::steady_clock::now();
  auto k = load(a, a.time_limit);
  if (!k) return fail(k.error());
  nki::PlanOptions opt;
  opt.max_buffers = a.max_buffers;
  opt.multi_buffer = !a.single;
  // Tracing a Python kernel counts against the limit too.
  opt.time_limit_s = std::max(0.0, a.time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  opt.scheduler = a.in_order ? nki::Scheduler::kInOrder : nki::Scheduler::kDataflow;
  opt.keep_direct = a.keep_direct;
  auto plan = nki::plan_kernel(*k, opt);
  if (!plan) return fail(located(plan.error(), a.kernel_path));
  const nki::PlanResult& p = *plan;
  outputs.set(a.out_path, nki::kernel_to_json(p.kernel).dump(1) + "\n");
  if (!a.addresses_path.empty()) outputs.set(a.addresses_path, address_map(input_name(a.kernel_path), *k, p).dump(1) + "\n");
  if (!a.svg_path.empty()) outputs.set(a.svg_path, nki::plan_svg(p));
  if (!a.trace_path.empty()) outputs.set(a.trace_path, nki::plan_trace(input_name(a.kernel_path), p));
  if (!a.rewrite_path.empty()) {
    auto src = rewrite_source(a, p);
    if (!src) return fail(src.error());
    outputs.set(a.rewrite_path, *src);
  }
  if (Status st = outputs.commit(); !st) return fail(st.error());
  if (a.json && json)
    *json = nki::plan_result_to_json(input_name(a.kernel_path), p);
  else if (a.json)
    human << nki::plan_result_to_json(input_name(a.kernel_path), p).dump(1) << "\n";
  else
    human << nki::plan_result_text(input_name(a.kernel_path), p);
  if (!p.input_check.clean())  // the plan is clean, but the user's own allocation is not: say so where scripts look
    std::cerr << input_name(a.kernel_path) << ": the kernel's own allocation has " << p.input_check.distinct_violations
              << " violation(s) (planned a clean one), first: " << p.input_check.violations.front().message << "\n";
  if (kept) *kept = std::move(*plan);
  return kExitOk;
}

// --lnc N: each logical core is traced, planned and validated on its own; the time limit is shared.
int run_plan(const NkiArgs& given) {
  NkiArgs a = given;
  a.stated_limit = a.time_limit;
  if (a.lnc == 1) return run_plan_core(a);
  if (!is_python_kernel(a.kernel_path))
    return fail(bad_input("--lnc applies to Python kernels (FILE.py[:FUNCTION]), not to the JSON model " + a.kernel_path));
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"-o", a.out_path},
                                   {"--rewrite", a.rewrite_path}, {"--addresses", a.addresses_path}})
    if (!path.empty())
      return fail(bad_input(std::string(flag) + " writes one kernel; with --lnc " + std::to_string(a.lnc) +
                            " each logical core is planned on its own (give --lnc 1 to write it)"));
  OutputSet outputs;  // the pictures show every core, so they are written once all have planned
  if (Status st = outputs.add("--svg", a.svg_path); !st) return fail(st.error());
  if (Status st = outputs.add("--trace", a.trace_path); !st) return fail(st.error());
  // Every core plans before anything is printed: a core that fails leaves no partial report.
  const auto started = std::chrono::steady_clock::now();
  std::ostringstream text;
  Json cores = Json::array();
  std::vector<nki::PlanResult> plans(static_cast<std::size_t>(a.lnc));
  for (int core = 0; core < a.lnc; ++core) {
    NkiArgs ac = a;
    ac.core = core;
    ac.svg_path.clear();
    ac.trace_path.clear();
    const double left = a.time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    ac.time_limit = std::max(0.01, left / (a.lnc - core));
    text << "logical core " << core << " of " << a.lnc << ":\n";
    Json j;
    if (int rc = run_plan_core(ac, &text, &j, &plans[static_cast<std::size_t>(core)]); rc != kExitOk) return rc;
    if (a.json) {
      j["logical_core"] = core;
      cores.push_back(j);
    }
  }
  std::vector<const nki::PlanResult*> pp;
  for (const nki::PlanResult& p : plans) pp.push_back(&p);
  if (!a.svg_path.empty()) outputs.set(a.svg_path, nki::plan_svg(pp));
  if (!a.trace_path.empty()) outputs.set(a.trace_path, nki::plan_trace(input_name(a.kernel_path), pp));
  if (Status st = outputs.commit(); !st) return fail(st.error());
  if (a.json) {
    Json out;
    out["format"] = "scratchplan-nki-plan-cores";
    out["version"] = 1;
    out["kernel"] = input_name(a.kernel_path);
    out["logical_cores"] = a.lnc;
    out["cores"] = cores;
    (outputs.uses_stdout() ? std::cerr : std::cout) << out.dump(1) << "\n";
  } else {
    (outputs.uses_stdout() ? std::cerr : std::cout) << text.str();
  }
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
    c->add_option("kernel", args->kernel_path,
                  "Kernel JSON (docs/nki.md; - for stdin) or Python NKI kernel FILE.py[:FUNCTION] (traced)")
        ->required();
    c->add_option("--input", args->inputs,
                  "Python kernels: an HBM input NAME=D0xD1x...:DTYPE (e.g. q=1x128x4096:bf16), one per parameter");
    c->add_option("--arg", args->kernel_args,
                  "Python kernels: a non-tensor parameter NAME=EXPR, a Python expression evaluated in the kernel module's "
                  "namespace (1e-6, (3,4), True, 'text', nl.bfloat16, NormType.RMS_NORM, \"Cfg(bs=1)\")");
    c->add_option("--grid", args->grid, "Python kernels: SPMD launch grid G0[xG1...] (kernel[G0, G1](...))");
    c->add_option("--hardware", args->hardware_path, "Hardware: trn1 (NeuronCore-v2) or trn2 (NeuronCore-v3, 224 KiB SBUF partitions), or a description JSON "
                  "(default: the kernel's, else trn1)");
    c->add_flag("--json", args->json, "Machine-readable output");
    c->add_option("--lnc", args->lnc,
                  "Python kernels: logical cores of the launch (default 1); each is traced once (nl.program_id(0) = its "
                  "id, nl.num_programs() = N) and checked on its own SBUF and PSUM")
        ->check(CLI::Range(1, 8));
    c->add_option("--trace", args->trace_path,
                  "Write the engine timeline as Chrome trace event JSON (Perfetto, chrome://tracing): a track per "
                  "engine queue, SBUF/PSUM bytes per partition as counters, time in cycles of the reference clock");
  }
  plan->add_option("-o,--output", args->out_path, "Write the kernel with the planned allocations (- for stdout)");
  plan->add_option("--svg", args->svg_path, "Write engines x time and SBUF partitions x bytes as SVG");
  plan->add_option("--addresses", args->addresses_path,
                   "Write the planned address of every SBUF/PSUM tensor ([start_partition, byte] per logical block, "
                   "with its source line and tile count) next to the kernel's own, and both simulated cycles, as JSON");
  plan->add_option("--rewrite", args->rewrite_path,
                   "Python kernels: write the kernel source with each declaration's buffer= set to the planned "
                   "allocation (checked clean before it is written)");
  check->add_option("--svg", args->svg_path, "Write the memory map with the tiles of violations outlined as SVG");
  CLI::Option* max_buffers = plan->add_option("--max-buffers", args->max_buffers, "Most physical tiles per tensor to try")
                                 ->check(count_in(1, 1024));
  plan->add_flag("--single", args->single, "Keep every tensor at its smallest legal tile count")->excludes(max_buffers);
  plan->add_flag("--keep-direct", args->keep_direct,
                 "Keep the kernel's direct allocations and plan only the automatically allocated tensors");
  plan->add_flag("--in-order", args->in_order,
                 "Timeline runs each engine queue in program order (default: dataflow list scheduling)");
  check->add_option("--time-limit", args->check_time_limit,
                    "Python kernels: seconds for tracing the kernel (default 60); a kernel still running then stops "
                    "with exit 2 naming the line it was at")
      ->check(seconds());
  plan->add_option("--time-limit", args->time_limit,
                   "Seconds for the whole run (default 10): tracing, the search and the final timelines and check (the search "
                   "stops early enough for the rest; only a kernel whose single simulation exceeds it runs over; --rewrite's "
                   "re-trace and check come on top)")
      ->check(seconds());
  check->callback([args, &exit_code] { exit_code = run_check(*args); });
  plan->callback([args, &exit_code] { exit_code = run_plan(*args); });
}

}  // namespace sp::cli
