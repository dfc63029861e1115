"""scratchplan.torch, issue 57: recurrent layers unrolled, weight-normed layers, inputs whose values
matter, tensors without elements. Each converted program is run with numpy by its indexing maps
and compared with PyTorch on CPU (the fused recurrent kernels, the real weight norm) within 1e-4.

The evaluator is independent of the converter's code: mapped ops run from their maps and ranges;
a concat of whole tensors is inferred from the shapes; constants folded at load time and the
outputs of other opaque ops (embedding gathers) are the values of the FX nodes they came from,
run on CPU with torch.fx.Interpreter. Scalars of pointwise payloads come from the FX node."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import scratchplan as sp  # noqa: E402
import scratchplan.torch as spt  # noqa: E402
from scratchplan.torch import _recurrent  # noqa: E402
from scratchplan.torch._trace import trace  # noqa: E402
from scratchplan.torch._views import parse_results  # noqa: E402


def _node_values(model, xs):
    """Every FX node's value, the trace run on CPU with the model's real weights."""
    g, names, _ = trace(model, xs)
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    vals = {}

    class Run(torch.fx.Interpreter):
        def run_node(self, n):
            if n.op == "call_function":
                kw = {k: (torch.device("cpu") if isinstance(v, torch.device) and v.type == "meta" else v)
                      for k, v in n.kwargs.items()}
                args, _ = self.fetch_args_kwargs_from_env(n)
                out = n.target(*args, **kw)
            else:
                out = super().run_node(n)
            vals[n.name] = out
            return out
    with torch.no_grad():
        Run(g).run(*[state[k].detach() for k in names], *[x for x in xs])
    return vals, g


def _scalar(node, k=1):
    for a in list(node.args[k:]) + list(node.kwargs.values()):
        if isinstance(a, (int, float, bool)) and not isinstance(a, torch.fx.Node):
            return a
    return None


def _concat(ins, shape):
    """A concat / stack of whole tensors, the dim inferred from the shapes (unique)."""
    r = len(shape)
    if all(a.ndim == r for a in ins):
        dims = [d for d in range(r) if sum(a.shape[d] for a in ins) == shape[d]
                and all(a.shape[:d] + a.shape[d + 1:] == tuple(shape[:d] + shape[d + 1:]) for a in ins)]
        assert len(dims) == 1, (dims, [a.shape for a in ins], shape)
        return np.concatenate(ins, dims[0])
    dims = [d for d in range(r) if shape[d] == len(ins) and all(a.shape == tuple(shape[:d] + shape[d + 1:]) for a in ins)]
    assert len(dims) == 1, (dims, [a.shape for a in ins], shape)
    return np.stack(ins, dims[0])


_UNARY = {"copy": lambda a: a, "pad": lambda a: a, "relu": lambda a: np.maximum(a, 0), "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
          "tanh": np.tanh, "exp": np.exp, "sqrt": np.sqrt, "neg": lambda a: -a,
          "gelu": lambda a: 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2))), "cast": lambda a: a}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "ge": np.greater_equal,
           "gt": np.greater, "lt": np.less, "le": np.less_equal, "eq": np.equal, "sub_exp": lambda a, b: np.exp(a - b)}
_TERNARY = {"log_div": lambda x, mx, s: x - mx - np.log(s), "where": lambda c, a, b: np.where(c != 0, a, b)}


def evaluate(model, xs, extra_inputs=()):
    """Converts ``model`` and runs the program with numpy; returns (program, report, env, want)."""
    program, report = spt.to_program(model, xs)
    sp.program.load(program)
    node_vals, g = _node_values(model, xs)
    nodes = {n.name: n for n in g.graph.nodes}
    node_of_op = {o: nodes.get(r.node) for r in report.rows for o in r.ops}
    shapes = {t["name"]: t["shape"] for t in program["tensors"]}
    env = {}
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    real = [x for x in xs if isinstance(x, torch.Tensor)]
    ins_names = ["input"] if len(real) == 1 else [f"input{i}" for i in range(len(real))]
    for t in program["tensors"]:
        if not t.get("graph_input"):
            continue
        n = t["name"]
        if n in state:
            v = state[n]
        elif n in ins_names:
            v = real[ins_names.index(n)].numpy()
        else:  # a constant folded when the model is loaded: its FX node's value
            assert n in report.constants, f"no origin for constant {n}"
            node_name, k = report.constants[n]
            v = node_vals[node_name]
            v = (v[k] if isinstance(v, (tuple, list)) else v).detach().numpy()
        env[n] = np.asarray(v, dtype=np.float64).reshape(t["shape"])
    for op in program["ops"]:
        out_name, pay = op["outputs"][0], op["payload"]
        node = node_of_op.get(op["name"])
        if op["kind"] == "opaque":
            if pay == "concat":
                env[out_name] = _concat([env[n] for n in op["inputs"]], shapes[out_name])
            else:
                v = node_vals[node.name]
                v = v[0] if isinstance(v, (tuple, list)) else v
                env[out_name] = np.asarray(v.detach().numpy(), dtype=np.float64).reshape(shapes[out_name])
            continue
        ranges = op["ranges"]
        idx = np.indices(ranges).reshape(len(ranges), -1)
        red = [k for k, it in enumerate(op["iterator_types"]) if it == "reduction"]
        count = int(np.prod([ranges[k] for k in red])) if red else 1

        def at(text):
            res = []
            for e, off in parse_results(text.split(" -> ")[1]):
                c = np.full(idx.shape[1], off, dtype=np.int64)
                for v, k in e.items():
                    c = c + k * idx[v]
                res.append(c)
            return tuple(res)
        ins = [env[n][at(m)] for n, m in zip(op["inputs"], op["indexing_maps"])]
        where = at(op["indexing_maps"][len(op["inputs"])])
        out = np.zeros(shapes[out_name])
        if pay in ("max", "max_pool2d"):
            out = np.full(shapes[out_name], -np.inf)
            np.maximum.at(out, where, ins[0])
        elif pay in ("sum", "mean", "mean_square"):
            np.add.at(out, where, ins[0] ** 2 if pay == "mean_square" else ins[0])
            out = out if pay == "sum" else out / count
        elif pay in ("matmul", "conv1d", "conv2d"):
            np.add.at(out, where, ins[0] * ins[1])
        elif pay == "masked_fill":
            out[where] = np.where(ins[1] != 0, float(node.args[2]), ins[0])
        elif pay in _BINARY:
            if len(ins) == 1:
                s = _scalar(node)
                b = ins[0] if s is None else s  # x * x reads x once
                out[where] = _BINARY[pay](ins[0], b)
            else:
                out[where] = _BINARY[pay](*ins)
        elif pay in _TERNARY:
            out[where] = _TERNARY[pay](*ins)
        else:
            out[where] = _UNARY[pay](*ins)
        env[out_name] = out
    with torch.no_grad():
        want = model(*xs)
    return program, report, env, want


def _outputs(program, env):
    return [env[t["name"]] for t in program["tensors"] if t.get("graph_output")]


def _random(model, seed=0):
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return model.eval()


# ------------------------------------------------------------------ recurrent layers

class LSTMTagger(nn.Module):
    """Token ids -> embedding -> LSTM (batch_first) -> per-token tag scores."""

    def __init__(self, vocab=40, dim=12, hidden=16, tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, tags)

    def forward(self, ids):
        return self.out(self.lstm(self.emb(ids))[0]).log_softmax(-1)


def test_lstm_tagger_is_unrolled_and_computes_the_model():
    m = _random(LSTMTagger())
    ids = torch.randint(0, 40, (2, 6))
    program, report, env, want = evaluate(m, (ids,))
    np.testing.assert_allclose(_outputs(program, env)[0], want.numpy(), rtol=1e-4, atol=1e-4)
    assert report.mapped_fraction == 1.0, report.text()
    # 6 steps, 3 sigmoid gates each; one input matmul for the whole sequence.
    assert sum(op["payload"] == "sigmoid" for op in program["ops"]) == 18
    assert [r.target for r in report.opaque()] == ["aten.embedding.default"]
    sp.lx.plan(program, cores=4)


class BiGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 8, num_layers=2, bidirectional=True)

    def forward(self, x, h0):
        y, h = self.gru(x, h0)
        return y, h


def test_bidirectional_two_layer_gru_with_initial_state():
    m = _random(BiGRU(), 1)
    x, h0 = torch.randn(5, 3, 6), torch.randn(4, 3, 8)
    program, report, env, want = evaluate(m, (x, h0))
    got = _outputs(program, env)
    assert len(got) == 2
    for g_, w in zip(got, want):
        np.testing.assert_allclose(g_, w.numpy(), rtol=1e-4, atol=1e-4)
    assert report.mapped_fraction == 1.0 and not report.opaque(), report.text()


@pytest.mark.parametrize("kind,kw", [("RNN", dict(nonlinearity="relu", batch_first=True)), ("RNN", dict(bias=False)),
                                     ("LSTM", dict(proj_size=3, num_layers=2)), ("GRU", dict(batch_first=True))])
def test_recurrent_variants_compute_the_model(kind, kw):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(nn, kind)(4, 6, **kw)

        def forward(self, x):
            return self.rnn(x)[0]
    m = _random(M(), 2)
    program, report, env, want = evaluate(m, (torch.randn(3, 4, 4),))
    np.testing.assert_allclose(_outputs(program, env)[0], want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_packed_sequences_specialize_to_known_lengths(mode):
    # The unrolled packed form, run on CPU, matches the fused kernel (outputs and final states);
    # traced with lengths given as a real tensor, the program steps over those lengths.
    torch.manual_seed(3)
    rnn = getattr(nn, mode)(4, 5, bidirectional=True, batch_first=True).eval()
    x, lengths = torch.randn(3, 6, 4), torch.tensor([4, 6, 2])

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn

        def forward(self, x, lengths):
            p = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, h = self.rnn(p)
            return nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0], h
    with torch.no_grad():
        want_out, want_h = M()(x, lengths)
        order = torch.argsort(lengths, descending=True)
        data, sizes = _recurrent.pack_padded(x[order], lengths[order].tolist(), True)
        hx = torch.zeros(2, 3, 5)
        res = _recurrent.unroll(mode if mode != "RNN" else "RNN_TANH", [data, sizes, (hx, hx) if mode == "LSTM" else hx,
                                rnn._flat_weights, True, 1, 0.0, False, True], True)
        out, _ = _recurrent.pad_packed(res[0], sizes, True, 0.0, 6)
    np.testing.assert_allclose(out[torch.argsort(order)].numpy(), want_out.numpy(), rtol=1e-5, atol=1e-5)
    want_hn = want_h[0] if mode == "LSTM" else want_h
    np.testing.assert_allclose(res[1][:, torch.argsort(order)].numpy(), want_hn.numpy(), rtol=1e-5, atol=1e-5)
    program, report = spt.to_program(M(), (x, lengths))
    # Steps run on the rows still active: 3 rows for 2 steps, 2 rows for 2, 1 row for 2 (per direction).
    steps = [op for op in program["ops"] if op["payload"] == "tanh" and op["name"].startswith("tanh")]
    assert steps and report.specializations and "[4, 6, 2]" in report.specializations[0]
    assert report.mapped_fraction == 1.0, report.text()
    sp.lx.plan(program, cores=4)


# ------------------------------------------------------------------ weight norm

class WeightNormedConvs(nn.Module):
    """A wav2vec2-style positional convolution stack: weight norm over the kernel dim and over
    the output channels, grouped, then GELU."""

    def __init__(self):
        super().__init__()
        self.a = nn.utils.weight_norm(nn.Conv1d(4, 8, 5, padding=2, groups=2), name="weight", dim=2)
        self.b = nn.utils.weight_norm(nn.Conv1d(8, 8, 3, padding=1))

    def forward(self, x):
        return self.b(F.gelu(self.a(x))) + x.sum(1, keepdim=True)


def test_weight_normed_conv_stack_computes_the_model():
    m = _random(WeightNormedConvs(), 4)
    program, report, env, want = evaluate(m, (torch.randn(2, 4, 11),))
    np.testing.assert_allclose(_outputs(program, env)[0], want.numpy(), rtol=1e-4, atol=1e-4)
    assert report.mapped_fraction == 1.0 and not report.opaque(), report.text()
    # The normed weights are computed once when the model is loaded (weights only): constants.
    folded = [r for r in report.rows if "computed once when the model is loaded" in r.reason]
    assert {r.target.split(".")[1] for r in folded} >= {"pow", "sum", "sqrt", "div", "mul"}


# ------------------------------------------------------------------ values known at trace time

class LengthMaskedAttention(nn.Module):
    """Self-attention masked by sequence lengths: the mask is built from the lengths input, and
    Python reads the longest length (int(lengths.max())), as a conformer does."""

    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.o = nn.Linear(dim, dim)

    def forward(self, x, lengths):
        T = int(lengths.max())
        x = x[:, :T].clone()
        pad = torch.arange(T, device=x.device)[None, :] >= lengths[:, None]
        x[pad] = 0.0  # index_put_ with a boolean mask: where(mask, 0, x)
        q, k, v = self.qkv(x).chunk(3, -1)
        att = (q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])).masked_fill(pad[:, None, :], -1e4)
        return self.o(att.softmax(-1) @ v)


def test_length_masked_attention_specializes_to_the_lengths():
    m = _random(LengthMaskedAttention(), 5)
    x, lengths = torch.randn(2, 7, 8), torch.tensor([5, 3])
    program, report, env, want = evaluate(m, (x, lengths))
    np.testing.assert_allclose(_outputs(program, env)[0], want.numpy(), rtol=1e-4, atol=1e-4)
    assert report.mapped_fraction == 1.0, report.text()
    assert len(report.specializations) == 1 and "int() of a tensor known at trace time: 5" in report.specializations[0]
    assert "test_torch_recurrent.py:" in report.specializations[0]
    # The mask stays an op on the lengths input; the longest length (5 < 7) is baked into shapes.
    assert any(op["payload"] == "ge" and "input1" in op["inputs"] for op in program["ops"])
    assert all(5 in t["shape"] or t["name"] in ("input0", "input1") or len(t["shape"]) < 3
               for t in program["tensors"] if t["name"].startswith("bmm"))
    # Floating inputs are signals: their values stay unknown, reading one is refused as before.
    with pytest.raises(spt.UnsupportedModel, match="data-dependent"):
        spt.to_program(m, (x, lengths.float()))


# ------------------------------------------------------------------ tensors without elements

class EmptyRightContext(nn.Module):
    """A streaming block whose right context is empty: x[:, T:] has no elements; concatenated,
    reduced and passed through a linear layer, it must not stop the model."""

    def __init__(self, right=0):
        super().__init__()
        self.right = right
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        T = x.shape[1] - self.right
        body, rc = x[:, :T], x[:, T:]
        h = self.lin(torch.cat([body, self.lin(rc)], 1))
        return h * 2 + rc.sum()


def test_empty_slices_are_dropped_from_the_program():
    m = _random(EmptyRightContext(), 6)
    program, report, env, want = evaluate(m, (torch.randn(2, 5, 6),))
    np.testing.assert_allclose(_outputs(program, env)[0], want.numpy(), rtol=1e-4, atol=1e-4)
    assert all(all(d > 0 for d in t["shape"]) for t in program["tensors"])
    assert any(r.reason.startswith("zero-size tensor") for r in report.rows)
    sp.lx.plan(program, cores=2)


def test_complex_tensors_are_pairs_and_stft_is_opaque():
    class Spec(nn.Module):
        def forward(self, x):
            z = torch.stft(x, 16, hop_length=4, window=torch.hann_window(16, device=x.device), return_complex=True)
            return torch.view_as_real(z).pow(2).sum(-1)

    program, report = spt.to_program(Spec(), (torch.empty(2, 64),))
    stft = [r for r in report.opaque() if "fft" in r.target]
    assert stft and "complex" in stft[0].reason
    out = [t for t in program["tensors"] if t["name"] in {o for op in program["ops"] for o in op["outputs"]}
           and any(op["payload"].startswith("_fft") and t["name"] in op["outputs"] for op in program["ops"])]
    assert out and out[0]["shape"][-1] == 2 and out[0]["dtype"] == "fp32"  # (real, imag) pairs
    sp.lx.plan(program, cores=2)


@pytest.mark.parametrize("n_fft,hop,win,center,normalized,length", [(16, 4, 16, True, False, None),
                                                                    (32, 8, 24, True, True, 100), (16, 5, 16, False, False, 60)])
def test_istft_decomposition_matches_torch(n_fft, hop, win, center, normalized, length):
    # torch.istft fails on meta tensors (its kernel reads the window envelope): traced by its
    # definition, which must equal PyTorch's on CPU.
    torch.manual_seed(7)
    x = torch.randn(2, 96)
    w = torch.hann_window(win) + 0.1  # a nonzero overlap-added envelope (NOLA) also without centering
    z = torch.stft(x, n_fft, hop, win, w, center=center, normalized=normalized, return_complex=True)
    want = torch.istft(z, n_fft, hop, win, w, center=center, normalized=normalized, length=length)
    got = _recurrent.istft(z, n_fft, hop, win, w, center=center, normalized=normalized, length=length)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


def test_random_values_read_in_python_are_refused_as_such():
    class Random(nn.Module):
        def forward(self, x):
            k = torch.randint(1, 4, (1,), device=x.device)
            return x[:, :int(k)]

    with pytest.raises(spt.UnsupportedModel, match="reads a random value in Python"):
        spt.to_program(Random(), (torch.empty(2, 9),))


def test_packing_with_unknown_lengths_is_refused_in_one_line():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 5)

        def forward(self, x, lengths):
            return self.rnn(nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False))[1]

    with pytest.raises(spt.UnsupportedModel, match="pack_padded_sequence: the lengths are not known at trace time"):
        spt.to_program(M(), (torch.empty(6, 2, 4), torch.empty(2, dtype=torch.long, device="meta")))


def test_framing_by_as_strided_is_a_view():
    # torch.stft frames a padded signal with as_strided: out[f, k] = x[f * hop + k], an affine view.
    class Frames(nn.Module):
        def forward(self, x):
            return torch.as_strided(x * 2, (5, 4), (2, 1), 1) + 1

    program, report, env, want = evaluate(Frames(), (torch.randn(16),))
    np.testing.assert_allclose(_outputs(program, env)[0], want.numpy(), rtol=1e-6)
    assert report.mapped_fraction == 1.0 and not report.opaque(), report.text()


def test_sequences_padded_and_packed_in_forward():
    # pad_sequence writes each sequence into a slice of a padded tensor (copy_ into a view): the
    # copy reads and writes the whole tensor, and later readers read the updated one (a constant
    # before, which folded the LSTM away). A TransformerEncoder with a padding mask takes its
    # regular path (its nested-tensor path has no meta kernels).
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 8, batch_first=True)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)

        def forward(self, a, b):
            out, _ = self.lstm(nn.utils.rnn.pack_sequence([a, b]))
            y, lengths = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
            mask = torch.arange(y.shape[1], device=y.device)[None] >= lengths.to(y.device)[:, None]
            return self.enc(y, src_key_padding_mask=mask)

    program, report = spt.to_program(M(), (torch.empty(5, 4), torch.empty(3, 4)))
    assert report.mapped_fraction == 1.0, report.text()
    copies = [op for op in program["ops"] if op["payload"] == "copy_"]
    assert len(copies) == 2 and copies[1]["inputs"][0] == copies[0]["outputs"][0]
    assert sum(op["payload"] == "sigmoid" for op in program["ops"]) == 3 * 5  # 5 steps
    assert [t["shape"] for t in program["tensors"] if t.get("graph_output")] == [[2, 5, 8]]
    sp.lx.plan(program, cores=2)
