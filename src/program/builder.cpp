#include "program/builder.h"

#include <algorithm>

#include "core/rng.h"

namespace sp::program {

TensorId Builder::input(const std::string& name, std::vector<Dim> shape, DType dtype) {
  TensorId t = tensor(name, std::move(shape), dtype);
  p_.tensors[t].graph_input = true;
  return t;
}

TensorId Builder::tensor(const std::string& name, std::vector<Dim> shape, DType dtype) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dtype;
  p_.tensors.push_back(std::move(t));
  return static_cast<TensorId>(p_.tensors.size() - 1);
}

OpId Builder::add(Op op) {
  p_.ops.push_back(std::move(op));
  return static_cast<OpId>(p_.ops.size() - 1);
}

OpId Builder::pointwise(const std::string& name, const std::string& payload, const std::vector<TensorId>& inputs,
                        TensorId out) {
  const auto& os = p_.tensors[out].shape;
  const int n = static_cast<int>(os.size());
  Op op;
  op.name = name;
  op.kind = OpKind::kPointwise;
  op.payload = payload;
  op.inputs = inputs;
  op.outputs = {out};
  op.iterators.assign(static_cast<std::size_t>(n), IteratorType::kParallel);
  for (TensorId t : inputs) {
    const auto& s = p_.tensors[t].shape;
    const int r = static_cast<int>(s.size());
    std::vector<VarId> m;
    for (int i = 0; i < r; ++i) {
      const int od = i + (n - r);
      m.push_back(od >= 0 && s[i] == 1 && os[od] != 1 ? kConstZero : static_cast<VarId>(std::max(od, 0)));
    }
    op.indexing_maps.push_back(std::move(m));
  }
  std::vector<VarId> id(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) id[i] = i;
  op.indexing_maps.push_back(std::move(id));
  return add(std::move(op));
}

OpId Builder::reduce(const std::string& name, const std::string& payload, TensorId in, const std::vector<int>& axes,
                     TensorId out) {
  const int n = static_cast<int>(p_.tensors[in].shape.size());
  Op op;
  op.name = name;
  op.kind = OpKind::kReduction;
  op.payload = payload;
  op.inputs = {in};
  op.outputs = {out};
  op.iterators.assign(static_cast<std::size_t>(n), IteratorType::kParallel);
  std::vector<VarId> im, om;
  const bool keep = static_cast<int>(p_.tensors[out].shape.size()) == n;
  for (int i = 0; i < n; ++i) {
    im.push_back(i);
    const bool red = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (red) op.iterators[i] = IteratorType::kReduction;
    if (!red) om.push_back(i);
    else if (keep) om.push_back(kConstZero);
  }
  op.indexing_maps = {im, om};
  return add(std::move(op));
}

OpId Builder::matmul(const std::string& name, TensorId a, TensorId b, TensorId c, bool transpose_b) {
  const auto& cs = p_.tensors[c].shape;
  const int batch = std::max(0, static_cast<int>(cs.size()) - 2);
  const VarId m = batch, n = batch + 1, k = batch + 2;
  Op op;
  op.name = name;
  op.kind = OpKind::kMatmul;
  op.payload = "matmul";
  op.inputs = {a, b};
  op.outputs = {c};
  op.iterators.assign(static_cast<std::size_t>(batch + 3), IteratorType::kParallel);
  op.iterators[k] = IteratorType::kReduction;
  auto batch_map = [&](TensorId t) {
    const auto& s = p_.tensors[t].shape;
    const int tb = std::max(0, static_cast<int>(s.size()) - 2);
    std::vector<VarId> mp;
    for (int i = 0; i < tb; ++i) {
      const int cd = i + (batch - tb);
      mp.push_back(cd >= 0 && s[i] == 1 && cs[cd] != 1 ? kConstZero : static_cast<VarId>(std::max(cd, 0)));
    }
    return mp;
  };
  auto am = batch_map(a), bm = batch_map(b);
  am.push_back(m);
  am.push_back(k);
  if (transpose_b) {
    bm.push_back(n);
    bm.push_back(k);
  } else {
    bm.push_back(k);
    bm.push_back(n);
  }
  std::vector<VarId> cm;
  for (int i = 0; i < batch + 2; ++i) cm.push_back(i);
  op.indexing_maps = {am, bm, cm};
  return add(std::move(op));
}

OpId Builder::generic(const std::string& name, OpKind kind, const std::string& payload,
                      const std::vector<TensorId>& inputs, const std::vector<TensorId>& outputs,
                      const std::vector<IteratorType>& iterators, const std::vector<std::vector<VarId>>& maps) {
  Op op;
  op.name = name;
  op.kind = kind;
  op.payload = payload;
  op.inputs = inputs;
  op.outputs = outputs;
  op.iterators = iterators;
  op.indexing_maps = maps;
  return add(std::move(op));
}

OpId Builder::opaque(const std::string& name, const std::string& payload, const std::vector<TensorId>& inputs,
                     const std::vector<TensorId>& outputs) {
  Op op;
  op.name = name;
  op.kind = OpKind::kOpaque;
  op.payload = payload;
  op.inputs = inputs;
  op.outputs = outputs;
  return add(std::move(op));
}

Result<Program> Builder::build(const std::string& source) {
  Program p = p_;
  if (auto st = finalize(p, source); !st) return st.error();
  return p;
}

namespace {

using P = IteratorType;
constexpr P kPar = P::kParallel;
constexpr P kRed = P::kReduction;

// Row-wise softmax pieces over the last axis of x [rows.., cols]: reduced tensors are sparse
// (one element per stick), the layout torch-spyre gives stick-dim reductions.
TensorId softmax_last(Builder& b, const std::string& pre, TensorId x) {
  std::vector<Dim> s = b.tensor_at(x).shape;
  std::vector<Dim> r = s;
  r.back() = 1;
  const int n = static_cast<int>(s.size());
  std::vector<int> sparse(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) sparse[i] = i;
  sparse.push_back(-1);
  TensorId mx = b.tensor(pre + "max", r), xs = b.tensor(pre + "shifted", s), e = b.tensor(pre + "exp", s);
  TensorId sum = b.tensor(pre + "sum", r), y = b.tensor(pre + "out", s);
  b.set_dim_order(mx, sparse);
  b.set_dim_order(sum, sparse);
  b.reduce(pre + "row_max", "max", x, {n - 1}, mx);
  b.pointwise(pre + "sub_max", "sub", {x, mx}, xs);
  b.pointwise(pre + "exp", "exp", {xs}, e);
  b.reduce(pre + "row_sum", "sum", e, {n - 1}, sum);
  b.pointwise(pre + "normalize", "div", {e, sum}, y);
  return y;
}

Result<Program> softmax_lastdim() {
  Builder b("softmax_lastdim");
  TensorId x = b.input("x", {1024, 4096});
  b.output(softmax_last(b, "", x));
  return b.build("example softmax_lastdim");
}

Result<Program> softmax_dim0() { return softmax_dim0_program(4096, 1024); }

Result<Program> layernorm() {
  Builder b("layernorm");
  const Dim t = 2048, h = 4096;
  TensorId x = b.input("x", {t, h}), g = b.input("gamma", {h}), be = b.input("beta", {h});
  TensorId sum = b.tensor("sum", {t, 1}), xc = b.tensor("centered", {t, h}), sq = b.tensor("squared", {t, h});
  TensorId var = b.tensor("var_sum", {t, 1}), rstd = b.tensor("rstd", {t, 1}), nrm = b.tensor("normalized", {t, h});
  TensorId sc = b.tensor("scaled", {t, h}), y = b.tensor("out", {t, h});
  for (TensorId r : {sum, var, rstd}) b.set_dim_order(r, {0, 1, -1});
  b.reduce("mean_sum", "sum", x, {1}, sum);
  b.pointwise("center", "sub_mean", {x, sum}, xc);
  b.pointwise("square", "mul", {xc, xc}, sq);
  b.reduce("var", "sum", sq, {1}, var);
  b.pointwise("rstd", "rsqrt_mean_eps", {var}, rstd);
  b.pointwise("normalize", "mul", {xc, rstd}, nrm);
  b.pointwise("scale", "mul", {nrm, g}, sc);
  b.pointwise("shift", "add", {sc, be}, y);
  b.output(y);
  return b.build("example layernorm");
}

Result<Program> rmsnorm() {
  Builder b("rmsnorm");
  const Dim t = 2048, h = 4096;
  TensorId x = b.input("x", {t, h}), w = b.input("weight", {h});
  TensorId sq = b.tensor("squared", {t, h}), ms = b.tensor("sum_squares", {t, 1}), rstd = b.tensor("rstd", {t, 1});
  TensorId nrm = b.tensor("normalized", {t, h}), y = b.tensor("out", {t, h});
  b.set_dim_order(ms, {0, 1, -1});
  b.set_dim_order(rstd, {0, 1, -1});
  b.pointwise("square", "mul", {x, x}, sq);
  b.reduce("sum_squares", "sum", sq, {1}, ms);
  b.pointwise("rstd", "rsqrt_mean_eps", {ms}, rstd);
  b.pointwise("normalize", "mul", {x, rstd}, nrm);
  b.pointwise("scale", "mul", {nrm, w}, y);
  b.output(y);
  return b.build("example rmsnorm");
}

Result<Program> matmul() {
  Builder b("matmul");
  TensorId a = b.input("a", {1024, 4096}), w = b.input("b", {4096, 4096}), c = b.tensor("c", {1024, 4096});
  b.matmul("matmul", a, w, c);
  b.output(c);
  return b.build("example matmul");
}

Result<Program> bmm() {
  Builder b("bmm");
  TensorId a = b.input("a", {32, 512, 128}), w = b.input("b", {32, 128, 512}), c = b.tensor("c", {32, 512, 512});
  b.matmul("bmm", a, w, c);
  b.output(c);
  return b.build("example bmm");
}

Result<Program> mlp() {
  Builder b("mlp");
  const Dim t = 512, h = 2048, f = 8192;
  TensorId x = b.input("x", {t, h}), w1 = b.input("w_up", {h, f}), w2 = b.input("w_down", {f, h});
  TensorId u = b.tensor("up", {t, f}), a = b.tensor("act", {t, f}), y = b.tensor("out", {t, h});
  b.matmul("up_proj", x, w1, u);
  b.pointwise("gelu", "gelu", {u}, a);
  b.matmul("down_proj", a, w2, y);
  b.output(y);
  return b.build("example mlp");
}

Result<Program> swiglu() {
  Builder b("swiglu");
  const Dim t = 512, h = 2048, f = 5632;
  TensorId x = b.input("x", {t, h}), wg = b.input("w_gate", {h, f}), wu = b.input("w_up", {h, f});
  TensorId wd = b.input("w_down", {f, h});
  TensorId g = b.tensor("gate", {t, f}), u = b.tensor("up", {t, f}), s = b.tensor("silu", {t, f});
  TensorId m = b.tensor("gated", {t, f}), y = b.tensor("out", {t, h});
  b.matmul("gate_proj", x, wg, g);
  b.matmul("up_proj", x, wu, u);
  b.pointwise("silu", "silu", {g}, s);
  b.pointwise("gate_mul", "mul", {s, u}, m);
  b.matmul("down_proj", m, wd, y);
  b.output(y);
  return b.build("example swiglu");
}

// Attention over [heads, seq, head_dim]; K is given sticked on the sequence dim (dim_order
// [0, 2, 1]) so that Q @ K^T has B sticked on N as matmul requires.
Result<Program> sdpa() {
  Builder b("sdpa");
  const Dim hd = 16, s = 1024, d = 128;
  TensorId q = b.input("q", {hd, s, d}), k = b.input("k", {hd, s, d}), v = b.input("v", {hd, s, d});
  b.set_dim_order(k, {0, 2, 1});
  TensorId sc = b.tensor("scores", {hd, s, s}), ss = b.tensor("scaled", {hd, s, s}), c = b.tensor("context", {hd, s, d});
  b.matmul("qk", q, k, sc, true);
  b.pointwise("scale", "mul_rsqrt_d", {sc}, ss);
  TensorId p = softmax_last(b, "softmax_", ss);
  b.matmul("pv", p, v, c);
  b.output(c);
  return b.build("example sdpa");
}

// Grouped-query attention: 32 query heads share 8 KV heads (groups of 4). Q is [kv_heads, group,
// seq, d]; K and V are [kv_heads, seq, d] and broadcast over the group iterator.
Result<Program> gqa() {
  Builder b("gqa");
  const Dim g = 8, r = 4, s = 512, d = 128;
  TensorId q = b.input("q", {g, r, s, d}), k = b.input("k", {g, s, d}), v = b.input("v", {g, s, d});
  b.set_dim_order(k, {0, 2, 1});
  TensorId sc = b.tensor("scores", {g, r, s, s}), ss = b.tensor("scaled", {g, r, s, s}), c = b.tensor("context", {g, r, s, d});
  // d0 kv head, d1 group, d2 query pos, d3 key pos, d4 head dim (K).
  b.generic("qk", OpKind::kMatmul, "matmul", {q, k}, {sc}, {kPar, kPar, kPar, kPar, kRed},
            {{0, 1, 2, 4}, {0, 3, 4}, {0, 1, 2, 3}});
  b.pointwise("scale", "mul_rsqrt_d", {sc}, ss);
  TensorId p = softmax_last(b, "softmax_", ss);
  // d0 kv head, d1 group, d2 query pos, d3 head dim (N), d4 key pos (K).
  b.generic("pv", OpKind::kMatmul, "matmul", {p, v}, {c}, {kPar, kPar, kPar, kPar, kRed},
            {{0, 1, 2, 4}, {0, 4, 3}, {0, 1, 2, 3}});
  b.output(c);
  return b.build("example gqa");
}

// Mixture-of-experts MLP (8 experts, Mixtral-like widths): routing and combining are opaque
// (data-dependent gathers); the experts run as batched matmuls over [experts, capacity, ...].
Result<Program> moe_mlp() {
  Builder b("moe_mlp");
  const Dim t = 256, h = 4096, e = 8, cap = 64, f = 14336;
  TensorId x = b.input("x", {t, h}), wr = b.input("w_router", {h, e});
  TensorId w1 = b.input("w_gate_up", {e, h, f}), w2 = b.input("w_down", {e, f, h});
  TensorId logits = b.tensor("router_logits", {t, e}), xe = b.tensor("dispatched", {e, cap, h});
  TensorId gates = b.tensor("gates", {e, cap}, DType::kFp32);
  TensorId up = b.tensor("expert_up", {e, cap, f}), act = b.tensor("expert_act", {e, cap, f});
  TensorId down = b.tensor("expert_down", {e, cap, h}), y = b.tensor("out", {t, h});
  b.matmul("router", x, wr, logits);
  b.opaque("dispatch_top2", "topk_gather", {x, logits}, {xe, gates});
  b.matmul("expert_up", xe, w1, up);
  b.pointwise("expert_act", "silu", {up}, act);
  b.matmul("expert_down", act, w2, down);
  b.opaque("combine", "weighted_scatter_add", {down, gates}, {y});
  b.output(y);
  return b.build("example moe_mlp");
}

}  // namespace

Result<Program> softmax_dim0_program(int64_t rows, int64_t cols) {
  // The reduction runs across rows, not along sticks, so the reduced [1, cols] tensors stay dense.
  Builder b("softmax_dim0");
  TensorId x = b.input("x", {rows, cols});
  TensorId mx = b.tensor("max", {1, cols}), xs = b.tensor("shifted", {rows, cols}), e = b.tensor("exp", {rows, cols});
  TensorId sum = b.tensor("sum", {1, cols}), y = b.tensor("out", {rows, cols});
  b.reduce("col_max", "max", x, {0}, mx);
  b.pointwise("sub_max", "sub", {x, mx}, xs);
  b.pointwise("exp", "exp", {xs}, e);
  b.reduce("col_sum", "sum", e, {0}, sum);
  b.pointwise("normalize", "div", {e, sum}, y);
  b.output(y);
  return b.build("example softmax_dim0");
}

std::vector<std::string> example_names() {
  return {"softmax_lastdim", "softmax_dim0", "layernorm", "rmsnorm", "matmul", "bmm",
          "mlp",             "swiglu",       "sdpa",      "gqa",     "moe_mlp"};
}

Result<Program> example_program(const std::string& name) {
  if (name == "softmax_lastdim") return softmax_lastdim();
  if (name == "softmax_dim0") return softmax_dim0();
  if (name == "layernorm") return layernorm();
  if (name == "rmsnorm") return rmsnorm();
  if (name == "matmul") return matmul();
  if (name == "bmm") return bmm();
  if (name == "mlp") return mlp();
  if (name == "swiglu") return swiglu();
  if (name == "sdpa") return sdpa();
  if (name == "gqa") return gqa();
  if (name == "moe_mlp") return moe_mlp();
  return bad_input("unknown example '" + name + "'");
}

Result<Program> synthetic_program(int num_ops, uint64_t seed) {
  Rng rng(seed);
  Builder b("synthetic_" + std::to_string(num_ops));
  const Dim widths[] = {512, 768, 1024, 2048, 4096};
  Dim rows = 256 * rng.range(1, 4), h = widths[rng.below(5)];
  TensorId x = b.input("x0", {rows, h});
  int ops = 0, id = 0;
  auto nm = [&](const char* p) { return std::string(p) + std::to_string(id++); };
  while (ops < num_ops) {
    const int pick = static_cast<int>(rng.below(4));
    if (pick == 0 && ops + 1 <= num_ops) {  // projection to a new width
      const Dim h2 = widths[rng.below(5)];
      TensorId w = b.input(nm("w"), {h, h2}), y = b.tensor(nm("t"), {rows, h2});
      b.matmul(nm("mm"), x, w, y);
      x = y;
      h = h2;
      ops += 1;
    } else if (pick == 1 && ops + 5 <= num_ops) {
      x = softmax_last(b, nm("sm") + "_", x);
      ops += 5;
    } else if (pick == 2 && ops + 3 <= num_ops) {  // rmsnorm-like
      TensorId sq = b.tensor(nm("t"), {rows, h}), ms = b.tensor(nm("t"), {rows, 1}), y = b.tensor(nm("t"), {rows, h});
      b.set_dim_order(ms, {0, 1, -1});
      b.pointwise(nm("sq"), "mul", {x, x}, sq);
      b.reduce(nm("ms"), "sum", sq, {1}, ms);
      b.pointwise(nm("nrm"), "mul_rsqrt", {x, ms}, y);
      x = y;
      ops += 3;
    } else {
      TensorId y = b.tensor(nm("t"), {rows, h});
      b.pointwise(nm("pw"), "gelu", {x}, y);
      x = y;
      ops += 1;
    }
  }
  b.output(x);
  return b.build("synthetic");
}

}  // namespace sp::program
