"""Ring transfers in `plan` through the Python API (docs/lx.md "Ring transfers"): softmax over dim 0
at the seed's splits (co-optimization off) hands a value to a reader that slices it differently."""
import json
import os

import scratchplan as sp

PROGRAM = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "programs", "softmax_dim0.json")


def plan(ring):
    hw = {"ring_bytes_per_s": ring} if ring is not None else "spyre"
    return sp.lx.plan(PROGRAM, hardware=hw, time_limit=0.5, coopt=False)


def test_ring_chosen_when_faster_and_shown_in_every_output(tmp_path):
    off, on = plan(None).to_dict(), plan(1e11)
    d = on.to_dict()
    assert d["search"]["ring_transfers"] == 1 and off["search"]["ring_transfers"] == 0
    assert d["hardware"]["ring_bytes_per_s"] == 1e11
    assert d["totals"]["estimated_time_us"] < off["totals"]["estimated_time_us"]
    ring_ops = [op for op in d["ops"] if op["kind"] == "ring"]
    assert len(ring_ops) == 1 and ring_ops[0]["hbm_bytes"] == 0 and ring_ops[0]["ring_bytes"] > 0
    assert "ring transfer:" in on.report()
    assert "moved over the core ring" in on.svg()
    trace = json.loads(on.to_trace(str(tmp_path / "t.json")))
    assert any(e.get("args", {}).get("ring_bytes") for e in trace["traceEvents"])


def test_no_ring_when_hbm_is_faster():
    slow, none = plan(1e3).to_dict(), plan(None).to_dict()
    assert slow["search"]["ring_transfers"] == 0 and not any(op["kind"] == "ring" for op in slow["ops"])
    assert slow["totals"]["estimated_time_us"] == none["totals"]["estimated_time_us"]
    assert slow["totals"]["hbm_bytes"] == none["totals"]["hbm_bytes"]
