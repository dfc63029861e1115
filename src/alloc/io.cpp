#include "alloc/io.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>
#include <string_view>

#include "core/xml.h"

namespace sp::alloc {
namespace {

std::string trim(const std::string& s) {
  std::size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  std::size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

// Fields of one CSV line, trimmed (no stream per line: a million-line file reads in a second).
std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> out;
  std::size_t a = 0;
  while (true) {
    std::size_t b = line.find(',', a);
    out.push_back(trim(line.substr(a, b == std::string::npos ? std::string::npos : b - a)));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

bool parse_int(const std::string& s, int64_t& v) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool is_pow2(int64_t a) { return a > 0 && (a & (a - 1)) == 0; }

}  // namespace

Result<Problem> problem_from_csv(const std::string& text, const std::string& source) {
  Problem p;
  std::string line;
  int lineno = 0;
  std::size_t at = 0;
  auto next_line = [&]() {
    if (at >= text.size()) return false;
    std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    line.assign(text, at, nl - at);
    at = nl + 1;
    return true;
  };
  bool header = false, has_offset = false;
  std::vector<int> lines;  // input line of each buffer
  while (next_line()) {
    ++lineno;
    std::string t = trim(line);
    if (t.empty()) continue;
    auto f = split_commas(t);
    const std::string where = source + ":" + std::to_string(lineno) + ": ";
    if (!header) {
      header = true;
      if (f.size() < 4 || f[0] != "id" || f[1] != "lower" || f[2] != "upper" || f[3] != "size" ||
          (f.size() == 5 && f[4] != "offset") || f.size() > 5)
        return bad_input(where + "expected header 'id,lower,upper,size[,offset]'");
      has_offset = f.size() == 5;
      continue;
    }
    if (f.size() != (has_offset ? 5u : 4u) && !(has_offset && f.size() == 4))
      return bad_input(where + "expected " + std::to_string(has_offset ? 5 : 4) + " comma-separated fields");
    Buffer b;
    b.id = f[0];
    if (b.id.empty()) return bad_input(where + "empty id");
    int64_t lo, hi, sz;
    if (!parse_int(f[1], lo)) return bad_input(where + "lower: expected an integer, got '" + f[1] + "'");
    if (!parse_int(f[2], hi)) return bad_input(where + "upper: expected an integer, got '" + f[2] + "'");
    if (!parse_int(f[3], sz)) return bad_input(where + "size: expected an integer, got '" + f[3] + "'");
    if (sz < 0) return bad_input(where + "size: expected >= 0, got " + f[3]);
    if (hi <= lo) return bad_input(where + "upper must be greater than lower");
    b.start = lo;
    b.end = hi;
    b.size = sz;
    if (has_offset && f.size() == 5 && !f[4].empty()) {
      int64_t off;
      if (!parse_int(f[4], off) || off < 0) return bad_input(where + "offset: expected an integer >= 0, got '" + f[4] + "'");
      b.fixed_offset = off;
    }
    p.buffers.push_back(std::move(b));
    lines.push_back(lineno);
  }
  if (!header) return bad_input(source + ":1: expected header 'id,lower,upper,size[,offset]'");
  std::map<std::string_view, int> seen;  // id -> line of its first use
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (auto [it, fresh] = seen.emplace(p.buffers[i].id, lines[i]); !fresh)
      return bad_input(source + ":" + std::to_string(lines[i]) + ": duplicate id '" + p.buffers[i].id +
                       "' (first on line " + std::to_string(it->second) + ")");
  if (Status st = check_problem(p); !st) {
    // check_problem names the buffer ("buffer 'b7': ..."); a CSV user wants its line.
    const std::string& m = st.error().message;
    for (std::size_t i = 0; i < p.buffers.size(); ++i)
      if (m.rfind("buffer '" + p.buffers[i].id + "'", 0) == 0)
        return bad_input(source + ":" + std::to_string(lines[i]) + ": " + m);
    return bad_input(source + ": " + m);
  }
  return p;
}

Result<Problem> problem_from_json(const Json& j, const std::string& source) {
  try {
    JsonCursor root(j, source);
    root.expect_keys({"format", "version", "capacity", "alignment", "buffers"});
    root.expect_format("scratchplan-alloc-problem", 1);
    Problem p;
    if (root.has("capacity")) p.capacity = root.at("capacity").as_int_at_least(0);
    int64_t default_align = 1;
    if (root.has("alignment")) {
      JsonCursor a = root.at("alignment");
      default_align = a.as_int_at_least(1);
      if (!is_pow2(default_align)) a.fail("expected a power of two");
    }
    auto items = root.at("buffers").elements();
    std::map<std::string, int> index;
    std::vector<std::vector<std::pair<std::string, JsonCursor>>> parents(items.size()), pairs(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      JsonCursor c = items[i];
      c.expect_keys({"id", "name", "size", "uses", "first_use_is_read", "lifetime_end_override", "lifetime_start_override",
                     "start", "end", "reads", "alignment", "offset", "spill_cost", "residency_reason", "in_place_parents",
                     "paired_with"});
      // Two ways to give a lifetime (uses, or start/end) and two names for the id: the keys of
      // the form not taken would be silently ignored, so mixing forms is an error.
      if (c.has("id") && c.has("name")) c.at("name").fail("give \"id\" or \"name\", not both");
      for (const char* k : {"start", "end", "reads"})
        if (c.has("uses") && c.has(k)) c.at(k).fail("does not apply to a buffer given by \"uses\" (its lifetime and reads come from them)");
      for (const char* k : {"lifetime_end_override", "lifetime_start_override"})
        if (!c.has("uses") && c.has(k)) c.at(k).fail("applies to a buffer given by \"uses\" only");
      std::string id = c.has("id") ? c.at("id").as_string() : c.at("name").as_string();
      Size size = c.at("size").as_int_at_least(0);
      Buffer b;
      if (c.has("uses")) {
        JsonCursor u = c.at("uses");
        bool fuir = c.has("first_use_is_read") && c.at("first_use_is_read").as_bool();
        Time over = c.has("lifetime_end_override") ? c.at("lifetime_end_override").as_int() : kNoOverride;
        Time under = c.has("lifetime_start_override") ? c.at("lifetime_start_override").as_int() : kNoOverride;
        auto r = buffer_from_uses(id, size, u.as_int_array(0), fuir, over, under);
        if (!r) c.fail(r.error().message);  // (the message names the field: uses or an override)
        b = std::move(*r);
      } else {
        b.id = id;
        b.size = size;
        b.start = c.at("start").as_int();
        JsonCursor e = c.at("end");
        b.end = e.as_int();
        if (b.end <= b.start) e.fail("expected end > start (" + std::to_string(b.start) + ")");
        if (c.has("reads")) {
          const int64_t r = c.at("reads").as_int_at_least(0);
          if (r > INT32_MAX) c.at("reads").fail("expected at most " + std::to_string(INT32_MAX) + " reads");
          b.reads = static_cast<int>(r);
        }
        if (c.has("first_use_is_read")) b.produced_on_chip = !c.at("first_use_is_read").as_bool();
      }
      b.alignment = default_align;
      if (c.has("alignment")) {
        JsonCursor a = c.at("alignment");
        b.alignment = a.as_int_at_least(1);
        if (!is_pow2(b.alignment)) a.fail("expected a power of two");
      }
      if (c.has("offset")) b.fixed_offset = c.at("offset").as_int_at_least(0);
      if (c.has("spill_cost")) b.spill_cost = c.at("spill_cost").as_int_at_least(0);
      if (c.has("residency_reason")) b.residency_reason = c.at("residency_reason").as_string();
      if (c.has("in_place_parents")) {
        JsonCursor ip = c.at("in_place_parents");
        for (auto& e : ip.elements()) parents[i].push_back({e.as_string(), e});
      }
      if (c.has("paired_with"))
        for (auto& e : c.at("paired_with").elements()) pairs[i].push_back({e.as_string(), e});
      if (!index.emplace(b.id, static_cast<int>(i)).second) c.at(c.has("id") ? "id" : "name").fail("duplicate id '" + b.id + "'");
      p.buffers.push_back(std::move(b));
    }
    for (std::size_t i = 0; i < items.size(); ++i)
      for (auto& [name, cur] : parents[i]) {
        auto it = index.find(name);
        if (it == index.end()) cur.fail("in-place parent '" + name + "' does not exist");
        p.buffers[i].in_place_parents.push_back(it->second);
      }
    // paired_with: the groups are the connected components of the (symmetric) pairing relation.
    std::vector<std::pair<int, int>> paired;
    for (std::size_t i = 0; i < items.size(); ++i)
      for (auto& [name, cur] : pairs[i]) {
        auto it = index.find(name);
        if (it == index.end()) cur.fail("paired buffer '" + name + "' does not exist");
        paired.emplace_back(static_cast<int>(i), it->second);
      }
    if (!paired.empty()) {
      std::vector<int> g = group_ids(static_cast<int>(items.size()), paired);
      for (std::size_t i = 0; i < items.size(); ++i) p.buffers[i].group = g[i];
    }
    if (Status st = check_problem(p); !st) return bad_input(source + ": " + st.error().message);
    return p;
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Result<Problem> read_problem(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  // Standard input has no extension: a document starting with '{' is JSON, anything else CSV.
  const std::size_t first = text->find_first_not_of(" \t\r\n");
  bool csv = path == "-" ? first != std::string::npos && (*text)[first] != '{'
                         : path.size() >= 4 && path.substr(path.size() - 4) == ".csv";
  const std::string source = input_name(path);
  if (csv) return problem_from_csv(*text, source);
  auto j = parse_json_text(*text, source);
  if (!j) return j.error();
  return problem_from_json(*j, source);
}

std::string plan_to_csv(const Problem& p, const Placement& pl) {
  std::string out = "id,lower,upper,size,offset\n";
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer& b = p.buffers[i];
    out += b.id + "," + std::to_string(b.start) + "," + std::to_string(b.end) + "," + std::to_string(b.size) + ",";
    if (pl.offsets[i] != kSpilled) out += std::to_string(pl.offsets[i]);
    out += "\n";
  }
  return out;
}

const char* objective_name(const SolveOptions& o) {
  return o.objective == Objective::kPack ? (o.minimize ? "pack-min" : "pack") : "select";
}

Json result_to_json(const Problem& p, const SolveResult& r, const SolveOptions& o) {
  Json out;
  out["format"] = "scratchplan-alloc-plan";
  out["version"] = 1;
  out["solver"] = r.solver;
  out["objective"] = objective_name(o);
  // No capacity (pack --minimize without one) is null, not the internal sentinel.
  out["capacity"] = p.capacity == kUnbounded ? Json(nullptr) : Json(p.capacity);
  out["feasible"] = r.feasible;
  out["height"] = r.height;
  out["spill_cost"] = r.spill_cost;
  out["lower_bound"] = r.lower_bound;
  out["proven_optimal"] = r.proven_optimal;
  out["proven_infeasible"] = r.proven_infeasible;
  out["seconds"] = r.seconds;
  Json bufs = Json::array();
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    Json b;
    b["id"] = p.buffers[i].id;
    b["offset"] = r.placement.offsets[i] == kSpilled ? Json(nullptr) : Json(r.placement.offsets[i]);
    if (r.placement.offsets[i] == kSpilled) b["spill_reason"] = r.placement.spill_reasons[i];
    bufs.push_back(b);
  }
  out["buffers"] = bufs;
  return out;
}

namespace {

// A JSON string literal as nlohmann's dump() writes it; plain ASCII is quoted directly.
void append_json_string(std::string& out, const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
      out += Json(s).dump();
      return;
    }
  out += '"';
  out += s;
  out += '"';
}

}  // namespace

std::string result_to_json_text(const Problem& p, const SolveResult& r, const SolveOptions& o) {
  // The summary without the buffers, printed by the library (with no buffers in the problem
  // it reads nothing of the placement, so the plan is not copied).
  const std::string header = result_to_json(Problem{{}, p.capacity}, r, o).dump(1);
  // Keys are sorted, so the (empty) buffer list is the first member: splice the real one in.
  const std::string empty = "\"buffers\": []";
  const std::size_t at = header.find(empty);
  std::string out;
  out.reserve(header.size() + 48 * p.buffers.size());
  out.append(header, 0, at);
  out += "\"buffers\": [";
  char num[32];
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    out += i == 0 ? "\n  {\n   \"id\": " : ",\n  {\n   \"id\": ";
    append_json_string(out, p.buffers[i].id);
    out += ",\n   \"offset\": ";
    const Offset off = r.placement.offsets[i];
    if (off == kSpilled) {
      out += "null,\n   \"spill_reason\": ";
      append_json_string(out, r.placement.spill_reasons[i]);
    } else {
      auto [end, ec] = std::to_chars(num, num + sizeof num, off);
      out.append(num, end);
    }
    out += "\n  }";
  }
  out += p.buffers.empty() ? "]" : "\n ]";
  out.append(header, at + empty.size(), std::string::npos);
  out += '\n';
  return out;
}

Json problem_to_json(const Problem& p) {
  Json out;
  out["format"] = "scratchplan-alloc-problem";
  out["version"] = 1;
  if (p.capacity != kUnbounded) out["capacity"] = p.capacity;
  Json bufs = Json::array();
  for (const Buffer& b : p.buffers) {
    Json j;
    j["id"] = b.id;
    j["size"] = b.size;
    j["start"] = b.start;
    j["end"] = b.end;
    j["reads"] = b.reads;
    j["first_use_is_read"] = !b.produced_on_chip;
    if (b.alignment != 1) j["alignment"] = b.alignment;
    if (b.fixed_offset != kNoFixedOffset) j["offset"] = b.fixed_offset;
    if (b.spill_cost >= 0) j["spill_cost"] = b.spill_cost;
    if (!b.residency_reason.empty()) j["residency_reason"] = b.residency_reason;
    if (!b.in_place_parents.empty()) {
      Json ps = Json::array();
      for (int q : b.in_place_parents) ps.push_back(p.buffers[q].id);
      j["in_place_parents"] = ps;
    }
    if (b.group >= 0 && b.group != static_cast<int>(bufs.size()))  // each member names its group's first
      j["paired_with"] = Json::array({p.buffers[b.group].id});
    bufs.push_back(j);
  }
  out["buffers"] = bufs;
  return out;
}

std::string plan_to_svg(const Problem& p, const Placement& pl, const std::string& title, Size minimize_bound) {
  const double W = 900, H = 500, left = 70, top = 30;
  Time t0 = 0, t1 = 1;
  if (!p.buffers.empty()) {
    t0 = p.buffers[0].start;
    t1 = p.buffers[0].end;
    for (const Buffer& b : p.buffers) {
      t0 = std::min(t0, b.start);
      t1 = std::max(t1, b.end);
    }
  }
  // --minimize: the capacity is only an upper limit, so the axis ends at the height reached.
  const bool mini = minimize_bound >= 0;
  const Size reached = height(p, pl);
  Size h = std::max<Size>(1, reached);
  if (!mini && p.capacity != kUnbounded) h = std::max(h, p.capacity);
  const auto esc = [](const std::string& s) { return xml_escape(s); };
  std::vector<std::string> spilled;
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (pl.offsets[i] == kSpilled) spilled.push_back(p.buffers[i].id);
  constexpr std::size_t kListed = 40;  // spilled ids listed; the rest summarized as "and N more"
  double list_h = spilled.empty() ? 0 : 20.0 + 14.0 * (std::min(spilled.size(), kListed) + (spilled.size() > kListed));
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
                W + left + 20, H + top + 50 + list_h);
  s += buf;
  s += "<title>" + esc(title) + "</title>\n<text x=\"" + std::to_string(int(left)) + "\" y=\"18\" font-size=\"14\">" + esc(title) +
       "</text>\n";
  std::snprintf(buf, sizeof buf, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f8f8f8\" stroke=\"#444\"/>\n", left, top, W, H);
  s += buf;
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    if (pl.offsets[i] == kSpilled) continue;
    const Buffer& b = p.buffers[i];
    double x = left + W * static_cast<double>(b.start - t0) / static_cast<double>(t1 - t0);
    double w = W * static_cast<double>(b.end - b.start) / static_cast<double>(t1 - t0);
    double y1 = top + H - H * static_cast<double>(pl.offsets[i] + b.size) / static_cast<double>(h);
    double hh = H * static_cast<double>(b.size) / static_cast<double>(h);
    unsigned hue = static_cast<unsigned>((i * 137) % 360);
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"hsl(%u,65%%,60%%)\" stroke=\"#222\" stroke-width=\"0.3\">",
                  x, y1, w, hh, hue);
    s += buf;
    s += "<title>" + esc(b.id) + " size " + std::to_string(b.size) + " @" + std::to_string(pl.offsets[i]) + " [" +
         std::to_string(b.start) + "," + std::to_string(b.end) + ")</title></rect>\n";
  }
  std::snprintf(buf, sizeof buf, "<text x=\"%.0f\" y=\"%.0f\">time %lld .. %lld</text>\n", left, top + H + 16, (long long)t0, (long long)t1);
  s += buf;
  // Address ticks: 0, quarters and the top of the axis, right-aligned left of the chart.
  for (int k = 0; k <= 4; ++k) {
    const double y = top + H - H * k / 4.0;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.0f\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\" stroke=\"#444\"/><text x=\"%.0f\" y=\"%.2f\" text-anchor=\"end\">%lld</text>\n",
                  left - 4, y, left, y, left - 6, y + 4, static_cast<long long>(static_cast<double>(h) * k / 4.0));
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "<text x=\"12\" y=\"%.0f\" transform=\"rotate(-90 12 %.0f)\" text-anchor=\"middle\">address (bytes)</text>\n",
                top + H / 2, top + H / 2);
  s += buf;
  if (mini && minimize_bound > 0 && minimize_bound <= h) {
    double yl = top + H - H * static_cast<double>(minimize_bound) / static_cast<double>(h);
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.0f\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\" stroke=\"#06c\" stroke-dasharray=\"4 3\"/>"
                  "<text x=\"%.0f\" y=\"%.2f\" text-anchor=\"end\" fill=\"#06c\">lower bound %lld, height %lld</text>\n",
                  left, yl, left + W, yl, left + W - 4, yl - 4, static_cast<long long>(minimize_bound), static_cast<long long>(reached));
    s += buf;
  }
  if (!mini && p.capacity != kUnbounded) {
    double yc = top + H - H * static_cast<double>(p.capacity) / static_cast<double>(h);
    std::snprintf(buf, sizeof buf, "<line x1=\"%.0f\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\" stroke=\"red\" stroke-dasharray=\"4 3\"/>\n", left, yc, left + W, yc);
    s += buf;
  }
  if (!spilled.empty()) {
    double y = top + H + 36;
    s += "<text x=\"" + std::to_string(int(left)) + "\" y=\"" + std::to_string(int(y)) + "\">spilled (" + std::to_string(spilled.size()) + "):</text>\n";
    for (std::size_t k = 0; k < spilled.size() && k < kListed; ++k) {
      y += 14;
      s += "<text x=\"" + std::to_string(int(left + 10)) + "\" y=\"" + std::to_string(int(y)) + "\">" + esc(spilled[k]) + "</text>\n";
    }
    if (spilled.size() > kListed)
      s += "<text x=\"" + std::to_string(int(left + 10)) + "\" y=\"" + std::to_string(int(y + 14)) + "\">and " +
           std::to_string(spilled.size() - kListed) + " more</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace sp::alloc
