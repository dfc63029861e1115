"""AWS's production NKI kernel library (issue 55): does each direct-allocation kernel trace, check
clean and plan no slower than its own allocation, with the instructions traced and the times?
The library is not in the repository: give the folder holding `nkilib_src/` (the package's module
root, `src/` of aws-neuron/nki-library) as $SCRATCHPLAN_NKI_LIBRARY or
`python3 bench/tables_nki_library.py DIR`; without it the section says it was skipped.

Calls are upstream's own positive test rows (trn2; other parameters at their defaults), each at
the logical-core counts it is tested with."""
import json
import os
import subprocess
import sys
import time

L = "nkilib_src/nkilib/"
# (kernel, allocation helper, call arguments, logical cores)
CALLS = [
    ("core/mlp/mlp.py:mlp", "SbufManager stack + heap (TKG)",
     "--input hidden_tensor=1x1x256:bf16 --input gate_proj_weights_tensor=256x448:bf16 "
     "--input up_proj_weights_tensor=256x448:bf16 --input down_proj_weights_tensor=448x256:bf16 "
     "--arg activation_fn=ActFnType.SiLU --arg normalization_type=NormType.NO_NORM "
     "--arg quantization_type=QuantizationType.NONE --arg output_dtype=nl.bfloat16 --arg eps=1e-6", (1,)),
    ("core/attention/attention_cte.py:attention_cte", "ModularAllocator, PSUM address=",
     "--input q=1x128x128:bf16 --input k=1x128x128:bf16 --input v=1x128x128:bf16 --arg scale=1.0 "
     "--arg causal_mask=True --arg tp_q=False --arg tp_k=False --arg tp_out=True --arg sliding_window=0 "
     "--arg cache_softmax=False --arg softmax_dtype='float32' --arg mm_out_dtype='float32'", (1, 2)),
    ("core/mlp/mlp.py:mlp", "SbufManager, interleaved scopes (CTE)",
     "--input hidden_tensor=1x512x1024:bf16 --input gate_proj_weights_tensor=1024x448:bf16 "
     "--input up_proj_weights_tensor=1024x448:bf16 --input down_proj_weights_tensor=448x1024:bf16 "
     "--input normalization_weights_tensor=1x1024:bf16 --input fused_add_tensor=1x512x1024:bf16 "
     "--arg normalization_type=NormType.RMS_NORM --arg activation_fn=ActFnType.SiLU --arg eps=1e-6", (1, 2)),
    ("core/qkv/qkv.py:qkv", "SbufManager",
     "--input input=1x128x512:bf16 --input fused_qkv_weights=512x512:bf16 --input mlp_prev=1x128x512:bf16 "
     "--input attention_prev=1x128x512:bf16 --input gamma_norm_weights=1x512:bf16 --arg output_layout=QKVOutputLayout.BSD "
     "--arg fused_residual_add=True --arg fused_norm_type=NormType.RMS_NORM --arg norm_eps=1e-6 "
     "--arg use_auto_allocation=False --arg load_input_with_DMA_transpose=True", (1,)),
    ("experimental/conv/conv1d.py:conv1d", "SbufManager, interleaved scopes",
     "--input x_in=1x16x20:fp32 --input filters=3x16x32:fp32 --arg stride=1 --arg padding=(0,0) --arg dilation=1", (1, 2)),
    # Shapes of its docstring (attention [D, B, N, S], weight [N * D, H], bias [1, H]).
    ("core/output_projection/output_projection_tkg.py:output_projection_tkg", "mostly automatic (default mode)",
     "--input attention=128x1x2x4:bf16 --input weight=256x1024:bf16 --input bias=1x1024:bf16", (1, 2)),
    # Not from the README's list (our own shapes within the docstrings' usage); automatic allocation
    # in their default mode, so they measure tracing more than the checker.
    ("core/qkv/qkv.py:qkv", "automatic (TKG path, default mode)",
     "--input input=1x4x512:bf16 --input fused_qkv_weights=512x768:bf16 --input gamma_norm_weights=1x512:bf16 "
     "--arg fused_norm_type=NormType.RMS_NORM", (1, 2)),
    # The fused decode attention block and the decode megakernel built on it (SbufManager stack, auto
    # scopes and HBM working space), at shapes of the docstrings' usage (B * S_tkg * q_heads <= 128).
    ("experimental/transformer/attention_block_tkg.py:attention_block_tkg", "SbufManager (fused TKG block)",
     "--input X=4x2x1024:bf16 --arg X_hidden_dim_actual=None --arg rmsnorm_X_enabled=True --arg rmsnorm_X_eps=1e-6 "
     "--input rmsnorm_X_gamma=1x1024:bf16 --input W_qkv=1024x1280:bf16 --arg bias_qkv=None "
     "--arg quantization_type_qkv=QuantizationType.NONE --arg weight_dequant_scale_qkv=None "
     "--arg input_dequant_scale_qkv=None --arg rmsnorm_QK_pre_rope_enabled=True --arg rmsnorm_QK_pre_rope_eps=1e-6 "
     "--input rmsnorm_QK_pre_rope_W_Q=1x128:bf16 --input rmsnorm_QK_pre_rope_W_K=1x128:bf16 "
     "--input cos=64x4x2:bf16 --input sin=64x4x2:bf16 --arg rope_contiguous_layout=True "
     "--arg rmsnorm_QK_post_rope_enabled=False --arg rmsnorm_QK_post_rope_eps=1e-6 --arg rmsnorm_QK_post_rope_W_Q=None "
     "--arg rmsnorm_QK_post_rope_W_K=None --arg K_cache_transposed=False --arg active_blocks_table=None "
     "--input K_cache=4x512x128:bf16 --input V_cache=4x512x128:bf16 --input attention_mask=512x4x8x2:bf16 "
     "--arg sink=None --arg update_cache=True --input kv_cache_update_idx=4x1:uint32 --input W_out=1024x1024:bf16 "
     "--arg bias_out=None --arg quantization_type_out=QuantizationType.NONE --arg weight_dequant_scale_out=None "
     "--arg input_dequant_scale_out=None --arg transposed_out=False --arg out_in_sb=False", (1, 2)),
    ("experimental/transformer/transformer_tkg.py:transformer_tkg", "SbufManager, HBM working space (2 layers)",
     "--input X=1x1x512:bf16 --input W_qkvs=[512x256:bf16,512x256:bf16] --input W_outs=[128x512:bf16,128x512:bf16] "
     "--input W_gates=[512x448:bf16,512x448:bf16] --input W_ups=[512x448:bf16,512x448:bf16] "
     "--input W_downs=[448x512:bf16,448x512:bf16] --input W_gamma_qkvs=[1x512:bf16,1x512:bf16] "
     "--input W_gamma_mlps=[1x512:bf16,1x512:bf16] --input K_caches=[1x64x256:bf16,1x64x256:bf16] "
     "--input V_caches=[1x256x64:bf16,1x256x64:bf16] --input RoPE_cos=32x1x1:bf16 --input RoPE_sin=32x1x1:bf16 "
     "--input mask_cache=256x1x2x1:bf16 --input mask_active=1x1x2x1:bf16 --arg position_ids=None --arg num_layers=2",
     (1, 2)),
    ("core/moe_block/moe_block_tkg.py:moe_block_tkg", "mostly automatic (default mode)",
     "--input inp=1x4x512:bf16 --input gamma=1x512:bf16 --input router_weights=512x8:bf16 "
     "--input expert_gate_up_weights=8x512x2x256:bf16 --input expert_down_weights=8x256x512:bf16 --arg top_k=2", (2,)),
    # MoE backward (T 256, H 512, E 2, I_TP 128, 4 blocks of 128): HBM scratch shared by the cores.
    ("experimental/moe/bwd/blockwise_mm_backward.py:blockwise_mm_bwd", "SbufManager, HBM scratch between cores",
     "--input hidden_states=256x512:bf16 --input expert_affinities_masked=512x1:bf16 "
     "--input gate_up_proj_weight=2x512x2x128:bf16 --input down_proj_weight=2x128x512:bf16 "
     "--input gate_up_proj_act_checkpoint_T=4x2x128x128:bf16 --input down_proj_act_checkpoint=4x128x512:bf16 "
     "--input token_position_to_id=512:int32 --input block_to_expert=4x1:int32 "
     "--input output_hidden_states_grad=256x512:bf16 --arg block_size=128", (1, 2)),
]


def hardware_json(cli):
    """The tracer's hardware arguments as the CLI gives them for --hardware trn2: the C++ descriptions
    (src/nki builtin_hardware) through the extension beside the CLI, never numbers of our own."""
    sys.path.insert(0, os.path.join(os.path.dirname(cli), "python"))
    from scratchplan import _core
    return ["--hardware-json", _core.nki_builtin_hardware("trn2"), "--hardware-defaults",
            _core.nki_builtin_hardware("trn1")]


def split(call):
    out = []
    for a in call.split():
        out.append(a.replace("'", "") if a.startswith("--arg") is False and "='" not in a else a)
    return out


def count(body):
    return sum(count(n["body"]) * n["trip"] if "loop" in n else 1 for n in body)


def tables(ctx, lib=None):
    lib = lib or os.environ.get("SCRATCHPLAN_NKI_LIBRARY")
    head = ["## NKI front end on the production library", ""]
    if not lib or not os.path.isdir(os.path.join(lib, "nkilib_src")):
        return "\n".join(head + ["Skipped: the library is not part of the repository; set $SCRATCHPLAN_NKI_LIBRARY to the "
                                 "folder holding `nkilib_src/` to measure it.", ""])
    cli = os.environ.get("SCRATCHPLAN_CLI") or ctx.cli
    tracer = os.path.join(os.path.dirname(cli), "python", "scratchplan", "nki", "tracer.py")
    hw = hardware_json(cli)
    out = head + [
        "AWS's nki-library kernels (new NKI API, addresses computed in Python by `SbufManager` / `ModularAllocator`), "
        "called as upstream's positive tests call them, `--hardware trn2`, at each logical-core count they are tested "
        "with (`--lnc`: each core traced and checked on its own). *Traced*: instructions recorded (loops traced "
        "symbolically count their trips; at LNC 2 those of core 1, which may have no work at small shapes), wall "
        "seconds of the tracer alone (interpreter start included) and per "
        "instruction; *check*: `nki check` verdict; *plan*: `nki plan`'s simulated cycles against the kernel's own "
        "allocation on the same timeline (never slower: the plan keeps the kernel's allocation when the search does "
        "not beat it).", "",
        "| kernel | allocation | LNC | instructions traced | trace s | µs / instruction | check | planned cycles (core 0) | own allocation cycles | planned / own |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for spec, how, call, lncs in CALLS:
        args = split(call)
        for lnc in lncs:
            extra = ["--lnc", str(lnc)] if lnc > 1 else []
            t0 = time.perf_counter()
            tr = subprocess.run(["/usr/bin/python3", tracer, "trace", L + spec, *args, *hw]
                                + (["--lnc", str(lnc), "--core", str(lnc - 1)] if lnc > 1 else []),
                                capture_output=True, text=True, cwd=lib, timeout=900)
            ts = time.perf_counter() - t0
            n = count(json.loads(tr.stdout)["body"]) if tr.returncode == 0 else 0
            chk = subprocess.run([cli, "nki", "check", L + spec, *args, "--hardware", "trn2", *extra],
                                 capture_output=True, text=True, cwd=lib, timeout=900)
            verdict = "clean" if chk.returncode == 0 else (chk.stderr.strip().splitlines() or ["?"])[-1][:90]
            cyc = own = None
            by_planner = False
            if chk.returncode == 0:
                pl = subprocess.run([cli, "nki", "plan", L + spec, *args, "--hardware", "trn2", "--json", *extra],
                                    capture_output=True, text=True, cwd=lib, timeout=900)
                if pl.returncode == 0:
                    s = json.loads(pl.stdout)
                    s = s["cores"][0] if s.get("format") == "scratchplan-nki-plan-cores" else s  # core 0's plan
                    cyc, own = s["simulated_cycles"], s.get("input_allocation_cycles")
                    by_planner = s.get("input_compiler_placed_by_planner", False)
            per = f"{ts / n * 1e6:,.0f}" if n else "—"
            out.append(f"| `{spec}` | {how} | {lnc} | {n:,} | {ts:.2f} | {per} | {verdict} | "
                       + (f"{cyc:,} | " if cyc else "— | ")
                       + (f"{own:,}{' *' if by_planner else ''} | {cyc / own:.3f} |" if cyc and own else "— | — |"))
    out += ["", "Planned cycles are core 0's (`nki plan --lnc N` plans each core the same way). * the kernel "
            "leaves some SBUF/PSUM tensors to the compiler (no `address=`): its own allocation keeps its addressed "
            "tensors where it puts them and places the compiler-placed ones with our planner around them (the "
            "`--keep-direct` plan; the compiler's placement is not known). — : the kernel addresses no tensor with "
            "these arguments (the compiler places every one), so it has no allocation of its own to compare."]
    out += speed_rows(tracer)
    return "\n".join(out) + "\n"


SPEED_KERNEL = """import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def kernel(x, n=1000):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    b = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 2048))
    nisa.dma_copy(dst=a, src=x)
    for i in range(n):  # a new tensor at a computed address per iteration: unrolled, as the library's loops
        c = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf, address=(0, 4096 + 32 * (i % 7)))
        nisa.tensor_tensor(dst=b, data1=a, data2=a, op=nl.add)
        nisa.tensor_copy(dst=c, src=b[:, 0:8])
        nisa.tensor_copy(dst=a, src=b)
    nisa.dma_copy(dst=out, src=a)
    return out
"""


def speed_rows(tracer):
    """Tracing speed per instruction on a generated kernel of our own (the library's kernels at their
    test shapes are too small to measure it: the interpreter's start dominates)."""
    import tempfile
    rows = ["", "Tracing speed (issue 55 target: at most 10 µs per traced instruction), in-process `trace()` of a "
            "generated new-API kernel whose loop unrolls (three instructions and one address-placed tensor per "
            "iteration), wall seconds median of 3 and CPU seconds (process time) least of 3, which a loaded machine "
            "disturbs less:", "", "| iterations | instructions traced | wall s | µs / instruction | CPU µs / instruction |",
            "|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as d:
        k = os.path.join(d, "speed.py")
        with open(k, "w") as f:
            f.write(SPEED_KERNEL)
        code = ("import sys, time, json, os, types\n"
                "here = os.path.dirname(sys.argv[1])\n"
                "for n, p in (('scratchplan', os.path.dirname(here)), ('scratchplan.nki', here)):\n"
                "    m = types.ModuleType(n); m.__path__ = [p]; sys.modules[n] = m\n"
                "from scratchplan.nki.tracing import trace\n"
                "def cnt(b): return sum(cnt(x['body']) * x['trip'] if 'loop' in x else 1 for x in b)\n"
                "ts, cs = [], []\n"
                "for _ in range(3):\n"
                "    t, c = time.perf_counter(), time.process_time()\n"
                "    r = trace(sys.argv[2], '128x512:fp32', n=int(sys.argv[3]))\n"
                "    ts.append(time.perf_counter() - t); cs.append(time.process_time() - c)\n"
                "print(cnt(r['body']), sorted(ts)[1], min(cs))\n")
        for n in (1000, 10000, 30000):
            r = subprocess.run(["/usr/bin/python3", "-c", code, tracer, k, str(n)], capture_output=True, text=True,
                               timeout=900)
            c, sec, cpu = r.stdout.split()
            rows.append(f"| {n:,} | {int(c):,} | {float(sec):.2f} | {float(sec) / int(c) * 1e6:.0f} | "
                        f"{float(cpu) / int(c) * 1e6:.0f} |")
    return rows


if __name__ == "__main__":
    class _Ctx:
        cli = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "release", "scratchplan")
    print(tables(_Ctx(), sys.argv[1] if len(sys.argv) > 1 else None))
