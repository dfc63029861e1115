"""Language-model blocks in plain PyTorch, for the front end's CLI, tests and bench (issue 45).

Each factory takes no required argument and returns a small model reading integer token ids
(``--input 1,128:int64``) through an embedding:

  python3 -m scratchplan.torch examples.llm_blocks:llama --input 1,128:int64 -o - | scratchplan plan - --cores 32

  llama  RMSNorm, rotary position embedding, grouped-query attention, SwiGLU MLP
  gpt2   learned positions, causal mask, GELU MLP, LayerNorm, tied LM head
  bert   padding mask from the token ids (or given as a second input), post-norm encoder layer
  t5     relative position bias (bucketed log distances), RMS-style LayerNorm, ReLU MLP
  moe    Llama-style attention and a dense top-2 mixture of experts (every expert runs)

Sizes are small by default so tests stay fast; every size is a keyword argument.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class RopeGQA(nn.Module):
    """Causal self-attention with rotary embeddings and fewer key/value heads than query heads."""

    def __init__(self, dim, heads, kv_heads, max_seq):
        super().__init__()
        self.h, self.kvh, self.d = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, heads * self.d, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(heads * self.d, dim, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.d, 2).float() / self.d))
        freqs = torch.outer(torch.arange(max_seq).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        self.register_buffer("causal", torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool)), persistent=False)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kvh, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kvh, self.d).transpose(1, 2)
        cos, sin = self.cos[:s], self.sin[:s]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.h // self.kvh
        k = k[:, :, None].expand(b, self.kvh, rep, s, self.d).reshape(b, self.h, s, self.d)
        v = v[:, :, None].expand(b, self.kvh, rep, s, self.d).reshape(b, self.h, s, self.d)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d)
        att = att.masked_fill(~self.causal[:s, :s], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, self.h * self.d)
        return self.o_proj(y)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Llama(nn.Module):
    def __init__(self, vocab=1000, dim=256, heads=8, kv_heads=2, hidden=688, max_seq=128):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = RopeGQA(dim, heads, kv_heads, max_seq)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = SwiGLU(dim, hidden)
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids):
        x = self.embed_tokens(input_ids)
        h = x + self.self_attn(self.input_layernorm(x))
        h = h + self.mlp(self.post_attention_layernorm(h))
        return self.lm_head(self.norm(h))


class GPT2Attention(nn.Module):
    def __init__(self, dim, heads, max_seq):
        super().__init__()
        self.h, self.d = heads, dim // heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool))[None, None],
                             persistent=False)

    def forward(self, x):
        b, s, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, s, self.h, self.d).transpose(1, 2)
        k = k.view(b, s, self.h, self.d).transpose(1, 2)
        v = v.view(b, s, self.h, self.d).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d))
        att = torch.where(self.bias[:, :, :s, :s], att, torch.finfo(att.dtype).min)
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, s, c)
        return self.c_proj(y)


class GPT2(nn.Module):
    def __init__(self, vocab=1000, dim=256, heads=4, max_seq=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_seq, dim)
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = GPT2Attention(dim, heads, max_seq)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.c_proj = nn.Linear(4 * dim, dim)
        self.ln_f = nn.LayerNorm(dim)

    def forward(self, input_ids):
        s = input_ids.shape[-1]
        pos = torch.arange(s, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)[None]
        x = x + self.attn(self.ln_1(x))
        x = x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return self.ln_f(x) @ self.wte.weight.t()  # the LM head shares the token embedding


class BERT(nn.Module):
    def __init__(self, vocab=1000, dim=256, heads=4, hidden=1024, max_seq=128, pad_id=0):
        super().__init__()
        self.h, self.d, self.pad_id = heads, dim // heads, pad_id
        self.word_embeddings = nn.Embedding(vocab, dim, padding_idx=pad_id)
        self.position_embeddings = nn.Embedding(max_seq, dim)
        self.token_type_embeddings = nn.Embedding(2, dim)
        self.emb_norm = nn.LayerNorm(dim, eps=1e-12)
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.attn_out = nn.Linear(dim, dim)
        self.attn_norm = nn.LayerNorm(dim, eps=1e-12)
        self.intermediate = nn.Linear(dim, hidden)
        self.output = nn.Linear(hidden, dim)
        self.out_norm = nn.LayerNorm(dim, eps=1e-12)
        self.pooler = nn.Linear(dim, dim)

    def forward(self, input_ids, attention_mask=None):
        b, s = input_ids.shape
        if attention_mask is None:
            attention_mask = input_ids != self.pad_id  # padding tokens are masked out
        pos = torch.arange(s, device=input_ids.device)
        types = torch.zeros_like(input_ids)
        x = self.word_embeddings(input_ids) + self.position_embeddings(pos)[None] + self.token_type_embeddings(types)
        x = self.emb_norm(x)
        ext = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min

        def heads(t):
            return t.view(b, s, self.h, self.d).permute(0, 2, 1, 3)
        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d) + ext
        att = att.softmax(-1)
        y = torch.matmul(att, v).permute(0, 2, 1, 3).reshape(b, s, self.h * self.d)
        x = self.attn_norm(x + self.attn_out(y))
        x = self.out_norm(x + self.output(F.gelu(self.intermediate(x))))
        return x, torch.tanh(self.pooler(x[:, 0]))


class T5LayerNorm(nn.Module):
    """T5's norm: scale only, no mean subtraction."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


class T5(nn.Module):
    def __init__(self, vocab=1000, dim=256, heads=4, hidden=1024, buckets=32, max_distance=128):
        super().__init__()
        self.h, self.d = heads, dim // heads
        self.buckets, self.max_distance = buckets, max_distance
        self.shared = nn.Embedding(vocab, dim)
        self.layer_norm = T5LayerNorm(dim)
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.relative_attention_bias = nn.Embedding(buckets, heads)
        self.ff_norm = T5LayerNorm(dim)
        self.wi = nn.Linear(dim, hidden, bias=False)
        self.wo = nn.Linear(hidden, dim, bias=False)
        self.final_layer_norm = T5LayerNorm(dim)

    def _bucket(self, rel):
        """Bidirectional buckets: exact for small distances, logarithmic up to max_distance."""
        n = self.buckets // 2
        ret = (rel > 0).to(torch.long) * n
        rel = rel.abs()
        exact = n // 2
        large = exact + (torch.log(rel.float() / exact) / math.log(self.max_distance / exact)
                         * (n - exact)).to(torch.long)
        large = torch.minimum(large, torch.full_like(large, n - 1))
        return ret + torch.where(rel < exact, rel, large)

    def forward(self, input_ids):
        b, s = input_ids.shape
        x = self.shared(input_ids)
        ctx = torch.arange(s, device=input_ids.device)
        rel = ctx[None, :] - ctx[:, None]
        bias = self.relative_attention_bias(self._bucket(rel)).permute(2, 0, 1)[None]  # 1, h, s, s
        h = self.layer_norm(x)

        def heads(t):
            return t.view(b, s, self.h, self.d).transpose(1, 2)
        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        att = torch.matmul(q, k.transpose(3, 2)) + bias  # T5 does not scale the scores
        att = F.softmax(att.float(), dim=-1).type_as(att)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, s, -1)
        x = x + self.o(y)
        x = x + self.wo(F.relu(self.wi(self.ff_norm(x))))
        return self.final_layer_norm(x)


class DenseTop2MoE(nn.Module):
    """Every expert runs on every token; the router keeps the two largest gates per token."""

    def __init__(self, dim, hidden, experts):
        super().__init__()
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(dim, hidden) for _ in range(experts))

    def forward(self, x):
        probs = F.softmax(self.gate(x), dim=-1)
        top, idx = probs.topk(2, dim=-1)
        top = top / top.sum(-1, keepdim=True)
        weights = torch.zeros_like(probs).scatter(-1, idx, top)  # zero for the unchosen experts
        out = torch.stack([e(x) for e in self.experts], dim=-1)  # b, s, dim, experts
        return (out * weights[..., None, :]).sum(-1)


class MoE(nn.Module):
    def __init__(self, vocab=1000, dim=256, heads=8, kv_heads=2, hidden=344, experts=4, max_seq=128):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = RopeGQA(dim, heads, kv_heads, max_seq)
        self.post_attention_layernorm = RMSNorm(dim)
        self.moe = DenseTop2MoE(dim, hidden, experts)
        self.norm = RMSNorm(dim)

    def forward(self, input_ids):
        x = self.embed_tokens(input_ids)
        h = x + self.self_attn(self.input_layernorm(x))
        h = h + self.moe(self.post_attention_layernorm(h))
        return self.norm(h)


def llama(**kw):
    return Llama(**kw)


def gpt2(**kw):
    return GPT2(**kw)


def bert(**kw):
    return BERT(**kw)


def t5(**kw):
    return T5(**kw)


def moe(**kw):
    return MoE(**kw)


BLOCKS = ["llama", "gpt2", "bert", "t5", "moe"]
