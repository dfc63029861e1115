#include "nki/svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "core/svg.h"
#include "core/xml.h"
#include "nki/check.h"

namespace sp::nki {

namespace {

using svg::num;
using svg::SvgCanvas;

// Layout of both pictures (viewBox units; the picture scales to its container).
constexpr double kWidth = 1100, kLeft = 96, kRight = 24, kPlotW = kWidth - kLeft - kRight;
constexpr double kRow = 16;                   // one engine queue
constexpr double kMemH = 160, kPsumH = 64;    // SBUF and PSUM panels (128 partitions each)
constexpr double kMinSpanPx = 4;              // narrower spans are aggregated into column bands
constexpr double kColumnPx = 2;               // width of one aggregation column
constexpr std::size_t kMaxSpanRects = 3000;   // per timeline; the rest are aggregated too
constexpr std::size_t kMaxTileRects = 5000;   // memory map tiles drawn (after merging equal pixels)
constexpr std::size_t kMaxListed = 30;        // violations listed under the map
constexpr int kMaxLinesPerViolation = 3;

// Colours by engine: the role of a span in a timeline.
constexpr const char* kEngineColor[kNumEngines] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1"};
// Engines in the order a profiler lists a NeuronCore.
constexpr Engine kEngineOrder[] = {Engine::kDma, Engine::kTensor, Engine::kVector, Engine::kScalar, Engine::kGpSimd};

// Roles of a tile in the memory map; one colour each, and the legend lists those drawn.
enum TileRole { kLoaded, kComputed, kPlacement, kWriter, kVictim, kNumRoles };
const svg::Role kTileRoles[kNumRoles] = {
    {"tile written by DMA", "#a6cee3"},
    {"tile written by a compute engine", "#b2df8a"},
    {"tile with a placement violation (range, alignment, partition, bank)", "#cab2d6"},
    {"writer that destroyed a live tile", "#fdae61"},
    {"victim: destroyed while a read was pending", "#d7301f"},
};

std::string cycles_text(double c) { return svg::human_count(c); }
std::string partitions_text(double p) { return svg::human_count(p); }

double clock_ghz(const Hardware& hw) {
  for (const auto& [name, v] : hw.cycle_model)
    if (name == "reference_clock_ghz" && v > 0) return v;
  return 1.4;
}

// "1.2k cycles (0.86 µs)" at the cycle model's reference clock (ms from 1000 µs).
std::string duration_text(Cycles c, const Hardware& hw) {
  const double us = static_cast<double>(c) / (clock_ghz(hw) * 1000);
  char b[64];
  if (us >= 1000) std::snprintf(b, sizeof b, "%.3g ms", us / 1000);
  else std::snprintf(b, sizeof b, "%.3g \xC2\xB5s", us);
  return svg::human_count(static_cast<double>(c)) + " cycles (" + b + ")";
}

// Words of `s` in lines no wider than `max_px`; a word longer than a line gets its own line
// (the caller ellipsizes it).
std::vector<std::string> wrap(const std::string& s, double max_px, double font_px) {
  std::vector<std::string> lines;
  std::string cur;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = s.find(' ', i);
    if (j == std::string::npos) j = s.size();
    const std::string word = s.substr(i, j - i);
    const std::string joined = cur.empty() ? word : cur + " " + word;
    if (!cur.empty() && svg::text_width(joined, font_px) > max_px) {
      lines.push_back(cur);
      cur = word;
    } else {
      cur = joined;
    }
    i = j + 1;
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

// Labels placed anywhere in a panel: a label is kept only if its box meets no kept box.
class LabelBoxes {
 public:
  bool claim(double x0, double y0, double x1, double y1) {
    for (const auto& b : boxes_)
      if (x0 < b[2] + 2 && b[0] < x1 + 2 && y0 < b[3] + 1 && b[1] < y1 + 1) return false;
    boxes_.push_back({x0, y0, x1, y1});
    return true;
  }

 private:
  std::vector<std::array<double, 4>> boxes_;
};

// Engines x time from y: one row per queue of every busy engine, spans coloured by engine.
// Spans narrower than kMinSpanPx (or beyond kMaxSpanRects) are summed into kColumnPx-wide
// columns per row and drawn as bands whose opacity is the busy share of the column, so a
// kernel of millions of instructions stays a small, readable picture. Returns the next free y.
double timeline(SvgCanvas& c, const Kernel& k, const Timeline& tl, const std::string& title, double y, Cycles scale) {
  c.text(kLeft, y + 12, title + ": " + duration_text(tl.makespan, k.hw), kPlotW, "start", 0, "font-weight=\"bold\"");
  y += 20;
  const double cpp = static_cast<double>(scale) / kPlotW;  // cycles per pixel
  const std::size_t ncols = static_cast<std::size_t>(std::ceil(kPlotW / kColumnPx));
  std::array<int, kNumEngines> first_row{};
  int r = 0;
  for (Engine en : kEngineOrder) {
    const int e = static_cast<int>(en);
    first_row[e] = r;
    if (tl.busy[e] == 0) continue;
    for (int l = 0; l < tl.lanes[e]; ++l, ++r) {
      const double ry = y + r * kRow;
      std::string label = engine_name(en);
      if (tl.lanes[e] > 1) label += " q" + std::to_string(l);
      c.text(kLeft - 6, ry + 11.5, label, kLeft - 10, "end");
      c.rect(kLeft, ry, kPlotW, kRow - 2, "#f4f4f4");
    }
  }
  const int nrows = r;
  // Per row: busy cycles and instruction count per column.
  std::vector<std::vector<double>> busy(static_cast<std::size_t>(nrows), std::vector<double>(ncols, 0));
  std::vector<std::vector<int64_t>> count(static_cast<std::size_t>(nrows), std::vector<int64_t>(ncols, 0));
  std::size_t drawn = 0;
  for (const EngineSpan& s : tl.spans) {
    const Instruction& ins = k.instrs[s.instr];
    const int e = static_cast<int>(ins.engine);
    const int row = first_row[e] + s.lane;
    if (tl.busy[e] == 0 || row >= nrows) continue;
    const double x = kLeft + static_cast<double>(s.start) / cpp;
    const double w = static_cast<double>(s.end - s.start) / cpp;
    if (w >= kMinSpanPx && drawn < kMaxSpanRects) {
      ++drawn;
      c.rect(x, y + row * kRow, w, kRow - 2, kEngineColor[e],
             ins.name + (ins.source.empty() ? "" : " (" + ins.source + ")") + ": cycles [" + std::to_string(s.start) +
                 ", " + std::to_string(s.end) + ")",
             "stroke=\"white\" stroke-width=\"0.3\"");
      continue;
    }
    const double col_cycles = cpp * kColumnPx;
    const std::size_t c0 = std::min(ncols - 1, static_cast<std::size_t>(static_cast<double>(s.start) / col_cycles));
    const std::size_t c1 =
        std::min(ncols - 1, static_cast<std::size_t>(static_cast<double>(std::max(s.end - 1, s.start)) / col_cycles));
    ++count[static_cast<std::size_t>(row)][c0];
    for (std::size_t col = c0; col <= c1; ++col) {
      const double lo = std::max<double>(static_cast<double>(s.start), static_cast<double>(col) * col_cycles);
      const double hi = std::min<double>(static_cast<double>(s.end), static_cast<double>(col + 1) * col_cycles);
      busy[static_cast<std::size_t>(row)][col] += std::max(0.0, hi - lo);
    }
  }
  // Bands: runs of columns with the same busy level (quarters) merged into one rectangle.
  const double col_cycles = cpp * kColumnPx;
  for (Engine en : kEngineOrder) {
    const int e = static_cast<int>(en);
    if (tl.busy[e] == 0) continue;
    for (int l = 0; l < tl.lanes[e]; ++l) {
      const std::size_t row = static_cast<std::size_t>(first_row[e] + l);
      auto level = [&](std::size_t col) {
        const double f = std::min(1.0, busy[row][col] / std::max(col_cycles, 1e-9));
        return busy[row][col] > 0 ? std::max(1, static_cast<int>(std::ceil(f * 4 - 1e-9))) : 0;
      };
      for (std::size_t a = 0; a < ncols;) {
        const int lv = level(a);
        std::size_t b = a + 1;
        while (b < ncols && level(b) == lv) ++b;
        if (lv > 0) {
          int64_t n = 0;
          double cyc = 0;
          for (std::size_t col = a; col < b; ++col) n += count[row][col], cyc += busy[row][col];
          const double lo = static_cast<double>(a) * col_cycles, hi = static_cast<double>(b) * col_cycles;
          char pct[16];
          std::snprintf(pct, sizeof pct, "%.0f%%", 100 * cyc / std::max(hi - lo, 1e-9));
          c.rect(kLeft + static_cast<double>(a) * kColumnPx, y + static_cast<double>(row) * kRow,
                 static_cast<double>(b - a) * kColumnPx, kRow - 2, kEngineColor[e],
                 std::to_string(n) + " short instructions starting in cycles [" + svg::human_count(lo) + ", " +
                     svg::human_count(hi) + "), busy " + pct,
                 "fill-opacity=\"" + num(0.25 * lv) + "\"");
        }
        a = b;
      }
    }
  }
  y += nrows * kRow + 2;
  c.x_axis(kLeft, kLeft + kPlotW, y, 0, static_cast<double>(scale), false, cycles_text,
           "time in cycles at " + svg::human_count(clock_ghz(k.hw)) + " GHz");
  return y + 40;
}

// Engines in use as legend roles, plus the reading of aggregated bands.
double engine_legend(SvgCanvas& c, const Timeline& tl, double y) {
  std::vector<svg::Role> roles;
  for (Engine en : kEngineOrder)
    if (tl.busy[static_cast<int>(en)] > 0) roles.push_back({engine_name(en), kEngineColor[static_cast<int>(en)]});
  const double h = c.legend(kLeft, y, kPlotW, roles);
  c.text(kLeft, y + h + 10,
         "Instructions narrower than " + svg::human_count(kMinSpanPx) +
             " px are summed per column: the paler the band, the less busy the queue there (hover for counts).",
         kPlotW, "start", 10, "fill=\"#555\"");
  return y + h + 18;
}

// One drawn tile: where and in which role.
struct TileKey {
  int tensor;
  Partition partition;
  Bytes addr;
  bool operator<(const TileKey& o) const { return std::tie(tensor, partition, addr) < std::tie(o.tensor, o.partition, o.addr); }
};

// SBUF partitions (down) x bytes (right) and PSUM, from y. Tiles are filled by role; writers that
// destroyed a live tile are drawn after the plain tiles and their victims last (inset), so a
// victim is never hidden under its writer. Returns the next free y.
double memory_map(SvgCanvas& c, const Kernel& k, const std::vector<std::vector<TilePlacement>>& placements,
                  const std::map<TileKey, int>& marked, double y) {
  // Bytes shown: the used part of SBUF (with some margin) so small tiles stay visible.
  Bytes used = 0;
  for (std::size_t t = 0; t < placements.size(); ++t)
    if (k.tensors[t].buffer == Memory::kSbuf)
      for (const TilePlacement& p : placements[t]) used = std::max(used, p.byte_addr + k.tensors[t].fbytes());
  const Bytes shown = std::min(k.hw.sbuf_usable(), std::max<Bytes>(used + used / 10, 4096));
  std::vector<int> written_by_dma(k.tensors.size(), 0);
  for (const Instruction& ins : k.instrs)
    for (const Access& a : ins.writes)
      if (ins.engine == Engine::kDma) written_by_dma[static_cast<std::size_t>(a.tensor)] = 1;

  struct Panel {
    double y, h, bytes_px;
    Partition partitions;
  };
  c.text(kLeft, y + 12,
         "SBUF: partitions \xC3\x97 bytes per partition, " + svg::human_bytes(static_cast<double>(used)) + " used of " +
             svg::human_bytes(static_cast<double>(k.hw.sbuf_usable())) + " usable (first " +
             svg::human_bytes(static_cast<double>(shown)) + " shown)",
         kPlotW, "start", 0, "font-weight=\"bold\"");
  const Panel sbuf{y + 20, kMemH, kPlotW / static_cast<double>(shown), k.hw.partitions};
  c.rect(kLeft, sbuf.y, kPlotW, sbuf.h, "#f4f4f4", "", "stroke=\"#999\"");
  // Partition 0 is at the top, as in the profiler's memory views: the axis runs downwards.
  c.y_axis(kLeft, sbuf.y, sbuf.y + sbuf.h, 0, static_cast<double>(k.hw.partitions), true, partitions_text, "");
  const double psum_top = sbuf.y + sbuf.h + 40;
  c.x_axis(kLeft, kLeft + kPlotW, sbuf.y + sbuf.h, 0, static_cast<double>(shown), true, svg::human_bytes, "");
  // The PSUM panel only when the kernel has PSUM tensors.
  const bool has_psum = std::any_of(k.tensors.begin(), k.tensors.end(), [](const Tensor& t) { return t.buffer == Memory::kPsum; });
  const Panel psum{psum_top + 22, kPsumH, kPlotW / static_cast<double>(k.hw.psum_bytes()), k.hw.partitions};
  const double bottom = has_psum ? psum.y + psum.h : sbuf.y + sbuf.h;
  if (has_psum) {
    c.text(kLeft, psum_top + 14,
           "PSUM: partitions \xC3\x97 bytes per partition, " + std::to_string(k.hw.psum_banks) + " banks of " +
               svg::human_bytes(static_cast<double>(k.hw.psum_bank_bytes)),
           kPlotW, "start", 0, "font-weight=\"bold\"");
    c.rect(kLeft, psum.y, kPlotW, psum.h, "#f4f4f4", "", "stroke=\"#999\"");
    for (int b = 1; b < k.hw.psum_banks; ++b) {
      const double x = kLeft + psum.bytes_px * static_cast<double>(b * k.hw.psum_bank_bytes);
      c.line(x, psum.y, x, psum.y + psum.h, "#bbb", "stroke-dasharray=\"3,2\"");
    }
    c.y_axis(kLeft, psum.y, psum.y + psum.h, 0, static_cast<double>(k.hw.partitions), true, partitions_text, "");
    c.x_axis(kLeft, kLeft + kPlotW, psum.y + psum.h, 0, static_cast<double>(k.hw.psum_bytes()), true, svg::human_bytes,
             "");
  }
  c.text(kLeft + kPlotW, bottom + 30, "bytes per partition", kPlotW, "end", 10, "fill=\"#555\"");

  // Tiles by drawing layer: plain, writers, victims.
  struct Tile {
    double x0, x1, r0, r1;
    int role;
    bool own_writer;  // a victim whose destroying write went to this same tile (no frame to show)
    std::string tip, name;
  };
  std::vector<Tile> layers[3];
  std::set<std::tuple<int, long, long, long, long>> pixels;  // merges tiles that draw the same
  std::size_t dropped = 0, automatic = 0;
  std::array<bool, kNumRoles> used_role{};
  for (std::size_t ti = 0; ti < placements.size(); ++ti) {
    const Tensor& t = k.tensors[ti];
    if (t.buffer != Memory::kHbm && placements[ti].empty()) ++automatic;
    std::set<std::pair<Partition, Bytes>> seen;  // a physical tile once, numbered in block order
    for (const TilePlacement& p : placements[ti]) {
      if (!seen.insert({p.start_partition, p.byte_addr}).second) continue;
      const Panel& pn = t.buffer == Memory::kPsum ? psum : sbuf;
      const double py = pn.h / static_cast<double>(pn.partitions);
      // Tiles outside the memory are drawn clipped to it (they are violations anyway).
      const double x0 = std::clamp(pn.bytes_px * static_cast<double>(p.byte_addr), 0.0, kPlotW);
      const double x1 = std::clamp(pn.bytes_px * static_cast<double>(p.byte_addr + t.fbytes()), 0.0, kPlotW);
      const double r0 = std::clamp(py * static_cast<double>(p.start_partition), 0.0, pn.h);
      const double r1 = std::clamp(py * static_cast<double>(p.start_partition + t.pdim), 0.0, pn.h);
      auto m = marked.find({static_cast<int>(ti), p.start_partition, p.byte_addr});
      const int bits = m == marked.end() ? 0 : m->second;
      const int role = bits & (1 << kVictim)   ? kVictim
                       : bits & (1 << kWriter) ? kWriter
                       : bits & (1 << kPlacement) ? kPlacement
                       : written_by_dma[ti]   ? kLoaded
                                              : kComputed;
      const int layer = role == kVictim ? 2 : role == kWriter ? 1 : 0;
      if (!pixels.insert({role, std::lround(x0 * 2), std::lround(x1 * 2), std::lround(pn.y + r0), std::lround(r1)}).second)
        continue;
      std::string tip = t.name + " tile " + std::to_string(seen.size() - 1) + ": partitions " +
                        std::to_string(p.start_partition) + "+" + std::to_string(t.pdim) + ", bytes " +
                        std::to_string(p.byte_addr) + "+" + std::to_string(t.fbytes());
      if (role == kVictim)
        tip += bits & (1 << kWriter) ? " (destroyed while a read was pending, by a write to the same physical tile)"
                                     : " (destroyed while a read was pending)";
      if (role == kWriter) tip += " (its write destroyed a tile)";
      if (role == kPlacement) tip += " (placement violation)";
      if (!t.source.empty()) tip += ", declared at " + t.source;
      layers[layer].push_back({x0, x1, pn.y + r0, pn.y + r1, role, role == kVictim && (bits & (1 << kWriter)),
                               std::move(tip), t.name});
    }
  }
  LabelBoxes labels;
  struct Label {
    double x, y, room;
    std::string text, extra;
  };
  std::vector<Label> texts;  // drawn after every tile so no fill covers them
  std::size_t n = 0;
  for (int layer = 0; layer < 3; ++layer)
    for (const Tile& tl : layers[layer]) {
      if (++n > kMaxTileRects) {
        ++dropped;
        continue;
      }
      used_role[static_cast<std::size_t>(tl.role)] = true;
      // Victims are inset so the writer of the same bytes shows as a frame around them.
      const double inset =
          tl.role == kVictim && !tl.own_writer ? std::min({6.0, (tl.r1 - tl.r0) / 4, (tl.x1 - tl.x0) / 4}) : 0.0;
      c.rect(kLeft + tl.x0 + inset, tl.r0 + inset, std::max(0.5, tl.x1 - tl.x0 - 2 * inset),
             std::max(0.5, tl.r1 - tl.r0 - 2 * inset), kTileRoles[tl.role].fill, tl.tip,
             tl.role >= kWriter ? "stroke=\"#222\" stroke-width=\"0.8\"" : "stroke=\"#555\" stroke-width=\"0.4\"");
      const std::string label = tl.role == kVictim ? tl.name + " (victim)" : tl.name;
      const double room = tl.x1 - tl.x0 - 2 * inset - 4;
      const std::string shown = svg::ellipsize(label, room, 9);
      // A label needs a row of its tile and room for more than the ellipsis.
      if (tl.r1 - tl.r0 - 2 * inset < 11 || shown.empty() || shown == "\xE2\x80\xA6") continue;
      const double lx = kLeft + tl.x0 + inset + 2;
      const double ly = tl.role == kVictim ? tl.r1 - inset - 3 : tl.r0 + 10;
      if (labels.claim(lx, ly - 8, lx + svg::text_width(shown, 9), ly + 2))
        texts.push_back({lx, ly, room, label, tl.role == kVictim ? "fill=\"white\"" : ""});
    }
  for (const Label& l : texts) c.text(l.x, l.y, l.text, l.room, "start", 9, l.extra);
  y = bottom + 38;
  std::vector<svg::Role> roles;
  for (int r = 0; r < kNumRoles; ++r)
    if (used_role[static_cast<std::size_t>(r)]) roles.push_back(kTileRoles[r]);
  if (!roles.empty()) y += c.legend(kLeft, y, kPlotW, roles) + 4;
  std::string notes;
  if (automatic)
    notes += std::to_string(automatic) + " tensor(s) with automatic allocation are not drawn (the compiler places them). ";
  if (dropped) notes += std::to_string(dropped) + " more tiles not drawn. ";
  if (!notes.empty()) {
    c.text(kLeft, y + 10, notes, kPlotW, "start", 10, "fill=\"#555\"");
    y += 16;
  }
  return y;
}

}  // namespace

namespace {

// One plan's section: its heading, both timelines on the time `scale`, and its memory map.
double plan_section(SvgCanvas& c, const PlanResult& plan, const std::string& heading, Cycles scale, double y) {
  const Kernel& k = plan.kernel;
  c.text(kLeft, y + 12, heading, kPlotW, "start", 13, "font-weight=\"bold\"");
  y = engine_legend(c, plan.planned, y + 24);
  y = timeline(c, k, plan.planned, "planned", y + 4, scale);
  y = timeline(c, k, plan.baseline, "all single-buffered", y, scale);
  std::vector<std::vector<TilePlacement>> placements(k.tensors.size());
  for (const TensorPlan& tp : plan.plans) placements[tp.tensor] = evaluate_allocation(k, k.tensors[tp.tensor]);
  return memory_map(c, k, placements, {}, y);
}

// " (logical core c of n)" when the launch has several cores.
std::string core_suffix(std::size_t c, std::size_t n) {
  return n > 1 ? " (logical core " + std::to_string(c) + " of " + std::to_string(n) + ")" : "";
}

// One check's section: its heading with the verdict, the memory map with the tiles of violations
// outlined, and the violations listed.
double check_section(SvgCanvas& c, const Kernel& k, const CheckReport& report, const std::string& heading, double y) {
  std::map<TileKey, int> marked;
  auto mark = [&](const std::string& name, const std::vector<int64_t>& block, int role) {
    TensorId t = k.find_tensor(name);
    if (t < 0 || report.placements[t].empty() || block.size() != k.tensors[t].blocks.size()) return;
    int64_t lin = 0;
    for (std::size_t d = 0; d < block.size(); ++d) lin = lin * k.tensors[t].blocks[d] + block[d];
    if (lin < 0 || lin >= static_cast<int64_t>(report.placements[t].size())) return;
    const TilePlacement& p = report.placements[t][static_cast<std::size_t>(lin)];
    marked[{t, p.start_partition, p.byte_addr}] |= 1 << role;
  };
  for (const Violation& v : report.violations) {
    switch (v.kind) {
      case ViolationKind::kPsumBase:
      case ViolationKind::kMixedAllocation:
      case ViolationKind::kHbmNotOutput:
      case ViolationKind::kReadBeforeWrite:
        break;  // whole-tensor rules name no tile; an unwritten tile was not destroyed
      case ViolationKind::kLifetimeConflict:
      case ViolationKind::kOverlap:
        mark(violated_tensor(v), v.detail.block, kVictim);
        if (!destroying_tensor(v).empty()) mark(destroying_tensor(v), v.detail.by_block, kWriter);
        break;
      default:
        mark(violated_tensor(v), v.detail.block, kPlacement);
    }
  }
  const std::string verdict =
      report.clean() ? "clean" : std::to_string(report.distinct_violations) + " violation(s)";
  c.text(kLeft, y + 12, heading + ": " + verdict, kPlotW, "start", 13, "font-weight=\"bold\"");
  y = memory_map(c, k, report.placements, marked, y + 26);
  // The violations, each wrapped to the width and cut after a few lines (full text on hover).
  const std::size_t listed = std::min(report.violations.size(), kMaxListed);
  if (listed > 0) {
    c.text(kLeft, y + 14, "violations" + std::string(listed < report.violations.size() ? " (first " + std::to_string(listed) + ")" : ""),
           kPlotW, "start", 0, "font-weight=\"bold\"");
    y += 22;
  }
  const double font = 10, line_h = 13;
  for (std::size_t i = 0; i < listed; ++i) {
    const Violation& v = report.violations[i];
    std::string msg = v.message;
    if (v.detail.occurrences > 1) msg += " (" + std::to_string(v.detail.occurrences) + " times)";
    std::vector<std::string> lines = wrap(msg, kPlotW - 14, font);
    const bool cut = lines.size() > static_cast<std::size_t>(kMaxLinesPerViolation);
    if (cut) {
      std::string rest;
      for (std::size_t j = kMaxLinesPerViolation - 1; j < lines.size(); ++j) rest += (rest.empty() ? "" : " ") + lines[j];
      lines.resize(kMaxLinesPerViolation - 1);
      lines.push_back(rest);  // ellipsized by text()
    }
    c.raw("<g><title>" + xml_escape(msg) + "</title>\n");
    c.text(kLeft, y + 10, "\xE2\x80\xA2", 10, "start", font);
    for (std::size_t j = 0; j < lines.size(); ++j, y += line_h) c.text(kLeft + 12, y + 10, lines[j], kPlotW - 14, "start", font);
    c.raw("</g>\n");
    y += 3;
  }
  const int64_t more = report.distinct_violations - static_cast<int64_t>(listed);
  if (more > 0) {
    c.text(kLeft, y + 10, "\xE2\x80\xA6 and " + std::to_string(more) + " more (see the report)", kPlotW, "start", font);
    y += line_h;
  }
  return y;
}

}  // namespace

std::string plan_svg(const std::vector<const PlanResult*>& cores) {
  if (cores.empty()) return {};
  const Kernel& k = cores.front()->kernel;
  const std::string of = cores.size() > 1 ? " (" + std::to_string(cores.size()) + " logical cores)" : "";
  SvgCanvas c(kWidth, 100, "nki plan: engines x time and the memory map of " + k.source + of);
  Cycles scale = 1;  // one time scale across the cores, so their timelines compare by eye
  for (const PlanResult* p : cores) scale = std::max<Cycles>({scale, p->baseline.makespan, p->planned.makespan});
  double y = 8;
  for (std::size_t i = 0; i < cores.size(); ++i)
    y = plan_section(c, *cores[i], "nki plan: " + k.source + core_suffix(i, cores.size()), scale, y + (i ? 16 : 0));
  c.set_height(y + 8);
  return c.finish();
}

std::string plan_svg(const PlanResult& plan) { return plan_svg(std::vector<const PlanResult*>{&plan}); }

std::string check_svg(const std::vector<const Kernel*>& cores, const std::vector<const CheckReport*>& reports) {
  if (cores.empty() || cores.size() != reports.size()) return {};
  const std::string of = cores.size() > 1 ? " (" + std::to_string(cores.size()) + " logical cores)" : "";
  SvgCanvas c(kWidth, 100, "nki check: the memory map of " + cores.front()->source + of);
  double y = 8;
  for (std::size_t i = 0; i < cores.size(); ++i)
    y = check_section(c, *cores[i], *reports[i], "nki check: " + cores[i]->source + core_suffix(i, cores.size()),
                      y + (i ? 16 : 0));
  c.set_height(y + 12);
  return c.finish();
}

std::string check_svg(const Kernel& k, const CheckReport& report) { return check_svg({&k}, {&report}); }

}  // namespace sp::nki
