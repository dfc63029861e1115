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
