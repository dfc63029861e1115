"""ATen calls the tracing mode replaces by what they compute (docs/torch.md): recurrent layers
unrolled into their cell arithmetic, packing with known lengths, weight norm, istft.

``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` run one fused ATen kernel (``aten::lstm`` ...) that has no
affine form. The trace replaces that call (seen by the tracing ``TorchFunctionMode``) with the
cell arithmetic over the traced sequence length: one matmul of the whole input sequence by the
input weights per layer and direction (as cuDNN does), then per time step the recurrent matmul,
the gates and the state update, in PyTorch's gate order and formulas. Packed sequences
(``pack_padded_sequence`` with lengths known at trace time) run each step on the rows still
active, so the program is specialized to those lengths as PyTorch computes them.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

RECURRENT = {torch.lstm: "LSTM", torch.gru: "GRU", torch.rnn_tanh: "RNN_TANH", torch.rnn_relu: "RNN_RELU"}


def _cell(mode: str, xw: torch.Tensor, h: torch.Tensor, c: Optional[torch.Tensor], w_hh: torch.Tensor,
          b_hh: Optional[torch.Tensor], w_hr: Optional[torch.Tensor]) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """One time step: ``xw`` is the input already multiplied by W_ih (+ b_ih). PyTorch's gate order:
    LSTM (i, f, g, o), GRU (r, z, n)."""
    hw = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = (xw + hw).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        if w_hr is not None:
            h = F.linear(h, w_hr)
        return h, c
    if mode == "GRU":
        xr, xz, xn = xw.chunk(3, -1)
        hr, hz, hn = hw.chunk(3, -1)
        r = torch.sigmoid(xr + hr)
        z = torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return n + z * (h - n), None  # (1 - z) * n + z * h
    a = xw + hw
    return (torch.tanh(a) if mode == "RNN_TANH" else torch.relu(a)), None


def _direction(mode: str, xw: torch.Tensor, h0: torch.Tensor, c0: Optional[torch.Tensor], w, reverse: bool,
               sizes: Optional[List[int]]):
    """Runs one direction of one layer. ``xw``: [T, B, G] (padded) or [sum(sizes), G] (packed,
    ``sizes`` = batch size per step). Returns (per-step outputs in time order, h_n, c_n)."""
    _, w_hh, _, b_hh, w_hr = w
    steps = len(sizes) if sizes is not None else xw.shape[0]
    offs = [0]
    for s in sizes or []:
        offs.append(offs[-1] + s)
    outs: List[Optional[torch.Tensor]] = [None] * steps
    h, c = h0, c0
    if sizes is None:
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            h, c = _cell(mode, xw[t], h, c, w_hh, b_hh, w_hr)
            outs[t] = h
        return outs, h, c
    B = h0.shape[0]
    if not reverse:
        # Rows [sizes[t + 1], sizes[t]) end at step t: their final state is the one of that step.
        done_h: List[torch.Tensor] = []
        done_c: List[torch.Tensor] = []
        for t in range(steps):
            bs = sizes[t]
            if t > 0 and bs < h.shape[0]:
                done_h.append(h[bs:])
                done_c.append(c[bs:] if c is not None else None)
                h = h[:bs]
                c = c[:bs] if c is not None else None
            h, c = _cell(mode, xw[offs[t]:offs[t + 1]], h, c, w_hh, b_hh, w_hr)
            outs[t] = h
        hs = [h] + done_h[::-1]
        cs = [c] + done_c[::-1]
        h_n = torch.cat(hs, 0) if len(hs) > 1 else h
        c_n = (torch.cat(cs, 0) if len(cs) > 1 else c) if c is not None else None
        return outs, h_n, c_n
    # Backwards the batch grows: rows join at their last step with their initial state.
    h = h0[:sizes[-1]]
    c = c0[:sizes[-1]] if c0 is not None else None
    for t in range(steps - 1, -1, -1):
        bs = sizes[t]
        if bs > h.shape[0]:
            h = torch.cat([h, h0[h.shape[0]:bs]], 0)
            c = torch.cat([c, c0[c.shape[0]:bs]], 0) if c is not None else None
        h, c = _cell(mode, xw[offs[t]:offs[t + 1]], h, c, w_hh, b_hh, w_hr)
        outs[t] = h
    assert h.shape[0] == B
    return outs, h, c


def unroll(mode: str, args: Sequence, packed: bool):
    """The unrolled form of ``torch.lstm/gru/rnn_tanh/rnn_relu`` with their ATen arguments:
    (input, hx, weights, has_biases, num_layers, dropout, train, bidirectional, batch_first) or,
    packed, (data, batch_sizes, hx, weights, has_biases, num_layers, dropout, train, bidirectional).
    Returns what the fused kernel returns: (output, h_n[, c_n])."""
    if packed:
        x, batch_sizes, hx, weights, has_biases, num_layers, _, _, bidirectional = args[:9]
        batch_first = False
        sizes: Optional[List[int]] = [int(s) for s in batch_sizes.tolist()]
    else:
        x, hx, weights, has_biases, num_layers, _, _, bidirectional, batch_first = args[:9]
        sizes = None
    if mode == "LSTM":
        h0, c0 = hx
    else:
        h0, c0 = hx, None
    dirs = 2 if bidirectional else 1
    per = len(weights) // (num_layers * dirs)
    proj = mode == "LSTM" and per == (5 if has_biases else 3)
    if batch_first and not packed:
        x = x.transpose(0, 1)  # [T, B, I]
    hn: List[torch.Tensor] = []
    cn: List[torch.Tensor] = []
    for layer in range(num_layers):
        outs_d = []
        for d in range(dirs):
            k = (layer * dirs + d) * per
            ws = list(weights[k:k + per])
            w_ih, w_hh = ws[0], ws[1]
            b_ih, b_hh = (ws[2], ws[3]) if has_biases else (None, None)
            w_hr = ws[-1] if proj else None
            xw = F.linear(x, w_ih, b_ih)  # the whole sequence at once
            i = layer * dirs + d
            outs, h, c = _direction(mode, xw, h0[i], c0[i] if c0 is not None else None,
                                    (w_ih, w_hh, b_ih, b_hh, w_hr), d == 1, sizes)
            outs_d.append(outs)
            hn.append(h)
            if c is not None:
                cn.append(c)
        if sizes is None:
            seq = [torch.stack(o, 0) for o in outs_d]  # [T, B, H] per direction
            x = seq[0] if dirs == 1 else torch.cat(seq, -1)
        else:
            steps = [o[0] if dirs == 1 else torch.cat([o[0], o[1]], -1) for o in zip(*outs_d)]
            x = torch.cat(steps, 0)
    out = x.transpose(0, 1) if batch_first and not packed else x
    h_n = torch.stack(hn, 0)
    if mode == "LSTM":
        return out, h_n, torch.stack(cn, 0)
    return out, h_n


def _cpu_tensor(values: List[int]) -> torch.Tensor:
    """A plain CPU int64 tensor (batch sizes, lengths) outside the trace: Python reads it."""
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing
    with disable_proxy_modes_tracing():
        return torch.tensor(values, dtype=torch.int64)


def pack_padded(x: torch.Tensor, lengths: Sequence[int], batch_first: bool):
    """``aten::_pack_padded_sequence`` with lengths known: (data, batch_sizes). data is the
    rows of each time step still active (lengths sorted decreasing, as ATen requires)."""
    lens = [int(v) for v in lengths]
    if any(a < b for a, b in zip(lens, lens[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True")
    steps = lens[0] if lens else 0
    sizes = [sum(1 for n in lens if n > t) for t in range(steps)]
    pieces = [(x[:bs, t] if batch_first else x[t, :bs]) for t, bs in enumerate(sizes)]
    return torch.cat(pieces, 0), _cpu_tensor(sizes)


def pad_packed(data: torch.Tensor, batch_sizes: torch.Tensor, batch_first: bool, padding_value: float,
               total_length: int):
    """``aten::_pad_packed_sequence``: (padded [T, B, *] or [B, T, *], lengths on the CPU)."""
    sizes = [int(s) for s in batch_sizes.tolist()]
    B = sizes[0]
    rows = []
    off = 0
    for bs in sizes:
        piece = data[off:off + bs]
        off += bs
        if bs < B:
            piece = torch.cat([piece, piece.new_full((B - bs,) + tuple(piece.shape[1:]), padding_value)], 0)
        rows.append(piece)
    out = torch.stack(rows, 0)
    if total_length > len(sizes):
        out = torch.cat([out, out.new_full((total_length - len(sizes),) + tuple(out.shape[1:]), padding_value)], 0)
    lengths = _cpu_tensor([sum(1 for s in sizes if s > b) for b in range(B)])
    return (out.transpose(0, 1) if batch_first else out), lengths


def weight_norm(v: torch.Tensor, g: torch.Tensor, dim: int) -> torch.Tensor:
    """``torch._weight_norm`` (``aten::_weight_norm_interface`` has no meta kernel in torch 1.13):
    v * g / ||v||, the norm over every dim but ``dim`` (all dims for dim = -1)."""
    dims = [d for d in range(v.dim()) if d != dim % max(v.dim(), 1)] if dim != -1 else list(range(v.dim()))
    norm = v.pow(2).sum(dims, keepdim=True).sqrt() if dims else v.abs()
    return v * (g / norm)


def istft(z: torch.Tensor, n_fft: int, hop_length: Optional[int] = None, win_length: Optional[int] = None,
          window: Optional[torch.Tensor] = None, center: bool = True, normalized: bool = False,
          onesided: Optional[bool] = None, length: Optional[int] = None, return_complex: bool = False) -> torch.Tensor:
    """``torch.istft`` by its definition (its ATen kernel reads the window envelope's minimum, a
    value, and fails on meta tensors): an inverse real FFT per frame, times the window, overlap-
    added (``F.fold``), divided by the overlap-added squared window (a constant) and trimmed."""
    if return_complex or onesided is False or not z.is_complex():
        raise RuntimeError("istft: only the real one-sided inverse (return_complex=False) is traced")
    hop = hop_length or n_fft // 4
    win = win_length or n_fft
    batched = z.dim() == 3
    if not batched:
        z = z.unsqueeze(0)
    frames_n = z.shape[-1]
    real = torch.float16 if z.dtype == torch.complex32 else torch.float32 if z.dtype == torch.complex64 else torch.float64
    if window is None:
        window = torch.ones(win, device=z.device, dtype=real)
    if win < n_fft:
        left = (n_fft - win) // 2
        window = F.pad(window, (left, n_fft - win - left))
    frames = torch.fft.irfft(z, n=n_fft, dim=-2, norm="ortho" if normalized else "backward") * window[:, None]
    total = n_fft + hop * (frames_n - 1)
    y = F.fold(frames, (1, total), (1, n_fft), stride=(1, hop)).reshape(z.shape[0], total)
    env = F.fold((window * window)[:, None].expand(n_fft, frames_n).unsqueeze(0), (1, total), (1, n_fft),
                 stride=(1, hop)).reshape(total)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    y = y[:, start:min(end, total)] / env[start:min(end, total)]
    if end > total:
        y = F.pad(y, (0, end - total))
    return y if batched else y[0]
