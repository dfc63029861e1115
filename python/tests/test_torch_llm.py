"""Language-model blocks of examples/llm_blocks.py (issue 45): token ids through an embedding,
converted from the CLI with at least 95 % of compute mapped, and planned."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import scratchplan as sp  # noqa: E402
import scratchplan.torch as spt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BLOCKS = ["llama", "gpt2", "bert", "t5", "moe"]


def _cli(*args):
    env = dict(os.environ)
    # The repository root (examples.llm_blocks) and the package under test, absolute.
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.dirname(os.path.dirname(os.path.abspath(sp.__file__)))]
                                        + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run([sys.executable, "-m", "scratchplan.torch", *args], capture_output=True, text=True,
                          env=env, cwd=HERE, timeout=120)


@pytest.mark.parametrize("block", BLOCKS)
def test_block_converts_from_the_cli_with_95_percent_mapped(block):
    r = _cli(f"examples.llm_blocks:{block}", "--input", "1,32:int64", "-o", "-", "--report")
    assert r.returncode == 0, r.stderr
    program = json.loads(r.stdout)
    assert [t["dtype"] for t in program["tensors"] if t["name"] == "input"] == ["int64"]
    summary = r.stderr.splitlines()[0]
    share = float(summary.split("opaque (")[1].split("%")[0])
    assert share >= 95.0, r.stderr
    plan = sp.lx.plan(program, cores=8)
    assert plan.hbm_bytes > 0


def test_bert_takes_a_given_attention_mask():
    r = _cli("examples.llm_blocks:bert", "--input", "1,32:int64", "--input", "1,32:bool", "-o", "-")
    assert r.returncode == 0, r.stderr
    program = json.loads(r.stdout)
    assert [t["dtype"] for t in program["tensors"] if t["name"] in ("input0", "input1")] == ["int64", "bool"]
    assert "(100.0% of compute ops mapped)" in r.stderr


def test_gathers_move_data_and_are_not_compute():
    # An embedding lookup copies rows chosen by the token ids: an opaque op with its traffic (the
    # table and the ids read, the rows written), but no arithmetic, so not in the mapped share.
    m = torch.nn.Sequential(torch.nn.Embedding(100, 32), torch.nn.Linear(32, 8))
    program, report = spt.to_program(m, (torch.zeros(2, 5, dtype=torch.long),))
    emb = [r for r in report.rows if r.target.startswith("aten.embedding")][0]
    assert emb.decision == "opaque" and not emb.compute and emb.reason.startswith("embedding")
    gather = [op for op in program["ops"] if op["payload"] == "gather"][0]
    assert sorted(gather["inputs"]) == ["0.weight", "input"] and gather["kind"] == "opaque"
    assert report.mapped_fraction == 1.0
    # topk compares values: it stays a compute op (opaque), unlike the gathers.
    sys.path.insert(0, ROOT)
    from examples.llm_blocks import DenseTop2MoE
    _, report = spt.to_program(DenseTop2MoE(16, 24, 4), (torch.empty(1, 8, 16),))
    opaque = {r.target.split(".")[1]: r.compute for r in report.opaque()}
    assert opaque == {"topk": True, "scatter": False}, report.text()
