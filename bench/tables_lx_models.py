"""LX plans of real models (issue 44) for docs/benchmarks.md.

Every torchvision classification, video and segmentation model that converts (list_models,
weights=None; the coverage table's models and inputs, bench/tables_torch.py) and the language-model
blocks of examples/llm_blocks.py, converted as the CLI does and planned with
``scratchplan plan PROGRAM --cores N`` at N = 1, 8 and 32 (default 2 s limit). Per model and N:
HBM bytes, the three bounds, the estimated time and the plan's wall time; the ratio HBM / bound
over plans no slower (at 32 cores) and whether 32 cores plan slower than 8 or 1.

Converted programs are cached under build/release/lx_models/ (not in git; delete it to reconvert).
``--quick`` plans a subset (one model of each family).
"""
import gc
import json
import math
import os
import subprocess
import sys
import tempfile
import time

CORES = (1, 8, 32)
# One model per family for --quick (smoke runs); the full table takes every model.
QUICK = {"resnet18", "mobilenet_v2", "regnet_x_400mf", "efficientnet_b0", "squeezenet1_0", "mc3_18",
         "fcn_resnet50", "llm_blocks.t5", "llm_blocks.llama"}


def _torch_tables(root):
    import importlib.util
    spec = importlib.util.spec_from_file_location("tables_torch", os.path.join(root, "bench", "tables_torch.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _program(tt, cache, group, name, factory, inputs):
    """The converted program's path (cached), or an error string."""
    path = os.path.join(cache, name + ".json")
    if os.path.exists(path):
        return path
    fail = path + ".failed"
    if os.path.exists(fail):
        return open(fail).read()
    import torch
    import scratchplan.torch as spt
    try:
        model = tt._build(factory)
        xs = tuple(torch.empty(s, dtype=getattr(torch, dt), device="meta") for s, dt in inputs)
        program, _ = spt.to_program(model, xs, dtype="fp16", name=name)
    except Exception as e:  # noqa: BLE001 - a model that does not convert is listed, not planned
        msg = str(e).replace("|", "/").splitlines()[0][:160] if str(e) else type(e).__name__
        with open(fail, "w") as f:
            f.write(msg)
        return msg
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(program, f)
    os.replace(tmp, path)
    del model, program
    gc.collect()
    return path


def _plan(ctx, path, cores, tmp):
    out = os.path.join(tmp, "plan.json")
    t = time.perf_counter()
    r = subprocess.run([ctx.cli, "plan", path, "--cores", str(cores), "-o", out], capture_output=True, text=True)
    secs = time.perf_counter() - t
    if r.returncode != 0:
        return None, secs, (r.stderr.strip().splitlines() or [""])[-1][:160]
    with open(out) as f:
        plan = json.load(f)
    return plan, secs, None


def mb(b):
    return f"{b / 1e6:,.1f}"


def tables(ctx):
    sys.path.insert(0, os.path.join(ctx.root, "build", "release", "python"))
    tt = _torch_tables(ctx.root)
    cache = os.path.join(ctx.build, "lx_models")
    os.makedirs(cache, exist_ok=True)
    rows = [r for r in tt._coverage_models(ctx.root) if r[0] in ("classification", "video", "segmentation",
                                                                   "language model")]
    if ctx.quick:
        rows = [r for r in rows if r[1] in QUICK]
    head = ["## LX plans of real models", "",
            "Issue 44: every torchvision " f"{__import__('torchvision').__version__} classification, video and "
            "segmentation model that converts (`list_models`, weights=None, the inputs of the coverage table) and "
            "the blocks of `examples/llm_blocks.py`, converted in fp16 as `python3 -m scratchplan.torch` does and "
            "planned with `scratchplan plan PROGRAM --cores N` (default 2 s limit) at N = 1, 8 and 32. Per N: HBM "
            "MB of the plan / bound over every split / bound at the plan's core counts / bound over the plans no "
            "slower than ours (`time_lower_bound_hbm_bytes`), estimated time, and the plan's wall time "
            "(command end to end, shared 2-core machine). `HBM / time bound` is at 32 cores. `32 slower` names "
            "a smaller N whose plan is faster (target: never). Targets: plan under 2 s, geometric mean of "
            "HBM / time bound at most 1.6." + (" **Quick subset.**" if ctx.quick else ""), ""]
    cols = "| group | model | ops |" + "".join(f" {n} cores: HBM / bounds MB, est. µs, plan s |" for n in CORES) \
        + " HBM / time bound | 32 slower |"
    out = [cols, "|---|---|---:|" + "---|" * len(CORES) + "---:|---|"]
    ratios, slower, over_time, refused, failed = [], [], [], [], []
    worst_secs = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for group, name, factory, inputs, _ in rows:
            path = _program(tt, cache, group, name, factory, inputs)
            if not path.endswith(".json"):
                refused.append(f"{name} ({path})")
                continue
            with open(path) as f:
                nops = len(json.load(f)["ops"])
            cells, est = [], {}
            ratio = None
            for n in CORES:
                plan, secs, err = _plan(ctx, path, n, tmp)
                worst_secs = max(worst_secs, secs)
                if plan is None:
                    cells.append(f"failed: {err}")
                    failed.append(f"{name} at {n}")
                    continue
                t = plan["totals"]
                est[n] = t["estimated_time_us"]
                s = f"{secs:.2f}" if secs < 2 else f"**{secs:.2f}**"
                if secs >= 2:
                    over_time.append(f"{name} at {n} ({secs:.2f} s)")
                cells.append(f"{mb(t['hbm_bytes'])} / {mb(t['lower_bound_hbm_bytes'])} / "
                             f"{mb(t['cores_lower_bound_hbm_bytes'])} / {mb(t['time_lower_bound_hbm_bytes'])}, "
                             f"{t['estimated_time_us']:,.1f}, {s}")
                if n == CORES[-1]:
                    ratio = t["hbm_bytes"] / max(1, t["time_lower_bound_hbm_bytes"])
            faster = [n for n in CORES[:-1] if n in est and CORES[-1] in est and est[n] < est[CORES[-1]] - 1e-9]
            flag = ", ".join(f"**{n}: {est[n]:,.1f} µs**" for n in faster) or "no"
            if faster:
                slower.append(name)
            if ratio is not None:
                ratios.append(ratio)
            out.append(f"| {group} | {name} | {nops} | " + " | ".join(cells)
                       + f" | {'-' if ratio is None else f'{ratio:.2f}'} | {flag} |")
            print(f"{name}: {ratio}", file=sys.stderr, flush=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
    summary = [f"- models planned: {len(ratios)}; geometric mean of HBM / time bound at 32 cores: **{geo:.2f}** "
               f"(target ≤ 1.6); worst {max(ratios) if ratios else float('nan'):.2f}.",
               f"- 32 cores slower than a smaller count: {len(slower)}" + (f" ({', '.join(slower)})." if slower else "."),
               f"- plans over 2 s: {len(over_time)}" + (f" ({', '.join(over_time)})" if over_time else "")
               + f"; slowest {worst_secs:.2f} s.",
               f"- not converted: {len(refused)}" + (f" ({'; '.join(refused)})." if refused else "."),
               f"- plan failures: {len(failed)}" + (f" ({', '.join(failed)})." if failed else ".")]
    print("\n".join(summary), file=sys.stderr)
    return "\n".join(head + summary + [""] + out) + "\n"
