// Lower bounds on the total latency of any valid schedule (printed with --verbose; the gap
// column of docs/benchmarks.md is measured against `combined`).
#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mlsys/scheduler.h"

namespace sp::mlsys {
namespace {

double ceil_div(int64_t a, int64_t b) { return static_cast<double>((a + b - 1) / b); }

// MatMuls reachable from `o`'s output through pointwise ops only, with the input slot the path
// enters them by: the consumers `o` can be a chain head for (RULES.md 1.6).
std::vector<std::pair<OpId, int>> chain_consumers(const Problem& p, OpId o) {
  std::vector<std::pair<OpId, int>> found;
  std::vector<char> seen(p.num_ops(), 0);
  std::vector<TensorId> stack(p.ops[o].outputs.begin(), p.ops[o].outputs.end());
  while (!stack.empty()) {
    TensorId t = stack.back();
    stack.pop_back();
    for (const Consumer& c : p.consumers[t]) {
      if (p.is_matmul(c.op)) {
        found.emplace_back(c.op, c.slot);
      } else if (!seen[c.op]) {
        seen[c.op] = 1;
        for (TensorId u : p.ops[c.op].outputs) stack.push_back(u);
      }
    }
  }
  return found;
}

// Traffic floor: elements any valid schedule loads or stores, summed over disjoint trees.
//
// A tensor with exactly one consumer belongs to the tree of the first tensor downstream of it
// that has several consumers or none (its root); trees share no tensor, so their loads and
// stores add up. Inside a tree, each tensor is supplied to its consumer either from slow memory
// (loaded; if produced, it was also stored and produced once elsewhere) or by running its
// producer in the consumer's subgraph, and the floor takes the cheaper. Roots count only their
// production (and a graph output's store): their loads may be shared by several consumers.
//
// Streams: a MatMul with K above native_k ("long") run k-looped has at least two k-steps per
// tile (k <= native_k) and asks for a new k-slice of each operand at every step; slices are
// reused only between adjacent steps when identical, so an operand that cannot be resident
// (larger than the fast memory) is re-read at every step: K·H·⌈N/nw⌉ elements as LHS,
// K·N·⌈H/nh⌉ as RHS. Pointwise producers pass the same stream to their inputs; a chain head
// (a MatMul feeding the long MatMul in its subgraph) turns it into a stream of K_head-long
// strips of the operand whose free dimension the k-slices cut, over every tile of the long one.
class TrafficFloor {
 public:
  TrafficFloor(const Problem& p, const RuleOptions& rules) : p_(p), rules_(rules), prod_(p.num_tensors(), -1) {
    owner_.assign(p.num_tensors(), -1);
    separate_.assign(p.num_tensors(), 0);
    for (TensorId t = 0; t < p.num_tensors(); ++t) {
      owner_[t] = single(t) ? p.consumers[t][0].op : designated_consumer(t);
      if (owner_[t] < 0) separate_[t] = consumers_never_share(t) || consumers_share_only_thinly(t);
    }
  }

  double total() {
    double sum = 0;
    for (TensorId t = 0; t < p_.num_tensors(); ++t) {
      if (owner_[t] >= 0) continue;
      if (p_.is_graph_input[t]) {
        // Graph inputs cannot be retained: loaded once (a separate one by each consumer's tree).
        if (!p_.consumers[t].empty() && !separate_[t]) sum += size(t);
      } else {
        sum += production(t);
        if (p_.is_graph_output[t]) sum += size(t);
      }
    }
    return sum;
  }

 private:
  struct Stream {
    double elements;  // elements asked for over all steps
    bool along_cols;  // the k-slices move along the tensor's columns (an LHS-side region)
    double per_step;  // K_c x tiles of the long MatMul c that drives the stream
  };

  double size(TensorId t) const { return static_cast<double>(p_.tensors[t].size()); }
  bool single(TensorId t) const { return p_.consumers[t].size() == 1; }
  bool is_long(OpId o) const { return p_.is_matmul(o) && !rules_.allow_super_native && p_.reduction(o) > p_.native_k; }
  double tiles(OpId o) const {
    const Tensor& out = p_.tensors[p_.ops[o].outputs[0]];
    return ceil_div(out.height, p_.native_h) * ceil_div(out.width, p_.native_w);
  }
  // The streams a long MatMul run k-looped asks of its operands.
  Stream operand_stream(OpId o, int slot) const {
    const Tensor& out = p_.tensors[p_.ops[o].outputs[0]];
    const double k = static_cast<double>(p_.reduction(o));
    if (slot == 0) return {k * static_cast<double>(out.height) * ceil_div(out.width, p_.native_w), true, k * tiles(o)};
    return {k * static_cast<double>(out.width) * ceil_div(out.height, p_.native_h), false, k * tiles(o)};
  }

  // Whether `by`'s tree counts t: its single or designated consumer, or any consumer of a
  // separate graph input (each loads it in a subgraph of its own).
  bool owns(TensorId t, OpId by) const { return owner_[t] == by || separate_[t]; }

  // The part of a separate tensor's loads charged to consumer `by` (1 unless thinly shared).
  double share(TensorId t, OpId by) const {
    auto it = share_.find(key(t, by));
    return it == share_.end() ? 1.0 : it->second;
  }
  int64_t key(TensorId t, OpId by) const { return static_cast<int64_t>(t) * p_.num_ops() + by; }

  // Tensor t needed at least once where its consumer `by` runs.
  double once(TensorId t, OpId by) {
    if (!owns(t, by)) return 0;  // a root, or another consumer's: counted elsewhere
    return p_.is_graph_input[t] ? size(t) * share(t, by) : production(t);
  }

  // Tensor t asked for as stream s by its consumer `by`.
  double stream(TensorId t, const Stream& s, OpId by) {
    if (!owns(t, by)) return 0;
    // A graph input is whole in fast memory only if some step asks for all of it (it cannot be
    // retained); its stream's slices never are all of it, and no other consumer shares this
    // subgraph (single, designated or separate), so it is re-read whatever its size.
    if (p_.is_graph_input[t]) return s.elements * share(t, by);
    if (p_.tensors[t].size() <= p_.fast_memory_capacity) return once(t, by);  // could be retained
    const double loaded = s.elements + size(t) + production(t);  // stored, produced once, re-read
    const OpId q = p_.producer[t];
    if (p_.ops[q].outputs.size() != 1) return 0;  // its production may serve another tree
    double here = 0;  // run the producer in the consumer's subgraph
    const Op& op = p_.ops[q];
    if (!p_.is_matmul(q)) {
      for (std::size_t i = 0; i < op.inputs.size(); ++i) here += stream(op.inputs[i], s, q);
    } else {
      // Chain head: the operand sharing the moving dimension streams K_q-long strips.
      const double k = static_cast<double>(p_.reduction(q));
      const int moving = s.along_cols ? 1 : 0;
      here = moving_stream(q, moving, Stream{k * s.per_step, s.along_cols, s.per_step}) + once(op.inputs[1 - moving], q);
    }
    return std::min(loaded, here);
  }

  // Elements loaded, inside t's tree, to produce t at least once (any subgraph, any mode).
  double production(TensorId t) {
    if (prod_[t] >= 0) return prod_[t];
    const OpId q = p_.producer[t];
    const Op& op = p_.ops[q];
    double best = 0;
    if (op.outputs.size() == 1) {  // several outputs would share their production: count none
      if (!is_long(q)) {
        for (TensorId u : op.inputs) best += once(u, q);
      } else {
        best = stream(op.inputs[0], operand_stream(q, 0), q) + stream(op.inputs[1], operand_stream(q, 1), q);  // k-looped
        // A designated operand's other consumers run outside q's first subgraph and outside the
        // one that produced what q loaded, so they read it again or recompute it.
        for (TensorId u : op.inputs)
          if (owner_[u] == q && !single(u)) best += p_.is_graph_input[u] ? size(u) : std::min(size(u), production(u));
        for (const auto& [m, m_slot] : chain_consumers(p_, q)) {  // or a chain head of m
          double head = once(op.inputs[0], q) + once(op.inputs[1], q);
          if (is_long(m)) {
            // m's k-slices move along the columns of what it reads as LHS, the rows of its RHS.
            const bool along_cols = m_slot == 0;
            const int moving = along_cols ? 1 : 0;
            const double per_step = static_cast<double>(p_.reduction(m)) * tiles(m);
            head = moving_stream(q, moving, Stream{static_cast<double>(p_.reduction(q)) * per_step, along_cols, per_step}) +
                   once(op.inputs[1 - moving], q);
            // m a chain head itself asks for its whole reduction range, so all of the moving
            // operand at once: impossible for a graph input larger than the fast memory (it is
            // loaded, not produced in the subgraph); otherwise each operand at least once.
            const TensorId u = op.inputs[moving];
            const bool whole_impossible = p_.is_graph_input[u] && p_.tensors[u].size() > p_.fast_memory_capacity;
            if (!chain_consumers(p_, m).empty() && !whole_impossible)
              head = std::min(head, once(op.inputs[0], q) + once(op.inputs[1], q));
          }
          best = std::min(best, head);
        }
      }
    }
    prod_[t] = best;
    return best;
  }

  // A chain head's moving operand. Shared with other consumers, its loads could serve theirs
  // in the same steps (the k-looped argument below does not cover chain heads): count it once.
  double moving_stream(OpId q, int slot, const Stream& s) {
    const TensorId u = p_.ops[q].inputs[slot];
    return single(u) || separate_[u] ? stream(u, s, q) : once(u, q);
  }

  // A graph input larger than the fast memory is never whole in it (a request of all of it is
  // an OOM; inputs cannot be retained), so every subgraph that runs one of its consumers loads
  // every element that consumer asks for. When no subgraph can hold two of its consumers, each
  // consumer's loads are its own and the floor counts them once per consumer.
  bool consumers_never_share(TensorId t) const {
    if (!p_.is_graph_input[t] || p_.tensors[t].size() <= p_.fast_memory_capacity || p_.consumers[t].size() < 2) return false;
    for (const Consumer& c : p_.consumers[t]) {
      if (!p_.is_matmul(c.op) || p_.ops[c.op].outputs.size() != 1) return false;
      for (const Consumer& other : p_.consumers[t])
        if (other.op == c.op && other.slot != c.slot) return false;  // reads t twice
      std::vector<char> mates = possible_subgraph_mates(c.op, t);
      for (const Consumer& other : p_.consumers[t])
        if (other.op != c.op && mates[other.op]) return false;
    }
    return true;
  }

  // Thin sharing. Graph input t larger than the fast memory; each consumer c (a MatMul) run
  // k-looped shares no subgraph with another consumer (the closure below with c k-looped), and
  // for every MatMul m that c can be a chain head of, t is the operand m's k-slices move along,
  // so m is k-looped (a chain head m would make c ask for all of t in one step). In a subgraph
  // with j consumers of t, each is then a chain head asking in every step for a strip of its
  // other operand u_c across the grid's cut dimension: h x K_c (u_c its LHS) or K_c x w (RHS).
  // If each u_c is a different tensor that cannot be produced in that subgraph (a graph input,
  // or made by a MatMul whose own moving operand towards c is a graph input larger than the
  // fast memory: a chain head of a chain head), the strips are all resident at once, so
  // h·ΣK_c <= capacity, the grid has at least D·ΣK_c/capacity bands (D the cut dimension of
  // the sinks), and every band re-reads all of t (its slices change at every k-step). The t
  // loads of that subgraph are then at least Σ_c |u_c|/capacity × |t| × (bands of the other
  // dimension), and charging consumer c the share min(1, |u_c| / (capacity × ⌈D/native⌉)) of
  // what the floor counts for it (its stream, or all of t once per native tile of m) never
  // exceeds them; a consumer alone in its subgraph is charged at most its own loads.
  bool consumers_share_only_thinly(TensorId t) {
    if (!p_.is_graph_input[t] || p_.tensors[t].size() <= p_.fast_memory_capacity || p_.consumers[t].size() < 2) return false;
    std::vector<TensorId> others;  // each consumer's other operand
    std::vector<double> shares;
    for (const Consumer& c : p_.consumers[t]) {
      const Op& op = p_.ops[c.op];
      if (!p_.is_matmul(c.op) || op.outputs.size() != 1 || op.inputs[0] == op.inputs[1]) return false;
      std::vector<char> mates = possible_subgraph_mates(c.op, t, true);
      for (const Consumer& other : p_.consumers[t])
        if (other.op != c.op && mates[other.op]) return false;
      const int moving_slot = 1 - c.slot;  // the slot of c's output in m for which t moves
      for (const auto& [m, m_slot] : chain_consumers(p_, c.op))
        if (m_slot != moving_slot) return false;
      const TensorId u = op.inputs[1 - c.slot];
      if (std::find(others.begin(), others.end(), u) != others.end()) return false;
      others.push_back(u);
      const OpId q = p_.producer[u];
      if (q >= 0) {  // u is made by a chain head of c, itself a chain head: q's moving operand is asked whole
        if (!p_.is_matmul(q)) return false;
        const TensorId q_moving = p_.ops[q].inputs[c.slot == 1 ? 1 : 0];
        if (!p_.is_graph_input[q_moving] || p_.tensors[q_moving].size() <= p_.fast_memory_capacity) return false;
      }
      const Tensor& ut = p_.tensors[u];
      const double bands = c.slot == 1 ? ceil_div(ut.height, p_.native_h) : ceil_div(ut.width, p_.native_w);
      shares.push_back(std::min(1.0, size(u) / (static_cast<double>(p_.fast_memory_capacity) * bands)));
    }
    for (std::size_t i = 0; i < shares.size(); ++i) share_[key(t, p_.consumers[t][i].op)] = shares[i];
    return true;
  }

  // Every op that may share a subgraph with MatMul c, c reading graph input t larger than the
  // fast memory: a superset, by connectivity through produced-and-consumed tensors (RULES.md
  // V2). One restriction: a MatMul m reading c's output directly, with t the operand of c that
  // m's k-slices move along, is never a chain head in a subgraph with c (c, its chain head,
  // would be asked for all of t in one step: an OOM), so m is k-looped there and no MatMul is
  // in it that m reaches through pointwise ops of the subgraph.
  // With `c_k_looped`, c itself runs k-looped: no MatMul follows it through pointwise ops.
  std::vector<char> possible_subgraph_mates(OpId c, TensorId t, bool c_k_looped = false) const {
    std::vector<char> k_looped(p_.num_ops(), 0);
    k_looped[c] = c_k_looped;
    for (const Consumer& m : p_.consumers[p_.ops[c].outputs[0]]) {
      const int moving = m.slot == 0 ? 1 : 0;  // m's LHS k-slices cut c's output columns: c's RHS moves
      if (p_.is_matmul(m.op) && p_.ops[c].inputs[moving] == t) k_looped[m.op] = 1;
    }
    enum : char { kUnseen, kSeenRestricted, kSeenFree };
    std::vector<char> seen(p_.num_ops(), kUnseen);
    // restricted: reached from a k-looped m through pointwise ops, so no MatMul may follow.
    std::vector<std::pair<OpId, bool>> stack{{c, false}};
    while (!stack.empty()) {
      auto [x, restricted] = stack.back();
      stack.pop_back();
      restricted = restricted || k_looped[x];
      if (seen[x] == kSeenFree || (seen[x] == kSeenRestricted && restricted)) continue;
      seen[x] = restricted ? kSeenRestricted : kSeenFree;
      for (TensorId u : p_.ops[x].inputs)
        if (p_.producer[u] >= 0) stack.emplace_back(p_.producer[u], false);
      for (TensorId v : p_.ops[x].outputs)
        for (const Consumer& y : p_.consumers[v])
          if (!(restricted && p_.is_matmul(y.op))) stack.emplace_back(y.op, restricted);
    }
    std::vector<char> mates(p_.num_ops(), 0);
    for (OpId o = 0; o < p_.num_ops(); ++o) mates[o] = seen[o] != kUnseen;
    return mates;
  }

  // A tensor with several consumers still belongs to a long MatMul c among them when every
  // other consumer is "shielded": downstream of c, and reached from it only through paths with
  // a MatMul on them. Then in c's first subgraph, if c runs k-looped there, no other consumer is
  // present (it would need each op on its paths from c in that subgraph, and the first MatMul
  // on such a path would make c a chain head), so c's stream of the tensor is loaded for c
  // alone; if c runs as a chain head there, its own tree pays the chain head. Returns c or -1.
  OpId designated_consumer(TensorId t) const {
    if (p_.tensors[t].size() <= p_.fast_memory_capacity || p_.consumers[t].size() < 2) return -1;
    for (const Consumer& cand : p_.consumers[t]) {
      if (!is_long(cand.op)) continue;
      std::vector<char> below(p_.num_ops(), 0), pointwise_path(p_.num_ops(), 0);
      mark_below(cand.op, below, pointwise_path);
      bool ok = true;
      for (const Consumer& other : p_.consumers[t]) {
        if (&other == &cand) continue;
        if (other.op == cand.op || !below[other.op] || pointwise_path[other.op]) ok = false;  // c reads t twice, or not shielded
      }
      if (ok) return cand.op;
    }
    return -1;
  }
  // below: ops downstream of c; pointwise_path: pointwise ops reached from c through pointwise ops only.
  void mark_below(OpId c, std::vector<char>& below, std::vector<char>& pointwise_path) const {
    std::vector<std::pair<OpId, bool>> stack{{c, true}};
    while (!stack.empty()) {
      auto [o, via_pointwise] = stack.back();
      stack.pop_back();
      for (TensorId t : p_.ops[o].outputs)
        for (const Consumer& u : p_.consumers[t]) {
          const bool pw = via_pointwise && !p_.is_matmul(u.op);
          if (below[u.op] && (!pw || pointwise_path[u.op])) continue;
          below[u.op] = 1;
          if (pw) pointwise_path[u.op] = 1;
          stack.emplace_back(u.op, pw);
        }
    }
  }

  const Problem& p_;
  const RuleOptions& rules_;
  std::vector<double> prod_;   // memo of production(t); -1 = not computed
  std::vector<OpId> owner_;    // the consumer whose tree t belongs to; -1 for roots
  std::vector<char> separate_; // graph input whose consumers never share a subgraph: each counts it
  std::unordered_map<int64_t, double> share_;  // (tensor, consumer) -> part charged, when below 1
};

}  // namespace

LowerBounds lower_bounds(const Problem& p, const RuleOptions& rules) {
  LowerBounds b;
  const double native_area = static_cast<double>(p.native_w * p.native_h);
  for (int o = 0; o < p.num_ops(); ++o) {
    const Op& op = p.ops[o];
    for (TensorId t : op.outputs) {
      // Every element is computed at least once. A region of a×b costs at least base·a·b/native
      // area (pointwise tiles are padded up, chain-head strips pay by area, a k-looped tile pays
      // base whatever its size), so the fractional area is a safe floor.
      double c = op.base_cost * static_cast<double>(p.tensors[t].size()) / native_area;
      if (op.kind == OpKind::kMatMul && rules.mm_compute == MatMulCompute::kNative)
        c *= static_cast<double>(p.reduction(o)) / static_cast<double>(p.native_k);
      b.compute += c;
    }
  }
  b.memory = TrafficFloor(p, rules).total() / p.slow_memory_bandwidth;
  // Subgraphs run one after another and each step takes max(compute, memory), so the total is
  // at least each sum.
  b.combined = std::max(b.compute, b.memory);
  return b;
}

double default_time_limit(const Problem& p) {
  // The contest gave 2 s to its smallest benchmarks and 60 s to the largest; interpolate by op
  // count with the same tiers (5 ops: 2 s, 19: 5 s, 32: 15 s, 63: 30 s, 103: 60 s).
  const int n = p.num_ops();
  if (n <= 8) return 2;
  if (n <= 24) return 5;
  if (n <= 40) return 15;
  if (n <= 80) return 30;
  return 60;
}

}  // namespace sp::mlsys
