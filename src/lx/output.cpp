// Plan output (JSON, readable report, SVG) and the pattern-case reader.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include "core/svg.h"
#include "lx/lx.h"

namespace sp::lx {

Json plan_to_json(const Plan& p, bool arrays) {
  Json j;
  j["format"] = "scratchplan-lx-plan";
  j["version"] = 1;
  j["program"] = p.graph.name;
  j["hardware"] = hardware_to_json(p.hw);
  j["capacity_per_core"] = p.capacity;
  j["techniques"] = {{"lx", p.options.lx},
                     {"only_reduction_outputs", p.options.only_reduction_outputs},
                     {"in_place", p.options.in_place},
                     {"clone_inputs", p.options.clone_inputs},
                     {"clone_outputs", p.options.clone_outputs},
                     {"eviction", p.options.eviction},
                     {"reorder", p.options.reorder},
                     {"coopt", p.options.coopt},
                     {"fewer_cores", p.options.fewer_cores},
                     {"infer_layouts", p.options.infer_layouts}};
  if (arrays) {
  Json ops = Json::array();
  for (std::size_t i = 0; i < p.graph.ops.size(); ++i) {
    const GOp& op = p.graph.ops[i];
    Json x = {{"index", i}, {"name", op.name}, {"kind", op.kind}, {"cores", op.cores}, {"splits", op.splits},
              {"hbm_bytes", p.op_hbm[i]}};
    if (op.kind == "clone" || op.kind == "ring") x["inserted"] = true;
    if (op.ring_bytes > 0) x["ring_bytes"] = op.ring_bytes;
    Json rd = Json::array(), wr = Json::array();
    for (const auto& r : op.reads) rd.push_back(p.graph.tensors[r.tensor].name);
    for (const auto& w : op.writes) wr.push_back(p.graph.tensors[w.tensor].name);
    x["reads"] = rd;
    x["writes"] = wr;
    ops.push_back(std::move(x));
  }
  j["ops"] = ops;
  Json bufs = Json::array();
  for (const PlanValue& v : p.values) {
    Json b = {{"name", v.name}, {"tensor", p.graph.tensors[v.tensor].name}, {"bytes", v.bytes},
              {"per_core_bytes", v.per_core}};
    b["defined_by"] = v.def >= 0 ? Json(p.graph.ops[v.def].name) : Json("graph input");
    b["uses"] = v.uses;
    if (v.lx.empty()) {
      b["location"] = "hbm";
      b["reason"] = v.reason;
    } else {
      b["location"] = "lx";
      b["address"] = v.lx.front().address;
      Json segs = Json::array();
      for (const Segment& s : v.lx)
        segs.push_back({{"first_op", s.start}, {"last_op", s.end}, {"address", s.address}, {"reload", s.reload}});
      b["lx_segments"] = segs;
      if (!v.reason.empty()) b["note"] = v.reason;
      if (v.clone) b["clone_of_input"] = true;
      if (v.output_clone) b["output_clone"] = "computed on LX, written to HBM once";
      if (v.in_place_parent >= 0) b["in_place_of"] = p.values[v.in_place_parent].name;
    }
    bufs.push_back(std::move(b));
  }
  j["buffers"] = bufs;
  }
  Json issues = Json::array();
  Bytes fix_bytes = 0;
  for (std::size_t i = 0; i < p.graph.ops.size(); ++i)
    for (const LayoutFix& f : p.graph.ops[i].layout_fixes) {
      issues.push_back({{"op", p.graph.ops[i].name}, {"op_index", i}, {"tensor", p.graph.tensors[f.tensor].name},
                        {"fix", f.padding ? "pad" : "restickify"}, {"fixed_bytes", f.fixed_bytes},
                        {"extra_hbm_bytes", 2 * f.fixed_bytes}, {"message", f.message}});
      fix_bytes += 2 * f.fixed_bytes;
    }
  j["layout_issues"] = issues;
  Json inferred = Json::array();
  for (const auto& l : p.inferred_layouts) inferred.push_back({{"tensor", l.tensor}, {"dim_order", l.dim_order}});
  j["inferred_layouts"] = inferred;
  const Totals& t = p.totals;
  j["totals"] = {{"hbm_read_bytes", t.hbm_read},
                 {"hbm_write_bytes", t.hbm_write},
                 {"hbm_bytes", t.hbm_read + t.hbm_write},
                 {"hbm_elements", t.hbm_elements},
                 {"baseline_hbm_bytes", t.baseline_hbm},
                 {"baseline_hbm_elements", t.baseline_elements},
                 {"saved_bytes", t.saved},
                 {"lower_bound_hbm_bytes", t.lower_bound_hbm},
                 {"split_lower_bound_hbm_bytes", t.split_lower_bound_hbm},
                 {"cores_lower_bound_hbm_bytes", t.cores_lower_bound_hbm},
                 {"time_lower_bound_hbm_bytes", t.time_lower_bound_hbm},
                 {"gap_bytes", t.hbm_read + t.hbm_write - t.lower_bound_hbm},
                 {"layout_fix_bytes", fix_bytes},
                 {"estimated_time_us", t.time_s * 1e6},
                 {"baseline_time_us", t.baseline_time_s * 1e6}};
  j["search"] = {{"placement_solver", p.solver}, {"placement_proven_optimal", p.proven_optimal},
                 {"clones", p.clones},           {"evictions", p.evictions},
                 {"reorders", p.reorders},       {"coopt_changes", p.coopt_changes},
                 {"ring_transfers", p.ring_transfers},
                 {"notes", p.notes}};
  {
    int used = 1;
    for (const GOp& op : p.graph.ops) used = std::max(used, op.cores);
    Json runs = Json::array();
    for (const auto& r : p.core_runs)
      runs.push_back({{"cores", r.cores}, {"estimated_time_us", r.time_s * 1e6}, {"hbm_bytes", r.hbm}});
    j["cores"] = {{"at_most", p.options.cores},
                  {"planned_at", p.planned_cores > 0 ? p.planned_cores : p.options.cores},
                  {"used", used},
                  {"runs", runs}};
  }
  return j;
}

namespace {

// Streaming text of the two large arrays of the plan (ops, buffers), laid out exactly as
// nlohmann's dump(1) lays out plan_to_json (keys sorted, one-space indent): building the JSON
// tree of a 100k-op plan cost more than planning it.
struct Writer {
  std::string out;
  void indent(int level) { out.append(static_cast<std::size_t>(level), ' '); }
  void str(const std::string& v) { out += Json(v).dump(); }
  void num(long long v) { out += std::to_string(v); }
  // "key": (at `level`), preceded by ",\n" unless first
  void key(int level, const char* k, bool& first) {
    if (!first) out += ",\n";
    first = false;
    indent(level);
    out += '"';
    out += k;
    out += "\": ";
  }
  void string_array(int level, const std::vector<std::string>& xs) {
    if (xs.empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < xs.size(); ++i) {
      indent(level + 1);
      str(xs[i]);
      out += i + 1 < xs.size() ? ",\n" : "\n";
    }
    indent(level);
    out += ']';
  }
};

void write_ops(const Plan& p, Writer& w) {
  const int element_level = 2;  // an element of a top-level array
  if (p.graph.ops.empty()) {
    w.out += "[]";
    return;
  }
  w.out += "[\n";
  for (std::size_t i = 0; i < p.graph.ops.size(); ++i) {
    const GOp& op = p.graph.ops[i];
    w.indent(element_level);
    w.out += "{\n";
    bool first = true;
    w.key(element_level + 1, "cores", first), w.num(op.cores);
    w.key(element_level + 1, "hbm_bytes", first), w.num(p.op_hbm[i]);
    w.key(element_level + 1, "index", first), w.num(static_cast<long long>(i));
    if (op.kind == "clone" || op.kind == "ring") w.key(element_level + 1, "inserted", first), w.out += "true";
    w.key(element_level + 1, "kind", first), w.str(op.kind);
    w.key(element_level + 1, "name", first), w.str(op.name);
    std::vector<std::string> rd, wr;
    for (const auto& r : op.reads) rd.push_back(p.graph.tensors[r.tensor].name);
    for (const auto& x : op.writes) wr.push_back(p.graph.tensors[x.tensor].name);
    w.key(element_level + 1, "reads", first), w.string_array(element_level + 1, rd);
    if (op.ring_bytes > 0) w.key(element_level + 1, "ring_bytes", first), w.num(op.ring_bytes);
    w.key(element_level + 1, "splits", first), w.str(op.splits);
    w.key(element_level + 1, "writes", first), w.string_array(element_level + 1, wr);
    w.out += "\n";
    w.indent(element_level);
    w.out += i + 1 < p.graph.ops.size() ? "},\n" : "}\n";
  }
  w.indent(element_level - 1);
  w.out += ']';
}

void write_buffers(const Plan& p, Writer& w) {
  const int element_level = 2;
  if (p.values.empty()) {
    w.out += "[]";
    return;
  }
  w.out += "[\n";
  for (std::size_t k = 0; k < p.values.size(); ++k) {
    const PlanValue& v = p.values[k];
    const bool lx = !v.lx.empty();
    w.indent(element_level);
    w.out += "{\n";
    bool first = true;
    if (lx) w.key(element_level + 1, "address", first), w.num(v.lx.front().address);
    w.key(element_level + 1, "bytes", first), w.num(v.bytes);
    if (lx && v.clone) w.key(element_level + 1, "clone_of_input", first), w.out += "true";
    w.key(element_level + 1, "defined_by", first), w.str(v.def >= 0 ? p.graph.ops[v.def].name : std::string("graph input"));
    if (lx && v.in_place_parent >= 0) w.key(element_level + 1, "in_place_of", first), w.str(p.values[v.in_place_parent].name);
    w.key(element_level + 1, "location", first), w.str(lx ? "lx" : "hbm");
    if (lx) {
      w.key(element_level + 1, "lx_segments", first);
      w.out += "[\n";
      for (std::size_t s = 0; s < v.lx.size(); ++s) {
        const Segment& sg = v.lx[s];
        w.indent(element_level + 2);
        w.out += "{\n";
        bool f2 = true;
        w.key(element_level + 3, "address", f2), w.num(sg.address);
        w.key(element_level + 3, "first_op", f2), w.num(sg.start);
        w.key(element_level + 3, "last_op", f2), w.num(sg.end);
        w.key(element_level + 3, "reload", f2), w.out += sg.reload ? "true" : "false";
        w.out += "\n";
        w.indent(element_level + 2);
        w.out += s + 1 < v.lx.size() ? "},\n" : "}\n";
      }
      w.indent(element_level + 1);
      w.out += ']';
    }
    w.key(element_level + 1, "name", first), w.str(v.name);
    if (lx && !v.reason.empty()) w.key(element_level + 1, "note", first), w.str(v.reason);
    if (lx && v.output_clone) w.key(element_level + 1, "output_clone", first), w.str("computed on LX, written to HBM once");
    w.key(element_level + 1, "per_core_bytes", first), w.num(v.per_core);
    if (!lx) w.key(element_level + 1, "reason", first), w.str(v.reason);
    w.key(element_level + 1, "tensor", first), w.str(p.graph.tensors[v.tensor].name);
    w.key(element_level + 1, "uses", first);
    if (v.uses.empty()) {
      w.out += "[]";
    } else {
      w.out += "[\n";
      for (std::size_t u = 0; u < v.uses.size(); ++u) {
        w.indent(element_level + 2);
        w.num(v.uses[u]);
        w.out += u + 1 < v.uses.size() ? ",\n" : "\n";
      }
      w.indent(element_level + 1);
      w.out += ']';
    }
    w.out += "\n";
    w.indent(element_level);
    w.out += k + 1 < p.values.size() ? "},\n" : "}\n";
  }
  w.indent(element_level - 1);
  w.out += ']';
}

}  // namespace

std::string plan_json_text(const Plan& p) {
  // The small parts through the JSON tree, the two large arrays streamed into placeholders.
  Json j = plan_to_json(p, false);
  const std::string ops_mark = "\"@ops@\"", bufs_mark = "\"@buffers@\"";
  j["ops"] = "@ops@";
  j["buffers"] = "@buffers@";
  std::string text = j.dump(1);
  Writer w;
  w.out.reserve(p.graph.ops.size() * 200 + p.values.size() * 300);
  write_buffers(p, w);
  std::string bufs = std::move(w.out);
  w.out.clear();
  write_ops(p, w);
  std::string ops = std::move(w.out);
  std::string out;
  out.reserve(text.size() + ops.size() + bufs.size());
  const std::size_t b = text.find(bufs_mark), o = text.find(ops_mark);
  // "buffers" sorts before "ops"
  out.append(text, 0, b);
  out += bufs;
  out.append(text, b + bufs_mark.size(), o - b - bufs_mark.size());
  out += ops;
  out.append(text, o + ops_mark.size(), std::string::npos);
  return out + "\n";
}

std::string plan_report(const Plan& p) {
  std::ostringstream os;
  const Totals& t = p.totals;
  char buf[512];
  os << "plan for " << p.graph.name << ": " << p.graph.ops.size() << " ops, LX " << p.capacity << " B per core\n";
  int on = 0;
  for (const auto& v : p.values) on += !v.lx.empty();
  os << "buffers: " << on << " of " << p.values.size() << " on LX; clones " << p.clones << ", evictions "
     << p.evictions << ", reorders " << p.reorders << ", co-opt changes " << p.coopt_changes << "\n";
  for (std::size_t i = 0; i < p.graph.ops.size(); ++i) {
    const GOp& op = p.graph.ops[i];
    if (op.kind != "ring") continue;
    const OpTime ot = op_time(p, i);
    std::snprintf(buf, sizeof buf, "ring transfer: %s -> %s, %lld B per core over the ring (%.2f us) instead of HBM\n",
                  p.graph.tensors[op.reads[0].tensor].name.c_str(), p.graph.tensors[op.writes[0].tensor].name.c_str(),
                  static_cast<long long>(op.ring_bytes), (ot.compute_s + ot.overhead_s) * 1e6);
    os << buf;
  }
  std::snprintf(buf, sizeof buf, "HBM: %lld B read + %lld B written = %lld B (baseline %lld B, saved %.1f%%), lower bound %lld B (%lld B at these core counts, %lld B for these splits)\n",
                static_cast<long long>(t.hbm_read), static_cast<long long>(t.hbm_write),
                static_cast<long long>(t.hbm_read + t.hbm_write), static_cast<long long>(t.baseline_hbm),
                t.baseline_hbm ? 100.0 * static_cast<double>(t.saved) / static_cast<double>(t.baseline_hbm) : 0.0,
                static_cast<long long>(t.lower_bound_hbm), static_cast<long long>(t.cores_lower_bound_hbm),
                static_cast<long long>(t.split_lower_bound_hbm));
  os << buf;
  std::snprintf(buf, sizeof buf, "estimated time: %.2f us (all-HBM %.2f us)\n", t.time_s * 1e6, t.baseline_time_s * 1e6);
  os << buf;
  {
    int used = 1;
    for (const GOp& op : p.graph.ops) used = std::max(used, op.cores);
    os << "cores: planned at " << (p.planned_cores > 0 ? p.planned_cores : p.options.cores) << " of at most "
       << p.options.cores << " (ops use up to " << used << ")\n";
  }
  os << "ops:\n";
  for (std::size_t i = 0; i < p.graph.ops.size(); ++i) {
    const GOp& op = p.graph.ops[i];
    os << "  " << i << " " << op.name << " (" << op.kind << ", " << op.cores << " cores: " << op.splits
       << ") HBM " << p.op_hbm[i] << " B\n";
  }
  os << "buffers:\n";
  for (const auto& v : p.values) {
    os << "  " << v.name << " " << v.per_core << " B/core: ";
    if (v.lx.empty()) {
      os << "HBM (" << v.reason << ")\n";
      continue;
    }
    os << "LX @" << v.lx.front().address;
    for (std::size_t s = 1; s < v.lx.size(); ++s) os << ", reload @" << v.lx[s].address << " at op " << v.lx[s].start;
    if (v.in_place_parent >= 0) os << " in place of " << p.values[v.in_place_parent].name;
    if (v.clone) os << " (input clone)";
    if (v.output_clone) os << " (output written to HBM once)";
    os << "\n";
  }
  int nfix = 0;
  for (const GOp& op : p.graph.ops) nfix += static_cast<int>(op.layout_fixes.size());
  if (nfix) {
    os << "layout issues (" << nfix << ", each fixed copy written and read once more):\n";
    for (const GOp& op : p.graph.ops)
      for (const LayoutFix& f : op.layout_fixes)
        os << "  " << f.message << " (+" << 2 * f.fixed_bytes << " B HBM)\n";
  }
  if (!p.inferred_layouts.empty()) {
    os << "layouts chosen for tensors the program left open (" << p.inferred_layouts.size() << "):";
    for (const auto& l : p.inferred_layouts) {
      os << " " << l.tensor << " [";
      for (std::size_t i = 0; i < l.dim_order.size(); ++i) os << (i ? ", " : "") << l.dim_order[i];
      os << "]";
    }
    os << "\n";
  }
  for (const auto& n : p.notes) os << "note: " << n << "\n";
  return os.str();
}

std::string plan_svg(const Plan& p) {
  // x: op index, y: per-core LX address (0 at the bottom, as in the alloc picture), scaled to the
  // peak address in use. A value occupies the same address on cores 0..k-1 of its producer (by
  // convention), so cores differ only in which values they hold; cores with identical contents
  // share one panel ("cores 4-31").
  namespace svg = sp::svg;
  int cores = 1;
  for (const auto& op : p.graph.ops) cores = std::max(cores, op.cores);
  auto cores_of = [&](const PlanValue& v) { return v.def >= 0 ? std::max(1, p.graph.ops[v.def].cores) : 1; };
  std::vector<int> holders(static_cast<std::size_t>(cores) + 1, 0);  // values held by exactly k cores
  Bytes peak = 0;
  std::size_t on_lx = 0;
  for (const auto& v : p.values) {
    if (v.lx.empty()) continue;
    ++on_lx;
    holders[std::min(cores_of(v), cores)] = 1;
    for (const Segment& s : v.lx) peak = std::max(peak, s.address + v.per_core);
  }
  // Panel boundaries: core c differs from c-1 iff some value is held by exactly c cores.
  std::vector<std::pair<int, int>> panels;  // [first, last] core
  for (int c = 0; c < cores; ++c) {
    if (c == 0 || holders[c]) panels.emplace_back(c, c);
    else panels.back().second = c;
  }
  const int np = static_cast<int>(panels.size());
  const int cols = np == 1 ? 1 : 2, rows = (np + cols - 1) / cols;
  const double width = 960, font = 11, colw = width / cols, margin_left = 80, margin_right = 20;
  const double panel_width = colw - margin_left - margin_right, panel_height = np == 1 ? 400 : 220;
  const double nops = std::max<double>(1, static_cast<double>(p.graph.ops.size()));
  const double ymax = std::max<double>(1, static_cast<double>(peak));
  const double sx = panel_width / nops, sy = panel_height / ymax;

  // One colour per role; a segment takes the first that applies.
  const svg::Role value{"value on LX", "#6baed6"}, in_place{"in place of a dying input", "#fdae6b"},
      clone{"input clone", "#74c476"}, out_clone{"output computed on LX", "#c39bd3"},
      reload{"reloaded from HBM", "#fb6a4a"}, band{"segments below one pixel (occupancy)", "#636363"},
      ring{"moved over the core ring", "#e7ba52"};
  const svg::Role* role_list[] = {&value, &in_place, &clone, &out_clone, &reload, &ring};
  auto role_of = [&](const PlanValue& v, const Segment& s) {
    if (!s.reload && v.def >= 0 && p.graph.ops[v.def].kind == "ring") return 5;
    return s.reload ? 4 : v.clone ? 2 : v.output_clone ? 3 : v.in_place_parent >= 0 ? 1 : 0;
  };
  // Segments of each panel, as pixel rectangles relative to the panel's origin.
  struct Seg {
    const PlanValue* v;
    const Segment* s;
    double x, y, w, h;
    int role;
  };
  std::vector<std::vector<Seg>> segs(static_cast<std::size_t>(np));
  std::size_t total = 0;
  for (int k = 0; k < np; ++k)
    for (const auto& v : p.values) {
      if (v.lx.empty() || panels[k].first >= cores_of(v)) continue;
      for (const Segment& s : v.lx) {
        const double h = static_cast<double>(v.per_core) * sy;
        segs[k].push_back(Seg{&v, &s, static_cast<double>(s.start) * sx, panel_height - static_cast<double>(s.address) * sy - h,
                              static_cast<double>(s.end - s.start + 1) * sx, h, role_of(v, s)});
        ++total;
      }
    }
  // A plan of a few thousand segments draws each (at least a pixel, with its tooltip); past that
  // budget the ones below a pixel and the smallest beyond it become an occupancy band.
  constexpr std::size_t kMaxRects = 2500;
  const bool aggregate = total > kMaxRects;
  double cut_area = 0;  // with aggregation: segments of this pixel area or less go to the band
  if (aggregate) {
    std::vector<double> areas;
    for (const auto& ps : segs)
      for (const Seg& g : ps)
        if (g.w >= 1 && g.h >= 1) areas.push_back(g.w * g.h);
    if (areas.size() > kMaxRects) {
      std::nth_element(areas.begin(), areas.begin() + kMaxRects, areas.end(), std::greater<double>());
      cut_area = areas[kMaxRects];
    }
  }
  auto banded = [&](const Seg& g) { return aggregate && (g.w < 1 || g.h < 1 || g.w * g.h <= cut_area); };
  bool used[6] = {false, false, false, false, false, false}, any_band = false;
  for (const auto& ps : segs)
    for (const Seg& g : ps) (banded(g) ? any_band : used[g.role]) = true;
  std::vector<svg::Role> roles;
  for (int r = 0; r < 6; ++r)
    if (used[r]) roles.push_back(*role_list[r]);
  if (any_band) roles.push_back(band);

  svg::SvgCanvas c(width, 100, p.graph.name + ": per-core LX residency", font);
  c.text(width / 2, 18, p.graph.name + ": per-core LX residency", width - 20, "middle", 14);
  c.text(width / 2, 34,
         "peak " + svg::human_bytes(static_cast<double>(peak)) + " of " + svg::human_bytes(static_cast<double>(p.capacity)) +
             " per core, " + std::to_string(on_lx) + " values on LX, " + std::to_string(p.graph.ops.size()) + " ops, " +
             std::to_string(cores) + (cores == 1 ? " core" : " cores"),
         width - 20, "middle");
  const double top = 44 + (roles.empty() ? 0 : c.legend(margin_left, 42, width - margin_left - margin_right, roles)) + 8;
  const double row_h = 22 + panel_height + 2 * font + 20;
  svg::LabelBoxes boxes;
  for (int k = 0; k < np; ++k) {
    const auto [c0, c1] = panels[k];
    const double X = (k % cols) * colw + margin_left, Y = top + (k / cols) * row_h + 22;
    c.text(X, Y - 6, c0 == c1 ? "core " + std::to_string(c0) : "cores " + std::to_string(c0) + "-" + std::to_string(c1),
           panel_width, "start", 0, "font-weight=\"bold\"");
    c.rect(X, Y, panel_width, panel_height, "#f8f8f8", "", "stroke=\"#888\"");
    if (any_band) {
      svg::OccupancyGrid g(X, Y, panel_width, panel_height, 3);
      std::size_t nb = 0;
      for (const Seg& s : segs[k])
        if (banded(s)) g.add(X + s.x, Y + s.y, X + s.x + s.w, Y + s.y + s.h), ++nb;
      if (nb > 0) g.draw(c, band.fill, std::to_string(nb) + " segments below one pixel");
    }
    std::vector<const Seg*> drawn;
    for (const Seg& s : segs[k]) {
      if (banded(s)) continue;
      drawn.push_back(&s);
      const PlanValue& v = *s.v;
      const double w = std::max(1.0, s.w), h = std::max(1.0, s.h);
      c.rect(X + s.x, Y + s.y + s.h - h, w, h, role_list[s.role]->fill,
             v.name + " @" + std::to_string(s.s->address) + ", " + svg::human_bytes(static_cast<double>(v.per_core)) +
                 ", ops " + std::to_string(s.s->start) + ".." + std::to_string(s.s->end) + (s.s->reload ? " (reload)" : ""),
             "stroke=\"#fff\" stroke-width=\"0.5\"");
    }
    // Names inside the rectangles that have room, largest first, never overlapping.
    std::stable_sort(drawn.begin(), drawn.end(), [](const Seg* a, const Seg* b) { return a->w * a->h > b->w * b->h; });
    for (const Seg* s : drawn) {
      if (s->w < 20 || s->h < font + 3) continue;
      const double x = X + s->x + 2, y = Y + s->y + 1;
      const std::string shown = svg::ellipsize(s->v->name, s->w - 4, font);
      // A cut name needs 3 characters before "…" (3 bytes) to say anything.
      if (shown.empty() || (shown != s->v->name && shown.size() < 6) || !boxes.claim(x, y, x + svg::text_width(shown, font), y + font + 1)) continue;
      c.text(x, y + font - 1, s->v->name, s->w - 4);
    }
    if (segs[k].empty()) c.text(X + panel_width / 2, Y + panel_height / 2, "no value on LX: every tensor stays in HBM", panel_width - 8, "middle");
    c.x_axis(X, X + panel_width, Y + panel_height, 0, nops, false, svg::human_count, "op index");
    c.y_axis(X, Y + panel_height, Y, 0, ymax, true, svg::human_bytes, "LX address", X - margin_left + font);
  }
  c.set_height(std::ceil(top + rows * row_h));
  return c.finish();
}

Result<Graph> graph_from_pattern(const Json& j, const std::string& source) {
  try {
    JsonCursor c(j, source);
    Graph g;
    g.name = c.at("name").as_string();
    std::map<std::string, int> tid;
    std::map<std::string, Bytes> sizes;
    std::map<std::string, bool> has_parents;
    for (const auto& b : c.at("buffers_to_plan").elements()) {
      sizes[b.at("name").as_string()] = b.at("size").as_int_at_least(0);
      has_parents[b.at("name").as_string()] = b.has("in_place_parents") && b.at("in_place_parents").array_size() > 0;
    }
    auto tensor = [&](const std::string& n) {
      auto it = tid.find(n);
      if (it != tid.end()) return it->second;
      GTensor t;
      t.name = n;
      tid[n] = static_cast<int>(g.tensors.size());
      g.tensors.push_back(t);
      return tid[n];
    };
    for (const auto& x : c.at("graph_inputs").elements()) g.tensors[tensor(x.as_string())].graph_input = true;
    for (const auto& x : c.at("graph_outputs").elements()) g.tensors[tensor(x.as_string())].graph_output = true;
    for (const auto& o : c.at("ops").elements()) {
      GOp op;
      op.name = o.at("name").as_string();
      op.kind = "pattern";
      for (const auto& i : o.at("inputs").elements()) op.reads.push_back(GOperand{tensor(i.as_string()), "", 0});
      op.writes.push_back(GOperand{tensor(o.at("output").as_string()), "", 0});
      op.in_placeable = has_parents[o.at("output").as_string()];  // the case declares in-place parents
      g.ops.push_back(std::move(op));
    }
    // Sizes: planned buffers carry theirs; graph I/O (never on LX) take the size of the buffer
    // they are loaded into / stored from, as the pattern's HBM metric does.
    for (auto& t : g.tensors) {
      auto it = sizes.find(t.name);
      if (it != sizes.end()) t.bytes = it->second;
    }
    // Graph I/O sizes are not in the transcription: an input takes the size of the buffer it is
    // loaded into, an output the size of its op's first input. They only add a constant to the
    // pattern metric (graph I/O never lives on LX there).
    for (const GOp& op : g.ops) {
      GTensor& out = g.tensors[op.writes[0].tensor];
      for (const GOperand& r : op.reads) {
        GTensor& in = g.tensors[r.tensor];
        if (in.bytes == 0 && in.graph_input) in.bytes = out.bytes;
      }
      if (out.bytes == 0 && !op.reads.empty()) out.bytes = g.tensors[op.reads[0].tensor].bytes;
    }
    for (auto& t : g.tensors) t.elements = t.bytes;
    for (GOp& op : g.ops) {
      for (auto& r : op.reads) r.per_core = g.tensors[r.tensor].bytes;
      for (auto& w : op.writes) w.per_core = g.tensors[w.tensor].bytes;
    }
    return g;
  } catch (const std::exception& e) {
    return bad_input(e.what());
  }
}

}  // namespace sp::lx
