// Height certificates (alloc/certificate.h): the exhaustive fit search agrees with brute force,
// window certificates are sound, and malformed certificates are refused with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "alloc/certificate.h"
#include "alloc/io.h"
#include "alloc/validator.h"
#include "alloc_test_util.h"

namespace sp::alloc {
namespace {

using testing::buf;

// Smallest height of any packing, by trying every offset of every buffer (tiny instances only).
Size brute_min_height(const Problem& p) {
  const int n = static_cast<int>(p.buffers.size());
  Size total = 0;
  for (const Buffer& b : p.buffers) total += b.size;
  Size best = total;
  std::vector<Offset> off(n, 0);
  std::function<void(int, Size)> go = [&](int i, Size h) {
    if (h >= best) return;
    if (i == n) {
      best = h;
      return;
    }
    for (Offset o = 0; o + p.buffers[i].size <= total; ++o) {
      bool clash = false;
      for (int j = 0; j < i && !clash; ++j)
        clash = lifetimes_overlap(p.buffers[i], p.buffers[j]) && o < off[j] + p.buffers[j].size && off[j] < o + p.buffers[i].size;
      if (clash) continue;
      off[i] = o;
      go(i + 1, std::max(h, o + p.buffers[i].size));
    }
  };
  go(0, 0);
  return best;
}

Problem random_instance(std::mt19937_64& rng, int n) {
  Problem p;
  for (int i = 0; i < n; ++i) {
    const Time s = static_cast<Time>(rng() % 6);
    const Time e = s + 1 + static_cast<Time>(rng() % 4);
    p.buffers.push_back(buf("b" + std::to_string(i), 1 + static_cast<Size>(rng() % 4), s, e));
  }
  return p;
}

TEST(AllocCertificate, FitSearchMatchesBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 150; ++trial) {
    Problem p = random_instance(rng, 2 + trial % 5);
    const Size h = brute_min_height(p);
    for (bool memo : {true, false}) {
      FitSearch below = search_fit(p, h - 1, 1'000'000, memo);
      EXPECT_EQ(below.verdict, FitVerdict::kDoesNotFit) << "trial " << trial << " memo " << memo;
      FitSearch at = search_fit(p, h, 1'000'000, memo);
      ASSERT_EQ(at.verdict, FitVerdict::kFits) << "trial " << trial << " memo " << memo;
      Placement pl;
      pl.offsets = at.offsets;
      EXPECT_TRUE(validate(p, pl, true, h).ok()) << "trial " << trial;
    }
  }
}

TEST(AllocCertificate, SizesScaleByTheirGcd) {
  // All three are live at tick 1: 4096 bytes, in units of 1024 (and the same in units of 1).
  Problem p;
  p.buffers = {buf("a", 1024, 0, 2), buf("b", 2048, 1, 3), buf("c", 1024, 0, 3)};
  EXPECT_EQ(search_fit(p, 4095, 1000).verdict, FitVerdict::kDoesNotFit);
  EXPECT_EQ(search_fit(p, 4096, 1000).verdict, FitVerdict::kFits);
  EXPECT_EQ(brute_min_height(Problem{{buf("a", 1, 0, 2), buf("b", 2, 1, 3), buf("c", 1, 0, 3)}, kUnbounded}), 4);
}

TEST(AllocCertificate, NodeBudgetGivesUnknown) {
  std::mt19937_64 rng(3);
  int cut = 0;
  for (int trial = 0; trial < 50; ++trial) {
    Problem p = random_instance(rng, 7);
    const Size h = brute_min_height(p);
    // Finding the packing at the minimum takes `full.nodes` nodes; one fewer must not decide.
    const FitSearch full = search_fit(p, h, 1'000'000);
    ASSERT_EQ(full.verdict, FitVerdict::kFits);
    if (full.nodes < 2) continue;
    EXPECT_EQ(search_fit(p, h, full.nodes - 1).verdict, FitVerdict::kUnknown) << "trial " << trial;
    ++cut;
  }
  EXPECT_GT(cut, 0);
}

TEST(AllocCertificate, WindowCertificatesAreSound) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 120; ++trial) {
    Problem p = random_instance(rng, 3 + trial % 5);
    WindowSearchOptions o;
    o.max_nodes = 100'000;
    HeightCertificate c = find_window_certificate(p, o);
    const Size best = brute_min_height(p);
    EXPECT_LE(c.lower_bound, best) << "trial " << trial;
    EXPECT_GE(c.lower_bound, max_load(p)) << "trial " << trial;
    auto r = check_certificate(p, c, 1'000'000);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->verdict, FitVerdict::kDoesNotFit) << "trial " << trial;
  }
}

TEST(AllocCertificate, JsonRoundTrip) {
  HeightCertificate c{"x.csv", 5, {{"a", 0, 2}, {"b", 1, 3}}};
  auto back = certificate_from_json(certificate_to_json(c), "cert.json");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->lower_bound, 5);
  ASSERT_EQ(back->buffers.size(), 2u);
  EXPECT_EQ(back->buffers[1].id, "b");
  EXPECT_EQ(back->buffers[1].start, 1);
  EXPECT_EQ(back->buffers[1].end, 3);
}

TEST(AllocCertificate, MalformedCertificatesAreRefused) {
  Problem p;
  p.buffers = {buf("a", 2, 0, 2), buf("b", 1, 1, 3)};
  auto check = [&](const HeightCertificate& c) {
    auto r = check_certificate(p, c, 1000);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.error().message;
  };
  EXPECT_NE(check({"", 3, {{"zz", 0, 1}}}).find("expected the id"), std::string::npos);
  EXPECT_NE(check({"", 3, {{"a", 0, 1}, {"a", 0, 1}}}).find("each buffer once"), std::string::npos);
  EXPECT_NE(check({"", 3, {{"b", 0, 3}}}).find("inside [1, 3)"), std::string::npos);
  auto bad = certificate_from_json(Json{{"format", "scratchplan-alloc-height-certificate"}, {"version", 1},
                                        {"lower_bound", 3}, {"buffers", Json::array({Json{{"id", "a"}, {"lower", 2}, {"upper", 1}}})}},
                                   "c.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("c.json"), std::string::npos);
  EXPECT_NE(bad.error().message.find("upper > lower"), std::string::npos);
}

// The best packings of MiniMalloc's open instances D and J (tests/data/dsa/best, produced by our
// search): each is the instance's buffers with offsets, valid, and of the stated height.
TEST(AllocCertificate, StoredBestPackings) {
  const std::string data = SCRATCHPLAN_DATA_DIR;
  for (auto [name, h] : {std::pair<std::string, Size>{"D", 1014784}, {"J", 1013760}}) {
    auto inst = read_problem(data + "/dsa/challenging/" + name + ".1048576.csv");
    auto plan = read_problem(data + "/dsa/best/" + name + "." + std::to_string(h) + ".csv");
    ASSERT_TRUE(inst.ok() && plan.ok()) << name;
    ASSERT_EQ(inst->buffers.size(), plan->buffers.size()) << name;
    Placement pl;
    for (std::size_t i = 0; i < inst->buffers.size(); ++i) {
      const Buffer& a = inst->buffers[i];
      const Buffer& b = plan->buffers[i];
      ASSERT_TRUE(a.id == b.id && a.size == b.size && a.start == b.start && a.end == b.end) << name << " buffer " << i;
      pl.offsets.push_back(b.fixed_offset);
    }
    EXPECT_TRUE(validate(*inst, pl, true, h).ok()) << name;
    EXPECT_EQ(height(*inst, pl), h) << name;
    EXPECT_FALSE(validate(*inst, pl, true, h - 1).ok()) << name;
  }
}

}  // namespace
}  // namespace sp::alloc
