#include "nki/svg.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "nki/check.h"

namespace sp::nki {

namespace {

constexpr const char* kEngineColor[kNumEngines] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1"};
constexpr std::size_t kMaxSpans = 20000;  // per chart; beyond that the picture is unreadable anyway

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

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

}  // namespace

std::string plan_svg(const PlanResult& plan) {
  const Kernel& k = plan.kernel;
  const double W = 1000, left = 70;
  const Cycles scale = std::max<Cycles>({plan.baseline.makespan, plan.planned.makespan, 1});
  const double tl_h = rows(plan.planned) * 16 + 40;
  const double mem_h = 160, psum_h = 60;
  const double H = 20 + 2 * tl_h + mem_h + 40 + psum_h + 40;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W + left + 20) + "\" height=\"" + num(H) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  timeline(out, k, plan.planned, "planned: engines x time", left, 30, W, scale);
  timeline(out, k, plan.baseline, "all single-buffered: engines x time", left, 30 + tl_h, W, scale);

  // SBUF: partitions (down) x bytes (right).
  double y0 = 30 + 2 * tl_h + 10;
  // Scale bytes to the used part of SBUF (with some margin) so small tiles stay visible.
  Bytes shown = 0;
  for (const TensorPlan& tp : plan.plans)
    if (k.tensors[tp.tensor].buffer == Buffer::kSbuf) shown = std::max(shown, tp.base + tp.tiles * tp.stride);
  shown = std::min(k.hw.sbuf_usable(), std::max<Bytes>(shown + shown / 10, 4096));
  out += "<text x=\"" + num(left) + "\" y=\"" + num(y0 - 6) + "\" font-weight=\"bold\">SBUF: partitions x bytes [0, " +
         std::to_string(shown) + ") of " + std::to_string(k.hw.sbuf_usable()) + " usable per partition</text>\n";
  out += "<rect x=\"" + num(left) + "\" y=\"" + num(y0) + "\" width=\"" + num(W) + "\" height=\"" + num(mem_h) +
         "\" fill=\"#f4f4f4\" stroke=\"#999\"/>\n";
  const double bx = W / static_cast<double>(shown);
  const double py = mem_h / static_cast<double>(k.hw.partitions);
  double py0 = y0 + mem_h + 30;
  out += "<text x=\"" + num(left) + "\" y=\"" + num(py0 - 6) + "\" font-weight=\"bold\">PSUM: banks (" +
         std::to_string(k.hw.psum_banks) + " x " + std::to_string(k.hw.psum_bank_bytes) + " bytes)</text>\n";
  out += "<rect x=\"" + num(left) + "\" y=\"" + num(py0) + "\" width=\"" + num(W) + "\" height=\"" + num(psum_h) +
         "\" fill=\"#f4f4f4\" stroke=\"#999\"/>\n";
  const double kx = W / static_cast<double>(k.hw.psum_bytes());
  const double ky = psum_h / static_cast<double>(k.hw.partitions);
  for (const TensorPlan& tp : plan.plans) {
    const Tensor& t = k.tensors[tp.tensor];
    auto pl = evaluate_allocation(k, t);
    std::vector<std::pair<Partition, Bytes>> seen;
    for (const TilePlacement& p : pl) {
      if (std::find(seen.begin(), seen.end(), std::pair{p.start_partition, p.byte_addr}) != seen.end()) continue;
      seen.push_back({p.start_partition, p.byte_addr});
      const bool psum = t.buffer == Buffer::kPsum;
      double sx = psum ? kx : bx, sy = psum ? ky : py, oy = psum ? py0 : y0;
      out += "<rect x=\"" + num(left + sx * static_cast<double>(p.byte_addr)) + "\" y=\"" +
             num(oy + sy * static_cast<double>(p.start_partition)) + "\" width=\"" +
             num(std::max(0.5, sx * static_cast<double>(t.fbytes()))) + "\" height=\"" +
             num(sy * static_cast<double>(t.pdim)) + "\" fill=\"" + tensor_color(tp.tensor) +
             "\" stroke=\"#333\" stroke-width=\"0.4\"><title>" + esc(t.name) + " tile " + std::to_string(seen.size() - 1) +
             ": partitions " + std::to_string(p.start_partition) + "+" + std::to_string(t.pdim) + ", bytes " +
             std::to_string(p.byte_addr) + "+" + std::to_string(t.fbytes()) + "</title></rect>\n";
      if (sx * static_cast<double>(t.fbytes()) > 30)
        out += "<text x=\"" + num(left + sx * static_cast<double>(p.byte_addr) + 2) + "\" y=\"" +
               num(oy + sy * static_cast<double>(p.start_partition) + 12) + "\" font-size=\"9\">" + esc(t.name) + "</text>\n";
    }
  }
  out += "</svg>\n";
  return out;
}

}  // namespace sp::nki
