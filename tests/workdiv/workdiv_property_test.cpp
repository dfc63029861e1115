// Property tests: random ops (pointwise, reductions, batched matmuls) over random shapes, dtypes
// and core counts divide without internal errors; every result obeys the rules, checked here
// from the program alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/rng.h"
#include "program/builder.h"
#include "workdiv/workdiv.h"

namespace sp::workdiv {
namespace {

using program::Builder;

Dim pick_dim(Rng& rng) {
  static const Dim dims[] = {1, 3, 8, 64, 96, 150, 256, 1000, 4096, 16384, 65536, Dim{1} << 20};
  return dims[rng.below(sizeof dims / sizeof dims[0])];
}

Result<program::Program> random_op(Rng& rng) {
  const auto& dts = layout::all_dtypes();
  const layout::DType dt = dts[rng.below(dts.size())].dtype;
  Builder b("random");
  const int kind = static_cast<int>(rng.below(3));
  if (kind == 2) {  // (batched) matmul
    const int batch = static_cast<int>(rng.below(3));
    std::vector<Dim> bs;
    for (int i = 0; i < batch; ++i) bs.push_back(pick_dim(rng) % 33 + 1);
    Dim m = pick_dim(rng), n = pick_dim(rng), k = pick_dim(rng);
    // Keep every operand under 2^30 host elements (device padding can add up to 512x).
    Dim bprod = 1;
    for (Dim x : bs) bprod *= x;
    while (bprod * std::max({m * k, k * n, m * n}) > (Dim{1} << 30)) {
      Dim& big = m >= n && m >= k ? m : (n >= k ? n : k);
      big = std::max<Dim>(1, big / 16);
    }
    auto sh = [&](Dim x, Dim y) {
      auto v = bs;
      v.push_back(x);
      v.push_back(y);
      return v;
    };
    auto a = b.input("a", sh(m, k), dt), w = b.input("w", sh(k, n), dt);
    auto c = b.tensor("c", sh(m, n), dt);
    b.matmul("mm", a, w, c);
  } else {
    const int rank = static_cast<int>(rng.range(1, 4));
    std::vector<Dim> s;
    Dim total = 1;
    for (int i = 0; i < rank; ++i) {
      Dim d = pick_dim(rng);
      while (total * d > (Dim{1} << 30)) d = std::max<Dim>(1, d / 64);
      s.push_back(d);
      total *= d;
    }
    auto x = b.input("x", s, dt);
    if (kind == 0) {
      b.pointwise("pw", "exp", {x}, b.tensor("y", s, dt));
    } else {
      std::vector<int> axes;
      std::vector<Dim> out;
      for (int i = 0; i < rank; ++i) {
        if (rng.chance(0.4) || (i == rank - 1 && axes.empty())) {
          axes.push_back(i);
        } else {
          out.push_back(s[i]);
        }
      }
      b.reduce("red", "sum", x, axes, b.tensor("y", out, dt));
    }
  }
  return b.build();
}

TEST(WorkdivProperty, RandomOpsDivideWithinTheRules) {
  Rng rng(5);
  int divided = 0, infeasible = 0;
  for (int iter = 0; iter < 400; ++iter) {
    auto p = random_op(rng);
    ASSERT_TRUE(p.ok()) << p.error().message;
    Options o;
    o.max_cores = static_cast<int>(rng.range(1, 32));
    auto d = divide(*p, o);
    if (!d.ok()) {
      // Only the span limit can make a request infeasible; never an internal error.
      ASSERT_EQ(d.error().kind, ErrorKind::kBadInput) << d.error().message;
      ++infeasible;
      continue;
    }
    ++divided;
    const OpDivision& od = d->ops[0];
    const program::Op& op = p->ops[0];
    Split cores = 1;
    int red = 0;
    for (std::size_t v = 0; v < od.splits.size(); ++v) {
      cores *= od.splits[v];
      red += op.iterators[v] == program::IteratorType::kReduction && od.splits[v] > 1;
      ASSERT_EQ(od.vars[v].adjusted % od.splits[v], 0);
      ASSERT_GE(od.splits[v], od.floors[v]);
      if (od.vars[v].elems_per_stick) {
        ASSERT_EQ(od.vars[v].adjusted, (op.ranges[v] + od.vars[v].elems_per_stick - 1) / od.vars[v].elems_per_stick);
      }
    }
    EXPECT_EQ(cores, od.cores);
    EXPECT_LE(cores, o.max_cores);
    EXPECT_LE(red, 1);
    for (const auto& s : od.spans) EXPECT_LE(s.span, kMaxSpanBytes);
    ASSERT_FALSE(od.candidates.empty());
    EXPECT_EQ(od.candidates[0], od.splits);
  }
  RecordProperty("divided", divided);
  RecordProperty("infeasible", infeasible);
  EXPECT_GT(divided, 300);
  EXPECT_GT(infeasible + divided, 399);
}

}  // namespace
}  // namespace sp::workdiv
