"""PyTorch front end tables for docs/benchmarks.md (issue 13).

Per model: ATen ops, mapped / folded / opaque, trace + convert time, LX plan time on 32 cores in
fp16, HBM bytes of the plan vs the all-HBM baseline and the lower bound, estimated time; then the
activation-memory plan vs no reuse and greedy-by-size. Models: torchvision vit_b_16, resnet50,
mobilenet_v3_large (weights=None) and the Llama-style decoder block of the tests at two sizes.
Times are the median of ctx.repetitions runs.

Then the coverage table of issue 45 (``coverage``): every classification, video and segmentation
model of the installed torchvision, detection backbones, optical flow and examples/llm_blocks.py,
converted as the CLI does and planned with ``scratchplan plan --cores 32``; one run each (about
5 minutes on 2 cores).
"""
import importlib.util
import json
import os
import statistics
import sys
import time


def _setup(ctx):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "build", "release", "python"))
    spec = importlib.util.spec_from_file_location("torch_models", os.path.join(root, "python", "tests",
                                                                                 "test_torch_frontend.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _models(tm):
    import torch
    import torchvision
    return [
        ("vit_b_16", lambda: torchvision.models.vit_b_16(weights=None), (1, 3, 224, 224)),
        ("resnet50", lambda: torchvision.models.resnet50(weights=None), (1, 3, 224, 224)),
        ("mobilenet_v3_large", lambda: torchvision.models.mobilenet_v3_large(weights=None), (1, 3, 224, 224)),
        ("llama block 1024/16q/4kv, seq 256", lambda: tm.LlamaBlock(), (1, 256, 1024)),
        ("llama block 4096/32q/8kv, seq 512", lambda: tm.LlamaBlock(4096, 32, 8, 11008, 512), (1, 512, 4096)),
    ]


def mib(b):
    return f"{b / 2**20:,.1f}"


def tables(ctx):
    tm = _setup(ctx)
    import torch
    import scratchplan as sp
    import scratchplan.torch as spt
    reps = max(1, getattr(ctx, "repetitions", 3) if not getattr(ctx, "quick", False) else 1)
    out = ["## PyTorch front end: models to LX plans (32 cores, fp16)", "",
           "Targets (issue 13): at least 95% of compute ops mapped (not opaque); trace + plan under 10 s per "
           "model on 2 cores; every plan passes the checker (lx.plan validates before returning). Compute "
           "ops are ATen ops that do arithmetic; folded rows are views (no op) and copies. Plan: "
           f"`sp.lx.plan(program, cores=32)` with its default 2 s search; times are medians of {reps} runs. "
           "Bounds (docs/lx.md): over every split, over the splits at the plan's core counts, and over every "
           "split of the plans no slower than ours (issue 15 section 3).", "",
           "| model | ATen ops | mapped | folded | opaque | compute mapped | program ops | trace + convert s | plan s "
           "| HBM MiB | all-HBM MiB | lower bound MiB | bound, plan's core counts MiB | bound, no slower plan MiB "
           "| est. time us |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    mem = []
    for name, make, shape in _models(tm):
        model = make()
        x = torch.empty(shape)
        tc, tp = [], []
        for _ in range(reps):
            t = time.perf_counter()
            program, report = spt.to_program(model, (x,), dtype="fp16", name=name.split()[0])
            tc.append(time.perf_counter() - t)
            t = time.perf_counter()
            plan = sp.lx.plan(program, cores=32)
            tp.append(time.perf_counter() - t)
        c = report.counts
        out.append(f"| {name} | {len(report.rows)} | {c['mapped']} | {c['folded']} | {c['opaque']} | "
                   f"{100 * report.mapped_fraction:.1f}% | {len(program['ops'])} | {statistics.median(tc):.2f} | "
                   f"{statistics.median(tp):.2f} | {mib(plan.hbm_bytes)} | {mib(plan.baseline_hbm_bytes)} | "
                   f"{mib(plan.lower_bound_hbm_bytes)} | {mib(plan.cores_lower_bound_hbm_bytes)} | "
                   f"{mib(plan.time_lower_bound_hbm_bytes)} | {plan.time_s * 1e6:,.1f} |")
        t = time.perf_counter()
        mp = spt.memory_plan(program)
        mem.append((name, mp, time.perf_counter() - t))
    out += ["", "## PyTorch front end: activation memory plans", "",
            "Targets (issue 13): within 1% of the max-load lower bound or proven, under 5 s per model. Every "
            "intermediate program tensor with its [producer, last use) lifetime in op order "
            "(`sp.torch.memory_plan`), packed by the allocation engine (`alloc --minimize`, auto solver); "
            "greedy-by-size is TFLite's arena planner rule; no reuse is the sum of sizes.", "",
            "| model | buffers | arena MiB | lower bound MiB | proven | gap | greedy-by-size MiB | no reuse MiB | solve s |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, mp, secs in mem:
        out.append(f"| {name} | {len(mp.buffers)} | {mib(mp.arena_bytes)} | {mib(mp.lower_bound)} | "
                   f"{'yes' if mp.proven else 'no'} | {100 * mp.gap:.2f}% | {mib(mp.greedy_by_size_bytes)} | "
                   f"{mib(mp.no_reuse_bytes)} | {secs:.2f} |")
    out += ["", *coverage(ctx)]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- coverage (issue 45)

def _coverage_models(root):
    """(group, name, factory, [(shape, dtype)], submodule): every classification, video and
    segmentation model of the installed torchvision (list_models), detection models' backbones,
    optical flow, and the language-model blocks of examples/llm_blocks.py."""
    import torchvision.models as M
    img = [((1, 3, 224, 224), "float32")]
    clip = [((1, 3, 16, 224, 224), "float32")]
    small_clip = [((1, 3, 16, 112, 112), "float32")]  # r3d / mc3 / r2plus1d: their 112 x 112 clips
    rows = []
    for n in M.list_models(module=M):
        rows.append(("classification", n, getattr(M, n), [((1, 3, 299, 299), "float32")] if n == "inception_v3" else img, None))
    for n in M.list_models(module=M.video):
        rows.append(("video", n, getattr(M.video, n), clip if n.startswith(("mvit", "s3d")) else small_clip, None))
    for n in M.list_models(module=M.segmentation):
        rows.append(("segmentation", n, getattr(M.segmentation, n), img, None))
    for n in M.list_models(module=M.detection):
        rows.append(("detection", n, getattr(M.detection, n), img, "backbone"))
        # The head that runs before the data-dependent part (the R-CNNs' second stage follows nms).
        rows.append(("detection", n, getattr(M.detection, n), img, "rpn.head" if "rcnn" in n else "head"))
    for n in M.list_models(module=M.optical_flow):
        rows.append(("optical flow", n, getattr(M.optical_flow, n), img + img, None))
    sys.path.insert(0, root)
    from examples import llm_blocks
    for n in llm_blocks.BLOCKS:
        rows.append(("language model", f"llm_blocks.{n}", getattr(llm_blocks, n), [((1, 128), "int64")], None))
    return rows


def _build(factory):
    """The CLI's construction (None for every weights* parameter), with tensors made on the meta
    device: a plan needs shapes only, and vit_h_14 or regnet_y_128gf would initialize 2.5 GB of
    weights first. Falls back to a normal build."""
    import warnings
    from scratchplan.torch.__main__ import _no_weights
    from scratchplan.torch._trace import _Rewrites
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with _Rewrites(True):
                return factory(**_no_weights(factory))
        except Exception:  # noqa: BLE001
            return factory(**_no_weights(factory))


def _opaque_text(report):
    """Opaque ATen ops grouped by op: count and reason (gathers marked as data movement)."""
    groups = {}
    for r in report.opaque():
        op = r.target.replace("aten.", "").split(".")[0]
        g = groups.setdefault(op, [0, r.reason, r.compute])
        g[0] += 1
    parts = []
    for op, (k, reason, compute) in sorted(groups.items()):
        reason = reason if len(reason) <= 90 else reason[:87] + "..."
        parts.append(f"`{op}` x{k}" + ("" if compute else " (data movement, not compute)") + f": {reason}")
    return "; ".join(parts).replace("|", "/") or "-"


def coverage(ctx):
    import gc
    import subprocess
    import tempfile
    import torch
    import scratchplan.torch as spt
    rows = _coverage_models(ctx.root)
    out = ["## PyTorch front end: coverage of torchvision and language-model blocks", "",
           "Issue 45: every classification, video and segmentation model of torchvision "
           f"{__import__('torchvision').__version__} (`torchvision.models.list_models`, weights=None), detection "
           "models with `--submodule backbone` and `--submodule head` (the R-CNNs' `rpn.head`; the head that runs "
           "before the data-dependent part), each converted with the inputs the model passes it, optical flow, and "
           "the language-model blocks of `examples/llm_blocks.py` (token ids `1,128:int64`). What the CLI does "
           "(`python3 -m scratchplan.torch MODULE:FACTORY --input ... --dtype fp16`), in one process; models are "
           "built with tensors on the meta device (shapes only). Target: at least 95 % of compute mapped; trace + "
           "convert and plan under 10 s each. `compute mapped` = mapped compute ops / compute ops (views, copies "
           "and gathers by index are not compute). Plan: `scratchplan plan PROGRAM --cores 32` (default 2 s "
           "search), wall time of the command. Inputs: 224 x 224 images (inception_v3 299), 16-frame clips "
           "(224 x 224 for mvit and s3d, 112 x 112 for the ResNet-3D models). Wall times on a shared 2-core "
           "machine (other builds running), one run each.", "",
           "| group | model | compute mapped | ATen ops | program ops | trace + convert s | plan s | opaque ATen ops (reason) |",
           "|---|---|---|---|---|---|---|---|"]
    met, total, misses = 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for group, name, factory, inputs, sub in rows:
            total += 1
            label = name + (f" `--submodule {sub}`" if sub else "")
            try:
                model = _build(factory)
                xs = tuple(torch.empty(s, dtype=getattr(torch, dt), device="meta") for s, dt in inputs)
                t = time.perf_counter()
                program, report = spt.to_program(model, xs, dtype="fp16", name=name, submodule=sub)
                secs = time.perf_counter() - t
            except Exception as e:  # noqa: BLE001 - a refused model is a row too
                out.append(f"| {group} | {label} | refused | - | - | - | - | {str(e).replace('|', '/')[:200]} |")
                misses.append(f"{name} (refused)")
                continue
            path = os.path.join(tmp, "p.json")
            with open(path, "w") as f:
                json.dump(program, f)
            t = time.perf_counter()
            r = subprocess.run([ctx.cli, "plan", path, "--cores", "32", "-o", os.path.join(tmp, "plan.json")],
                               capture_output=True, text=True)
            psecs = time.perf_counter() - t
            plan = f"{psecs:.2f}" if r.returncode == 0 else "failed: " + (r.stderr.strip().splitlines() or [""])[-1][:120]
            share = 100 * report.mapped_fraction
            if share >= 95.0:
                met += 1
            else:
                misses.append(f"{name} ({share:.1f} %)")
            if r.returncode == 0 and psecs >= 10:
                plan = f"**{plan}**"  # over the 10 s target
            conv = f"{secs:.2f}" if secs < 10 else f"**{secs:.2f}**"
            out.append(f"| {group} | {label} | {share:.1f}% | {len(report.rows)} | {len(program['ops'])} | {conv} | "
                       f"{plan} | {_opaque_text(report)} |")
            del model, program, report
            gc.collect()
    out += ["", f"{met} of {total} models at or above 95 % of compute mapped"
            + (f"; below or refused: {', '.join(misses)}." if misses else ".")]
    print(out[-1], file=sys.stderr)
    return out
