#include "core/svg.h"

#include <gtest/gtest.h>

namespace sp::svg {
namespace {

TEST(Svg, HumanBytesUseBinaryUnits) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(24.0 * 1024 * 1024), "24 MiB");
  EXPECT_EQ(human_bytes(3.0 * 1024 * 1024 * 1024), "3 GiB");
  EXPECT_EQ(human_count(1200), "1.2k");
  EXPECT_EQ(human_count(42), "42");
}

TEST(Svg, TicksAreNiceAndInsideTheRange) {
  auto t = nice_ticks(0, 1000, 5);
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.front(), 0);
  EXPECT_EQ(t[1], 200);
  EXPECT_LE(t.back(), 1000);
  auto b = nice_ticks(0, 3.0 * 1024 * 1024, 6, true);
  EXPECT_EQ(b[1], 512.0 * 1024);  // steps of 2^k bytes read as KiB/MiB
  for (double v : nice_ticks(17, 23, 4)) {
    EXPECT_GE(v, 17);
    EXPECT_LE(v, 23);
  }
  EXPECT_EQ(nice_ticks(5, 5, 4).size(), 1u);
  EXPECT_EQ(human_bytes(nice_ticks(0, 4096, 4, true).front()), "0 B");  // not "-0 B"
  EXPECT_EQ(human_count(nice_ticks(0, 50000, 5).front()), "0");
}

TEST(Svg, EllipsizeFitsAndKeepsShortText) {
  EXPECT_EQ(ellipsize("abc", 100, 11), "abc");
  const std::string long_text(200, 'x');
  const std::string cut = ellipsize(long_text, 60, 11);
  EXPECT_LE(text_width(cut, 11), 60);
  EXPECT_NE(cut, long_text);
  EXPECT_EQ(cut.substr(cut.size() - 3), "\xE2\x80\xA6");
  EXPECT_EQ(ellipsize(long_text, 2, 11), "");
}

TEST(Svg, CanvasHasViewBoxAndTooltipsForCutText) {
  SvgCanvas c(300, 100, "t <1>");
  c.text(10, 20, std::string(100, 'y'), 50);
  const std::string s = c.finish();
  EXPECT_NE(s.find("viewBox=\"0 0 300.0 100.0\""), std::string::npos);
  const std::string root = s.substr(0, s.find('>'));
  EXPECT_EQ(root.find(" width="), std::string::npos);  // no fixed size: it scales to its container
  EXPECT_NE(s.find("<title>" + std::string(100, 'y') + "</title>"), std::string::npos);
  EXPECT_NE(s.find("t &lt;1&gt;"), std::string::npos);
}

TEST(Svg, LabelRowRefusesOverlaps) {
  LabelRow r(2);
  EXPECT_TRUE(r.claim(0, 10));
  EXPECT_FALSE(r.claim(5, 15));
  EXPECT_FALSE(r.claim(11, 20));  // inside the gap
  EXPECT_TRUE(r.claim(13, 20));
  EXPECT_FALSE(r.claim(-5, 1));
  EXPECT_TRUE(r.claim(-20, -3));
}

TEST(Svg, LabelBoxesRefuseOverlapsIn2D) {
  LabelBoxes b(2);
  EXPECT_TRUE(b.claim(0, 0, 50, 10));
  EXPECT_FALSE(b.claim(40, 5, 90, 15));
  EXPECT_TRUE(b.claim(40, 13, 90, 23));  // below, past the gap
  EXPECT_FALSE(b.claim(51, 0, 60, 10));  // inside the gap
  EXPECT_TRUE(b.claim(200, 0, 300, 10));
  EXPECT_FALSE(b.claim(-100, 0, 1000, 1));  // spans many buckets
}

TEST(Svg, OccupancyGridShadesCoveredCellsOnly) {
  SvgCanvas c(100, 100, "t");
  OccupancyGrid g(0, 0, 100, 100, 10);
  for (int i = 0; i < 1000; ++i) g.add(0 + 0.05 * i, 0, 0.05 * i + 0.05, 10);  // fills cells 0..4 of row 0
  g.add(50, 50, 52.5, 60);  // a quarter of one cell
  EXPECT_EQ(g.count(), 1001);
  g.draw(c, "#123", "small buffers");
  const std::string s = c.finish();
  EXPECT_NE(s.find("M0 0h50v10h-50z"), std::string::npos) << s;  // one run for the full cells
  EXPECT_NE(s.find("M50 50h10v10h-10z"), std::string::npos) << s;
  EXPECT_NE(s.find("small buffers (covering over 75 % of the area)"), std::string::npos);
  EXPECT_NE(s.find("small buffers (covering up to 25 % of the area)"), std::string::npos);
  EXPECT_EQ(s.find("50-75"), std::string::npos);
}

}  // namespace
}  // namespace sp::svg
