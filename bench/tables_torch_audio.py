"""PyTorch front end on a second model library (issue 57): torchaudio's whole model list.

Every public model builder and model class of ``torchaudio.models`` and the model of every
pipeline bundle of ``torchaudio.pipelines`` (built from the bundle's own parameters, without its
weights; bundles with identical models share a row), converted as the CLI converts
``MODULE:ATTR(k=literal, ...)`` with ``--input SHAPE[:DTYPE[=VALUE]]`` (inputs with a value are
lengths known at trace time), with the network disabled. Per model: compute mapped, ATen and
program ops, trace + convert time, ``scratchplan plan --cores 32`` time, and the activation arena
(``sp.torch.memory_plan``) against its proven lower bound. One run each.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

SOURCES = ["drums", "bass", "other", "vocals"]
WAVE = ["1,16000"]            # one second at 16 kHz
WAVE_LEN = ["1,16000", "1:int64=16000"]


def _models():
    """(label, MODULE:ATTR(kwargs) as the CLI takes it, inputs) for every model of torchaudio."""
    rows = [
        ("Conformer", "torchaudio.models:Conformer(input_dim=80, num_heads=4, ffn_dim=256, num_layers=4, "
         "depthwise_conv_kernel_size=31)", ["1,200,80", "1:int64=200"]),
        ("ConvTasNet", "torchaudio.models:ConvTasNet", ["1,1,16000"]),
        ("conv_tasnet_base", "torchaudio.models:conv_tasnet_base(num_sources=2)", ["1,1,16000"]),
        ("DeepSpeech", "torchaudio.models:DeepSpeech(n_feature=80)", ["1,1,200,80"]),
        ("Emformer", "torchaudio.models:Emformer(input_dim=512, num_heads=8, ffn_dim=2048, num_layers=20, "
         "segment_length=4, right_context_length=1)", ["1,129,512", "1:int64=128"]),
        ("Emformer, no right context", "torchaudio.models:Emformer(input_dim=256, num_heads=4, ffn_dim=1024, "
         "num_layers=4, segment_length=8, left_context_length=16)", ["1,64,256", "1:int64=64"]),
        ("emformer_rnnt_base (RNNT)", "torchaudio.models:emformer_rnnt_base(num_symbols=4097)",
         ["1,128,80", "1:int64=128", "1,20:int64", "1:int64=20"]),
        ("Tacotron2", "torchaudio.models:Tacotron2", ["1,50:int64", "1:int64=50", "1,80,100", "1:int64=100"]),
        ("Wav2Letter (waveform)", "torchaudio.models:Wav2Letter", ["1,1,16000"]),
        ("Wav2Letter (mfcc)", "torchaudio.models:Wav2Letter(input_type='mfcc', num_features=13)", ["1,13,200"]),
        ("WaveRNN", "torchaudio.models:WaveRNN(upsample_scales=[5, 5, 11], n_classes=256, hop_length=275, n_freq=80)",
         ["1,1,550", "1,1,80,6"]),
    ]
    for n in ("wav2vec2_base", "wav2vec2_large", "wav2vec2_large_lv60k", "hubert_base", "hubert_large",
              "hubert_xlarge"):
        rows.append((n, f"torchaudio.models:{n}", WAVE_LEN))
    for n in ("hubert_pretrain_base", "hubert_pretrain_large", "hubert_pretrain_xlarge"):
        rows.append((n, f"torchaudio.models:{n}", ["1,16000", "1,49:int64", "1:int64=16000"]))
    for n in ("hdemucs_low", "hdemucs_medium", "hdemucs_high"):
        rows.append((n, f"torchaudio.models:{n}(sources={SOURCES!r})", ["1,2,44100"]))
    return rows


def _pipelines():
    """The model of every bundle, from its own parameters (no weights are loaded)."""
    import torchaudio.pipelines as P
    rows, seen = [], {}
    for name in sorted(dir(P)):
        b = getattr(P, name)
        params = getattr(b, "_params", None)
        if isinstance(params, dict):  # wav2vec2 / HuBERT bundles
            spec = "torchaudio.models:wav2vec2_model(" + ", ".join(f"{k}={v!r}" for k, v in params.items()) + ")"
            inputs = WAVE_LEN
        elif hasattr(b, "_model_factory_func"):  # source separation
            f = b._model_factory_func
            spec = f"torchaudio.models:{f.func.__name__}(" + ", ".join(f"{k}={v!r}" for k, v in f.keywords.items()) + ")"
            inputs = ["1,2,44100"] if "hdemucs" in spec else ["1,1,16000"]
        elif hasattr(b, "_rnnt_factory_func"):
            f = b._rnnt_factory_func
            spec = f"torchaudio.models:{f.func.__name__}(" + ", ".join(f"{k}={v!r}" for k, v in f.keywords.items()) + ")"
            inputs = ["1,128,80", "1:int64=128", "1,20:int64", "1:int64=20"]
        elif hasattr(b, "_tacotron2_params"):
            p = dict(b._tacotron2_params)
            spec = "torchaudio.models:Tacotron2(" + ", ".join(f"{k}={v!r}" for k, v in p.items()) + ")"
            inputs = ["1,50:int64", "1:int64=50", "1,80,100", "1:int64=100"]
            w = getattr(b, "_wavernn_params", None)
            if w:
                wspec = "torchaudio.models:WaveRNN(" + ", ".join(f"{k}={v!r}" for k, v in w.items()) + ")"
                hop = w.get("hop_length", 275)
                seen.setdefault((wspec, ("x",)), [wspec, [f"1,1,{2 * hop}", f"1,1,{w.get('n_freq', 80)},6"], []])[2] \
                    .append(name + " (WaveRNN)")
        else:
            continue
        seen.setdefault((spec, tuple(inputs)), [spec, inputs, []])[2].append(name)
    for spec, inputs, names in seen.values():
        rows.append((", ".join(names), spec, inputs))
    return rows


def _no_network(*a, **k):
    raise OSError("network disabled: the benchmark converts offline")


def _convert(spec, inputs):
    """What ``python3 -m scratchplan.torch SPEC --input ... --dtype fp16`` does, in process."""
    import importlib
    import torch
    import scratchplan.torch as spt
    from scratchplan.torch.__main__ import _call, _input, _no_weights
    mod, attr = spec.split(":", 1)
    attr, kwargs = _call(attr)
    factory = getattr(importlib.import_module(mod), attr)
    xs = []
    for text in inputs:
        dims, dt, value = _input(text)
        xs.append(torch.empty(dims, dtype=getattr(torch, dt), device="meta") if value is None
                  else torch.full(dims, value, dtype=getattr(torch, dt)))
    t = time.perf_counter()
    model = factory(**{**_no_weights(factory), **kwargs})
    build = time.perf_counter() - t
    t = time.perf_counter()
    program, report = spt.to_program(model, tuple(xs), dtype="fp16", name=attr)
    return program, report, time.perf_counter() - t, build


def _opaque_text(report):
    groups = {}
    for r in report.opaque():
        op = r.target.replace("aten.", "").split(".")[0]
        g = groups.setdefault(op, [0, r.reason, r.compute])
        g[0] += 1
    parts = []
    for op, (k, reason, compute) in sorted(groups.items()):
        reason = reason if len(reason) <= 70 else reason[:67] + "..."
        parts.append(f"`{op}` x{k}" + ("" if compute else " (data movement)") + f": {reason}")
    return "; ".join(parts).replace("|", "/") or "-"


def mib(b):
    return f"{b / 2**20:,.1f}"


def tables(ctx):
    import gc
    import warnings
    sys.path.insert(0, os.path.join(ctx.root, "build", "release", "python"))
    import torchaudio
    import scratchplan.torch as spt
    warnings.simplefilter("ignore")
    rows = [("models", *r) for r in _models()] + [("pipelines", *r) for r in _pipelines()]
    out = ["## PyTorch front end: torchaudio's models (issue 57)", "",
           f"Every model of torchaudio {torchaudio.__version__} (PyTorch {__import__('torch').__version__}): each public "
           "model builder and model class of `torchaudio.models` and the model of every bundle of "
           "`torchaudio.pipelines` (built from the bundle's parameters without its weights; bundles with the same "
           "model share a row), converted as the CLI does (`python3 -m scratchplan.torch 'torchaudio.models:"
           "ATTR(k=v, ...)' --input ... --dtype fp16`, in one process) with the network disabled. Inputs: one second "
           "of audio (16 kHz; 44.1 kHz stereo for HDemucs), 200 feature frames, 50 tokens and 100 mel frames "
           "(Tacotron2), 550 samples (WaveRNN: its GRU runs once per sample); `N:int64=V` inputs are lengths with "
           "a value known at trace time. Target: at least 95 % of compute mapped or refused for a truly "
           "data-dependent reason; trace + convert at most 60 s. Plan: `scratchplan plan PROGRAM --cores 32` "
           "(wall time of the command, default 2 s search). Arena: the activation-memory plan "
           "(`sp.torch.memory_plan`, host bytes) and its proven lower bound. Wall times on a shared 2-core "
           "machine, one run each.", "",
           "| source | model | inputs | compute mapped | ATen ops | program ops | trace + convert s | plan s "
           "| arena MiB | lower bound MiB | opaque ATen ops (reason) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    met = total = 0
    misses = []
    old = (socket.socket.connect, socket.create_connection)
    socket.socket.connect, socket.create_connection = _no_network, _no_network
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for source, label, spec, inputs in rows:
                total += 1
                shown = " ".join(f"`{i}`" for i in inputs)
                try:
                    program, report, secs, _ = _convert(spec, inputs)
                except Exception as e:  # noqa: BLE001 - a refused model is a row too
                    msg = str(e).replace("|", "/")[:200]
                    out.append(f"| {source} | {label} | {shown} | refused | - | - | - | - | - | - | {msg} |")
                    misses.append(f"{label} (refused)")
                    print(f"{label}: refused: {msg}", file=sys.stderr, flush=True)
                    continue
                path = os.path.join(tmp, "p.json")
                with open(path, "w") as f:
                    json.dump(program, f)
                t = time.perf_counter()
                r = subprocess.run([ctx.cli, "plan", path, "--cores", "32", "-o", os.path.join(tmp, "plan.json")],
                                   capture_output=True, text=True)
                psecs = time.perf_counter() - t
                plan = f"{psecs:.2f}" if r.returncode == 0 else "failed: " + (r.stderr.strip().splitlines() or [""])[-1][:100]
                try:
                    mp = spt.memory_plan(program)
                    arena, bound = mib(mp.arena_bytes), mib(mp.lower_bound) + (" (proven)" if mp.proven else "")
                except Exception as e:  # noqa: BLE001
                    arena, bound = "failed", str(e)[:60]
                share = 100 * report.mapped_fraction
                if share >= 95.0:
                    met += 1
                else:
                    misses.append(f"{label} ({share:.1f} %)")
                conv = f"{secs:.2f}" if secs <= 60 else f"**{secs:.2f}**"
                out.append(f"| {source} | {label} | {shown} | {share:.1f}% | {len(report.rows)} | {len(program['ops'])} "
                           f"| {conv} | {plan} | {arena} | {bound} | {_opaque_text(report)} |")
                print(f"{label}: {share:.1f}% {secs:.1f}s plan {plan}", file=sys.stderr, flush=True)
                del program, report
                gc.collect()
    finally:
        socket.socket.connect, socket.create_connection = old
    out += ["", f"{met} of {total} models at or above 95 % of compute mapped"
            + (f"; below or refused: {', '.join(misses)}." if misses else ".")]
    print(out[-1], file=sys.stderr)
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # python3 bench/tables_torch_audio.py: the table on stdout
    class _Ctx:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        cli = os.path.join(root, "build", "release", "scratchplan")
    sys.path.insert(0, os.path.join(_Ctx.root, "build", "release", "python"))
    print(tables(_Ctx()))
