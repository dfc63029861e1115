// Drawing primitives shared by every picture (alloc, LX plan, NKI check and plan).
//
// Every picture is built on an SvgCanvas so that the rules hold in one place:
// - the root has a viewBox and no fixed size, so it scales to its container;
// - text never leaves the box it is given: labels are ellipsized to a width and the full text
//   goes into a <title> tooltip; LabelRow drops labels that would overlap their neighbours;
// - axes carry ticks in human units (bytes as B/KiB/MiB/GiB, times in the caller's unit);
// - colours come from one palette per role and each picture draws a legend of the roles it uses.
// Text widths are estimated (sans-serif averages ~0.6 em per character); the estimate errs wide
// so that a label that fits by the estimate fits when rendered.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sp::svg {

// Estimated rendered width of `text` at `font_px` (an upper estimate; UTF-8 aware).
double text_width(const std::string& text, double font_px);
// `text` cut to fit `max_px` at `font_px`, ending in "…" when cut ("" when not even "…" fits).
std::string ellipsize(const std::string& text, double max_px, double font_px);

// "0 B", "512 B", "1.5 KiB", "12 MiB", "3.2 GiB": bytes in binary units, at most 3 significant digits.
std::string human_bytes(double bytes);
// Plain number with a thousands-free compact form: 1200 -> "1.2k", 3.4e6 -> "3.4M".
std::string human_count(double v);

// Axis ticks between lo and hi (inclusive when on a step), about `target` of them, at steps of
// 1, 2 or 5 x 10^k; for bytes (`binary`) at steps of 2^k so that labels read 256 KiB, 1 MiB, ...
std::vector<double> nice_ticks(double lo, double hi, int target, bool binary = false);

// A colour for each role; pictures use these names in their legends.
struct Role {
  std::string name;   // legend text, e.g. "resident buffer"
  std::string fill;   // CSS colour
};

class SvgCanvas {
 public:
  SvgCanvas(double width, double height, const std::string& title, double font_px = 11);

  double width() const { return width_; }
  double height() const { return height_; }
  // Grows the canvas (pictures whose height depends on content call this before finish()).
  void set_height(double h) { height_ = h; }

  // Primitives. `tooltip` (when non-empty) becomes a <title> child.
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& tooltip = "",
            const std::string& extra = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra = "");
  // Text ellipsized to `max_px` (measured from the anchor point in the anchor's direction;
  // anchor is "start", "middle" or "end"); the full text is the tooltip when it was cut.
  // Returns the width drawn (0 when nothing fit).
  double text(double x, double y, const std::string& s, double max_px, const std::string& anchor = "start",
              double font_px = 0, const std::string& extra = "");
  // Raw markup (already escaped), for elements the primitives do not cover.
  void raw(const std::string& markup);

  // Axes. The x axis runs from px0 to px1 at y; values lo..hi map linearly; labels come from
  // `format`. The y axis runs from py_bottom (value lo) up to py_top (value hi) at x; with
  // py_bottom above py_top it runs downwards (partition 0 at the top).
  void x_axis(double px0, double px1, double y, double lo, double hi, bool binary,
              std::string (*format)(double), const std::string& caption);
  // The rotated caption sits at caption_x (default: the canvas's left edge).
  void y_axis(double x, double py_bottom, double py_top, double lo, double hi, bool binary,
              std::string (*format)(double), const std::string& caption, double caption_x = -1);
  // Legend of colour swatches in one row from (x, y), wrapping at max_px; returns the height used.
  double legend(double x, double y, double max_px, const std::vector<Role>& roles);

  double font_px() const { return font_px_; }
  // The finished document.
  std::string finish() const;

 private:
  double width_, height_, font_px_;
  std::string title_;
  std::string body_;
};

// Places labels along one row without overlaps: each label asks for a span [x, x + width) and is
// kept only if it does not overlap a label already kept (labels are offered in priority order).
class LabelRow {
 public:
  explicit LabelRow(double gap = 4) : gap_(gap) {}
  bool claim(double x0, double x1);

 private:
  double gap_;
  std::map<double, double> taken_;  // kept spans, start -> end, disjoint
};

// Label boxes anywhere on the canvas (labels inside shapes): a box is kept only if it overlaps
// no box kept before (offered in priority order). Bucketed, so many labels stay cheap.
class LabelBoxes {
 public:
  explicit LabelBoxes(double gap = 2) : gap_(gap) {}
  bool claim(double x0, double y0, double x1, double y1);

 private:
  struct Box {
    double x0, y0, x1, y1;
  };
  double gap_;
  std::map<std::pair<long, long>, std::vector<Box>> buckets_;
};

// Many small rectangles (below a pixel each) drawn as the share of each grid cell they cover,
// in four shades of one colour: the picture stays small and shows where the bytes are instead
// of a solid block of strokes. Cost: one pass over the cells each rectangle touches, then one
// path per shade made of horizontal runs.
class OccupancyGrid {
 public:
  // The grid covers [x, x + w) x [y, y + h) in cells of `cell` px.
  OccupancyGrid(double x, double y, double w, double h, double cell);
  // Adds a rectangle in canvas px (clipped to the grid).
  void add(double x0, double y0, double x1, double y1);
  long count() const { return count_; }
  // One <path> per shade with a tooltip "`what` (covering a-b % of the area)".
  void draw(SvgCanvas& c, const std::string& fill, const std::string& what) const;

 private:
  double x_, y_, cell_;
  int cols_, rows_;
  long count_ = 0;
  std::vector<float> cover_;  // covered fraction per cell, row-major
};

// Fixed-point formatting for coordinates (one decimal, no locale).
std::string num(double v);

}  // namespace sp::svg
