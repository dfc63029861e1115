// A generated transformer program (attention + MLP blocks) for scale tests and benchmarks.
#include "lx/lx.h"
#include "program/builder.h"

namespace sp::lx {

Result<program::Program> transformer_program(int num_ops, int64_t seq, int64_t hidden, bool sparse_reductions) {
  using program::TensorId;
  program::Builder b("transformer_" + std::to_string(num_ops));
  int id = 0, ops = 0;
  auto nm = [&](const char* p) { return std::string(p) + std::to_string(id++); };
  TensorId x = b.input("x", {seq, hidden});
  auto norm = [&](TensorId in) {
    TensorId sq = b.tensor(nm("sq"), {seq, hidden}), ms = b.tensor(nm("ms"), {seq, 1}), y = b.tensor(nm("n"), {seq, hidden});
    if (sparse_reductions) b.set_dim_order(ms, {0, 1, -1});  // reduced along the stick: sparse
    b.pointwise(nm("square"), "mul", {in, in}, sq);
    b.reduce(nm("mean_sq"), "mean", sq, {1}, ms);
    b.pointwise(nm("normalize"), "mul_rsqrt", {in, ms}, y);
    ops += 3;
    return y;
  };
  auto proj = [&](TensorId in, int64_t k, int64_t n) {
    TensorId w = b.input(nm("w"), {k, n}), y = b.tensor(nm("p"), {seq, n});
    b.matmul(nm("mm"), in, w, y);
    ops += 1;
    return y;
  };
  auto add = [&](TensorId a, TensorId c) {
    TensorId y = b.tensor(nm("r"), {seq, hidden});
    b.pointwise(nm("residual"), "add", {a, c}, y);
    ops += 1;
    return y;
  };
  const int block_ops = 22;
  while (ops + block_ops <= num_ops) {
    // attention
    TensorId h = norm(x);
    TensorId q = proj(h, hidden, hidden), k = proj(h, hidden, hidden), v = proj(h, hidden, hidden);
    TensorId s = b.tensor(nm("scores"), {seq, seq});
    b.matmul(nm("qk"), q, k, s, /*transpose_b=*/true);
    TensorId mx = b.tensor(nm("max"), {seq, 1}), sh = b.tensor(nm("sh"), {seq, seq}), e = b.tensor(nm("e"), {seq, seq});
    TensorId sm = b.tensor(nm("sum"), {seq, 1}), pr = b.tensor(nm("probs"), {seq, seq});
    if (sparse_reductions) {
      b.set_dim_order(mx, {0, 1, -1});
      b.set_dim_order(sm, {0, 1, -1});
    }
    b.reduce(nm("row_max"), "max", s, {1}, mx);
    b.pointwise(nm("sub"), "sub", {s, mx}, sh);
    b.pointwise(nm("exp"), "exp", {sh}, e);
    b.reduce(nm("row_sum"), "sum", e, {1}, sm);
    b.pointwise(nm("div"), "div", {e, sm}, pr);
    TensorId o = b.tensor(nm("attn"), {seq, hidden});
    b.matmul(nm("pv"), pr, v, o);
    ops += 7;
    x = add(x, proj(o, hidden, hidden));
    // MLP
    TensorId h2 = norm(x);
    TensorId up = proj(h2, hidden, 4 * hidden);
    TensorId g = b.tensor(nm("gelu"), {seq, 4 * hidden});
    b.pointwise(nm("gelu"), "gelu", {up}, g);
    ops += 1;
    x = add(x, proj(g, 4 * hidden, hidden));
  }
  while (ops < num_ops) {  // pad with pointwise ops to the exact count
    TensorId y = b.tensor(nm("t"), {seq, hidden});
    b.pointwise(nm("scale"), "mul", {x}, y);
    x = y;
    ++ops;
  }
  b.output(x);
  return b.build("transformer generator");
}

}  // namespace sp::lx
