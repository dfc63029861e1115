#include "program/layout_compat.h"

#include <algorithm>

namespace sp::program {
namespace {

program::TensorId operand_tensor(const program::Op& op, int m) {
  return m < static_cast<int>(op.inputs.size()) ? op.inputs[m] : op.outputs[m - op.inputs.size()];
}

std::string var_name(int v) {
  if (v == program::kSummed) return "an affine sum (no single var)";
  return v < 0 ? std::string("nothing (sparse)") : "d" + std::to_string(v);
}

// Host dim h of operand m is indexed by `var`, alone or as a term of an affine sum.
bool dim_uses_var(const program::Op& op, int m, std::size_t h, int var) {
  if (op.indexing_maps[m][h] == var) return true;
  if (op.indexing_maps[m][h] != program::kSummed || static_cast<std::size_t>(m) >= op.exprs.size() || h >= op.exprs[m].size())
    return false;
  for (const program::AffineTerm& t : op.exprs[m][h].terms)
    if (t.var == var) return true;
  return false;
}

}  // namespace

int stick_var(const program::Program& p, program::OpId o, int m, const Layout& l) {
  const int h = layout::stick_host_dim(l);
  if (h < 0) return -1;
  const auto& map = p.ops[o].indexing_maps[m];
  return static_cast<std::size_t>(h) < map.size() ? map[h] : -1;
}

std::vector<LayoutIssue> check_op_layouts(const program::Program& p, program::OpId o, const std::vector<Layout>& layouts,
                                         bool messages) {
  const program::Op& op = p.ops[o];
  std::vector<LayoutIssue> out;
  if (op.ranges.empty()) return out;  // opaque ops impose no layout rule
  const int nin = static_cast<int>(op.inputs.size());
  const int nops = nin + static_cast<int>(op.outputs.size());
  std::vector<int> sv(nops);
  for (int m = 0; m < nops; ++m) sv[m] = stick_var(p, o, m, layouts[operand_tensor(op, m)]);
  // The message is built only when asked for (the work division asks for the fixes of every op).
  auto issue = [&](int m, FixKind fix, auto&& why) {
    const program::TensorId t = operand_tensor(op, m);
    out.push_back({o, m, t, fix, {}});
    if (messages)
      out.back().message = "op '" + op.name + "': " + (fix == FixKind::kRestickify ? "restickify" : "pad") + " '" +
                           p.tensors[t].name + "': " + why();
  };
  const auto is_red = [&](int v) { return v >= 0 && op.iterators[v] == program::IteratorType::kReduction; };
  if (op.kind == program::OpKind::kMatmul) {
    const int k = [&] {
      for (std::size_t v = 0; v < op.iterators.size(); ++v)
        if (op.iterators[v] == program::IteratorType::kReduction) return static_cast<int>(v);
      return -1;
    }();
    const int n = op.indexing_maps[2].back();
    if (sv[0] != k) issue(0, FixKind::kRestickify, [&] {
      return "matmul A must be sticked on K (d" + std::to_string(k) + "), it is sticked on " + var_name(sv[0]);
    });
    if (sv[1] != n) issue(1, FixKind::kRestickify, [&] {
      return "matmul B must be sticked on N (d" + std::to_string(n) + "), it is sticked on " + var_name(sv[1]);
    });
    if (sv[2] != n) issue(2, FixKind::kRestickify, [&] {
      return "matmul C must be sticked on N (d" + std::to_string(n) + "), it is sticked on " + var_name(sv[2]);
    });
    // B's K dim must hold whole sticks of A (zero padding so the reduction is not perturbed).
    const int eps_a = layout::elems_per_stick(layouts[op.inputs[0]].dtype);
    const Dim kk = op.ranges[k];
    if (sv[1] == n && kk % eps_a != 0) {
      const Layout& b = layouts[op.inputs[1]];
      Dim extent = 0;
      const auto& bmap = op.indexing_maps[1];
      for (std::size_t h = 0; h < bmap.size(); ++h)
        if (bmap[h] == k)
          for (std::size_t d = 0; d + 1 < b.device_size.size(); ++d)
            if (b.stride_map[d] == b.host_strides[h] && b.host_size[h] > 1) extent = std::max(extent, b.device_size[d]);
      const Dim need = (kk + eps_a - 1) / eps_a * eps_a;
      if (extent < need) {
        issue(1, FixKind::kPadding, [&] {
          return "B's K (" + std::to_string(kk) + ") must be padded with zeros to " + std::to_string(need) + " (" +
                 std::to_string(need / eps_a) + " sticks of A)";
        });
        out.back().pad_from = std::max(kk, extent);  // device extent the bytes scale from
        out.back().pad_to = need;
      }
    }
    return out;
  }
  // Pointwise and reduction: the reference stick var is the first output's (or the first
  // operand's) real stick var; a reduction along the stick (its data operand, input 0, sticked on
  // a reduction var) must write a sparse output.
  int ref = -1;
  for (int m = 0; m < nin; ++m)
    if (sv[m] >= 0) {
      ref = sv[m];
      break;
    }
  // A reduction whose data operand is sticked on an affine sum, a convolution's window ow + s,
  // slides that window along its stick dim instead of reducing it away.
  const int h0 = nin > 0 ? layout::stick_host_dim(layouts[op.inputs[0]]) : -1;
  const bool window = op.kind == program::OpKind::kReduction && h0 >= 0 &&
                      static_cast<std::size_t>(h0) < op.indexing_maps[0].size() && op.indexing_maps[0][h0] == program::kSummed;
  if (op.kind == program::OpKind::kReduction && !window && is_red(ref)) {
    for (int m = nin; m < nops; ++m)
      if (sv[m] >= 0)
        issue(m, FixKind::kRestickify, [&] {
          return "the op reduces along the stick dim (" + var_name(ref) +
                 "), so its output must be sparse (dim_order ending in -1); it is sticked on " + var_name(sv[m]);
        });
    for (int m = 0; m < nin; ++m)
      if (sv[m] >= 0 && sv[m] != ref) issue(m, FixKind::kRestickify, [&] {
        return "sticked on " + var_name(sv[m]) + ", the op's stick is " + var_name(ref);
      });
    return out;
  }
  for (int m = nin; m < nops; ++m)
    if (sv[m] >= 0) {
      ref = sv[m];
      break;
    }
  if (window && ref >= 0) {  // the window must slide along the output's stick var
    const bool no_sum = op.exprs.empty() || op.exprs[0].size() <= static_cast<std::size_t>(h0);  // (kSummed comes from exprs)
    if (!no_sum && !dim_uses_var(op, 0, static_cast<std::size_t>(h0), ref))
      issue(0, FixKind::kRestickify, [&] {
        return "sticked on " + var_name(program::kSummed) + " without the output's stick var " + var_name(ref);
      });
  }
  // A contraction operand of a reduction (a convolution's filter, w of sum_j x[i, j] * w[j]):
  // an input after the data operand, sticked on a reduction var and not indexed by the output's
  // stick var, is read like a matmul's A sticked on K, its native layout. (Before, such a filter
  // was reported for a restickify on every convolution, and its reduction var was even taken as
  // the op's stick, asking for a sparse output.)
  auto contraction = [&](int m) {
    if (op.kind != program::OpKind::kReduction || m == 0 || m >= nin || !is_red(sv[m])) return false;
    for (std::size_t h = 0; h < op.indexing_maps[m].size(); ++h)
      if (dim_uses_var(op, m, h, ref)) return false;
    return true;
  };
  for (int m = 0; m < nops; ++m)
    if (sv[m] >= 0 && sv[m] != ref && !contraction(m))
      issue(m, FixKind::kRestickify, [&] {
        return "sticked on " + var_name(sv[m]) + ", the op's output is sticked on " + var_name(ref);
      });
  return out;
}

std::vector<OpenLayout> infer_open_layouts(const program::Program& p) {
  std::vector<OpenLayout> chosen;
  auto open = [&](program::TensorId t) {
    const program::Tensor& x = p.tensors[t];
    return !x.layout && x.dim_order.empty() && !x.graph_input && !x.graph_output;
  };
  // Most programs lay out what they reduce: then skip building every layout.
  auto given_sparse = [&](program::TensorId t) {
    const program::Tensor& x = p.tensors[t];
    return x.layout || (!x.dim_order.empty() && x.dim_order.back() == -1);
  };
  auto open_load_time = [&](program::TensorId t) {
    const program::Tensor& x = p.tensors[t];
    return x.load_time && !x.layout && x.dim_order.empty() && !p.consumers[t].empty();
  };
  bool any = false;
  for (std::size_t t = 0; t < p.tensors.size(); ++t) any = any || open_load_time(static_cast<program::TensorId>(t));
  for (const program::Op& op : p.ops)
    for (program::TensorId t : op.outputs)
      if (open(t)) {
        if (op.kind == program::OpKind::kReduction) any = true;
        if (op.kind == program::OpKind::kPointwise)
          for (program::TensorId in : op.inputs) any = any || given_sparse(in);
      }
  if (!any) return chosen;
  std::vector<Layout> layouts;
  layouts.reserve(p.tensors.size());
  for (const auto& t : p.tensors) {
    auto l = program::tensor_layout(t);
    if (!l) return {};  // (finalize() checked every layout; nothing to infer from a bad one)
    layouts.push_back(std::move(*l));
  }
  for (std::size_t o = 0; o < p.ops.size(); ++o) {
    const program::Op& op = p.ops[o];
    const auto oid = static_cast<program::OpId>(o);
    for (program::TensorId t : op.outputs) {
      if (!open(t)) continue;
      const program::Tensor& x = p.tensors[t];
      bool wanted = false;  // the op writes t sparse natively
      if (op.kind == program::OpKind::kPointwise) {  // every operand of t's shape is sparse
        int same = 0, sparse_in = 0;
        for (program::TensorId in : op.inputs)
          if (p.tensors[in].shape == x.shape) {
            ++same;
            sparse_in += layout::stick_host_dim(layouts[in]) < 0;
          }
        wanted = same > 0 && sparse_in == same;
      } else if (op.kind == program::OpKind::kReduction && !op.inputs.empty()) {
        // Along the stick: the data operand's stick dim is indexed by one reduction var alone
        // (so a convolution, whose window sums index it, does not qualify), and the checker
        // asks for a sparse output.
        const int sv = stick_var(p, oid, 0, layouts[op.inputs[0]]);
        if (sv >= 0 && static_cast<std::size_t>(sv) < op.iterators.size() &&
            op.iterators[sv] == program::IteratorType::kReduction)
          for (const LayoutIssue& is : check_op_layouts(p, oid, layouts, false))
            wanted = wanted || (is.tensor == t && is.fix == FixKind::kRestickify);
      }
      if (!wanted) continue;
      std::vector<int> order;
      for (std::size_t d = 0; d < x.shape.size(); ++d) order.push_back(static_cast<int>(d));
      order.push_back(-1);
      auto l = layout::layout_from_dim_order(x.shape, x.dtype, order);
      if (!l) continue;
      // No larger than the data it is computed from (a stick-dim reduction of S >= 64 elements).
      if (layout::device_bytes(*l) > layout::device_bytes(layouts[op.inputs[0]])) continue;
      const auto before = check_op_layouts(p, oid, layouts, false);
      std::swap(layouts[t], *l);
      // Kept only if the op then writes t without a fix and needs no more fixes than before.
      const auto after = check_op_layouts(p, oid, layouts, false);
      bool ok = after.size() <= before.size();
      for (const LayoutIssue& is : after) ok = ok && is.tensor != t;
      if (!ok) {
        std::swap(layouts[t], *l);
        continue;
      }
      chosen.push_back({t, std::move(order)});
    }
  }
  // Load-time inputs (weights, folded constants) are laid out once when the model is loaded, so
  // an open one gets the layout (one host dim as the stick, or sparse) with the fewest fixes over
  // its readers, counting every operand of those ops (the stick of one operand can set the op's).
  // Kept only if strictly fewer than with the default layout; ties go to fewer bytes, then to the
  // earlier candidate. Bytes at most (1 + 2 x fixes removed) times the default's: each fix per run
  // reads the default and writes a copy, so a larger layout would cost more than the fixes it
  // saves (a sparse conv bias of 96 elements is 48 times its default; a [heads, 1, 1] scale 3 times).
  for (std::size_t ti = 0; ti < p.tensors.size(); ++ti) {
    const auto t = static_cast<program::TensorId>(ti);
    if (!open_load_time(t)) continue;
    const program::Tensor& x = p.tensors[t];
    auto fixes = [&] {
      std::size_t n = 0;
      for (program::OpId c : p.consumers[t]) n += check_op_layouts(p, c, layouts, false).size();
      return n;
    };
    const std::size_t base_fixes = fixes();
    if (base_fixes == 0) continue;
    const layout::Bytes base_bytes = layout::device_bytes(layouts[t]);
    std::size_t best_fixes = base_fixes;
    layout::Bytes best_bytes = 0;
    std::vector<int> best;
    for (std::size_t h = 0; h <= x.shape.size(); ++h) {  // h = rank: the sparse layout
      const bool sparse = h == x.shape.size();
      if (!sparse && x.shape[h] < 2) continue;
      std::vector<int> order;
      for (std::size_t d = 0; d < x.shape.size(); ++d)
        if (d != h) order.push_back(static_cast<int>(d));
      order.push_back(sparse ? -1 : static_cast<int>(h));
      auto l = layout::layout_from_dim_order(x.shape, x.dtype, order);
      if (!l) continue;
      const layout::Bytes bytes = layout::device_bytes(*l);
      std::swap(layouts[t], *l);
      const std::size_t n = fixes();
      std::swap(layouts[t], *l);
      const auto cap = static_cast<__int128>(base_bytes) * static_cast<__int128>(1 + 2 * (base_fixes - std::min(n, base_fixes)));
      if (static_cast<__int128>(bytes) > cap) continue;
      if (n < best_fixes || (n == best_fixes && !best.empty() && bytes < best_bytes)) {
        best_fixes = n;
        best_bytes = bytes;
        best = std::move(order);
      }
    }
    if (best.empty()) continue;
    auto l = layout::layout_from_dim_order(x.shape, x.dtype, best);
    layouts[t] = std::move(*l);
    chosen.push_back({t, std::move(best)});
  }
  return chosen;
}

Result<std::vector<LayoutIssue>> check_program_layouts(const program::Program& p) {
  std::vector<Layout> layouts;
  for (const auto& t : p.tensors) {
    auto l = program::tensor_layout(t);
    if (!l) return bad_input("tensor '" + t.name + "': " + l.error().message);
    layouts.push_back(std::move(*l));
  }
  std::vector<LayoutIssue> out;
  for (std::size_t o = 0; o < p.ops.size(); ++o) {
    auto v = check_op_layouts(p, static_cast<program::OpId>(o), layouts);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace sp::program
