#include "nki/svg.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "core/xml.h"
#include "nki/check.h"

namespace sp::nki {

namespace {

constexpr const char* kEngineColor[kNumEngines] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1"};
constexpr std::size_t kMaxSpans = 20000;  // per chart; beyond that the picture is unreadable anyway

std::string esc(const std::string& s) { return xml_escape(s); }

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string tensor_color(int t) {
  static const char* pal[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                              "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
  return pal[t % 12];
}

int rows(const Timeline& tl) {
  int n = 0;
  for (int e = 0; e < kNumEngines; ++e) n += tl.lanes[e];
  return n;
}

void timeline(std::string& out, const Kernel& k, const Timeline& tl, const std::string& title, double x0, double y0,
              double width, Cycles scale) {
  const double row = 16;
  out += "<text x=\"" + num(x0) + "\" y=\"" + num(y0 - 6) + "\" font-weight=\"bold\">" + esc(title) + "</text>\n";
  std::array<int, kNumEngines> first_row{};
  int r = 0;
  for (int e = 0; e < kNumEngines; ++e) {
    first_row[e] = r;
    for (int l = 0; l < tl.lanes[e]; ++l, ++r) {
      double y = y0 + r * row;
      std::string label = engine_name(static_cast<Engine>(e));
      if (tl.lanes[e] > 1) label += " q" + std::to_string(l);
      out += "<text x=\"" + num(x0 - 6) + "\" y=\"" + num(y + 12) + "\" text-anchor=\"end\">" + label + "</text>\n";
      out += "<rect x=\"" + num(x0) + "\" y=\"" + num(y) + "\" width=\"" + num(width) + "\" height=\"" + num(row - 2) +
             "\" fill=\"#f4f4f4\"/>\n";
    }
  }
  std::size_t n = 0;
  for (const EngineSpan& s : tl.spans) {
    if (++n > kMaxSpans) break;
    const Instruction& ins = k.instrs[s.instr];
    const int e = static_cast<int>(ins.engine);
    double x = x0 + width * static_cast<double>(s.start) / static_cast<double>(scale);
    double w = std::max(0.5, width * static_cast<double>(s.end - s.start) / static_cast<double>(scale));
    out += "<rect x=\"" + num(x) + "\" y=\"" + num(y0 + (first_row[e] + s.lane) * row) + "\" width=\"" + num(w) +
           "\" height=\"" + num(row - 2) + "\" fill=\"" + kEngineColor[e] +
           "\" stroke=\"white\" stroke-width=\"0.3\"><title>" + esc(ins.name) + " [" + std::to_string(s.start) + ", " +
           std::to_string(s.end) + ")</title></rect>\n";
  }
  out += "<text x=\"" + num(x0 + width) + "\" y=\"" + num(y0 + r * row + 12) + "\" text-anchor=\"end\">" +
         std::to_string(tl.makespan) + " cycles</text>\n";
}

constexpr double kMemH = 160, kPsumH = 60;  // heights of the SBUF and PSUM panels

// Roles of a tile in the violations: bit 1 a victim (read after being destroyed), bit 2 a writer
// that destroyed another tile.
using TileKey = std::tuple<int, Partition, Bytes>;  // (tensor, start partition, byte address)
constexpr int kVictim = 1, kWriter = 2;

// SBUF partitions (down) x bytes (right) and PSUM. Tiles in `bad` are outlined on top of every
// fill, victims in red and writers in dashed orange, so a victim is never hidden under its writer.
void memory_map(std::string& out, const Kernel& k, const std::vector<std::vector<TilePlacement>>& placements,
                const std::map<TileKey, int>& bad, double left, double y0, double W) {
  // Scale bytes to the used part of SBUF (with some margin) so small tiles stay visible.
  Bytes shown = 0;
  for (std::size_t t = 0; t < placements.size(); ++t)
    if (k.tensors[t].buffer == Buffer::kSbuf)
      for (const TilePlacement& p : placements[t]) shown = std::max(shown, p.byte_addr + k.tensors[t].fbytes());
  shown = std::min(k.hw.sbuf_usable(), std::max<Bytes>(shown + shown / 10, 4096));
  out += "<text x=\"" + num(left) + "\" y=\"" + num(y0 - 6) + "\" font-weight=\"bold\">SBUF: partitions x bytes [0, " +
         std::to_string(shown) + ") of " + std::to_string(k.hw.sbuf_usable()) + " usable per partition</text>\n";
  out += "<rect x=\"" + num(left) + "\" y=\"" + num(y0) + "\" width=\"" + num(W) + "\" height=\"" + num(kMemH) +
         "\" fill=\"#f4f4f4\" stroke=\"#999\"/>\n";
  const double bx = W / static_cast<double>(shown);
  const double py = kMemH / static_cast<double>(k.hw.partitions);
  const double py0 = y0 + kMemH + 30;
  out += "<text x=\"" + num(left) + "\" y=\"" + num(py0 - 6) + "\" font-weight=\"bold\">PSUM: banks (" +
         std::to_string(k.hw.psum_banks) + " x " + std::to_string(k.hw.psum_bank_bytes) + " bytes)</text>\n";
  out += "<rect x=\"" + num(left) + "\" y=\"" + num(py0) + "\" width=\"" + num(W) + "\" height=\"" + num(kPsumH) +
         "\" fill=\"#f4f4f4\" stroke=\"#999\"/>\n";
  std::string outlines;  // drawn after every fill
  const double kx = W / static_cast<double>(k.hw.psum_bytes());
  const double ky = kPsumH / static_cast<double>(k.hw.partitions);
  for (std::size_t ti = 0; ti < placements.size(); ++ti) {
    const Tensor& t = k.tensors[ti];
    std::vector<std::pair<Partition, Bytes>> seen;
    for (const TilePlacement& p : placements[ti]) {
      if (std::find(seen.begin(), seen.end(), std::pair{p.start_partition, p.byte_addr}) != seen.end()) continue;
      seen.push_back({p.start_partition, p.byte_addr});
      const bool psum = t.buffer == Buffer::kPsum;
      const double sx = psum ? kx : bx, sy = psum ? ky : py, oy = psum ? py0 : y0;
      // Tiles outside the memory are drawn clipped to it (they are violations anyway).
      double x0 = std::clamp(sx * static_cast<double>(p.byte_addr), 0.0, W);
      double x1 = std::clamp(sx * static_cast<double>(p.byte_addr + t.fbytes()), 0.0, W);
      double r0 = std::clamp(sy * static_cast<double>(p.start_partition), 0.0, psum ? kPsumH : kMemH);
      double r1 = std::clamp(sy * static_cast<double>(p.start_partition + t.pdim), 0.0, psum ? kPsumH : kMemH);
      auto role = bad.find({static_cast<int>(ti), p.start_partition, p.byte_addr});
      const bool red = role != bad.end();
      out += "<rect x=\"" + num(left + x0) + "\" y=\"" + num(oy + r0) + "\" width=\"" + num(std::max(0.5, x1 - x0)) +
             "\" height=\"" + num(std::max(0.5, r1 - r0)) + "\" fill=\"" + tensor_color(static_cast<int>(ti)) +
             "\" fill-opacity=\"" + (red ? "0.5" : "0.75") + "\" stroke=\"#333\" stroke-width=\"0.4\"><title>" +
             esc(t.name) + " tile " +
             std::to_string(seen.size() - 1) + ": partitions " + std::to_string(p.start_partition) + "+" +
             std::to_string(t.pdim) + ", bytes " + std::to_string(p.byte_addr) + "+" + std::to_string(t.fbytes()) +
             (red ? (role->second & kVictim ? " (destroyed while a read was pending)" : " (its write destroyed a tile)")
                  : "") +
             "</title></rect>\n";
      if (x1 - x0 > 30)
        out += "<text x=\"" + num(left + x0 + 2) + "\" y=\"" + num(oy + r0 + 12) + "\" font-size=\"9\">" + esc(t.name) +
               "</text>\n";
      if (red) {
        // Outlines go last; a victim is inset so it stays visible inside a writer of the same bytes.
        const double inset = role->second & kVictim ? 1.5 : 0.0;
        outlines += "<rect x=\"" + num(left + x0 + inset) + "\" y=\"" + num(oy + r0 + inset) + "\" width=\"" +
                    num(std::max(0.5, x1 - x0 - 2 * inset)) + "\" height=\"" + num(std::max(0.5, r1 - r0 - 2 * inset)) +
                    "\" fill=\"none\" " +
                    (role->second & kVictim ? "stroke=\"#d00\" stroke-width=\"2\""
                                            : "stroke=\"#f80\" stroke-width=\"2\" stroke-dasharray=\"5,3\"") +
                    "/>\n";
        if (role->second & kVictim)
          outlines += "<text x=\"" + num(left + x0 + 3) + "\" y=\"" + num(oy + r1 - 4) +
                      "\" font-size=\"9\" fill=\"#d00\">" + esc(t.name) + " (victim)</text>\n";
      }
    }
  }
  out += outlines;
  // Legend for the outlines.
  if (!bad.empty()) {
    const double ly = y0 + kMemH + 30 + kPsumH + 14;
    out += "<rect x=\"" + num(left) + "\" y=\"" + num(ly - 9) + "\" width=\"14\" height=\"10\" fill=\"none\" stroke=\"#d00\" stroke-width=\"2\"/>"
           "<text x=\"" + num(left + 20) + "\" y=\"" + num(ly) + "\">victim: destroyed while a read was pending</text>\n";
    out += "<rect x=\"" + num(left + 300) + "\" y=\"" + num(ly - 9) + "\" width=\"14\" height=\"10\" fill=\"none\" stroke=\"#f80\" stroke-width=\"2\" stroke-dasharray=\"5,3\"/>"
           "<text x=\"" + num(left + 320) + "\" y=\"" + num(ly) + "\">writer that destroyed it</text>\n";
  }
}

}  // namespace

std::string plan_svg(const PlanResult& plan) {
  const Kernel& k = plan.kernel;
  const double W = 1000, left = 70;
  const Cycles scale = std::max<Cycles>({plan.baseline.makespan, plan.planned.makespan, 1});
  const double tl_h = rows(plan.planned) * 16 + 40;
  const double H = 20 + 2 * tl_h + kMemH + 40 + kPsumH + 40;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W + left + 20) + "\" height=\"" + num(H) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  timeline(out, k, plan.planned, "planned: engines x time", left, 30, W, scale);
  timeline(out, k, plan.baseline, "all single-buffered: engines x time", left, 30 + tl_h, W, scale);

  std::vector<std::vector<TilePlacement>> placements(k.tensors.size());
  for (const TensorPlan& tp : plan.plans) placements[tp.tensor] = evaluate_allocation(k, k.tensors[tp.tensor]);
  memory_map(out, k, placements, {}, left, 30 + 2 * tl_h + 10, W);
  out += "</svg>\n";
  return out;
}

std::string check_svg(const Kernel& k, const CheckReport& report) {
  const double W = 1000, left = 70;
  std::map<TileKey, int> bad;
  auto mark = [&](const std::string& name, const std::vector<int64_t>& block, int role) {
    TensorId t = k.find_tensor(name);
    if (t < 0 || report.placements[t].empty() || block.size() != k.tensors[t].blocks.size()) return;
    int64_t lin = 0;
    for (std::size_t d = 0; d < block.size(); ++d) lin = lin * k.tensors[t].blocks[d] + block[d];
    const TilePlacement& p = report.placements[t][static_cast<std::size_t>(lin)];
    bad[{t, p.start_partition, p.byte_addr}] |= role;
  };
  for (const Violation& v : report.violations) {
    if (v.kind == ViolationKind::kPsumBase || v.kind == ViolationKind::kMixedAllocation ||
        v.kind == ViolationKind::kHbmNotOutput)
      continue;  // whole-tensor rules name no tile
    mark(v.tensor, v.block, kVictim);
    if (!v.by_tensor.empty()) mark(v.by_tensor, v.by_block, kWriter);
  }
  const std::size_t listed = std::min<std::size_t>(report.violations.size(), 30);
  const double H = 40 + kMemH + 40 + kPsumH + 60 + 14.0 * static_cast<double>(listed) + 20;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W + left + 20) + "\" height=\"" + num(H) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  out += "<text x=\"" + num(left) + "\" y=\"16\" font-weight=\"bold\">nki check: " +
         std::to_string(report.distinct_violations) + " violations (victims outlined in red, their writers dashed orange)</text>\n";
  memory_map(out, k, report.placements, bad, left, 40, W);
  double y = 40 + kMemH + 30 + kPsumH + 44;
  for (std::size_t i = 0; i < listed; ++i, y += 14)
    out += "<text x=\"" + num(left) + "\" y=\"" + num(y) + "\" font-size=\"10\">" + esc(report.violations[i].message) +
           "</text>\n";
  out += "</svg>\n";
  return out;
}

}  // namespace sp::nki
