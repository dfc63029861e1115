"""NKI pictures (`--svg`) and timelines (`--trace`): every picture passes pictures.check_svg,
every trace pictures.check_trace, and the trace's totals agree with the verb's own report."""
import copy
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import cli, example, load  # noqa: E402
from pictures import SVG_NS, check_svg, check_trace  # noqa: E402

import scratchplan as sp  # noqa: E402
from scratchplan import nki  # noqa: E402

X8 = ((8, 128, 512), "bf16")


def titles(svg):
    return [el.text or "" for el in ET.fromstring(svg).iter(SVG_NS + "title")]


def large_kernel(n, overlap=False):
    """load -> exp -> store over n blocks with double-buffered mod_alloc tiles (3n executions).
    With `overlap`, every load comes first (the guide's lifetime conflict), so all but the last
    two blocks of t are destroyed before they are read."""
    k = copy.deepcopy(load(example("nki", "mod_alloc_double.json")))
    del k["comment"]
    for t in k["tensors"]:
        t["blocks"] = [n]
    k["body"][0]["trip"] = n
    if overlap:
        load_i, exp_i, store_i = k["body"][0]["body"]
        rest = json.loads(json.dumps([exp_i, store_i]).replace('["i"]', '["j"]'))
        k["body"] = [{"loop": "i", "trip": n, "body": [load_i]}, {"loop": "j", "trip": n, "body": rest}]
    return k


def slices_by_track(doc):
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    out = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            out.setdefault(names[(e["pid"], e["tid"])], []).append(e)
    return out


def counter_max(doc, name, series):
    return max(e["args"][series] for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == name)


# ---- pictures ---------------------------------------------------------------------------------

def test_check_picture_of_a_clean_kernel():
    r = nki.check(example("nki", "mod_alloc_double.json"))
    assert r.clean
    s = r.svg()
    check_svg(s)
    assert "clean" in s and "tile written by DMA" in s  # role legend
    assert "KiB" in s  # byte ticks in human units


def test_check_picture_with_long_violations(tmp_path):
    # Traced: every message names three source lines, so the lines are long and must wrap.
    r = nki.check(nki.trace(example("nki", "lifetime_conflict.py"), x=X8))
    assert not r.clean
    s = r.svg()
    check_svg(s)
    tips = titles(s)
    for v in r.violations:
        assert any(v["message"] in t for t in tips), v["message"]  # the full text on hover
    # a lifetime conflict: victim and writer are the same physical tile, drawn as the victim
    assert "victim: destroyed while a read was pending" in s
    assert "(destroyed while a read was pending, by a write to the same physical tile)" in s


def test_check_picture_of_an_overlap_keeps_the_victim_on_top():
    s = nki.check(example("nki", "overlap_t0_t1.json")).svg()
    check_svg(s)
    victim = s.find("t0 tile 1: partitions 0+128, bytes 1024+1024 (destroyed while a read was pending)")
    writer = s.find("t1 tile 0: partitions 0+128, bytes 1024+1024 (its write destroyed a tile)")
    assert victim > writer > 0  # drawn later, so on top


def test_plan_picture(tmp_path):
    r = nki.plan(nki.trace(example("nki", "double_buffer.py"), x=((2048, 512), "bf16")), time_limit=2)
    s = r.svg()
    check_svg(s)
    assert "time in cycles" in s and "DMA q0" in s and "planned" in s


@pytest.mark.parametrize("overlap", [False, True], ids=["clean", "violations"])
def test_pictures_of_a_large_kernel_stay_small(overlap):
    k = large_kernel(20000, overlap)
    c = nki.check(k)
    assert c.clean != overlap
    s = c.svg()
    check_svg(s)
    print(f"check svg, 60000 executions: {len(s)} bytes")
    if not overlap:
        p = nki.plan(k, time_limit=5)
        s = p.svg()
        check_svg(s)
        print(f"plan svg, 60000 executions: {len(s)} bytes")
        assert len(s) < 1024 * 1024
        assert "short instructions" in s  # aggregated into column bands


# ---- traces -----------------------------------------------------------------------------------

def test_plan_trace_agrees_with_the_report(tmp_path):
    r = nki.plan(example("nki", "mod_alloc_double.json"), time_limit=2)
    doc = check_trace(r.to_trace())
    rep = r.to_dict()
    other = doc["otherData"]
    us = other["us_per_unit"]
    assert other["time_unit"] == "cycle" and abs(us - 1 / 1400) < 1e-12  # 1.4 GHz reference clock
    assert other["makespan_cycles"] == rep["simulated_cycles"] == r.simulated_cycles
    tracks = slices_by_track(doc)
    assert set(tracks) >= {"Scalar", "DMA queue 0"}
    every = [e for t in tracks.values() for e in t]
    assert len(every) == other["executions"] == 12
    assert abs(max(e["ts"] + e["dur"] for e in every) - r.simulated_cycles * us) <= 1.5e-3  # ns rounding
    for engine, u in rep["utilization"].items():
        lanes = other["dma_queues"] if engine == "DMA" else 1
        busy = round(u["planned"] * r.simulated_cycles * lanes)
        got = sum(e["dur"] for name, t in tracks.items() if name.split(" ")[0] == engine for e in t)
        assert abs(got - busy * us) <= 1e-3 * max(1, len(every)), engine
        assert other["busy_cycles"].get(engine, 0) == busy
    # the counters peak at the bytes (banks) the plan reports
    assert counter_max(doc, "SBUF bytes per partition", "highest") == rep["sbuf_bytes_per_partition"]
    assert counter_max(doc, "SBUF bytes per partition", "in use") <= rep["sbuf_bytes_per_partition"]
    assert other["sbuf_bytes_per_partition"] == rep["sbuf_bytes_per_partition"]


def test_plan_trace_with_psum_and_source_lines():
    k = nki.trace(example("nki", "double_buffer.py"), x=((2048, 512), "bf16"))
    r = nki.plan(k, time_limit=2)
    doc = check_trace(r.to_trace())
    names = {e["name"] for e in doc["traceEvents"] if e["ph"] == "X"}
    assert all(re.match(r"double_buffer\.py:\d+ ", n) for n in names), names  # file:line op
    x = next(e for e in doc["traceEvents"] if e["ph"] == "X")
    assert x["args"]["iteration"].startswith("{i=")
    m = load(example("nki", "matmul_psum.json"))
    p = nki.plan(m, time_limit=2)
    pd = check_trace(p.to_trace())
    if p.to_dict()["psum_banks"]:
        assert counter_max(pd, "PSUM bytes per partition", "highest") == p.to_dict()["psum_banks"] * 2048


def test_check_trace_simulates_the_kernels_own_allocation():
    r = nki.check(nki.trace(example("nki", "lifetime_conflict.py"), x=X8))
    doc = check_trace(r.to_trace())
    other = doc["otherData"]
    assert other["verb"] == "nki check" and other["clean"] is False
    assert other["distinct_violations"] == r.distinct_violations
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == other["executions"] == r.to_dict()["executions"]
    assert abs(max(e["ts"] + e["dur"] for e in xs) - other["makespan_cycles"] * other["us_per_unit"]) <= 1.5e-3
    assert any(e["ph"] == "C" and e["name"] == "SBUF bytes per partition" for e in doc["traceEvents"])


def test_trace_of_a_large_kernel():
    k = large_kernel(20000)
    doc = check_trace(nki.check(k).to_trace())
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == 60000


def test_cli_trace_equals_python_and_to_trace_writes(tmp_path):
    kernel = example("nki", "mod_alloc_double.json")
    for verb, extra, res in (("check", [], nki.check(kernel)), ("plan", ["--time-limit", "2"], None)):
        out = tmp_path / f"{verb}.json"
        c = cli("nki", verb, kernel, "--trace", out, *extra)
        assert c.returncode == 0, c.stderr
        check_trace(out.read_text())
        if res is not None:
            assert res.to_trace() == out.read_text()
            written = tmp_path / "py.json"
            assert res.to_trace(written) == written.read_text() == out.read_text()


def test_cli_trace_to_an_unwritable_path_writes_nothing(tmp_path):
    svg = tmp_path / "c.svg"
    bad = tmp_path / "missing" / "t.json"
    for verb in ("check", "plan"):
        c = cli("nki", verb, example("nki", "mod_alloc_double.json"), "--svg", svg, "--trace", bad)
        assert c.returncode == 2 and "--trace" in c.stderr, c.stderr
        assert not svg.exists() and not bad.exists()


def test_trace_is_documented():
    for verb in ("plan", "check"):
        assert "--trace" in cli("nki", verb, "--help").stdout
    with open(os.path.join(os.path.dirname(example()), "docs", "nki.md")) as f:
        assert "--trace" in f.read()


# ---- a launch over logical cores (--lnc N) ------------------------------------------------------

LNC = """import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def kernel(x):
    c = nl.program_id(0)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    b = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf, address=(0, 256 if c == 0 else 128))
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=b, src=x)
    for i in range(1 + 2 * c):  # core 1 does more work
        nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
    nisa.dma_copy(dst=out, src=a)
    return out
"""


def process_names(doc):
    return [e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]


def test_check_pictures_show_every_logical_core(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(LNC)
    svg, trace = tmp_path / "c.svg", tmp_path / "c.json"
    r = cli("nki", "check", str(path), "--input", "x=128x64:fp32", "--lnc", "2", "--svg", str(svg), "--trace", str(trace))
    assert r.returncode == 2 and "[logical core 1 of 2]" in r.stderr  # core 1's b overlaps a
    text = svg.read_text()
    check_svg(text)
    heads = re.findall(r">(nki check: [^<]*logical core [^<]*)<", text)
    assert [h.split("(logical core ")[1][:6] for h in heads] == ["0 of 2", "1 of 2"], heads
    assert heads[0].endswith("clean") and heads[1].endswith(" violation(s)"), heads
    doc = check_trace(trace.read_text())
    assert [n.split(": ")[1] for n in process_names(doc)] == ["logical core 0", "logical core 1"]
    assert doc["otherData"]["logical_cores"] == 2 and doc["otherData"]["clean"] == [True, False]
    # the Python API draws the same picture from the per-core reports
    reps = [nki.check(nki.trace(str(path), "128x64:fp32", lnc=2, core_id=c)) for c in (0, 1)]
    tail = re.compile(r">nki check: [^<]*(\(logical core [^<]*)<")
    assert tail.findall(nki.cores_svg(reps)) == tail.findall(text)
    with pytest.raises(sp.BadInput):
        nki.cores_svg([])


def test_plan_pictures_show_every_logical_core_on_one_time_scale(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(LNC)
    svg, trace = tmp_path / "p.svg", tmp_path / "p.json"
    r = cli("nki", "plan", str(path), "--input", "x=128x64:fp32", "--lnc", "2", "--svg", str(svg), "--trace", str(trace),
            "--json")
    assert r.returncode == 0, r.stderr
    cycles = [c["simulated_cycles"] for c in json.loads(r.stdout)["cores"]]
    assert cycles[0] < cycles[1]  # core 1 does more work
    text = svg.read_text()
    check_svg(text)
    assert len(re.findall(r">nki plan: [^<]*\(logical core \d of 2\)<", text)) == 2
    doc = check_trace(trace.read_text())
    assert doc["otherData"]["makespan_cycles"] == cycles and len(process_names(doc)) == 2
    # each core's slices end at its own makespan, on one clock
    ends = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            ends[e["pid"]] = max(ends.get(e["pid"], 0), e["ts"] + e["dur"])
    us = doc["otherData"]["clock_ghz"]
    assert sorted(round(v * us * 1e3) for v in ends.values()) == sorted(cycles)
    # -o still writes one kernel only
    r = cli("nki", "plan", str(path), "--input", "x=128x64:fp32", "--lnc", "2", "-o", str(tmp_path / "o.json"))
    assert r.returncode == 2 and not (tmp_path / "o.json").exists()
