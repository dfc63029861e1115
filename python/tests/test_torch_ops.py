"""scratchplan.torch op mappings of issue 45: each converted program is run with numpy by its
indexing maps and matches PyTorch within 1e-4 (opaque ops are checked for their reason and
traffic instead)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import scratchplan as sp  # noqa: E402
import scratchplan.torch as spt  # noqa: E402
from scratchplan.torch._views import parse_results  # noqa: E402

EPS = 1e-5  # the eps of the norms below (payloads carry no scalars)


def _run(program, values):
    """Evaluates every non-opaque op from its maps and ranges; opaque outputs must be given."""
    shapes = {t["name"]: t["shape"] for t in program["tensors"]}
    # A graph input may be declared merged (a reshape written through it): the same bytes.
    env = {k: np.asarray(v, dtype=np.float64).reshape(shapes.get(k, np.shape(v))) for k, v in values.items()}
    for op in program["ops"]:
        if op["kind"] == "opaque":
            assert all(o in env for o in op["outputs"]), f"opaque op {op['name']} needs its outputs given"
            continue
        ranges = op["ranges"]
        idx = np.indices(ranges).reshape(len(ranges), -1)
        red = [k for k, it in enumerate(op["iterator_types"]) if it == "reduction"]
        count = int(np.prod([ranges[k] for k in red])) if red else 1

        def at(text):
            out = []
            for e, off in parse_results(text.split(" -> ")[1]):
                c = np.full(idx.shape[1], off, dtype=np.int64)
                for v, k in e.items():
                    c = c + k * idx[v]
                out.append(c)
            return tuple(out)
        ins = [env[n][at(m)] for n, m in zip(op["inputs"], op["indexing_maps"])]
        name, pay = op["outputs"][0], op["payload"]
        where = at(op["indexing_maps"][len(op["inputs"])])
        out = np.zeros(shapes[name])
        if pay in ("max_pool2d", "max_pool3d", "max"):
            out = np.full(shapes[name], -np.inf)
            np.maximum.at(out, where, ins[0])
        elif pay == "pad_neg_inf":
            out = np.full(shapes[name], -np.inf)
            out[where] = ins[0]
        elif pay in ("mean", "mean_square", "sum", "avg_pool2d", "avg_pool3d"):
            np.add.at(out, where, ins[0] ** 2 if pay == "mean_square" else ins[0])
            out = out if pay == "sum" else out / count
        elif pay in ("conv1d", "conv2d", "conv3d", "matmul"):
            np.add.at(out, where, ins[0] * ins[1])
        else:
            fn = {"copy": lambda a: a, "pad": lambda a: a, "add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                  "mul": lambda a, b: a * b, "relu": lambda a: np.maximum(a, 0),
                  "add_eps_rsqrt": lambda a: 1 / np.sqrt(a + EPS),
                  "mul_affine": lambda xc, r, w=1.0, b=0.0: xc * r * w + b}[pay]
            out[where] = fn(*ins)
        env[name] = out
    return env


def _check(model, *xs, extra=None):
    """Converts ``model``, evaluates the program and compares its one output with PyTorch."""
    torch.manual_seed(0)
    model = model.eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p))
    program, report = spt.to_program(model, xs)
    sp.program.load(program)
    names = ["input"] if len(xs) == 1 else [f"input{i}" for i in range(len(xs))]
    values = dict(zip(names, [x.numpy() for x in xs]))
    values.update({k: v.detach().numpy() for k, v in model.state_dict().items()})
    values.update(extra(values) if extra else {})
    env = _run(program, values)
    out = [t["name"] for t in program["tensors"] if t.get("graph_output")]
    with torch.no_grad():
        want = model(*xs).numpy()
    assert len(out) == 1 and env[out[0]].shape == want.shape
    np.testing.assert_allclose(env[out[0]], want, rtol=1e-4, atol=1e-4)
    return program, report


def test_nearest_upsampling_by_integer_factors_computes_the_model():
    class M(nn.Module):
        def forward(self, x):
            return F.interpolate(x, scale_factor=2, mode="nearest")
    program, report = _check(M(), torch.randn(1, 3, 4, 5))
    assert [r.decision for r in report.rows if "upsample" in r.target] == ["mapped"]


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [(2, 1, 1, 1, 1), (2, 0, 0, 2, 1),
                                                                             (3, 2, 0, 1, 2), (1, 1, 0, 1, 1)])
def test_conv_transpose_is_a_strided_copy_and_a_convolution(stride, padding, output_padding, groups, dilation):
    m = nn.ConvTranspose2d(4, 6, 3, stride=stride, padding=padding, output_padding=output_padding, groups=groups,
                           dilation=dilation)

    def flipped(values):
        return {"weight_flipped": np.flip(values["weight"], axis=(2, 3))}
    program, report = _check(m, torch.randn(2, 4, 5, 6), extra=flipped)
    assert report.counts["opaque"] == 0 and report.mapped_fraction == 1.0, report.text()
    spread = [op for op in program["ops"] if op["payload"] == "pad"][0]
    assert f"d2 * {stride}" in spread["indexing_maps"][1] or stride == 1


def test_conv_transpose_3d_computes_the_model():
    def flipped(values):
        return {"weight_flipped": np.flip(values["weight"], axis=(2, 3, 4))}
    _check(nn.ConvTranspose3d(2, 3, 2, stride=2, bias=False), torch.randn(1, 2, 3, 3, 2), extra=flipped)


def test_instance_norm_is_a_reduction_per_sample_and_channel():
    def repeated(values):  # the affine parameters repeated per sample: folded when loaded
        return {"repeat": np.tile(values["weight"], 2), "repeat_1": np.tile(values["bias"], 2)} \
            if "weight" in values else {}
    for m in (nn.InstanceNorm2d(4), nn.InstanceNorm2d(4, affine=True)):
        program, report = _check(m, torch.randn(2, 4, 5, 6), extra=repeated)
        assert report.counts["opaque"] == 0, report.text()
        mean = [op for op in program["ops"] if op["payload"] == "mean"][0]
        assert mean["ranges"] == [8, 5, 6]  # one statistic per (n, c) of [1, N*C, H, W]


def test_max_pool3d_has_a_meta_kernel_and_maps():
    class M(nn.Module):
        def forward(self, x):
            y = F.max_pool3d(x, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
            return F.max_pool3d(y, 2, ceil_mode=True)[..., :1] + F.avg_pool3d(y, 2)  # ceil: pads the high side
    program, report = _check(M(), torch.randn(1, 2, 4, 7, 9))
    assert report.counts["opaque"] == 0, report.text()
    assert sum(op["payload"] == "max_pool3d" for op in program["ops"]) == 2


def test_roll_is_a_copy_of_two_slices_per_dim():
    class M(nn.Module):
        def forward(self, x):
            return torch.roll(x, shifts=(-3, 2), dims=(1, 2)) + x

    x = torch.randn(1, 8, 8, 4)
    program, report = spt.to_program(M(), (x,))
    row = [r for r in report.rows if "roll" in r.target][0]
    assert row.decision == "folded" and not row.compute and "dim 1 at 3, dim 2 at 6" in row.reason, row
    assert report.mapped_fraction == 1.0
    op = [o for o in program["ops"] if o["payload"] == "roll"][0]
    assert op["inputs"] == ["input"]  # it reads its input once and writes the rolled tensor
    env = _run(program, {"input": x.numpy(), op["outputs"][0]: torch.roll(x, (-3, 2), (1, 2)).numpy()})
    out = [t["name"] for t in program["tensors"] if t.get("graph_output")][0]
    np.testing.assert_allclose(env[out], M()(x).numpy(), rtol=1e-6)


def test_linspace_and_arange_on_an_explicit_device_are_constants():
    class M(nn.Module):
        def forward(self, x):
            g = torch.linspace(-1, 1, x.shape[-1], device=x.device)
            a = torch.arange(x.shape[-2], device=x.device, dtype=x.dtype)
            return x + g + a[:, None]
    program, report = spt.to_program(M(), (torch.empty(2, 3, 4),))
    assert report.counts["opaque"] == 0 and [op["payload"] for op in program["ops"]] == ["add", "add"]


def test_bilinear_upsampling_is_opaque_with_its_traffic():
    class M(nn.Module):
        def forward(self, x):
            return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
    program, report = spt.to_program(M(), (torch.empty(1, 3, 4, 5),))
    row = report.opaque()[0]
    assert row.reason.startswith("upsample_bilinear2d: ")
    op = program["ops"][0]
    assert op["kind"] == "opaque" and op["inputs"] == ["input"]
    assert [t["shape"] for t in program["tensors"] if t["name"] == op["outputs"][0]] == [[1, 3, 8, 10]]


class DenseTop2MoE(nn.Module):
    """A dense top-2 mixture of experts: every expert runs on every token, the router's top-2
    weights (scattered into a dense [tokens, experts] mask) combine them."""

    def __init__(self, dim=16, experts=4):
        super().__init__()
        self.router = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))

    def forward(self, x):
        logits = self.router(x)
        top, idx = logits.topk(2, dim=-1)
        gates = torch.zeros_like(logits).scatter(-1, idx, top.softmax(-1))
        outs = torch.stack([e(x) for e in self.experts], dim=-1)
        sel = outs.index_select(-1, torch.arange(outs.shape[-1], device=x.device))
        return (sel * gates.unsqueeze(-2)).sum(-1) + torch.gather(logits, -1, idx).sum(-1, keepdim=True)


def test_moe_router_ops_are_opaque_with_reasons_and_traffic():
    program, report = spt.to_program(DenseTop2MoE(), (torch.empty(8, 16),))
    opaque = {r.target.split(".")[1]: r.reason for r in report.opaque()}
    assert set(opaque) == {"topk", "scatter", "gather", "index_select"}, report.text()
    for op_name, reason in opaque.items():
        assert reason.startswith(op_name), reason
    topk = [op for op in program["ops"] if op["payload"] == "topk"][0]
    assert len(topk["outputs"]) == 2  # values and indices: both written
    scatter = [op for op in program["ops"] if op["payload"] == "scatter"][0]
    assert len(scatter["inputs"]) == 3  # the zeros, the indices and the gate values are read
    assert report.counts["opaque"] == 4  # the experts, softmax, stack and the combine map
    sp.lx.plan(program, cores=4)


def test_repeat_interleave_by_an_int_is_expand_and_merge():
    # On meta tensors ATen needs the values of a repeats tensor (MViT refused); as views it maps.
    class M(nn.Module):
        def forward(self, x):
            return x.repeat_interleave(3, dim=1) + torch.repeat_interleave(x, 3, dim=1)
    program, report = _check(M(), torch.randn(2, 4, 5))
    assert report.counts["opaque"] == 0, report.text()


def test_add_into_a_view_read_again_is_a_pad_and_a_whole_add():
    # MViT v2's relative position bias: attn[:, :, 1:, 1:] += bias, then softmax over all of attn.
    class M(nn.Module):
        def forward(self, x, r):
            attn = torch.matmul(x, x.transpose(-1, -2))
            attn[:, :, 1:, 1:] += r
            return attn + x[..., :1]
    program, report = _check(M(), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 4, 4))
    assert report.counts["opaque"] == 0, report.text()
    pad = [op for op in program["ops"] if op["payload"] == "pad"][0]
    assert pad["indexing_maps"][-1].endswith("d1 + 1, d2 + 1)")  # r lands at [1:, 1:]


@pytest.mark.parametrize("kernel,dilation,padding,stride,batched", [(3, 1, 1, 1, True), (2, 2, 0, 2, True),
                                                                    ((3, 2), (1, 2), (2, 1), (2, 1), False)])
def test_unfold_is_one_copy_with_summed_maps(kernel, dilation, padding, stride, batched):
    # F.unfold (im2col; RAFT's correlation lookup) was opaque: both its maps are affine sums.
    class M(nn.Module):
        def forward(self, x):
            return F.unfold(x, kernel, dilation=dilation, padding=padding, stride=stride)
    x = torch.randn(2, 3, 7, 8) if batched else torch.randn(3, 7, 8)
    program, report = _check(M(), x)
    assert [r.decision for r in report.rows if "im2col" in r.target] == ["mapped"], report.text()
