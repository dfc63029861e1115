"""scratchplan.torch: real models traced, converted, planned and memory-planned (issue 13)."""
import concurrent.futures
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import scratchplan as sp  # noqa: E402
import scratchplan.torch as spt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("SCRATCHPLAN_CLI", os.path.join(HERE, "..", "..", "build", "release", "scratchplan"))


# ------------------------------------------------------------------ a Llama-style decoder block

def _llm_blocks():
    # The repository's language-model blocks (examples/llm_blocks.py): their RMSNorm and rotary
    # helper are the ones this block uses.
    import importlib.util
    path = os.path.join(HERE, "..", "..", "examples", "llm_blocks.py")
    spec = importlib.util.spec_from_file_location("scratchplan_examples_llm_blocks", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_BLOCKS = _llm_blocks()
RMSNorm = _BLOCKS.RMSNorm
rotate_half = _BLOCKS.rotate_half


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads, seq):
        super().__init__()
        self.h, self.kvh, self.d = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, heads * self.d, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(heads * self.d, dim, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.d, 2).float() / self.d))
        freqs = torch.outer(torch.arange(seq).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kvh, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kvh, self.d).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        rep = self.h // self.kvh
        k = k[:, :, None].expand(b, self.kvh, rep, s, self.d).reshape(b, self.h, s, self.d)
        v = v[:, :, None].expand(b, self.kvh, rep, s, self.d).reshape(b, self.h, s, self.d)
        att = (q @ k.transpose(-2, -1)) / (self.d ** 0.5)
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, self.h * self.d)
        return self.o_proj(y)


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, dim=1024, heads=16, kv_heads=4, hidden=2816, seq=256):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = Attention(dim, heads, kv_heads, seq)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = MLP(dim, hidden)

    def forward(self, x):
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


def _models():
    return {
        "llama_block": (lambda: LlamaBlock(), (1, 256, 1024)),
        "resnet50": (lambda: torchvision.models.resnet50(weights=None), (1, 3, 224, 224)),
        "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(weights=None), (1, 3, 224, 224)),
        "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), (1, 3, 224, 224)),
    }


@pytest.fixture(scope="module", params=list(_models()))
def converted(request):
    make, shape = _models()[request.param]
    model = make()
    x = torch.empty(shape)
    program, report = spt.to_program(model, (x,), dtype="fp16", name=request.param)
    return request.param, model, x, program, report


def test_models_convert_with_every_compute_op_mapped(converted):
    name, _, _, program, report = converted
    c = report.counts
    assert sum(c.values()) == len(report.rows) > 0
    assert report.mapped_fraction >= 0.95, report.text()
    for r in report.rows:
        assert r.decision in ("mapped", "folded", "opaque") and r.reason, r
        assert r.target.startswith("aten.") or r.target == "output", r
    # every emitted program op comes from some row: nothing appears from nowhere
    emitted = [o for r in report.rows for o in r.ops]
    assert sorted(emitted) == sorted(op["name"] for op in program["ops"])
    assert all(t["dtype"] in ("fp16", "int64", "bool") for t in program["tensors"])
    # it is a valid program for the C++ reader
    p = sp.program.load(program)
    assert p.num_ops == len(program["ops"])


def test_models_plan_on_32_cores(converted):
    name, model, x, program, report = converted
    plan = sp.lx.plan(program, cores=32, time_limit=0.3)
    d = plan.to_dict()
    assert plan.hbm_bytes <= plan.baseline_hbm_bytes
    assert plan.lower_bound_hbm_bytes <= plan.hbm_bytes
    assert plan.time_s > 0
    assert d["ops"] and d["buffers"] is not None


def test_models_cli_plan_and_divide(converted, tmp_path):
    if not os.path.exists(CLI):
        pytest.skip("scratchplan CLI not built")
    name, _, _, program, _ = converted
    path = tmp_path / f"{name}.program.json"
    path.write_text(json.dumps(program))
    for verb in ("plan", "divide"):
        r = subprocess.run([CLI, verb, str(path), "--cores", "32"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (verb, r.stderr)


def test_models_memory_plan(converted, tmp_path):
    name, _, _, program, _ = converted
    mp = spt.memory_plan(program, time_limit=1.0)
    assert mp.lower_bound >= mp.max_load > 0
    assert mp.lower_bound <= mp.arena_bytes <= mp.no_reuse_bytes
    assert mp.proven or mp.arena_bytes <= 1.01 * mp.lower_bound, mp
    assert mp.greedy_by_size_bytes >= mp.lower_bound
    csv = tmp_path / "acts.csv"
    text = mp.to_csv(str(csv))
    assert csv.read_text() == text
    lines = text.strip().splitlines()
    assert lines[0] == "id,lower,upper,size" and len(lines) == len(mp.buffers) + 1
    # the CSV is valid alloc input and gives the same lower bound
    r = sp.alloc.alloc(str(csv), minimize=True, time_limit=1.0)
    assert r.lower_bound == mp.lower_bound


# ------------------------------------------------------------------ small exact cases

def test_conv_is_exact_affine_sum_and_divides_on_channels():
    m = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
    program, report = spt.to_program(m, (torch.empty(1, 16, 32, 32),))
    conv = [op for op in program["ops"] if op["payload"] == "conv2d"][0]
    assert conv["kind"] == "reduction"
    # batch 1 reads index 0; d0 = out channels, d1/d2 = out rows/cols, d3 = in channels, d4/d5 = window
    assert conv["indexing_maps"][0].endswith("(0, d3, d1 * 2 + d4, d2 * 2 + d5)"), conv
    pad = [op for op in program["ops"] if op["payload"] == "pad"][0]
    assert pad["indexing_maps"][1].endswith("d1 + 1, d2 + 1)"), pad
    d = sp.workdiv.divide(program, cores=32).to_dict()
    cv = [o for o in d["ops"] if o["op"] == conv["name"]][0]
    splits = {v["name"]: v["split"] for v in cv["vars"]}
    assert splits["d1"] == splits["d2"] == splits["d4"] == splits["d5"] == 1
    assert cv["cores"] > 1


def test_conv_filters_are_sticked_on_their_input_channels():
    # A 3x3 filter with more input channels than its width is laid out channels last (the default
    # would stick it on its width, 3 of 64 elements); a 1x1 and a depthwise filter keep the default.
    m = nn.Sequential(nn.Conv2d(64, 32, 3, padding=1), nn.Conv2d(32, 32, 1), nn.Conv2d(32, 32, 3, padding=1, groups=32))
    program, _ = spt.to_program(m, (torch.empty(1, 64, 16, 16),), dtype="fp16")
    orders = {t["name"]: t.get("dim_order") for t in program["tensors"]}
    assert orders["0.weight"] == [0, 2, 3, 1]
    assert orders["1.weight"] is None and orders["2.weight"] is None
    plan = sp.lx.plan(program, cores=32).to_dict()
    assert not [i for i in plan["layout_issues"] if i["tensor"] == "0.weight"]
    w = [b for b in plan["buffers"] if b["tensor"] == "0.weight"][0]
    assert w["bytes"] == 32 * 3 * 3 * 64 * 2  # 64 channels fill a stick: no padding (default: 21 times)


def test_views_fold_and_merges_write_through_the_producer():
    class M(nn.Module):
        def forward(self, x):
            y = (x * 2).permute(0, 2, 1)            # folded into the consumer's map
            z = y.reshape(4, 6 * 8)                 # merge of a permuted view: one copy op
            return z[:, 8:40] + 1                   # slice: offset in the map

    program, report = spt.to_program(M(), (torch.empty(4, 8, 6),))
    kinds = [op["payload"] for op in program["ops"]]
    assert kinds == ["mul", "copy", "add"], kinds
    assert program["ops"][2]["indexing_maps"][0].endswith("(d0, d1 + 8)")
    decisions = {r.target: r.decision for r in report.rows}
    assert decisions["aten.permute.default"] == "folded"
    rows = report.to_list()
    assert len(rows) == len(report.rows) and rows[0]["decision"] == "mapped" and "mapped" in str(report)
    sp.program.load(program)


def test_unknown_op_is_opaque_with_reason():
    class M(nn.Module):
        def forward(self, x):
            return torch.sort(x, dim=-1)[0] + 1

    program, report = spt.to_program(M(), (torch.empty(8, 16),))
    opq = report.opaque()
    assert len(opq) == 1 and "aten.sort" in opq[0].target and opq[0].reason
    assert any(op["kind"] == "opaque" for op in program["ops"])
    sp.program.load(program)


def test_embedding_is_an_opaque_gather():
    m = nn.Sequential(nn.Embedding(100, 32), nn.Linear(32, 8))
    program, report = spt.to_program(m, (torch.zeros(2, 5, dtype=torch.long),))
    emb = [r for r in report.rows if r.target.startswith("aten.embedding")]
    assert len(emb) == 1 and emb[0].decision == "opaque" and "gather" in emb[0].reason
    assert emb[0].module == "0"
    gather = [op for op in program["ops"] if op["payload"] == "gather"][0]
    assert gather["kind"] == "opaque" and "indexing_maps" not in gather
    assert [t["dtype"] for t in program["tensors"] if t["name"] == "input"] == ["int64"]
    sp.program.load(program)


def test_clone_then_in_place_keeps_the_source():
    class M(nn.Module):
        def forward(self, x):
            y = x.relu()
            z = y.clone()
            z.add_(1)
            return y * z

    program, report = spt.to_program(M(), (torch.empty(4, 8),))
    payloads = [op["payload"] for op in program["ops"]]
    assert payloads == ["relu", "copy", "add", "mul"], payloads
    mul = program["ops"][-1]
    assert mul["inputs"][0] == program["ops"][0]["outputs"][0]  # y is the relu output, not the mutated copy


def test_in_place_on_disjoint_views_writes_new_tensors():
    class M(nn.Module):
        def forward(self, x):
            a, b = (x * 2).chunk(2, 1)
            a.sigmoid_()
            b.tanh_()
            return a * b

    program, report = spt.to_program(M(), (torch.empty(4, 8),))
    assert report.counts["opaque"] == 0
    assert [op["payload"] for op in program["ops"]] == ["mul", "sigmoid", "tanh", "mul"]
    ops = {op["payload"]: op for op in program["ops"][:3]}
    last = program["ops"][-1]
    assert last["inputs"] == [ops["sigmoid"]["outputs"][0], ops["tanh"]["outputs"][0]]  # the updated halves
    assert ops["sigmoid"]["indexing_maps"][0] == "(d0, d1) -> (d0, d1)"
    assert ops["tanh"]["indexing_maps"][0] == "(d0, d1) -> (d0, d1 + 4)"
    sp.program.load(program)


def test_in_place_on_a_view_that_is_read_again_stays_opaque():
    class M(nn.Module):
        def forward(self, x):
            y = x * 2
            y[:, :3].add_(1)  # y is read below: a partial update of it
            return y + 1

    program, report = spt.to_program(M(), (torch.empty(4, 8),))
    add = [r for r in report.rows if r.target.startswith("aten.add_")]
    assert len(add) == 1 and add[0].decision == "opaque" and "partial update" in add[0].reason
    sp.program.load(program)


def test_unrolled_lstm_and_gru_cells_map_every_op():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTMCell(16, 32)
            self.gru = nn.GRUCell(32, 32)

        def forward(self, x):
            h, c, g = torch.zeros(2, 32), torch.zeros(2, 32), torch.zeros(2, 32)  # created on no device
            for t in range(x.shape[1]):
                h, c = self.lstm(x[:, t], (h, c))
                g = self.gru(h, g)
            return g

    program, report = spt.to_program(M(), (torch.empty(2, 3, 16),))
    assert report.counts["opaque"] == 0, [(r.target, r.reason) for r in report.rows if r.decision == "opaque"]
    assert sum(1 for op in program["ops"] if op["payload"] == "sigmoid") == 3 * 3 + 3 * 2  # 3 gates, 2 gates a step
    sp.lx.plan(program, cores=4)


def test_values_of_tensors_made_in_forward_can_be_read():
    # The factories go to meta only on a second trace, after a device clash: values read in
    # Python (a CPU tensor's .tolist()) still work when nothing clashes.
    class M(nn.Module):
        def forward(self, x):
            return x * len(torch.arange(3).tolist())

    program, report = spt.to_program(M(), (torch.empty(2, 4),))
    assert [op["payload"] for op in program["ops"]] == ["mul"]


def test_recurrent_modules_are_unrolled():
    # Issue 57 (was refused): the fused kernel becomes its cell arithmetic, every op mapped
    # (test_torch_recurrent.py checks the values against PyTorch).
    program, report = spt.to_program(_Seq(rnn=nn.LSTM(8, 8)), (torch.empty(2, 3, 8),))
    assert report.mapped_fraction == 1.0 and not report.opaque(), report.text()
    assert sum(op["payload"] == "sigmoid" for op in program["ops"]) == 3 * 2


class _Seq(nn.Module):
    def __init__(self, **mods):
        super().__init__()
        for k, m in mods.items():
            self.add_module(k, m)

    def forward(self, x):
        return self.rnn(x)[0]


def test_padding_a_size_one_dim_keeps_an_iteration_variable():
    # A 3-D convolution whose time dim is 1 before padding (r3d_18's last stage), and F.pad of a
    # size-1 dim: the padded output dim is iterated, not indexed by a constant.
    conv = nn.Conv3d(8, 8, 3, padding=1)
    program, report = spt.to_program(conv, (torch.empty(1, 8, 1, 6, 6),))
    pad = [op for op in program["ops"] if op["payload"] == "pad"][0]
    assert pad["ranges"] == [8, 1, 6, 6] and pad["indexing_maps"][1] == "(d0, d1, d2, d3) -> (0, d0, d1 + 1, d2 + 1, d3 + 1)"
    sp.lx.plan(program, cores=4)

    class P(nn.Module):
        def forward(self, x):
            return F.pad(x, (1, 1, 1, 1)) * 2

    program, report = spt.to_program(P(), (torch.empty(3, 1, 1),))
    sp.lx.plan(program, cores=2)


def test_group_norm_glu_and_prelu_are_mapped():
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(4, 8), nn.PReLU(8), nn.Conv2d(8, 8, 1))

    class Glu(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = m

        def forward(self, x):
            return F.glu(self.body(x), dim=1)

    program, report = spt.to_program(Glu(), (torch.empty(2, 3, 8, 8),))
    assert report.counts["opaque"] == 0, [(r.target, r.reason) for r in report.opaque()]
    payloads = [op["payload"] for op in program["ops"]]
    assert payloads.count("mean") == 1 and "mean_square" in payloads and "prelu" in payloads
    gn = [op for op in program["ops"] if op["payload"] == "mean"][0]
    assert gn["ranges"] == [2, 4, 2, 8, 8]  # [N, G, C / G, H, W]: statistics per (n, group)
    glu = [op for op in program["ops"] if op["payload"] == "mul_sigmoid"][0]
    assert glu["indexing_maps"][:2] == ["(d0, d1, d2, d3) -> (d0, d1, d2, d3)", "(d0, d1, d2, d3) -> (d0, d1 + 4, d2, d3)"]
    sp.lx.plan(program, cores=4)


def test_nearest_upsampling_and_pixel_shuffle_are_copies_with_summed_output_maps():
    class M(nn.Module):
        def forward(self, x):
            up = F.interpolate(x, scale_factor=(2, 3), mode="nearest")
            frac = F.interpolate(x, size=(7, 7), mode="nearest")  # a fractional factor: opaque
            return up.sum(), frac.sum(), F.pixel_shuffle(x, 2) + 1

    program, report = spt.to_program(M(), (torch.empty(1, 8, 5, 6),))
    copies = [op for op in program["ops"] if op["payload"] == "copy"]
    assert copies[0]["indexing_maps"][1] == "(d0, d1, d2, d3, d4) -> (0, d0, d1 * 2 + d3, d2 * 3 + d4)"
    assert copies[0]["ranges"] == [8, 5, 6, 2, 3]
    # pixel shuffle: out[c, 2h + i, 2w + j] = in[4c + 2i + j, h, w]
    assert copies[1]["indexing_maps"] == ["(d0, d1, d2, d3, d4) -> (0, d0 * 4 + d1 * 2 + d2, d3, d4)",
                                          "(d0, d1, d2, d3, d4) -> (0, d0, d1 + d3 * 2, d2 + d4 * 2)"]
    assert [r.decision for r in report.rows if "upsample" in r.target] == ["mapped", "opaque"]
    sp.lx.plan(program, cores=4)


def test_constants_made_in_forward_are_folded():
    # swin's shifted-window mask: a zeros tensor whose slices are set to region numbers, then
    # differences and a masked_fill, all on constants: one graph input, no op, nothing opaque.
    class M(nn.Module):
        def forward(self, x):
            mask = x.new_zeros((1, 8, 8))
            mask[:, :4, :] = 1
            mask[:, 4:, 4:] = 2
            diff = mask.reshape(1, 64).unsqueeze(1) - mask.reshape(1, 64).unsqueeze(2)
            bias = diff.masked_fill(diff != 0, -100.0)
            return (x + bias).softmax(-1)

    program, report = spt.to_program(M(), (torch.empty(2, 64, 64),))
    assert report.counts["opaque"] == 0, [(r.target, r.reason) for r in report.opaque()]
    assert [op["payload"] for op in program["ops"]][:1] == ["add"]
    consts = [t for t in program["tensors"] if t.get("graph_input") and t["name"] != "input"]
    assert len(consts) == 1 and consts[0]["shape"] == [1, 64, 64]
    sp.lx.plan(program, cores=4)


def test_weight_only_subgraphs_are_folded():
    # swin's relative position bias: a parameter table gathered by a constant index buffer (v2
    # first runs an MLP over a constant coordinate table). Computed once when the model is loaded:
    # constant graph inputs, no op. Ops that read an activation stay ops.
    class Bias(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Parameter(torch.zeros(9, 2))
            self.register_buffer("index", torch.zeros(16, dtype=torch.long))
            self.register_buffer("coords", torch.zeros(9, 2))
            self.mlp = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))

        def forward(self, attn):
            t = self.table + self.mlp(self.coords)
            bias = t[self.index].view(4, 4, 2).permute(2, 0, 1).contiguous()
            return (attn + bias.unsqueeze(0)).softmax(-1)

    program, report = spt.to_program(Bias(), (torch.empty(3, 2, 4, 4),))
    assert report.counts["opaque"] == 0, [(r.target, r.reason) for r in report.opaque()]
    assert [op["payload"] for op in program["ops"]][0] == "add"  # the first op reads the activation
    assert all("matmul" != op["kind"] for op in program["ops"])
    folded = [r for r in report.rows if "computed once when the model is loaded" in r.reason]
    assert {r.target.split(".")[1] for r in folded} >= {"index", "addmm", "relu", "add"}
    sp.lx.plan(program, cores=4)


def test_arguments_nest_tensors_and_pass_plain_values():
    class M(nn.Module):
        def forward(self, d, pair, steps: int, mode="scale"):
            y = d["a"] + pair[0] * pair[1]
            return y * steps if mode == "scale" else y

    program, report = spt.to_program(M(), ({"a": torch.empty(2, 3)}, (torch.empty(2, 3), torch.empty(1, 3)), 4))
    assert [op["payload"] for op in program["ops"]] == ["mul", "add", "mul"]
    assert sorted(t["name"] for t in program["tensors"] if t.get("graph_input")) == ["input0", "input1", "input2"]
    with pytest.raises(sp.BadInput, match="argument leaf 1 is a object"):
        spt.to_program(M(), (torch.empty(2), object()))


def test_tensors_without_elements():
    # Issue 57: a tensor without elements is legal and dropped: a model on nothing but an empty
    # input performs no op (bad input, one line); an op's empty side output is dropped.
    with pytest.raises(sp.BadInput, match=r"performs no tensor op"):
        spt.to_program(nn.ReLU(), (torch.empty(0, 4),))
    program, report = spt.to_program(nn.EmbeddingBag(100, 16, mode="mean"), (torch.zeros(2, 5, dtype=torch.long),))
    assert all(all(d > 0 for d in t["shape"]) for t in program["tensors"])
    sp.lx.plan(program, cores=2)


def test_binary_max_where_and_two_inputs_are_pointwise():
    class M(nn.Module):
        def forward(self, x, y):
            return torch.max(x, y) + torch.where(x > y, x, y)

    program, report = spt.to_program(M(), (torch.empty(4, 8), torch.empty(1, 8)))
    assert report.counts["opaque"] == 0
    assert [op["payload"] for op in program["ops"]] == ["maximum", "gt", "where", "add"]
    assert {t["name"] for t in program["tensors"] if t.get("graph_input")} == {"input0", "input1"}
    assert program["ops"][0]["indexing_maps"][1] == "(d0, d1) -> (0, d1)"  # y broadcast over rows
    sp.program.load(program)


def test_copy_into_a_whole_tensor_reads_only_the_source():
    class M(nn.Module):
        def forward(self, x):
            buf = x.new_zeros(4, 8)
            buf.copy_(x.relu())
            return buf + 1

    program, report = spt.to_program(M(), (torch.empty(4, 8),))
    assert [op["payload"] for op in program["ops"]] == ["relu", "copy", "add"]
    assert program["ops"][1]["inputs"] == [program["ops"][0]["outputs"][0]]
    assert program["ops"][2]["inputs"] == program["ops"][1]["outputs"]


def test_data_dependent_control_flow_names_the_module():
    class Gate(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(4, 4), Gate())

        def forward(self, x):
            return self.inner(x)

    with pytest.raises(spt.UnsupportedModel) as e:
        spt.to_program(M(), (torch.empty(2, 4),))
    msg = str(e.value)
    assert "inner.1" in msg and "\n" not in msg
    assert isinstance(e.value, sp.BadInput)


def test_bad_arguments_are_bad_input():
    with pytest.raises(sp.BadInput):
        spt.to_program("not a model", (torch.empty(1),))
    with pytest.raises(sp.BadInput):
        spt.to_program(nn.ReLU(), (torch.empty(2),), dtype="fp7")


def test_plan_returns_checked_lx_plan_with_program():
    p = spt.plan(LlamaBlock(dim=256, heads=4, kv_heads=2, hidden=512, seq=64), (torch.empty(1, 64, 256),),
                 cores=32, dtype="fp16", time_limit=0.3)
    assert isinstance(p, sp.lx.Plan)
    assert p.program["ops"] and p.torch_report.mapped_fraction >= 0.95
    assert "HBM" in p.summary()
    assert p.report() and p.svg().lstrip().startswith("<")


def test_cli_module_form(tmp_path):
    out = tmp_path / "m.program.json"
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "scratchplan.torch", "torch.nn:Linear", "--input", "2,3"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "building the model failed" in r.stderr
    r = subprocess.run([sys.executable, "-m", "scratchplan.torch", "torchvision.models:squeezenet1_0", "--input",
                        "1,3,64,64", "--dtype", "fp16", "-o", str(out)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert sp.program.load(str(out)).num_ops > 0
    r = subprocess.run([sys.executable, "-m", "scratchplan.torch", "torchvision.models:nope", "--input", "1,3"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "nope" in r.stderr


def test_cli_help_is_plain_text():
    # --help is read in a terminal: no reStructuredText markup (it showed ``...`` from the docstring).
    r = subprocess.run([sys.executable, "-m", "scratchplan.torch", "--help"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "`" not in r.stdout, r.stdout
    text = " ".join(r.stdout.split())  # argparse wraps lines
    assert "usage: python3 -m scratchplan.torch" in text and "scratchplan plan model.program.json" in text


# ------------------------------------------------------------------ sweep

def _plan_cores(cfg):
    return cfg["cores"], sp.lx.plan(sp.program.example(cfg["program"]), cores=cfg["cores"], time_limit=0.1).hbm_bytes


CONFIGS = [{"program": "mlp", "cores": c} for c in (1, 8, 32)]


def test_sweep_serial_and_process_pool():
    serial = sp.sweep(_plan_cores, CONFIGS)
    assert [c for c, _ in serial] == [1, 8, 32]
    with concurrent.futures.ProcessPoolExecutor(2) as ex:
        assert sp.sweep(_plan_cores, CONFIGS, executor=ex) == serial


def test_sweep_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    # An in-process LocalCluster (processes=False): the same sweep code runs on a remote cluster.
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        res = sp.sweep(_plan_cores, CONFIGS, executor=client.get_executor())
    assert res == sp.sweep(_plan_cores, CONFIGS)


# ------------------------------------------------------------------ the maps compute the model

def _evaluate(program, values):
    """Runs a program with numpy by its indexing maps (payloads without scalar operands only):
    an independent check that views, reshapes, slices, conv and matmul maps are exact."""
    import numpy as np
    from scratchplan.torch._convert import _parse_results

    shapes = {t["name"]: t["shape"] for t in program["tensors"]}
    env = {k: np.asarray(v, dtype=np.float64) for k, v in values.items()}
    for op in program["ops"]:
        ranges = op["ranges"]
        idx = np.indices(ranges).reshape(len(ranges), -1)

        def coords(text):
            out = []
            for e, off in _parse_results(text.split(" -> ")[1]):
                c = np.full(idx.shape[1], off, dtype=np.int64)
                for v, k in e.items():
                    c = c + k * idx[v]
                out.append(c)
            return tuple(out)
        ins = [env[n][coords(m)] for n, m in zip(op["inputs"], op["indexing_maps"])]
        name = op["outputs"][0]
        where = coords(op["indexing_maps"][len(op["inputs"])])
        pay = op["payload"]
        if pay == "pad_neg_inf":
            out = np.full(shapes[name], -np.inf)
            out[where] = ins[0]
        elif pay == "avg_pool2d":
            out, cnt = np.zeros(shapes[name]), np.zeros(shapes[name])
            np.add.at(out, where, ins[0])
            np.add.at(cnt, where, 1.0)
            out = out / cnt
        elif op["kind"] == "pointwise":
            fn = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
                  "sub": lambda a, b: a - b, "relu": lambda a: np.maximum(a, 0), "copy": lambda a: a,
                  "pad": lambda a: a, "sub_exp": lambda a, b: np.exp(a - b)}[pay]
            out = np.zeros(shapes[name])
            out[where] = fn(*ins)
        elif pay in ("matmul", "conv2d"):
            out = np.zeros(shapes[name])
            np.add.at(out, where, ins[0] * ins[1])
        elif pay == "sum":
            out = np.zeros(shapes[name])
            np.add.at(out, where, ins[0])
        elif pay in ("max", "max_pool2d"):
            out = np.full(shapes[name], -np.inf)
            np.maximum.at(out, where, ins[0])
        else:
            raise AssertionError(f"evaluator: no payload {pay}")
        env[name] = out
    return env


def test_converted_program_computes_the_model():
    import numpy as np

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 8, 3, stride=2, padding=1)
            self.pool = nn.MaxPool2d(2, 2, ceil_mode=True)           # 5x5 -> 3x3: pads the high side
            self.lin = nn.Linear(8, 16)

        def forward(self, x):
            y = self.pool(torch.relu(self.conv(x)))               # pad, conv2d (2*h + r), bias, window max
            y = y.flatten(2).transpose(1, 2)                      # merge written by the producer, transpose
            z = self.lin(y)                                       # addmm through views
            q = z.view(1, 9, 4, 4).transpose(1, 2)                # split (h * 4 + d) + permute
            att = torch.softmax(q @ q.transpose(-1, -2), dim=-1)  # bmm with a transposed operand, softmax
            return (att @ q)[:, :, 3:12]                          # slice (offset in the map)

    torch.manual_seed(0)
    m = M().eval()
    x = torch.randn(1, 4, 10, 10)
    program, report = spt.to_program(m, (x,))
    sp.program.load(program)
    values = {"input": x.numpy()}
    values.update({k: v.detach().numpy() for k, v in m.state_dict().items()})
    env = _evaluate(program, values)
    out = [t["name"] for t in program["tensors"] if t.get("graph_output")]
    assert len(out) == 1
    with torch.no_grad():
        want = m(x).numpy()
    assert env[out[0]].shape == want.shape
    np.testing.assert_allclose(env[out[0]], want, rtol=1e-4, atol=1e-5)


def test_grouped_conv_and_gqa_copies_compute_the_model():
    import numpy as np

    class G(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 8, 3, padding=1, groups=2)       # (g * Cg + c) input channels
            self.dw = nn.Conv2d(8, 8, 3, stride=2, groups=8, bias=False)  # depthwise
            self.avg = nn.AdaptiveAvgPool2d((2, 2))

        def forward(self, x):
            y = self.dw(self.conv(x))                                   # [1, 8, 4, 4]
            k = y.view(1, 2, 4, 16)                                     # split channels, merge spatial
            k = k[:, :, None].expand(1, 2, 2, 4, 16).reshape(1, 4, 4, 16)  # GQA repeat: a copy
            k = k.permute(0, 2, 1, 3).reshape(1, 4, 64)                 # permute + merge: a copy
            return self.avg(k.view(1, 4, 8, 8))                         # adaptive pool 8x8 -> 2x2

    torch.manual_seed(1)
    m = G().eval()
    x = torch.randn(1, 4, 10, 10)
    program, report = spt.to_program(m, (x,))
    sp.program.load(program)
    assert report.counts["opaque"] == 0
    values = {"input": x.numpy()}
    values.update({k: v.detach().numpy() for k, v in m.state_dict().items()})
    env = _evaluate(program, values)
    out = [t["name"] for t in program["tensors"] if t.get("graph_output")][0]
    with torch.no_grad():
        np.testing.assert_allclose(env[out], m(x).numpy(), rtol=1e-4, atol=1e-5)


def test_trace_restores_what_it_patches_and_names_nodes_as_fx_does():
    # The trace counts node names itself (FX probes name_1, name_2, ...: quadratic), skips the
    # GraphModule's source and pauses the cyclic GC; all is restored, and names are FX's.
    import gc
    recompile, create_node = torch.fx.GraphModule.recompile, torch.fx.Graph.create_node

    class M(nn.Module):
        def forward(self, x):
            return (x + 1) + (x + 2)
    _, report = spt.to_program(M(), (torch.empty(2, 4),))
    assert [r.node for r in report.rows if r.target.startswith("aten.add")] == ["add", "add_1", "add_2"]
    assert torch.fx.GraphModule.recompile is recompile and torch.fx.Graph.create_node is create_node
    assert gc.isenabled()


def test_folded_constants_are_laid_out_for_their_readers():
    # A position bias table built from torch.arange is folded into a constant graph input marked
    # load_time; read transposed by the add to the attention scores, its default layout (sticked
    # on the query dim) needs a restickify per run, the layout the planner chooses does not.
    class BiasedScores(nn.Module):
        def forward(self, q, k):
            table = torch.arange(128 * 64, dtype=torch.float32).reshape(128, 64) * 0.01
            return q @ k.transpose(-1, -2) + table.t()

    program, _ = spt.to_program(BiasedScores(), (torch.empty(1, 64, 32), torch.empty(1, 128, 32)), dtype="fp16")
    consts = [t for t in program["tensors"] if t.get("load_time")]
    assert consts and all(t.get("graph_input") for t in consts)
    assert not [t for t in program["tensors"] if t["name"] in ("q", "k", "input0", "input1") and t.get("load_time")]
    marked = sp.lx.plan(program, cores=8).to_dict()
    unmarked_program = json.loads(json.dumps(program))
    for t in unmarked_program["tensors"]:
        t.pop("load_time", None)
    unmarked = sp.lx.plan(unmarked_program, cores=8).to_dict()
    names = {t["name"] for t in consts}
    assert [i for i in unmarked["layout_issues"] if i["tensor"] in names]
    assert not [i for i in marked["layout_issues"] if i["tensor"] in names]
    assert len(marked["layout_issues"]) < len(unmarked["layout_issues"])
    assert {x["tensor"] for x in marked["inferred_layouts"]} & names
    assert marked["totals"]["hbm_bytes"] < unmarked["totals"]["hbm_bytes"]
