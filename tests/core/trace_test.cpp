#include "core/trace.h"

#include <gtest/gtest.h>

namespace sp {
namespace {

TEST(Trace, EventsSortedPerTrackAndScaledToMicroseconds) {
  TraceBuilder t("cycle", 1.0 / 1400.0);
  const int p = t.process("engines");
  const int a = t.thread(p, "Tensor");
  const int b = t.thread(p, "Vector");
  t.slice(p, a, "late", 2800, 1400);
  t.slice(p, a, "early", 0, 1400);
  t.slice(p, b, "v", 1400, 0);
  t.counter(p, "SBUF", 1400, {{"bytes", 64}});
  t.counter(p, "SBUF", 0, {{"bytes", 0}});
  t.note("total_cycles", 4200);
  const Json d = Json::parse(t.to_json());
  EXPECT_EQ(d["otherData"]["time_unit"], "cycle");
  EXPECT_EQ(d["otherData"]["total_cycles"], 4200);
  std::vector<std::string> xs;
  std::vector<double> cs;
  int meta = 0;
  for (const Json& e : d["traceEvents"]) {
    if (e["ph"] == "M") ++meta;
    if (e["ph"] == "X" && e["tid"] == a) xs.push_back(e["name"]);
    if (e["ph"] == "X" && e["name"] == "late") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 2.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.0);
    }
    if (e["ph"] == "C") cs.push_back(e["ts"]);
  }
  EXPECT_EQ(meta, 2 + 4);  // process name + sort index, two threads with name + sort index
  EXPECT_EQ(xs, (std::vector<std::string>{"early", "late"}));
  EXPECT_EQ(cs, (std::vector<double>{0, 1}));
}

}  // namespace
}  // namespace sp
