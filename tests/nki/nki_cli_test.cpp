// The nki verbs end to end: exit codes, one-line errors, written plan and SVG.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "nki_test_util.h"

namespace sp::nki {
namespace {

using testing::example;
using testing::run_cli;
using testing::temp_file;

TEST(NkiCli, CheckExitCodes) {
  auto r = run_cli("nki check " + example("lifetime_fixed.json"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("violations: 0"), std::string::npos);
  r = run_cli("nki check " + example("lifetime_conflict.json"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("violations: 6"), std::string::npos);
  r = run_cli("nki check --json " + example("overlap_t0_t1.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("\"kind\": \"overlap\""), std::string::npos) << r.out;
}

TEST(NkiCli, BadInputExitsTwoWithOneLine) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"tensors": [], "body": [{"engine": "Warp"}]})", "unknown engine"},
      {R"({"tensors": [{"name": "t", "blocks": [4], "partitions": 128, "free": [8]}],
          "body": [{"loop": "i", "trip": 5, "body": [{"engine": "Vector", "writes": [{"tensor": "t", "block": ["i"]}]}]}]})",
       "ranges over [0, 4] but block dim 0 has size 4"},
      {R"({"tensors": [{"name": "t", "partitions": 256, "free": [8]}], "body": []})", "exceeds the 128 partitions"},
      {R"({"tensors": [], "body": [{"loop": "i", "trip": 0, "body": []}]})", "loop bound must be positive"},
      {R"({"tensors": [], "body": [{"loop": "i", "trip": -1, "body": []}]})", "loop bound must be positive"},
      {"{not json", "inline"},
  };
  int n = 0;
  for (auto [json, expect] : cases) {
    std::string path = temp_file("bad" + std::to_string(n++) + ".json", json);
    for (const char* verb : {"check", "plan"}) {
      auto r = run_cli(std::string("nki ") + verb + " " + path);
      EXPECT_EQ(r.exit_code, 2) << verb << " " << json << "\n" << r.out;
      if (std::string(expect) != "inline") {
        EXPECT_NE(r.out.find(expect), std::string::npos) << r.out;
      }
      EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "expected one line: " << r.out;
    }
  }
  auto r = run_cli("nki check /nonexistent/kernel.json");
  EXPECT_NE(r.exit_code, 0);
}

TEST(NkiCli, PlanWritesCheckedKernelAndSvg) {
  std::string out = ::testing::TempDir() + "/planned.json", svg = ::testing::TempDir() + "/planned.svg";
  auto r = run_cli("nki plan " + example("load_exp.json") + " -o " + out + " --svg " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("simulated time: 17000 cycles (all single-buffered: 32000 cycles, speedup 1.882x; dataflow timeline)"), std::string::npos)
      << r.out;
  auto c = run_cli("nki check " + out);
  EXPECT_EQ(c.exit_code, 0) << c.out;
  std::ifstream f(svg);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str().rfind("<svg", 0), 0u);
  EXPECT_NE(ss.str().find("SBUF: partitions \xC3\x97 bytes"), std::string::npos);
  EXPECT_NE(ss.str().find("exp: cycles [1000, 2000)"), std::string::npos);  // first exp on the planned timeline
}

TEST(NkiCli, HardwareFileOverride) {
  auto r = run_cli("nki plan --hardware " + example("hardware_small.json") + " " + example("lifetime_conflict.json"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("does not fit"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

TEST(NkiCli, PlanFlags) {
  auto r = testing::run_cli("nki plan --json --single " + testing::example("load_exp.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["simulated_cycles"], 32000);
  EXPECT_EQ(j["tensors"][0]["tiles"], 1);
  r = testing::run_cli("nki plan --json --in-order --max-buffers 4 " + testing::example("lifetime_conflict.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // run_cli merges stderr: the JSON, then one line saying the kernel's own allocation is faulty.
  const auto notice_at = r.out.rfind("\n}\n");
  ASSERT_NE(notice_at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the kernel's own allocation has", notice_at), std::string::npos) << r.out;
  j = Json::parse(r.out.substr(0, notice_at + 3));
  EXPECT_EQ(j["input_distinct_violations"], 6);
  EXPECT_FALSE(j["input_violations"].empty());
  EXPECT_EQ(j["timeline"], "in-order");
  EXPECT_EQ(j["tensors"][0]["tiles"], 8);  // no legal count up to 4: one tile per logical block
  EXPECT_EQ(j["tensors"][0]["min_tiles"], 8);
  r = testing::run_cli("nki plan --max-buffers 0 " + testing::example("load_exp.json"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

TEST(NkiCli, CheckSvgOutlinesBothTilesOfAnOverlap) {
  std::string svg = ::testing::TempDir() + "/check.svg";
  auto r = testing::run_cli("nki check --json --svg " + svg + " " + testing::example("overlap_t0_t1.json"));
  EXPECT_EQ(r.exit_code, 2);
  // run_cli merges stderr: the JSON report, then the one-line error.
  const auto error_at = r.out.rfind("\nscratchplan: ");
  ASSERT_NE(error_at, std::string::npos) << r.out;
  Json j = Json::parse(r.out.substr(0, error_at));
  EXPECT_EQ(j["violations"][0]["overwritten_by"]["tensor"], "t1");
  EXPECT_EQ(j["violations"][0]["overwritten_by"]["block"], Json::array({0}));
  std::ifstream f(svg);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  // t0's tile at byte 1024 (the victim) and t1's tile at byte 1024 (the writer).
  EXPECT_NE(s.find("t0 tile 1: partitions 0+128, bytes 1024+1024 (destroyed while a read was pending)"), std::string::npos);
  EXPECT_NE(s.find("t1 tile 0: partitions 0+128, bytes 1024+1024 (its write destroyed a tile)"), std::string::npos);
  EXPECT_EQ(s.find("t0 tile 0: partitions 0+128, bytes 0+1024 (destroyed"), std::string::npos);
  // Issue 11 item 15: the victim is never drawn under its writer: writers are drawn after the
  // plain tiles and victims last, each in its role's colour.
  EXPECT_GT(s.find("t0 tile 1: partitions 0+128, bytes 1024+1024 (destroyed"),
            s.find("t1 tile 0: partitions 0+128, bytes 1024+1024 (its write"));
  EXPECT_GT(s.find("t1 tile 0: partitions 0+128, bytes 1024+1024 (its write"), s.find("t0 tile 0: partitions"));
  EXPECT_NE(s.find("t0 (victim)"), std::string::npos);
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

TEST(NkiCli, KeepDirect) {
  std::string path = testing::temp_file("mixed.json", R"({"tensors": [
      {"name": "x", "buffer": "hbm", "role": "input", "blocks": [4], "partitions": 128, "free": [512]},
      {"name": "t", "blocks": [4], "partitions": 128, "free": [512], "alloc": {"kind": "mod_alloc", "base_addr": 0, "num_free_tiles": [2]}},
      {"name": "y", "blocks": [4], "partitions": 128, "free": [512]}],
    "body": [{"loop": "i", "trip": 4, "body": [
      {"name": "load", "engine": "DMA", "cost": 10, "reads": [{"tensor": "x", "block": ["i"]}], "writes": [{"tensor": "t", "block": ["i"]}]},
      {"name": "exp", "engine": "Scalar", "cost": 10, "reads": [{"tensor": "t", "block": ["i"]}], "writes": [{"tensor": "y", "block": ["i"]}]}]}]})");
  EXPECT_EQ(testing::run_cli("nki check " + path).exit_code, 2);
  std::string out = ::testing::TempDir() + "/mixed_planned.json";
  auto r = testing::run_cli("nki plan --keep-direct -o " + out + " " + path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("kept: mod_alloc (2 physical tiles)"), std::string::npos) << r.out;
  EXPECT_EQ(testing::run_cli("nki check " + out).exit_code, 0);
}

}  // namespace
}  // namespace sp::nki

namespace sp::nki {
namespace {

// Python kernels go through the tracer (python/scratchplan/nki/tracer.py, found next to the binary).
TEST(NkiCli, PythonKernelViolationsNameSourceLines) {
  auto r = testing::run_cli("nki check " + testing::example("lifetime_conflict.py") + " --input x=8x128x512:bf16");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("violations: 6"), std::string::npos) << r.out;
  // Declaration (line 14), the pending exp (line 24) and the destroying load (line 21).
  EXPECT_NE(r.out.find("tensor t1 (declared at lifetime_conflict.py:14) block (0,) is read by exp (lifetime_conflict.py:24)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("overwritten by block (2,) (load (lifetime_conflict.py:21) at {i=2})"), std::string::npos) << r.out;
}

TEST(NkiCli, PythonKernelPlanRewriteChecksClean) {
  const std::string out = ::testing::TempDir() + "/double_buffer.py";
  std::remove(out.c_str());
  auto r = testing::run_cli("nki plan " + testing::example("double_buffer.py") +
                            " --input x=2048x512:bf16 --time-limit 2 --rewrite " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("buffer=ncc.sbuf.mod_alloc(base_addr="), std::string::npos) << ss.str();
  auto c = testing::run_cli("nki check " + out + " --input x=2048x512:bf16");
  EXPECT_EQ(c.exit_code, 0) << c.out;
}

TEST(NkiCli, PythonOnlyFlagsOnAJsonKernelAreBadInput) {
  auto r = testing::run_cli("nki check " + testing::example("load_exp.json") + " --input x=128x512:bf16");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--input applies to Python kernels"), std::string::npos) << r.out;
  auto m = testing::run_cli("nki check " + testing::example("lifetime_conflict.py") + " --input x=8x128x512:int128");
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.out.find("unknown dtype 'int128'"), std::string::npos) << m.out;
}

TEST(NkiCli, TraceWritesChromeTraceEventsForPlanAndCheck) {
  const std::string trace = ::testing::TempDir() + "/nki_trace.json";
  for (const char* verb : {"plan", "check"}) {
    std::remove(trace.c_str());
    auto r = testing::run_cli(std::string("nki ") + verb + " " + example("load_exp.json") + " --trace " + trace);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::ifstream f(trace);
    std::stringstream ss;
    ss << f.rdbuf();
    Json j = Json::parse(ss.str());
    EXPECT_EQ(j["otherData"]["time_unit"], "cycle");
    int slices = 0;
    double end_us = 0;
    for (const Json& e : j["traceEvents"])
      if (e["ph"] == "X") {
        ++slices;
        end_us = std::max(end_us, e["ts"].get<double>() + e["dur"].get<double>());
      }
    EXPECT_EQ(slices, 32) << verb;  // every execution of load and exp
    // Cycles of the 1.4 GHz reference clock, in microseconds rounded to the nanosecond.
    EXPECT_NEAR(end_us, j["otherData"]["makespan_cycles"].get<double>() / 1400, 1.5e-3) << verb;
  }
  // An unwritable --trace fails before any work and leaves no output behind.
  const std::string svg = ::testing::TempDir() + "/nki_trace_unwritten.svg";
  std::remove(svg.c_str());
  auto r = testing::run_cli("nki plan " + example("load_exp.json") + " --svg " + svg + " --trace /nonexistent/dir/t.json");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--trace"), std::string::npos) << r.out;
  EXPECT_FALSE(std::ifstream(svg).good());
}

}  // namespace
}  // namespace sp::nki
