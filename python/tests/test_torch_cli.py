"""scratchplan.torch's command line (issue 45): offline factories, -o -, typed inputs."""
import json
import os
import socket
import subprocess
import sys
import urllib.request

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import scratchplan as sp  # noqa: E402
from scratchplan.torch.__main__ import main  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _no_network(*a, **k):
    raise AssertionError("a conversion opened a network connection")


def test_no_conversion_opens_a_network_connection(monkeypatch, tmp_path, capsys):
    # lraspp's weights_backbone defaults to pretrained ImageNet weights: every weights* parameter
    # of the factory must be None, or torchvision downloads them.
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(socket, "create_connection", _no_network)
    monkeypatch.setattr(urllib.request, "urlopen", _no_network)
    out = tmp_path / "seg.program.json"
    for model in ("torchvision.models.segmentation:lraspp_mobilenet_v3_large",
                  "torchvision.models.segmentation:fcn_resnet50"):
        assert main([model, "--input", "1,3,64,64", "-o", str(out)]) == 0
        assert sp.program.load(str(out)).num_ops > 0
    assert "mapped" in capsys.readouterr().err


class TinyLM(torch.nn.Module):
    """Token ids through an embedding: the CLI needs integer inputs for it."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 32)
        self.lin = torch.nn.Linear(32, 100)

    def forward(self, ids):
        return self.lin(torch.relu(self.emb(ids)))


def _cli(*args, cwd=None):
    env = dict(os.environ)
    # This directory (the models) and the package under test, absolute: the CLI may run elsewhere.
    env["PYTHONPATH"] = os.pathsep.join([HERE, os.path.dirname(os.path.dirname(os.path.abspath(sp.__file__)))]
                                        + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run([sys.executable, "-m", "scratchplan.torch", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def test_dash_output_is_stdout_and_typed_inputs(tmp_path):
    # -o - is standard output (README: for every file argument); the summary goes to stderr.
    r = _cli("test_torch_cli:TinyLM", "--input", "2,16:int64", "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "-").exists()
    program = json.loads(r.stdout)
    assert "mapped" in r.stderr and r.stderr.count("\n") == 1
    ids = [t for t in program["tensors"] if t["name"] == "input"][0]
    assert ids["shape"] == [2, 16] and ids["dtype"] == "int64"
    assert [op["payload"] for op in program["ops"]][0] == "gather"
    assert sp.program.load(program).num_ops == len(program["ops"])
    # bool masks and half inputs; an unknown dtype is one line, exit 2
    r = _cli("torch.nn:ReLU", "--input", "2,3:float16", "-o", "-")
    assert r.returncode == 0 and json.loads(r.stdout)["tensors"][0]["dtype"] == "fp16"
    r = _cli("torch.nn:ReLU", "--input", "2,3:int65")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown dtype 'int65'" in r.stderr


class Detector(torch.nn.Module):
    """Static backbone between data-dependent pre- and post-processing, as in detection models."""

    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU())

    def forward(self, x):
        scale = float(torch.tensor(x.shape[-2:]).min().item()) / 16  # sizes in Python, as torchvision's transform
        x = torch.nn.functional.interpolate(x, scale_factor=1 / scale, mode="nearest")
        feats = self.backbone(x)
        return feats[feats > 0]  # data-dependent: refuses the whole model


def test_submodule_converts_the_static_part():
    x = torch.empty(1, 3, 32, 32)
    with pytest.raises(sp.torch.UnsupportedModel, match="data-dependent"):
        sp.torch.to_program(Detector(), (x,))
    program, report = sp.torch.to_program(Detector(), (x,), submodule="backbone")
    assert program["name"] == "Detector.backbone"
    assert [t["shape"] for t in program["tensors"] if t["name"] == "input"] == [[1, 3, 16, 16]]  # as the parent passes it
    assert report.mapped_fraction == 1.0
    with pytest.raises(sp.BadInput, match=r"submodule 'neck': Detector has no such submodule \(its children: backbone\)"):
        sp.torch.to_program(Detector(), (x,), submodule="neck")


def test_cli_detection_backbone_offline(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(urllib.request, "urlopen", _no_network)
    out = tmp_path / "det.program.json"
    assert main(["torchvision.models.detection:ssdlite320_mobilenet_v3_large", "--input", "1,3,320,320",
                 "--submodule", "backbone", "-o", str(out)]) == 0
    program = json.loads(out.read_text())
    assert program["name"] == "ssdlite320_mobilenet_v3_large.backbone"
    assert "100.0% of compute ops mapped" in capsys.readouterr().err
    assert sp.program.load(program).num_ops == len(program["ops"])


def test_detection_heads_before_nms_convert():
    # The head runs before the data-dependent postprocessing: static, like the backbone.
    out = _cli("torchvision.models.detection:ssdlite320_mobilenet_v3_large", "--input", "1,3,160,160",
               "--submodule", "head", "-o", "-")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["name"] == "ssdlite320_mobilenet_v3_large.head"
    assert "(100.0% of compute ops mapped)" in out.stderr


class MaskedByLength(torch.nn.Module):
    """Reads the longest length in Python (a conformer's int(lengths.max())) and masks by it."""

    def __init__(self, dim=8):
        super().__init__()
        self.lin = torch.nn.Linear(dim, dim)

    def forward(self, x, lengths):
        T = int(lengths.max())
        mask = torch.arange(T, device=x.device)[None, :] < lengths[:, None]
        return self.lin(x[:, :T]) * mask[..., None]


def test_inputs_with_values_and_factory_arguments(capsys):
    # Issue 57: --input 1:int64=12 is a real tensor filled with 12; the trace is specialized where
    # Python reads it, and the CLI prints the specialization. ATTR(k=v) passes literal arguments.
    assert main(["test_torch_cli:MaskedByLength(dim=4)", "--input", "1,16,4", "--input", "1:int64=12", "-o", "-"]) == 0
    cap = capsys.readouterr()
    program = json.loads(cap.out)
    assert "specialized: module 'MaskedByLength' at " in cap.err and "test_torch_cli.py:" in cap.err and ": 12" in cap.err
    out = [t["shape"] for t in program["tensors"] if t.get("graph_output")]
    assert out == [[1, 12, 4]]
    def fails(*args):
        with pytest.raises(SystemExit) as e:
            main(list(args))
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1, err
        return err
    for bad, why in (("1:float32=3", "integer or bool inputs"), ("1:int64=x", "an integer value")):
        assert why in fails("test_torch_cli:MaskedByLength", "--input", "1,16,8", "--input", bad)
    assert "ATTR(name=literal, ...)" in fails("test_torch_cli:MaskedByLength(dim=len)", "--input", "1,16,8", "--input",
                                              "1:int64=3")
    # Without a value the lengths are data: refused as data-dependent, as before.
    assert "data-dependent" in fails("test_torch_cli:MaskedByLength", "--input", "1,16,8", "--input", "1:int64")
