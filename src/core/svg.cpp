#include "core/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string_view>

#include "core/xml.h"

namespace sp::svg {

namespace {

// Bytes of the UTF-8 sequence that starts with `c` (1 for stray continuation bytes).
std::size_t utf8_len(unsigned char c) {
  if (c >= 0xF0) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC0) return 2;
  return 1;
}

// Width of one character in em: narrow, wide and average classes of a sans-serif face.
double char_em(unsigned char c) {
  if (c >= 0x80) return 0.9;  // non-ASCII: arrows, symbols, CJK; wide to be safe
  if (std::string_view("il.,:;'|!()[]{} ").find(static_cast<char>(c)) != std::string_view::npos) return 0.36;
  if (std::string_view("mwMW@%").find(static_cast<char>(c)) != std::string_view::npos) return 0.95;
  if (c >= 'A' && c <= 'Z') return 0.72;
  return 0.6;
}

std::string trim_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string three_digits(double v) {
  char b[32];
  const double a = std::fabs(v);
  if (a >= 100 || a == std::floor(a)) std::snprintf(b, sizeof b, "%.0f", v);
  else if (a >= 10) std::snprintf(b, sizeof b, "%.1f", v);
  else std::snprintf(b, sizeof b, "%.2f", v);
  return trim_zeros(b);
}

// num() without a trailing ".0": the band's paths are most of a large picture's bytes.
std::string short_num(double v) {
  std::string s = num(v);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

}  // namespace

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

double text_width(const std::string& text, double font_px) {
  double em = 0;
  for (std::size_t i = 0; i < text.size(); i += utf8_len(static_cast<unsigned char>(text[i])))
    em += char_em(static_cast<unsigned char>(text[i]));
  return em * font_px;
}

std::string ellipsize(const std::string& text, double max_px, double font_px) {
  if (text_width(text, font_px) <= max_px) return text;
  const std::string dots = "\xE2\x80\xA6";  // "…"
  const double budget = max_px - text_width(dots, font_px);
  if (budget < 0) return "";
  double w = 0;
  std::size_t cut = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_len(static_cast<unsigned char>(text[i]));
    const double cw = char_em(static_cast<unsigned char>(text[i])) * font_px;
    if (w + cw > budget) break;
    w += cw;
    i += n;
    cut = i;
  }
  return text.substr(0, std::min(cut, text.size())) + dots;
}

std::string human_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const double a = std::fabs(bytes);
  int u = 0;
  double v = bytes;
  while (u < 6 && std::fabs(v) >= 1024) {
    v /= 1024;
    ++u;
  }
  if (a < 1024) return three_digits(std::round(bytes)) + " B";
  return three_digits(v) + " " + units[u];
}

std::string human_count(double v) {
  static const char* suffix[] = {"", "k", "M", "G", "T", "P"};
  int u = 0;
  while (u < 5 && std::fabs(v) >= 1000) {
    v /= 1000;
    ++u;
  }
  return three_digits(v) + suffix[u];
}

std::vector<double> nice_ticks(double lo, double hi, int target, bool binary) {
  std::vector<double> out;
  if (!(hi > lo) || target < 1 || !std::isfinite(lo) || !std::isfinite(hi)) {
    out.push_back(lo);
    return out;
  }
  const double raw = (hi - lo) / target;
  double step;
  if (binary) {
    step = std::exp2(std::ceil(std::log2(raw)));
    if (step < 1) step = 1;
  } else {
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / mag;
    step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  }
  const double first = std::ceil(lo / step - 1e-9) * step;
  // v + 0.0 turns -0 (ceil of a tiny negative) into 0, which would print as "-0".
  for (double v = first; v <= hi + step * 1e-9 && out.size() < 1000; v += step) out.push_back(v + 0.0);
  return out;
}

SvgCanvas::SvgCanvas(double width, double height, const std::string& title, double font_px)
    : width_(width), height_(height), font_px_(font_px), title_(title) {}

void SvgCanvas::rect(double x, double y, double w, double h, const std::string& fill, const std::string& tooltip,
                     const std::string& extra) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(0.0, w)) + "\" height=\"" +
           num(std::max(0.0, h)) + "\" fill=\"" + fill + "\"";
  if (!extra.empty()) body_ += " " + extra;
  if (tooltip.empty()) {
    body_ += "/>\n";
  } else {
    body_ += "><title>" + xml_escape(tooltip) + "</title></rect>\n";
  }
}

void SvgCanvas::line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) +
           "\" stroke=\"" + stroke + "\"";
  if (!extra.empty()) body_ += " " + extra;
  body_ += "/>\n";
}

double SvgCanvas::text(double x, double y, const std::string& s, double max_px, const std::string& anchor, double font_px,
                       const std::string& extra) {
  const double fp = font_px > 0 ? font_px : font_px_;
  const std::string shown = ellipsize(s, max_px, fp);
  if (shown.empty()) return 0;
  body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"";
  if (anchor != "start") body_ += " text-anchor=\"" + anchor + "\"";
  if (fp != font_px_) body_ += " font-size=\"" + num(fp) + "\"";
  if (!extra.empty()) body_ += " " + extra;
  body_ += ">";
  if (shown != s) body_ += "<title>" + xml_escape(s) + "</title>";
  body_ += xml_escape(shown) + "</text>\n";
  return text_width(shown, fp);
}

void SvgCanvas::raw(const std::string& markup) { body_ += markup; }

void SvgCanvas::x_axis(double px0, double px1, double y, double lo, double hi, bool binary,
                       std::string (*format)(double), const std::string& caption) {
  line(px0, y, px1, y, "#444");
  const int target = std::max(2, static_cast<int>((px1 - px0) / 90));
  LabelRow labels;
  for (double v : nice_ticks(lo, hi, target, binary)) {
    const double x = hi > lo ? px0 + (px1 - px0) * (v - lo) / (hi - lo) : px0;
    line(x, y, x, y + 4, "#444");
    const std::string s = format(v);
    const double w = text_width(s, font_px_);
    const double x0 = std::clamp(x - w / 2, px0 - 20, px1 + 20 - w);
    if (labels.claim(x0, x0 + w)) text(x0 + w / 2, y + 5 + font_px_, s, w + 1, "middle");
  }
  if (!caption.empty()) text((px0 + px1) / 2, y + 8 + 2 * font_px_, caption, px1 - px0, "middle");
}

void SvgCanvas::y_axis(double x, double py_bottom, double py_top, double lo, double hi, bool binary,
                       std::string (*format)(double), const std::string& caption, double caption_x) {
  line(x, py_bottom, x, py_top, "#444");
  // An axis may run downwards (py_bottom above py_top), e.g. partitions numbered from the top.
  const int target = std::max(2, static_cast<int>(std::fabs(py_bottom - py_top) / 40));
  LabelRow labels(2);
  const double room = std::max(0.0, x - 8);  // labels sit left of the axis, inside the canvas
  for (double v : nice_ticks(lo, hi, target, binary)) {
    const double y = hi > lo ? py_bottom - (py_bottom - py_top) * (v - lo) / (hi - lo) : py_bottom;
    line(x - 4, y, x, y, "#444");
    if (labels.claim(y - font_px_ / 2, y + font_px_ / 2)) text(x - 6, y + font_px_ * 0.35, format(v), room - 14, "end");
  }
  if (!caption.empty()) {
    const double cy = (py_bottom + py_top) / 2, cx = caption_x >= 0 ? caption_x : font_px_;
    const std::string shown = ellipsize(caption, std::fabs(py_bottom - py_top), font_px_);
    body_ += "<text x=\"" + num(cx) + "\" y=\"" + num(cy) + "\" text-anchor=\"middle\" transform=\"rotate(-90 " +
             num(cx) + " " + num(cy) + ")\">" + xml_escape(shown) + "</text>\n";
  }
}

double SvgCanvas::legend(double x, double y, double max_px, const std::vector<Role>& roles) {
  const double sw = font_px_, gap = 14, row_h = font_px_ + 6;
  double cx = x, cy = y;
  for (const Role& r : roles) {
    const double w = sw + 4 + text_width(r.name, font_px_);
    if (cx > x && cx + w > x + max_px) {
      cx = x;
      cy += row_h;
    }
    rect(cx, cy, sw, sw, r.fill, "", "stroke=\"#444\" stroke-width=\"0.5\"");
    cx += sw + 4;
    cx += text(cx, cy + sw - 1, r.name, x + max_px - cx) + gap;
  }
  return cy - y + row_h;
}

std::string SvgCanvas::finish() const {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + num(width_) + " " + num(height_) +
                  "\" font-family=\"sans-serif\" font-size=\"" + num(font_px_) + "\">\n";
  s += "<title>" + xml_escape(title_) + "</title>\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(width_) + "\" height=\"" + num(height_) + "\" fill=\"white\"/>\n";
  s += body_;
  s += "</svg>\n";
  return s;
}

bool LabelRow::claim(double x0, double x1) {
  const double a = x0 - gap_, b = x1 + gap_;
  auto it = taken_.lower_bound(a);
  if (it != taken_.end() && it->first < b) return false;
  if (it != taken_.begin() && std::prev(it)->second > a) return false;
  taken_.emplace(x0, x1);
  return true;
}


bool LabelBoxes::claim(double x0, double y0, double x1, double y1) {
  constexpr double kB = 64;  // bucket size in px
  const Box b{x0 - gap_, y0 - gap_, x1 + gap_, y1 + gap_};
  const long bx0 = static_cast<long>(std::floor(b.x0 / kB)), bx1 = static_cast<long>(std::floor(b.x1 / kB));
  const long by0 = static_cast<long>(std::floor(b.y0 / kB)), by1 = static_cast<long>(std::floor(b.y1 / kB));
  for (long i = bx0; i <= bx1; ++i)
    for (long j = by0; j <= by1; ++j) {
      auto it = buckets_.find({i, j});
      if (it == buckets_.end()) continue;
      for (const Box& o : it->second)
        if (o.x0 < x1 && x0 < o.x1 && o.y0 < y1 && y0 < o.y1) return false;
    }
  // Stored with the gap on both sides, tested against the bare box: one gap between any two.
  for (long i = bx0; i <= bx1; ++i)
    for (long j = by0; j <= by1; ++j) buckets_[{i, j}].push_back(b);
  return true;
}

OccupancyGrid::OccupancyGrid(double x, double y, double w, double h, double cell)
    : x_(x), y_(y), cell_(cell > 0 ? cell : 1) {
  cols_ = std::max(1, static_cast<int>(std::ceil(w / cell_)));
  rows_ = std::max(1, static_cast<int>(std::ceil(h / cell_)));
  cover_.assign(static_cast<std::size_t>(cols_) * rows_, 0.0f);
}

void OccupancyGrid::add(double x0, double y0, double x1, double y1) {
  ++count_;
  // To cell units, clipped.
  const double cx0 = std::clamp((x0 - x_) / cell_, 0.0, double(cols_)), cx1 = std::clamp((x1 - x_) / cell_, 0.0, double(cols_));
  const double cy0 = std::clamp((y0 - y_) / cell_, 0.0, double(rows_)), cy1 = std::clamp((y1 - y_) / cell_, 0.0, double(rows_));
  if (!(cx1 > cx0) || !(cy1 > cy0)) return;
  const int i0 = static_cast<int>(cx0), i1 = std::min(cols_ - 1, static_cast<int>(std::ceil(cx1)) - 1);
  const int j0 = static_cast<int>(cy0), j1 = std::min(rows_ - 1, static_cast<int>(std::ceil(cy1)) - 1);
  for (int j = j0; j <= j1; ++j) {
    const double fy = std::min(cy1, j + 1.0) - std::max(cy0, double(j));
    float* row = &cover_[static_cast<std::size_t>(j) * cols_];
    for (int i = i0; i <= i1; ++i) row[i] += static_cast<float>(fy * (std::min(cx1, i + 1.0) - std::max(cx0, double(i))));
  }
}

void OccupancyGrid::draw(SvgCanvas& c, const std::string& fill, const std::string& what) const {
  // Shade k covers (k/4 - 1/4, k/4] of a cell; a trace below 2 % is left blank (noise of edges).
  static const char* opacity[] = {"0.3", "0.5", "0.75", "1"};
  static const char* range[] = {"up to 25", "25-50", "50-75", "over 75"};
  auto level = [](float v) { return v < 0.02f ? -1 : v <= 0.25f ? 0 : v <= 0.5f ? 1 : v <= 0.75f ? 2 : 3; };
  for (int k = 0; k < 4; ++k) {
    std::string d;
    for (int j = 0; j < rows_; ++j) {
      const float* row = &cover_[static_cast<std::size_t>(j) * cols_];
      for (int i = 0; i < cols_;) {
        if (level(row[i]) != k) {
          ++i;
          continue;
        }
        int e = i;
        while (e < cols_ && level(row[e]) == k) ++e;
        d += "M" + short_num(x_ + i * cell_) + " " + short_num(y_ + j * cell_) + "h" + short_num((e - i) * cell_) + "v" +
             short_num(cell_) + "h" + short_num(-(e - i) * cell_) + "z";
        i = e;
      }
    }
    if (d.empty()) continue;
    c.raw("<path d=\"" + d + "\" fill=\"" + fill + "\" fill-opacity=\"" + opacity[k] + "\"><title>" +
          xml_escape(what + " (covering " + range[k] + " % of the area)") + "</title></path>\n");
  }
}

}  // namespace sp::svg
