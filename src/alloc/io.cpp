#include "alloc/io.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <sstream>
#include <string_view>

#include "core/svg.h"
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
  // A .csv or .json name says the format; any other name (standard input, x.txt) is read by
  // content: a document starting with '{' is JSON, anything else CSV.
  auto ends_with = [&](const char* ext) {
    const std::size_t k = std::strlen(ext);
    return path.size() >= k && path.compare(path.size() - k, k, ext) == 0;
  };
  const std::size_t first = text->find_first_not_of(" \t\r\n");
  const bool csv = ends_with(".csv") ||
                   (!ends_with(".json") && first != std::string::npos && (*text)[first] != '{');
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

std::string no_plan_message(const std::string& source, const Problem& p, const SolveResult& r) {
  const std::string bound = "lower bound " + std::to_string(r.lower_bound);
  if (p.capacity >= kUnbounded)  // --minimize without a capacity: only the clock can stop it
    return source + ": no plan found within the time limit (" + bound + "); no output written";
  return source + ": no plan within capacity " + std::to_string(p.capacity) +
         (r.proven_infeasible ? " (proven infeasible; " + bound + ")" : " found (search gave up; " + bound + ")") +
         "; no output written";
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
  namespace svg = sp::svg;
  const double W = 960, left = 80, right = 20, PW = W - left - right, PH = 400, font = 11;
  const std::size_t n = p.buffers.size();
  Time t0 = 0, t1 = 1;
  if (n > 0) {
    t0 = p.buffers[0].start;
    t1 = p.buffers[0].end;
    for (const Buffer& b : p.buffers) t0 = std::min(t0, b.start), t1 = std::max(t1, b.end);
  }
  // --minimize: the capacity is only an upper limit, so the axis ends at the height reached.
  const bool mini = minimize_bound >= 0;
  const Size reached = height(p, pl);
  Size h = std::max<Size>(1, reached);
  if (!mini && p.capacity != kUnbounded) h = std::max(h, p.capacity);
  const bool cap_line = !mini && p.capacity != kUnbounded;
  const bool bound_line = mini && minimize_bound > 0 && minimize_bound <= h;

  // Roles: one colour each. A child placed at its in-place parent's base took the parent's slot.
  const svg::Role resident{"resident buffer", "#6baed6"}, handoff{"in place (hand-off)", "#fdae6b"},
      pinned{"pinned offset", "#c39bd3"}, band{"buffers below one pixel (occupancy)", "#636363"},
      capacity{"capacity", "#d62728"}, bound{"lower bound", "#2ca02c"};
  std::vector<std::string> spilled_ids;
  std::vector<std::size_t> spilled;
  std::vector<signed char> role(n, 0);  // 0 resident, 1 hand-off, 2 pinned, -1 spilled or empty
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = p.buffers[i];
    if (pl.offsets[i] == kSpilled) {
      spilled.push_back(i);
      role[i] = -1;
      continue;
    }
    if (b.size <= 0) role[i] = -1;  // no bytes: nothing to draw
    else if (b.fixed_offset != kNoFixedOffset) role[i] = 2;
    else
      for (int q : b.in_place_parents)
        if (pl.offsets[q] == pl.offsets[i]) role[i] = 1;
  }

  // Layout from the top: title, summary, legend, chart, x axis, spilled list.
  svg::SvgCanvas c(W, 100, title, font);
  c.text(W / 2, 18, title, W - 20, "middle", 14);
  std::string summary = std::to_string(n) + " buffers, height " + svg::human_bytes(static_cast<double>(reached));
  if (cap_line) summary += " of capacity " + svg::human_bytes(static_cast<double>(p.capacity));
  if (mini) summary += ", lower bound " + svg::human_bytes(static_cast<double>(minimize_bound));
  if (!spilled.empty()) summary += ", " + std::to_string(spilled.size()) + " spilled";

  // Which buffers are drawn one by one: those at least a pixel each way, the largest first up
  // to a budget (each costs ~150 bytes with its tooltip); the rest become the occupancy band.
  constexpr std::size_t kMaxRects = 2500;
  const double sx = PW / static_cast<double>(t1 - t0), sy = PH / static_cast<double>(h);
  auto px_w = [&](std::size_t i) { return sx * static_cast<double>(p.buffers[i].end - p.buffers[i].start); };
  auto px_h = [&](std::size_t i) { return sy * static_cast<double>(p.buffers[i].size); };
  std::vector<std::size_t> big, small;
  for (std::size_t i = 0; i < n; ++i) {
    if (role[i] < 0) continue;
    (px_w(i) >= 1 && px_h(i) >= 1 ? big : small).push_back(i);
  }
  auto area_desc = [&](std::size_t a, std::size_t b) {
    const double x = px_w(a) * px_h(a), y = px_w(b) * px_h(b);
    return x != y ? x > y : a < b;
  };
  if (big.size() > kMaxRects) {
    std::nth_element(big.begin(), big.begin() + kMaxRects, big.end(), area_desc);
    small.insert(small.end(), big.begin() + kMaxRects, big.end());
    big.resize(kMaxRects);
  }
  if (!small.empty()) summary += "; " + std::to_string(small.size()) + " below one pixel shown as occupancy";
  c.text(W / 2, 34, summary, W - 20, "middle");
  std::vector<svg::Role> roles;
  bool used[3] = {false, false, false};
  for (std::size_t i : big) used[static_cast<int>(role[i])] = true;
  if (used[0]) roles.push_back(resident);
  if (used[1]) roles.push_back(handoff);
  if (used[2]) roles.push_back(pinned);
  if (!small.empty()) roles.push_back(band);
  if (cap_line) roles.push_back(capacity);
  if (bound_line) roles.push_back(bound);
  const double top = 44 + (roles.empty() ? 0 : c.legend(left, 42, PW, roles)) + 6;
  const double bottom = top + PH;
  c.rect(left, top, PW, PH, "#f8f8f8", "", "stroke=\"#444\"");
  auto X = [&](Time t) { return left + sx * static_cast<double>(t - t0); };
  auto Y = [&](double v) { return bottom - sy * v; };

  if (!small.empty()) {
    // Cells of 3 px: fine enough to show the packing's shape, coarse enough that a fully
    // mixed picture stays a few hundred KB.
    svg::OccupancyGrid g(left, top, PW, PH, 3);
    for (std::size_t i : small) {
      const Buffer& b = p.buffers[i];
      g.add(X(b.start), Y(static_cast<double>(pl.offsets[i] + b.size)), X(b.end), Y(static_cast<double>(pl.offsets[i])));
    }
    g.draw(c, band.fill, std::to_string(small.size()) + " buffers below one pixel");
  }
  std::sort(big.begin(), big.end());  // input order: the picture does not depend on the budget's pick
  for (std::size_t i : big) {
    const Buffer& b = p.buffers[i];
    const Offset o = pl.offsets[i];
    std::string tip = b.id + ": " + svg::human_bytes(static_cast<double>(b.size)) + " at " + std::to_string(o) +
                      ", time [" + std::to_string(b.start) + ", " + std::to_string(b.end) + ")";
    if (role[i] == 1) tip += ", in place";
    if (role[i] == 2) tip += ", pinned";
    const std::string& fill = role[i] == 1 ? handoff.fill : role[i] == 2 ? pinned.fill : resident.fill;
    c.rect(X(b.start), Y(static_cast<double>(o + b.size)), px_w(i), px_h(i), fill, tip,
           "stroke=\"#fff\" stroke-width=\"0.4\"");
  }
  // Ids inside the rectangles large enough, largest first, never overlapping one another.
  std::sort(big.begin(), big.end(), area_desc);
  svg::LabelBoxes boxes;
  for (std::size_t i : big) {
    if (px_w(i) < 20 || px_h(i) < font + 3) continue;
    const Buffer& b = p.buffers[i];
    const double x = X(b.start) + 2, y = Y(static_cast<double>(pl.offsets[i] + b.size)) + 1;
    const std::string shown = svg::ellipsize(b.id, px_w(i) - 4, font);
    // A cut id needs 3 characters before "…" (3 bytes) to say anything.
    if (shown.empty() || (shown != b.id && shown.size() < 6) || !boxes.claim(x, y, x + svg::text_width(shown, font), y + font + 1)) continue;
    c.text(x, y + font - 1, b.id, px_w(i) - 4);
  }
  if (cap_line) c.line(left, Y(static_cast<double>(p.capacity)), left + PW, Y(static_cast<double>(p.capacity)),
                       capacity.fill, "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"");
  if (bound_line) c.line(left, Y(static_cast<double>(minimize_bound)), left + PW, Y(static_cast<double>(minimize_bound)),
                         bound.fill, "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"");
  c.x_axis(left, left + PW, bottom, static_cast<double>(t0), static_cast<double>(t1), false, svg::human_count, "time step");
  c.y_axis(left, bottom, top, 0, static_cast<double>(h), true, svg::human_bytes, "address");
  double y = bottom + 2 * font + 12;

  // Spilled buffers, largest first: at most kListed in a grid of columns, then "and N more".
  if (!spilled.empty()) {
    constexpr std::size_t kListed = 40, kCols = 5;
    std::stable_sort(spilled.begin(), spilled.end(),
                     [&](std::size_t a, std::size_t b) { return p.buffers[a].size > p.buffers[b].size; });
    y += 2 * font;
    c.text(left, y, "spilled (" + std::to_string(spilled.size()) + "), largest first:", PW);
    const double cw = PW / kCols;
    const std::size_t shown = std::min(spilled.size(), kListed);
    for (std::size_t k = 0; k < shown; ++k) {
      const Buffer& b = p.buffers[spilled[k]];
      c.text(left + cw * static_cast<double>(k % kCols), y + (font + 4) * static_cast<double>(1 + k / kCols),
             b.id + " (" + svg::human_bytes(static_cast<double>(b.size)) + ")", cw - 10);
    }
    y += (font + 4) * static_cast<double>((shown + kCols - 1) / kCols);
    if (spilled.size() > kListed) {
      y += font + 4;
      c.text(left, y, "and " + std::to_string(spilled.size() - kListed) + " more", PW);
    }
  }
  c.set_height(std::ceil(y + font));
  return c.finish();
}

}  // namespace sp::alloc
