"""Real public NKI kernels (issue 41): does each trace, check as its authors' tests say, and plan?
The kernels are not in the repository: give their folder (the layout of the shared
`nki/kernels/` material: direct/, auto/, README.md with the sources) as $SCRATCHPLAN_NKI_KERNELS
or `python3 bench/tables_nki_kernels.py DIR`; without it the section says it was skipped."""
import json
import os
import re
import subprocess
import sys
import tempfile

# (file, function, call, expected verdict, source key of the README's Sources table); calls as in
# the kernels' README (their upstream tests).
DIRECT = [
    ("allocated_fused_linear.py", "allocated_fused_rms_norm_qkv", "hidden=1x128x512:fp16 weights=512x512:fp16", "clean", "S"),
    ("allocated_fused_linear.py", "allocated_fused_rms_norm_qkv", "hidden=1x512x1024:bf16 weights=1024x384:bf16", "clean", "S"),
    ("allocated_fused_linear.py", "allocated_fused_rms_norm_qkv", "hidden=1x128x1024:bf16 weights=1024x512:bf16", "clean", "S"),
    ("allocated_fused_linear.py", "allocated_fused_rms_norm_qkv", "hidden=1x1024x8192:bf16 weights=8192x512:bf16", "clean", "S"),
    ("allocated_attention.py", "allocated_fused_self_attn_for_SD_small_head_size",
     "q_ref=1x128x4096:fp32 k_ref=1x128x4096:fp32 v_ref=1x4096x128:fp32", "clean", "S"),
    ("allocated_attention.py", "allocated_fused_self_attn_for_SD_small_head_size",
     "q_ref=1x128x4096:bf16 k_ref=1x128x4096:bf16 v_ref=1x4096x128:bf16", "clean", "S"),
    ("allocated_attention.py", "allocated_fused_self_attn_for_SD_small_head_size",
     "q_ref=1x128x5120:bf16 k_ref=1x128x5120:bf16 v_ref=1x5120x128:bf16", "clean", "S"),
    ("attention_fwd_performance_kernels.py", "attn_fwd_v9", "q=128x4096:bf16 k=128x4096:bf16 v=128x4096:bf16", "clean", "S"),
    ("attention_fwd_performance_kernels.py", "attn_fwd_v10", "q=128x4096:bf16 k=128x4096:bf16 v=128x4096:bf16", "clean", "S"),
    ("pipelined_attention.py", "flash_fwd", "q=1x128x16384:bf16 k=1x128x16384:bf16 v=1x16384x128:bf16 "
     "--arg softmax_scale=0.125 --arg use_causal_mask=False", "clean (unproven)", "S"),
    ("test_sbuf_modulo_alloc.py", "allocated_loop_transpose", "a_ptr=2048x1024:fp32 tp_ptr=1024x2048:fp32", "clean", "D"),
    ("test_psum_modulo_alloc.py", "allocated_loop_transpose", "a_ptr=2048x1024:fp32 tp_ptr=1024x2048:fp32", "clean", "D"),
    ("blockwise_mm.py", "blockwise_mm_baseline_allocated",
     "--arg block_size=512 hidden_states=4224x6144:bf16 expert_affinities_masked=67584x1:bf16 "
     "gate_up_proj_weight=16x6144x2x336:bf16 down_proj_weight=16x336x6144:bf16 token_position_to_id=4608:int32 "
     "block_to_expert=9x1:int32",
     "uncertain", "S"),
    # A shape that fits the stack (B 128): what the kernel's allocation does where it compiles.
    ("blockwise_mm.py", "blockwise_mm_baseline_allocated",
     "--arg block_size=128 hidden_states=4224x6144:bf16 expert_affinities_masked=67584x1:bf16 "
     "gate_up_proj_weight=16x6144x2x336:bf16 down_proj_weight=16x336x6144:bf16 token_position_to_id=1152:int32 "
     "block_to_expert=9x1:int32",
     "uncertain", "S"),
]
AUTO = [
    ("tensor_addition_nki_kernels.py", "nki_tensor_add_kernel_", "a_input=256x1024:fp16 b_input=256x1024:fp16 --grid 2x2", "S"),
    ("matrix_multiplication_nki_kernels.py", "nki_matmul_basic_", "lhsT=128x64:bf16 rhs=128x512:bf16", "S-"),
    ("matrix_multiplication_nki_kernels.py", "nki_matmul_fully_optimized_", "lhsT=1024x4096:bf16 rhs=1024x2048:bf16", "S-"),
    ("matrix_multiplication_nki_kernels_beta2.py", "nki_matmul_basic_", "lhsT=128x64:bf16 rhs=128x512:bf16", "SH"),
    ("matrix_multiplication_nki_kernels_beta2.py", "nki_matmul_tiled_", "lhsT=1024x4096:bf16 rhs=1024x2048:bf16", "SH"),
    ("matrix_multiplication_nki_kernels_beta2.py", "nki_matmul_fully_optimized_", "lhsT=1024x4096:bf16 rhs=1024x2048:bf16", "SH"),
    ("transpose2d_nki_kernels.py", "tensor_transpose2D_kernel_", "in_tensor=5x12:int8 --arg shape2D=(3,4)", "S"),
    ("layernorm_nki_kernel.py", "nki_layernorm_kernel_v1",
     "input_tensor=4096x8192:fp32 gamma_vector=8192:fp32 beta_vector=8192:fp32 --arg epsilon=1e-5", "S"),
    ("rmsnorm_nki_kernels.py", "nki_rmsnorm_kernel", "a_tensor=250x512:fp32 g_tensor=512:fp32", "S"),
    ("softmax_nki_kernels.py", "nki_softmax_kernel", "a_tensor=2x5:fp32", "S"),
    ("sd_attention_nki_kernels.py", "fused_self_attn_for_SD_small_head_size",
     "q_ref=4096x64:fp32 k_ref=4096x64:fp32 v_ref=4096x64:fp32", "S"),
    ("mamba_nki_kernels.py", "mamba_v1", "delta=1x256x512:fp32 u=1x256x512:fp32 A=256x16:fp32 B=1x16x512:fp32 C=1x16x512:fp32", "S"),
    ("average_pool2d_nki_kernels.py", "tensor_avgpool_kernel", "in_tensor=2x6x6:bf16 --arg pool_size=2", "S"),
    ("reference_attention.py", "flash_fwd", "q=1x1x128x4096:fp32 k=1x1x128x4096:fp32 v=1x1x4096x128:fp32 "
     "--grid 1x1 --arg seed=None", "S"),
    ("test_nki_memory_semantics.py", "simple_demo_kernel", "a_ptr=4x128x512:fp32", "D"),
]


def call_args(call):
    out, words = [], call.split()
    i = 0
    while i < len(words):
        if words[i] in ("--arg", "--grid"):
            out += words[i:i + 2]
            i += 2
        else:
            out += ["--input", words[i]]
            i += 1
    return out


def sources(readme):
    """Source key -> 'repository@commit' from the README's Sources table."""
    out = {}
    for m in re.finditer(r"^\| (S-|SH|S|D) \| ([\w./-]+) \| ([0-9a-f]{40})", readme, re.M):
        out[m.group(1)] = f"{m.group(2)}@{m.group(3)[:12]}"
    return out


def first_line(r):
    s = (r.stderr or r.stdout).strip().splitlines()
    return s[-1] if s else f"exit {r.returncode}"


def short(text, n=90):
    text = text.replace("|", "\\|")
    return text if len(text) <= n else text[:n - 1] + "…"


def tables(ctx, kernels=None):
    kernels = kernels or os.environ.get("SCRATCHPLAN_NKI_KERNELS")
    head = ["## NKI front end on real public kernels", ""]
    if not kernels or not os.path.isdir(os.path.join(kernels, "direct")):
        return "\n".join(head + ["Skipped: the kernels are not part of the repository; set $SCRATCHPLAN_NKI_KERNELS to "
                                 "their folder (direct/, auto/, README.md) to measure them.", ""])
    readme = open(os.path.join(kernels, "README.md"), encoding="utf-8").read()
    src = sources(readme)
    cli = os.environ.get("SCRATCHPLAN_CLI") or ctx.cli

    def run(args, cwd):
        return subprocess.run([cli, "nki", *args], capture_output=True, text=True, cwd=cwd, timeout=900)

    out = head + [
        "Each kernel of the shared real-kernel folder (AWS nki-samples and the Neuron SDK, MIT-0; not in this repository), "
        "called with the shapes of its README (its upstream tests). Direct allocation: `nki check` verdict against the "
        "public expectation, then `nki plan --rewrite`: the rewritten source must check clean, and its simulated cycles "
        "are compared with the kernel's own allocation on the same timeline (target: never slower). Automatic "
        "allocation: traced and planned.", "",
        "| kernel | source | call | traces | check | expected | rewrite checks clean | planned cycles | own allocation cycles | planned / own |",
        "|---|---|---|---|---|---|---|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for f, fn, call, expect, key in DIRECT:
            d = os.path.join(kernels, "direct")
            spec = f"{f}:{fn}"
            a = call_args(call)
            chk = run(["check", spec, *a], d)
            # A stack overflow is the compiler's verdict on the kernel (a compile error), not a tracer failure.
            overflow = "stack overflow" in chk.stderr
            traced = chk.returncode == 0 or "violation" in chk.stderr or overflow
            verdict = "clean" if chk.returncode == 0 else (short(first_line(chk), 70) if traced else "—")
            if overflow:
                verdict = "stack overflow on sbuf (compile error; docs/nki.md)"
            row = [f"`{spec}`", src.get(key, key), f"`{short(call, 60)}`", "yes" if traced else short(first_line(chk)),
                   verdict, expect]
            if traced and not overflow:
                out_py = os.path.join(tmp, f"planned_{f}")
                pl = run(["plan", spec, *a, "--json", "--rewrite", out_py], d)
                if pl.returncode == 0:
                    s = json.loads(pl.stdout)
                    rc = run(["check", out_py + ":" + fn, *a], d)
                    own = s.get("input_allocation_cycles")
                    row += ["yes" if rc.returncode == 0 else short(first_line(rc), 60), f"{s['simulated_cycles']:,}",
                            f"{own:,}" if own else "—",
                            f"{s['simulated_cycles'] / own:.3f}" if own else "—"]
                else:  # not rewritable (e.g. tensors from calls without a declaration): the plan alone
                    pj = run(["plan", spec, *a, "--json"], d)
                    s = json.loads(pj.stdout) if pj.returncode == 0 else {}
                    own = s.get("input_allocation_cycles")
                    row += ["not rewritten: " + short(first_line(pl), 70),
                            f"{s['simulated_cycles']:,}" if s else short(first_line(pj), 40),
                            f"{own:,}" if own else "—", f"{s['simulated_cycles'] / own:.3f}" if s and own else "—"]
            else:
                row += ["—", "—", "—", "—"]
            out.append("| " + " | ".join(row) + " |")
        out += ["", "| kernel (automatic allocation) | source | call | traces | plans | planned cycles | all single-buffered |",
                "|---|---|---|---|---|---:|---:|"]
        for f, fn, call, key in AUTO:
            d = os.path.join(kernels, "auto")
            spec = f"{f}:{fn}"
            a = call_args(call)
            pl = run(["plan", spec, *a, "--json"], d)
            if pl.returncode == 0:
                s = json.loads(pl.stdout)
                row = ["yes", "yes", f"{s['simulated_cycles']:,}", f"{s['single_buffered_cycles']:,}"]
            else:
                chk = run(["check", spec, *a], d)
                traced = chk.returncode == 0 or "violation" in chk.stderr
                row = ["yes" if traced else short(first_line(chk)), short(first_line(pl), 80), "—", "—"]
            out.append(f"| `{spec}` | {src.get(key, key)} | `{short(call, 60)}` | " + " | ".join(row) + " |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    class _Ctx:
        cli = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "release", "scratchplan")
    print(tables(_Ctx(), sys.argv[1] if len(sys.argv) > 1 else None))
