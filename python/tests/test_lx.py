"""scratchplan.lx.plan and scratchplan.program: every bundled program planned through Python
equals the CLI's plan (to_dict == ``plan -o`` JSON, report() == ``--report``, svg() == ``--svg``,
summary() == the one-line output), from a path, a dict or a Program object."""
import json
import os

import pytest

import scratchplan as sp
from conftest import EXAMPLES, cli, load

PROGRAMS = sorted(f[:-5] for f in os.listdir(os.path.join(EXAMPLES, "programs")) if f.endswith(".json"))


def prog(name):
    return os.path.join(EXAMPLES, "programs", name + ".json")


@pytest.mark.parametrize("name", PROGRAMS)
def test_plan_equals_cli(name, tmp_path):
    out, svg = tmp_path / "plan.json", tmp_path / "plan.svg"
    c = cli("plan", prog(name), "--cores", "32", "-o", out, "--svg", svg)
    assert c.returncode == 0, c.stderr
    p = sp.lx.plan(prog(name), cores=32)
    assert p.to_dict() == load(out)
    assert p.svg() == svg.read_text()
    assert p.summary() == c.stdout
    rep = cli("plan", prog(name), "--cores", "32", "--report")
    assert p.report() == rep.stdout
    assert p.name == load(prog(name)).get("name", p.name)
    assert p.lower_bound_hbm_bytes <= p.hbm_bytes <= p.baseline_hbm_bytes
    t = p.to_dict()["totals"]
    assert p.cores_lower_bound_hbm_bytes == t["cores_lower_bound_hbm_bytes"] <= p.hbm_bytes
    assert p.lower_bound_hbm_bytes <= p.time_lower_bound_hbm_bytes == t["time_lower_bound_hbm_bytes"] <= p.hbm_bytes
    assert p.split_lower_bound_hbm_bytes == t["split_lower_bound_hbm_bytes"] <= p.hbm_bytes
    assert p.capacity > 0 and p.time_s > 0
    assert name in repr(p) or p.name in repr(p)


def test_plan_from_dict_and_program_object_and_options():
    d = load(prog("softmax_lastdim"))
    a = sp.lx.plan(d, cores=8)
    b = sp.lx.plan(sp.program.load(d), cores=8)
    c = cli("plan", prog("softmax_lastdim"), "--cores", "8", "-o", "-")
    assert a.to_dict() == b.to_dict() == json.loads(c.stdout)
    # options with their CLI flags
    args = ["--stage", "2", "--capacity", "65536", "--hbm-gbps", "100", "--no-in-place", "--no-clone-inputs",
            "--no-clone-outputs", "--no-eviction", "--no-reorder", "--no-coopt", "--no-layout-inference",
            "--no-fewer-cores", "--time-limit", "0.5"]
    c = cli("plan", prog("sdpa"), "--cores", "4", "-o", "-", *args)
    assert c.returncode == 0, c.stderr
    p = sp.lx.plan(prog("sdpa"), cores=4, stage=2, capacity=65536, hbm_gbps=100, in_place=False,
                   clone_inputs=False, clone_outputs=False, eviction=False, reorder=False, coopt=False,
                   layout_inference=False, fewer_cores=False, time_limit=0.5)
    assert p.to_dict() == json.loads(c.stdout)


def test_open_layouts_are_chosen_unless_switched_off():
    # softmax_lastdim with its row statistics' layouts left open: the planner lays them out sparse
    # (as the bundled example does itself) and says so; --no-layout-inference keeps them dense.
    d = load(prog("softmax_lastdim"))
    stats = [t["name"] for t in d["tensors"] if t.get("dim_order", [None])[-1] == -1]
    assert stats
    for t in d["tensors"]:
        if t["name"] in stats:
            del t["dim_order"]
    chosen = sp.lx.plan(d, cores=8).to_dict()
    assert sorted(x["tensor"] for x in chosen["inferred_layouts"]) == sorted(stats)
    assert chosen["techniques"]["infer_layouts"] is True
    assert chosen["totals"]["hbm_bytes"] == sp.lx.plan(prog("softmax_lastdim"), cores=8).to_dict()["totals"]["hbm_bytes"]
    kept = sp.lx.plan(d, cores=8, layout_inference=False).to_dict()
    assert kept["inferred_layouts"] == [] and kept["techniques"]["infer_layouts"] is False
    assert kept["totals"]["hbm_bytes"] > chosen["totals"]["hbm_bytes"]
    assert kept["layout_issues"] and not chosen["layout_issues"]


def test_plan_hardware_dict_and_path(tmp_path):
    base = sp.lx.plan(prog("matmul"), cores=4).to_dict()
    hw = base["hardware"]
    hw_path = tmp_path / "hw.json"
    hw_path.write_text(json.dumps(hw))
    assert sp.lx.plan(prog("matmul"), cores=4, hardware=hw).to_dict() == base
    assert sp.lx.plan(prog("matmul"), cores=4, hardware=str(hw_path)).to_dict() == base
    c = cli("plan", prog("matmul"), "--cores", "4", "--hardware", hw_path, "-o", "-")
    assert json.loads(c.stdout) == base


def test_program_module():
    names = sp.program.example_names()
    assert len(names) >= 5
    for n in names:
        p = sp.program.example(n)
        assert p.num_ops > 0 and p.num_tensors > 0
        again = sp.program.load(p.to_dict())
        assert again.to_dict() == p.to_dict()
        assert json.loads(p.to_json()) == p.to_dict()
        assert sp.program.load(p) is p
    s = sp.program.synthetic(20, seed=3)
    assert s.num_ops == 20 or s.num_ops > 0
    assert sp.program.synthetic(20, seed=3).to_dict() == s.to_dict()
    f = sp.program.load(prog("gqa"))
    assert f.name and "ops" in repr(f)
    assert sp.lx.plan(s, cores=2, time_limit=0.2).hbm_bytes >= 0


def test_lx_more_cores_never_plan_slower_on_a_small_cnn():
    # --cores N means at most N (issue 44): a converted CNN (convolutions, depthwise, BatchNorm,
    # ReLU6, residual) plans no slower at N than at any smaller power of two, and says where.
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, c, e):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(c, c * e, 1, bias=False), nn.BatchNorm2d(c * e), nn.ReLU6(),
                                      nn.Conv2d(c * e, c * e, 3, padding=1, groups=c * e, bias=False),
                                      nn.BatchNorm2d(c * e), nn.ReLU6(), nn.Conv2d(c * e, c, 1, bias=False),
                                      nn.BatchNorm2d(c))

        def forward(self, x):
            return x + self.body(x)

    model = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU6(),
                          Block(16, 4), Block(16, 2), nn.AdaptiveAvgPool2d(1)).eval()
    import scratchplan.torch as spt
    program, _ = spt.to_program(model, (torch.randn(1, 3, 32, 32),))
    times = {}
    for n in (1, 2, 4, 8, 16, 32):
        p = sp.lx.plan(program, cores=n, time_limit=1.0)  # (checked by lx.plan before it returns)
        d = p.to_dict()
        assert d["cores"]["at_most"] == n and d["cores"]["planned_at"] <= n
        assert d["cores"]["used"] <= d["cores"]["planned_at"]
        times[n] = d["totals"]["estimated_time_us"]
        for m, t in times.items():
            assert times[n] <= t * (1 + 1e-9), (n, m, times)
