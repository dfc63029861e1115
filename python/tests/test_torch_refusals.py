"""scratchplan.torch refusals (issue 45): one line of at most 200 characters with the module path,
the model's own file:line and a plain reason. The models are defined here, so file:line must
point into this file."""
import inspect
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

import scratchplan as sp  # noqa: E402
import scratchplan.torch as spt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FILE = os.path.basename(__file__)


class IfOnValue(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # REFUSED
            return x * 2
        return x


class ItemRead(nn.Module):
    def forward(self, x):
        return x * x.max().item()  # REFUSED


class BoolIndex(nn.Module):
    def forward(self, x):
        return x[x > 0]  # REFUSED


class NoMetaKernel(nn.Module):
    def forward(self, x):
        return torch.histc(x, bins=4)  # REFUSED


class CpuTensor(nn.Module):
    def forward(self, x):
        return x + torch.ones(4, device="cpu")  # REFUSED


class Complex(nn.Module):
    def forward(self, x):
        return torch.fft.fft(x).real


class Outer(nn.Module):
    """The refused block sits at ``body.1``: the message names that path."""

    def __init__(self, inner):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), inner)

    def forward(self, x):
        return self.body(x)


def _line(cls) -> int:
    src, start = inspect.getsourcelines(cls)
    return start + next(i for i, s in enumerate(src) if "# REFUSED" in s)


def _refusal(cls) -> str:
    with pytest.raises(spt.UnsupportedModel) as e:
        spt.to_program(Outer(cls()), (torch.empty(2, 4),))
    msg = str(e.value)
    assert isinstance(e.value, sp.BadInput)
    assert "\n" not in msg and len(msg) <= 200, msg
    assert msg.startswith(f"module 'body.1' at "), msg
    assert f"{FILE}:{_line(cls)}: " in msg, msg
    assert "Could not run" not in msg and "If you are a Facebook" not in msg, msg
    return msg


def test_control_flow_on_a_tensor_value():
    assert _refusal(IfOnValue).endswith(": data-dependent control flow (if on a tensor value)")


def test_reading_a_tensor_value():
    assert "reads a tensor's value in Python (.item()" in _refusal(ItemRead)


def test_data_dependent_output_shape():
    assert "data-dependent output shape (aten::nonzero: torch.where / nonzero / boolean indexing)" in _refusal(BoolIndex)


def test_missing_meta_kernel():
    assert "aten::histc has no meta kernel in torch" in _refusal(NoMetaKernel)


def test_tensor_on_an_explicit_device():
    assert "a tensor made on an explicit device (device='cpu')" in _refusal(CpuTensor)


def test_complex_tensors_are_not_refused():
    # Issue 57: complex tensors are (real, imag) pairs; the FFT is opaque with its true traffic.
    program, report = spt.to_program(Complex(), (torch.empty(2, 8),))
    assert [r.target.split(".")[1] for r in report.opaque()][:1] == ["_fft_r2c"]
    assert "complex" in report.opaque()[0].reason
    sp.program.load(program)


def test_cli_prints_the_refusal_in_one_line():
    env = dict(os.environ)
    # This directory (the models) and the package under test, absolute: the CLI may run elsewhere.
    env["PYTHONPATH"] = os.pathsep.join([HERE, os.path.dirname(os.path.dirname(os.path.abspath(sp.__file__)))]
                                        + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    r = subprocess.run([sys.executable, "-m", "scratchplan.torch", "test_torch_refusals:IfOnValue", "--input", "2,4"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("scratchplan.torch: module 'IfOnValue' at ") and "data-dependent control flow" in r.stderr
    assert len(r.stderr.strip()) <= 200 + len("scratchplan.torch: ")
