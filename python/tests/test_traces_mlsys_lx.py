"""Chrome traces of `schedule`, `evaluate` (and the `mlsys` entry point) and of LX `plan`
(issue 43 §1): every trace passes pictures.check_trace, the CLI's --trace file equals the Python
result's to_trace(), and the trace's totals agree with the verb's own report."""
import json
import os
import subprocess
import time

import pytest

import scratchplan as sp
from conftest import BUILD, cli, data, example, load
from pictures import check_trace

BENCH = data("mlsys2026", "benchmarks", "mlsys-2026-1.json")
MLP = example("mlsys", "mlp_block.json")
MLP_SOL = example("mlsys", "mlp_block_solution.json")
EX5 = data("mlsys2026", "examples", "ex5_problem.json")
EX5_OOM = data("mlsys2026", "examples", "ex5a_solution_oom.json")
PROGRAM = example("programs", "mlp.json")


def tracks(doc):
    """{(process name, thread name): [slices]} and {(process name, counter name): [samples]}."""
    pname, tname = {}, {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            pname[e["pid"]] = e["args"]["name"]
        if e["ph"] == "M" and e["name"] == "thread_name":
            tname[(e["pid"], e["tid"])] = e["args"]["name"]
    slices, counters = {}, {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            slices.setdefault((pname[e["pid"]], tname[(e["pid"], e["tid"])]), []).append(e)
        elif e["ph"] == "C":
            counters.setdefault((pname[e["pid"]], e["name"]), []).append(e)
    return slices, counters


def close(a, b, n=1):
    # the builder rounds every timestamp to a nanosecond
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-3 * n


def check_schedule_trace(text, verb, total, capacity, subgraphs):
    doc = check_trace(text)
    other = doc["otherData"]
    assert other["time_unit"] == "latency unit" and other["us_per_unit"] == 1
    assert other["verb"] == verb and other["total_latency"] == pytest.approx(total)
    slices, counters = tracks(doc)
    sub = slices[(verb, "subgraph")]
    assert [s["name"] for s in sub] == [f"subgraph {i}" for i in range(len(subgraphs))]
    # one after another, back to back; the sum is the evaluator's total
    end = 0
    for s, rep in zip(sub, subgraphs):
        assert close(s["ts"], end, 1)
        end = s["ts"] + s["dur"]
        assert s["args"]["latency"] == pytest.approx(rep["latency"])
        assert s["args"]["peak_working_set"] == rep["peak_working_set"]
        # per step latency = max(compute, transfer): the sums bracket the subgraph's latency
        c, m, lat = s["args"]["compute"], s["args"]["memory"], s["args"]["latency"]
        assert max(c, m) <= lat * (1 + 1e-9) and lat <= (c + m) * (1 + 1e-9)
        assert s["args"]["bound"] in ("compute", "memory", "mixed")
    assert close(sum(s["dur"] for s in sub), total, len(sub))
    assert close(end, total, len(sub))
    for track in ("compute", "memory"):
        parts = slices[(verb, track)]
        assert len(parts) == len(sub)
        for p, s in zip(parts, sub):
            assert p["ts"] == s["ts"] and p["dur"] <= s["dur"] + 1e-3
    ws = counters[(verb, "fast memory working set (elements)")]
    peaks = [c["args"]["peak"] for c in ws]
    assert max(peaks) == max(r["peak_working_set"] for r in subgraphs)
    assert all(c["args"]["capacity"] == capacity for c in ws)
    return doc, peaks


def test_evaluate_trace_agrees_with_the_report(tmp_path):
    ev = sp.mlsys.evaluate(MLP, MLP_SOL, verbose=True)
    assert ev.valid
    path = tmp_path / "ev.json"
    text = ev.to_trace(path)
    assert path.read_text() == text
    _, peaks = check_schedule_trace(text, "evaluate", ev.total, load(MLP)["fast_memory_capacity"],
                                    ev.to_dict()["subgraphs"])
    assert max(peaks) <= load(MLP)["fast_memory_capacity"]
    out = tmp_path / "cli.json"
    r = cli("evaluate", MLP, MLP_SOL, "--trace", out)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == text
    assert r.stdout == sp.mlsys.evaluate(MLP, MLP_SOL).report()


def test_schedule_trace_of_a_benchmark_equals_the_cli(tmp_path):
    s = sp.mlsys.schedule(BENCH, iterations=200, threads=1)
    ev = sp.mlsys.evaluate(BENCH, s, verbose=True)
    capacity = load(BENCH)["fast_memory_capacity"]
    text = s.to_trace()
    _, peaks = check_schedule_trace(text, "schedule", s.total, capacity, ev.to_dict()["subgraphs"])
    assert max(peaks) <= capacity
    assert ev.total == pytest.approx(s.total)
    sol, tr = tmp_path / "s.json", tmp_path / "t.json"
    r = cli("schedule", BENCH, "-o", sol, "--trace", tr, "--iterations", 200, "--threads", 1)
    assert r.returncode == 0, r.stderr
    assert load(sol) == s.to_dict()
    assert tr.read_text() == text


def test_mlsys_entry_point_writes_a_trace(tmp_path):
    exe = os.path.join(BUILD, "mlsys")
    if not os.path.exists(exe):
        pytest.skip("mlsys entry point not built")
    sol, tr = tmp_path / "s.json", tmp_path / "t.json"
    r = subprocess.run([exe, BENCH, str(sol), "--trace", str(tr), "--time-limit", "0.3", "--threads", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    total = sp.mlsys.evaluate(BENCH, str(sol)).total
    doc = check_trace(tr.read_text())
    assert doc["otherData"]["total_latency"] == pytest.approx(total)


def test_invalid_schedule_still_gets_its_trace_showing_the_overflow(tmp_path):
    tr = tmp_path / "t.json"
    r = cli("evaluate", EX5, EX5_OOM, "--trace", tr)
    assert r.returncode == 2
    doc = check_trace(tr.read_text())
    assert doc["otherData"]["valid"] is False
    _, counters = tracks(doc)
    ws = counters[("evaluate", "fast memory working set (elements)")]
    assert max(c["args"]["peak"] for c in ws) > load(EX5)["fast_memory_capacity"]


@pytest.mark.parametrize("verb", ["schedule", "evaluate", "plan"])
def test_unwritable_trace_is_exit_2_and_writes_nothing(verb, tmp_path):
    bad = tmp_path / "missing" / "t.json"
    out, svg = tmp_path / "out.json", tmp_path / "p.svg"
    if verb == "schedule":
        r = cli("schedule", BENCH, "-o", out, "--trace", bad, "--iterations", 10, "--threads", 1)
    elif verb == "evaluate":
        r = cli("evaluate", MLP, MLP_SOL, "--trace", bad)
    else:
        r = cli("plan", PROGRAM, "-o", out, "--svg", svg, "--trace", bad)
    assert r.returncode == 2, r.stderr
    assert "--trace" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert os.listdir(tmp_path) == []


def check_plan_trace(p):
    text = p.to_trace()
    doc = check_trace(text)
    d = p.to_dict()
    other = doc["otherData"]
    assert other["time_unit"] == "us" and other["us_per_unit"] == 1
    assert other["hbm_bytes"] == p.hbm_bytes and other["estimated_time_us"] == pytest.approx(p.time_s * 1e6)
    slices, counters = tracks(doc)
    ops = slices[("plan", "ops")]
    assert [o["name"] for o in ops] == [o["name"] for o in d["ops"]]
    # per-op HBM bytes sum to the plan's; the last op ends at the estimated time
    assert sum(o["args"]["hbm_bytes"] for o in ops) == p.hbm_bytes
    assert [o["args"]["hbm_bytes"] for o in ops] == [o["hbm_bytes"] for o in d["ops"]]
    assert close(ops[-1]["ts"] + ops[-1]["dur"], p.time_s * 1e6, len(ops))
    ncores = max(o["cores"] for o in d["ops"])
    assert other["cores"] == ncores
    for c in range(ncores):
        on_core = slices.get((f"core {c}", "ops"), [])
        assert [s["args"]["index"] for s in on_core] == [i for i, o in enumerate(d["ops"]) if o["cores"] > c]
        lx = counters[(f"core {c}", "LX bytes")]
        assert all(0 <= s["args"]["in_use"] <= p.capacity == s["args"]["capacity"] for s in lx)
    # something is on LX in a plan that saves HBM traffic
    if p.hbm_bytes < p.baseline_hbm_bytes:
        assert max(s["args"]["in_use"] for s in counters[("core 0", "LX bytes")]) > 0
    return text


def test_plan_trace_of_an_example_equals_the_cli(tmp_path):
    p = sp.lx.plan(PROGRAM, cores=32)
    text = check_plan_trace(p)
    tr = tmp_path / "t.json"
    r = cli("plan", PROGRAM, "--cores", 32, "--trace", tr)
    assert r.returncode == 0, r.stderr
    assert tr.read_text() == text
    assert p.to_trace(tmp_path / "py.json") == (tmp_path / "py.json").read_text() == text


def test_plan_trace_of_a_torchvision_model():
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    import scratchplan.torch as spt
    t0 = time.monotonic()
    model = torchvision.models.resnet18(weights=None)
    program, _ = spt.to_program(model, (torch.empty(1, 3, 224, 224),), dtype="fp16", name="resnet18")
    p = sp.lx.plan(program, cores=32, time_limit=0.3)
    text = check_plan_trace(p)
    assert len(text) < 8 * 1024 * 1024
    assert json.loads(text)["otherData"]["program"] == "resnet18"
    assert time.monotonic() - t0 < 60
