"""scratchplan.layout, .workdiv, .mlsys and .nki side by side with the CLI: every result's
to_dict() equals the verb's ``--json`` output and report() its text output."""
import glob
import json
import os

import pytest

import scratchplan as sp
from conftest import CLI_PREFIX, EXAMPLES, cli, data, load

KERNELS = sorted(glob.glob(os.path.join(EXAMPLES, "nki", "*.json")))
KERNELS = [k for k in KERNELS if not k.endswith("hardware_small.json")]
MLP = os.path.join(EXAMPLES, "mlsys", "mlp_block.json")
MLP_SOL = os.path.join(EXAMPLES, "mlsys", "mlp_block_solution.json")


def same(call, *cli_args):
    """Python and the CLI agree: the same JSON, or the same one-line error (BadInput)."""
    c = cli(*cli_args)
    if c.returncode == 2 and c.stderr.startswith(CLI_PREFIX):
        with pytest.raises(sp.BadInput) as e:
            call()
        assert CLI_PREFIX + str(e.value) == c.stderr.strip()
        return None
    r = call()
    assert r.to_dict() == json.loads(c.stdout)
    return r


@pytest.mark.parametrize("size,dtype,dim_order,dma", [
    ([5, 100, 150], "fp16", None, False),
    ([5, 100, 150], "fp16", [1, 0, 2], True),
    ([7, 33], "fp32", None, True),
    ([3, 4, 64], "int8", [0, 1, 2, -1], False),
])
def test_layout_equals_cli(size, dtype, dim_order, dma):
    args = ["layout", "--size", ",".join(map(str, size)), "--dtype", dtype]
    if dim_order:
        args += ["--dim-order", ",".join(map(str, dim_order))]
    if dma:
        args += ["--dma"]
    l = sp.layout.layout(size, dtype, dim_order=dim_order, dma=dma)
    assert l.to_dict() == json.loads(cli(*args, "--json").stdout)
    assert l.report() == cli(*args).stdout
    assert l.device_size == l.to_dict()["device_size"]
    assert l.stride_map == l.to_dict()["stride_map"]
    assert l.host_size == size and len(l.host_strides) == len(size)
    assert l.device_bytes > 0 and "device_size" in repr(l)


def test_layout_issue_example():
    assert sp.layout.layout([5, 100, 150], "fp16").device_size == [100, 3, 5, 64]
    assert sp.layout.layout([4, 8], "fp32", strides=[8, 1]).to_dict() == json.loads(
        cli("layout", "--size", "4,8", "--dtype", "fp32", "--strides", "8,1", "--json").stdout)


@pytest.mark.parametrize("name", ["softmax_lastdim", "moe_mlp", "gqa"])
def test_divide_equals_cli(name):
    path = os.path.join(EXAMPLES, "programs", name + ".json")
    d = sp.workdiv.divide(path, cores=32)
    assert d.to_dict() == json.loads(cli("divide", path, "--cores", "32", "--json").stdout)
    assert d.report() == cli("divide", path, "--cores", "32").stdout
    c = sp.workdiv.divide(load(path), cores=8, candidates=True)
    assert c.report() == cli("divide", path, "--cores", "8", "--candidates").stdout
    assert len(d.ops) == len(load(path)["ops"]) and isinstance(d.layout_issues, list)
    n = sp.workdiv.divide(sp.program.load(path), cores=8, span_reduction=False, work_distribution=False)
    assert n.to_dict() == json.loads(cli("divide", path, "--cores", "8", "--json", "--no-span-reduction",
                                         "--no-work-distribution").stdout)
    assert "ops" in repr(n)


def test_evaluate_equals_cli():
    e = sp.mlsys.evaluate(MLP, MLP_SOL)
    assert e.valid and e.total > 0
    assert e.to_dict() == json.loads(cli("evaluate", MLP, MLP_SOL, "--json").stdout)
    assert e.report() == cli("evaluate", MLP, MLP_SOL).stdout
    v = sp.mlsys.evaluate(load(MLP), load(MLP_SOL), verbose=True, check_reported=True, mm_compute="native")
    assert v.to_dict() == json.loads(cli("evaluate", MLP, MLP_SOL, "--json", "--verbose", "--check-reported",
                                         "--mm-compute", "native").stdout)
    assert isinstance(v.reported_mismatches, list) and v.errors == [] and isinstance(v.warnings, list)
    assert "valid=True" in repr(e)


def test_evaluate_invalid_schedule_is_a_result():
    sol = load(MLP_SOL)
    for k in ("subgraphs", "granularities", "tensors_to_retain", "traversal_orders", "subgraph_latencies"):
        sol[k] = sol[k][:1]  # ops 2 and 3 never run: a rule violation (the CLI exits 2), not bad input
    e = sp.mlsys.evaluate(MLP, sol)
    assert not e.valid and e.errors
    assert e.to_dict()["valid"] is False


def test_evaluate_rule_switches():
    for flag in ("allow_super_native", "spill_ephemeral", "resident_only_if_consumed", "strict_ephemeral",
                 "no_reuse_for_null_traversal"):
        e = sp.mlsys.evaluate(MLP, MLP_SOL, **{flag: True})
        cli_flag = "--" + flag.replace("_", "-")
        assert e.to_dict() == json.loads(cli("evaluate", MLP, MLP_SOL, "--json", cli_flag).stdout), flag


def test_schedule_equals_cli_with_a_move_budget(tmp_path):
    out = tmp_path / "sol.json"
    c = cli("schedule", MLP, "-o", out, "--iterations", "300", "--threads", "1", "--seed", "3")
    assert c.returncode == 0, c.stderr
    s = sp.mlsys.schedule(MLP, iterations=300, threads=1, seed=3)
    assert s.to_dict() == load(out)
    e = sp.mlsys.evaluate(MLP, s)
    assert e.valid and abs(e.total - s.total) <= 1e-9 * max(1.0, s.total)
    assert s.lower_bound <= s.total + 1e-9 and s.iterations >= 0
    assert json.loads(s.to_json()) == s.to_dict() and "total=" in repr(s)


def test_schedule_time_limit_on_contest_problem():
    p = data("mlsys2026", "benchmarks", "mlsys-2026-1.json")
    s = sp.mlsys.schedule(p, time_limit=0.5, threads=1, max_segment_ops=6, mm_compute="native")
    assert sp.mlsys.evaluate(p, s.to_dict(), mm_compute="native").valid


@pytest.mark.parametrize("kernel", KERNELS, ids=os.path.basename)
def test_nki_check_equals_cli(kernel, tmp_path):
    svg = tmp_path / "c.svg"
    c = cli("nki", "check", kernel, "--json", "--svg", svg)
    r = sp.nki.check(kernel)
    want = json.loads(c.stdout)
    assert r.to_dict() == want
    assert r.clean == (c.returncode == 0)
    assert r.distinct_violations == len(r.violations)
    assert r.report() == cli("nki", "check", kernel).stdout
    assert r.svg() == svg.read_text()
    assert ("clean=" in repr(r))
    # a dict is named <kernel> in the output instead of the path
    assert sp.nki.check(load(kernel)).clean == r.clean


@pytest.mark.parametrize("kernel", KERNELS[:4], ids=os.path.basename)
def test_nki_plan_equals_cli(kernel, tmp_path):
    if not sp.nki.check(kernel).clean and "fixed" not in kernel:
        pass  # the planner re-allocates, so kernels with violations are planned as well
    out, svg = tmp_path / "k.json", tmp_path / "p.svg"
    c = cli("nki", "plan", kernel, "--json", "-o", out, "--svg", svg, "--time-limit", "2")
    assert c.returncode in (0, 2), c.stderr
    if c.returncode == 2:  # e.g. direct allocations that cannot be kept: the same line from Python
        with pytest.raises(sp.BadInput) as e:
            sp.nki.plan(kernel, time_limit=2)
        assert CLI_PREFIX + str(e.value) == c.stderr.strip()
        return
    r = sp.nki.plan(kernel, time_limit=2)
    assert r.to_dict() == json.loads(c.stdout)
    assert r.kernel() == load(out)
    assert r.svg() == svg.read_text()
    assert r.report() == cli("nki", "plan", kernel, "--time-limit", "2").stdout
    assert r.simulated_cycles <= r.single_buffered_cycles
    assert sp.nki.check(r.kernel()).clean  # the planned kernel passes the checker
    same(lambda: sp.nki.plan(kernel, single=True, in_order=True, keep_direct=True, time_limit=1),
         "nki", "plan", kernel, "--json", "--single", "--in-order", "--keep-direct", "--time-limit", "1")
    assert "cycles" in repr(r)


def test_nki_hardware_dict_and_path():
    hw_path = os.path.join(EXAMPLES, "nki", "hardware_small.json")
    k = os.path.join(EXAMPLES, "nki", "matmul_psum.json")
    a = sp.nki.check(k, hardware=hw_path)
    b = sp.nki.check(k, hardware=load(hw_path))
    assert a.to_dict() == json.loads(cli("nki", "check", k, "--hardware", hw_path, "--json").stdout)
    assert a.clean == b.clean and a.distinct_violations == b.distinct_violations
    c = cli("nki", "plan", k, "--hardware", hw_path, "--max-buffers", "2", "--time-limit", "1", "--json")
    assert c.returncode == 2  # does not fit the small core: same one line from Python
    with pytest.raises(sp.BadInput) as e:
        sp.nki.plan(k, hardware=hw_path, max_buffers=2, time_limit=1)
    assert CLI_PREFIX + str(e.value) == c.stderr.strip()
    k = os.path.join(EXAMPLES, "nki", "softmax_rows.json")
    k = os.path.join(EXAMPLES, "nki", "load_exp.json")
    same(lambda: sp.nki.plan(k, hardware=load(hw_path), max_buffers=2, time_limit=1),
         "nki", "plan", k, "--hardware", hw_path, "--max-buffers", "2", "--time-limit", "1", "--json")
