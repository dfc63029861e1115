// Plan output (JSON, readable report, SVG) and the pattern-case reader.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "lx/lx.h"

namespace sp::lx {

Json plan_to_json(const Plan& p) {
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
                     {"coopt", p.options.coopt}};
  Json ops = Json::array();
  for (std::size_t i = 0; i < p.graph.ops.size(); ++i) {
    const GOp& op = p.graph.ops[i];
    Json x = {{"index", i}, {"name", op.name}, {"kind", op.kind}, {"cores", op.cores}, {"splits", op.splits},
              {"hbm_bytes", p.op_hbm[i]}};
    if (op.kind == "clone") x["inserted"] = true;
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
                 {"gap_bytes", t.hbm_read + t.hbm_write - t.lower_bound_hbm},
                 {"estimated_time_us", t.time_s * 1e6},
                 {"baseline_time_us", t.baseline_time_s * 1e6}};
  j["search"] = {{"placement_solver", p.solver}, {"placement_proven_optimal", p.proven_optimal},
                 {"clones", p.clones},           {"evictions", p.evictions},
                 {"reorders", p.reorders},       {"coopt_changes", p.coopt_changes},
                 {"notes", p.notes}};
  return j;
}

std::string plan_report(const Plan& p) {
  std::ostringstream os;
  const Totals& t = p.totals;
  char buf[256];
  os << "plan for " << p.graph.name << ": " << p.graph.ops.size() << " ops, LX " << p.capacity << " B per core\n";
  int on = 0;
  for (const auto& v : p.values) on += !v.lx.empty();
  os << "buffers: " << on << " of " << p.values.size() << " on LX; clones " << p.clones << ", evictions "
     << p.evictions << ", reorders " << p.reorders << ", co-opt changes " << p.coopt_changes << "\n";
  std::snprintf(buf, sizeof buf, "HBM: %lld B read + %lld B written = %lld B (baseline %lld B, saved %.1f%%), lower bound %lld B (%lld B for these splits)\n",
                static_cast<long long>(t.hbm_read), static_cast<long long>(t.hbm_write),
                static_cast<long long>(t.hbm_read + t.hbm_write), static_cast<long long>(t.baseline_hbm),
                t.baseline_hbm ? 100.0 * static_cast<double>(t.saved) / static_cast<double>(t.baseline_hbm) : 0.0,
                static_cast<long long>(t.lower_bound_hbm), static_cast<long long>(t.split_lower_bound_hbm));
  os << buf;
  std::snprintf(buf, sizeof buf, "estimated time: %.2f us (all-HBM %.2f us)\n", t.time_s * 1e6, t.baseline_time_s * 1e6);
  os << buf;
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
  for (const auto& n : p.notes) os << "note: " << n << "\n";
  return os.str();
}

std::string plan_svg(const Plan& p) {
  // One panel per core (small multiples): x op index, y per-core LX address. A value occupies the
  // same address on every core its producer runs on (cores 0..k-1 by convention).
  int cores = 1;
  for (const auto& op : p.graph.ops) cores = std::max(cores, op.cores);
  const int cols = cores == 1 ? 1 : 4, rows = (cores + cols - 1) / cols;
  const int PW = cores == 1 ? 840 : 230, PH = cores == 1 ? 440 : 130, L = 60, T = 40, GX = 20, GY = 34;
  const int W = L + cols * (PW + GX), H = T + rows * (PH + GY) + 20;
  const double nops = std::max<double>(1, static_cast<double>(p.graph.ops.size()));
  const double cap = std::max<double>(1, static_cast<double>(p.capacity));
  const double sx = PW / nops, sy = PH / cap;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
     << "\" font-family=\"sans-serif\" font-size=\"10\">\n";
  os << "<text x=\"" << L << "\" y=\"18\" font-size=\"13\">" << p.graph.name << ": LX address (0.." << p.capacity
     << " B, top to bottom) x op index (0.." << p.graph.ops.size() - (p.graph.ops.empty() ? 0 : 1) << "), per core</text>\n";
  const char* colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"};
  for (int c = 0; c < cores; ++c) {
    const double X = L + (c % cols) * (PW + GX), Y = T + (c / cols) * (PH + GY);
    os << "<text x=\"" << X << "\" y=\"" << Y - 4 << "\">core " << c << "</text>\n";
    os << "<rect x=\"" << X << "\" y=\"" << Y << "\" width=\"" << PW << "\" height=\"" << PH
       << "\" fill=\"#f8f8f8\" stroke=\"#888\"/>\n";
    int k = 0;
    for (const auto& v : p.values) {
      if (v.lx.empty()) continue;
      ++k;
      int vc = v.def >= 0 ? std::max(1, p.graph.ops[v.def].cores) : 1;
      if (c >= vc) continue;
      for (const Segment& s : v.lx) {
        double x = X + s.start * sx, w = std::max(1.0, (s.end - s.start + 1) * sx);
        double y = Y + s.address * sy, h = std::max(1.0, v.per_core * sy);
        os << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" fill=\""
           << (v.clone ? "#9ecae1" : colors[k % 8]) << "\" fill-opacity=\"0.8\" stroke=\"#222\"><title>" << v.name
           << " @" << s.address << " " << v.per_core << " B ops " << s.start << ".." << s.end
           << (s.reload ? " (reload)" : "") << "</title></rect>\n";
        if (w > 30 && h > 10) os << "<text x=\"" << x + 2 << "\" y=\"" << y + 10 << "\">" << v.name << "</text>\n";
      }
    }
  }
  os << "</svg>\n";
  return os.str();
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
