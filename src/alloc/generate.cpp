#include "alloc/generate.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"

namespace sp::alloc {

Problem generate_stream(int n, uint64_t seed, int per_tick) {
  Rng rng(seed);
  Problem p;
  p.buffers.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = std::to_string(i);
    b.start = i / per_tick;
    // 90% live a few ticks (activations), 10% much longer (skip connections, weights).
    Time life = rng.chance(0.9) ? rng.range(1, 8) : rng.range(20, 400);
    b.end = b.start + life;
    double lg = 6.0 + rng.uniform() * 12.0;  // 2^6 .. 2^18 bytes
    b.size = std::max<Size>(64, static_cast<Size>(std::pow(2.0, lg)) / 64 * 64);
    p.buffers.push_back(std::move(b));
  }
  return p;
}

Problem generate_random(int n, uint64_t seed) {
  Rng rng(seed);
  Problem p;
  p.buffers.reserve(static_cast<std::size_t>(n));
  const int64_t ticks = std::max(1, n / 8);
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = std::to_string(i);
    b.start = rng.range(0, ticks - 1);
    b.end = b.start + rng.range(1, 200);
    b.size = rng.range(64, 65536);
    p.buffers.push_back(std::move(b));
  }
  return p;
}

namespace {

void add(Problem& p, Time start, Time end, Size size) {
  Buffer b;
  b.id = std::to_string(p.buffers.size());
  b.start = start;
  b.end = std::max(end, start + 1);
  b.size = std::max<Size>(1, size);
  p.buffers.push_back(std::move(b));
}

}  // namespace

Problem generate_xla_trace(int n, uint64_t seed) {
  Rng rng(seed);
  Problem p;
  p.buffers.reserve(static_cast<std::size_t>(n));
  const Time ticks = std::max<Time>(2, static_cast<Time>(n / 1.3));
  // log2 size: a mixture peaked at 2^17..2^20 with a tail to 2^30 and small tensors 2^3..2^14.
  auto size = [&]() -> Size {
    double u = rng.uniform(), lg;
    if (u < 0.35) lg = 3 + rng.uniform() * 11;          // small: 8 B .. 16 KiB
    else if (u < 0.9) lg = 16 + rng.uniform() * 6;      // the bulk: 64 KiB .. 4 MiB
    else lg = 22 + rng.uniform() * 8.5;                 // large: 4 MiB .. ~1.4 GiB
    const int m = static_cast<int>(lg);
    const Size k = static_cast<Size>(std::pow(2.0, lg - m) * 8) ;  // 8..15 -> 3 significant bits
    return (k << m) / 8 + 1;
  };
  const int params = n / 6;  // loaded early, each freed at its one use
  for (int i = 0; i < params; ++i) {
    Time s = static_cast<Time>(rng.uniform() * rng.uniform() * ticks * 0.15);
    Time e = s + 1 + static_cast<Time>(rng.uniform() * (ticks - s) * 0.7);
    add(p, s, e, size());
  }
  while (static_cast<int>(p.buffers.size()) < n) {
    Time s = rng.range(0, ticks - 1);
    Time life;
    double u = rng.uniform();
    if (u < 0.45) life = 1 + static_cast<Time>(-std::log(1.0 - rng.uniform()) * 25);   // next few consumers
    else if (u < 0.9) life = rng.range(30, 400);                                       // a later consumer
    else life = rng.range(400, std::max<Time>(401, ticks / 2));                        // long skip
    add(p, s, std::min(ticks + 50, s + life), size());
  }
  return p;
}

Problem generate_activation_chain(int n, uint64_t seed) {
  Rng rng(seed);
  Problem p;
  p.buffers.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n;) {
    // A stage: 20-200 ops at one activation size (64 KiB .. 16 MiB), +-10 % per op (op types).
    const double stage = std::exp2(16.0 + 8.0 * rng.uniform());
    for (int64_t k = rng.range(20, 200); k > 0 && i < n; --k, ++i) {
      const Time life = i % 3 == 0 ? 4 : 2;  // a block's input is read again by its residual add
      add(p, i, i + life, static_cast<Size>(stage * (0.9 + 0.2 * rng.uniform())));
    }
  }
  return p;
}

Problem generate_somas_llm(int n, uint64_t seed) {
  Rng rng(seed);
  Problem p;
  p.buffers.reserve(static_cast<std::size_t>(n));
  // Model shape: hidden h, sequence s, batch b (fp32); tensor classes in bytes.
  const Size hidden = 768 << rng.range(0, 1), seq = 128 << rng.range(0, 2), batch = 8 << rng.range(0, 1);
  const Size act = batch * seq * hidden * 4, ffn = 4 * act, heads = 12, attn = batch * heads * seq * seq * 4;
  const Size weight = hidden * hidden * 4;
  // About 11 buffers per forward op and its backward counterpart (see below): choose the op count.
  const int ops = std::max(4, n / 11);
  const int per_layer = 16;
  const Time fwd = ops, end = 3 * ops + 4;  // backward takes two ticks per forward op
  auto mirror = [&](Time t) { return fwd + 2 * (fwd - t); };  // backward tick of forward tick t
  auto act_size = [&]() -> Size {
    double u = rng.uniform();
    return u < 0.5 ? act : u < 0.75 ? ffn : u < 0.9 ? attn : act / 4;
  };
  // Whole-step weights, gradients and optimizer state (one weight per op group).
  for (int l = 0; l < ops / per_layer + 1 && static_cast<int>(p.buffers.size()) < n; ++l)
    for (int k = 0; k < 4; ++k) add(p, 0, end, rng.chance(0.5) ? weight : 4 * weight);
  for (Time t = 0; t < fwd && static_cast<int>(p.buffers.size()) < n; ++t) {
    // Forward: an output per op; about half are saved for the backward op that mirrors it.
    const bool saved = rng.chance(0.55);
    add(p, t, saved ? mirror(t) + 1 : t + rng.range(1, 3), act_size());
    add(p, t, t + 1, rng.range(1, 8) * 4096);                     // workspace
    for (int k = 0; k < 4; ++k) add(p, t, t + rng.range(1, 4), rng.chance(0.8) ? 4 : 1);  // scalars / flags
    if (rng.chance(0.15)) add(p, t, rng.range(t + 1, end), 4);   // long-lived scalar
    // Backward of this op: gradient of its input (short), weight-gradient accumulation to the end.
    const Time bt = mirror(t);
    add(p, bt - 1, bt + rng.range(1, 3), act_size());
    add(p, bt, bt + 1, rng.range(1, 8) * 4096);
    add(p, bt, bt + rng.range(1, 3), 4);
    add(p, bt - 1, bt + 1, 4);
    if (t % per_layer == 0) add(p, bt, end, weight);  // layer weight gradient, kept for the update
  }
  if (static_cast<int>(p.buffers.size()) > n) p.buffers.resize(static_cast<std::size_t>(n));
  return p;
}

Problem generate_somas_layers(int n, uint64_t seed) {
  Rng rng(seed);
  Problem p;
  p.buffers.reserve(static_cast<std::size_t>(n));
  // Model shape (fp16): hidden, sequence and micro-batch; tensor shapes in bytes.
  const Size hidden = 2048 << rng.range(0, 1), seq = 1024 << rng.range(0, 1), batch = 1 + rng.range(0, 1);
  const Size act = batch * seq * hidden * 2;
  enum Shape { kAct, kQkv, kFfn, kStats };
  const Size shape_bytes[] = {act, 3 * act, act * 8 / 3, batch * seq * 4};
  // One layer's forward ops: the shape each writes and whether backward reads it again.
  struct Op {
    Shape shape;  // the output's shape
    bool saved;   // read again by the op's backward (else only by the next op or two)
  };
  static const Op kLayer[] = {{kAct, true},  {kStats, true}, {kQkv, true}, {kAct, true},  {kAct, true},
                              {kStats, true}, {kAct, true},  {kAct, false}, {kAct, true},  {kStats, true},
                              {kFfn, true},  {kFfn, true},  {kFfn, true},  {kAct, true},  {kAct, false}};
  const Time per_layer = static_cast<Time>(std::size(kLayer));
  // About 4.6 buffers per forward op with its backward (below): whole layers for n buffers.
  const Time fwd = std::max<Time>(per_layer, static_cast<Time>(n) * 10 / 46 / per_layer * per_layer);
  const Time layers = fwd / per_layer, end = 4 * fwd + 8;
  // Backward, last layer first: each layer's forward recomputed (one tick an op), then its
  // backward ops (two ticks each, last op first).
  auto backward_from = [&](Time layer) { return fwd + 3 * per_layer * (layers - 1 - layer); };
  auto mirror = [&](Time t) { return backward_from(t / per_layer) + per_layer + 2 * (per_layer - 1 - t % per_layer); };
  auto recompute = [&](Time t) { return backward_from(t / per_layer) + t % per_layer; };
  // Near-equal sizes: each tensor's shape plus up to 2 % (padding, fused workspaces), 512-aligned.
  auto jittered = [&](Shape s) {
    const double bytes = static_cast<double>(shape_bytes[s]) * (1.0 + 0.02 * rng.uniform());
    return (static_cast<Size>(bytes) + 511) / 512 * 512;
  };
  // Nine layers in ten recompute their activations in backward and keep only their input.
  std::vector<bool> recomputed(static_cast<std::size_t>(layers));
  for (Time l = 0; l < layers; ++l) recomputed[static_cast<std::size_t>(l)] = rng.chance(0.9);
  auto full = [&] { return static_cast<int>(p.buffers.size()) >= n; };
  for (Time t = 0; t < fwd && !full(); ++t) {
    const Op& op = kLayer[t % per_layer];
    // Saved outputs are freed by their backward op, give or take four ops (fused backward
    // kernels read them in another order), so lifetimes cross rather than nest.
    if (op.saved && recomputed[static_cast<std::size_t>(t / per_layer)] && t % per_layer != 0) {
      const Time read_by = t + rng.range(1, 3);
      add(p, t, read_by, jittered(op.shape));
      const Time freed = mirror(t) + 1 + rng.range(-4, 4);
      add(p, recompute(t), freed, jittered(op.shape));
    } else {
      const Time freed = op.saved ? mirror(t) + 1 + rng.range(-4, 4) : t + rng.range(1, 3);
      add(p, t, std::max(freed, t + 1), jittered(op.shape));
    }
    add(p, t, t + 1, rng.range(1, 16) * 65536);  // workspace
    if (rng.chance(0.5)) {  // scalars and flags
      const Time read_by = t + rng.range(1, 3);
      add(p, t, read_by, rng.chance(0.8) ? 4 : 512);
    }
    // Backward of this op: the gradient of its input (read by the next backward op or two), a
    // workspace, and every fifth op a weight gradient kept for the optimizer step.
    const Time bt = mirror(t);
    const Time read_by = bt + rng.range(1, 4);
    add(p, bt, read_by, jittered(kLayer[(t + per_layer - 1) % per_layer].shape));
    add(p, bt, bt + 1, rng.range(1, 16) * 65536);
    if (t % 5 == 0) add(p, bt, end, hidden * hidden * 2 / (1 + rng.range(0, 3)));
  }
  if (static_cast<int>(p.buffers.size()) > n) p.buffers.resize(static_cast<std::size_t>(n));
  return p;
}

Problem generate_scaled(const Problem& base, int n, uint64_t seed) {
  Rng rng(seed);
  Problem p;
  const std::size_t m = base.buffers.size();
  if (m == 0) return p;
  p.buffers.reserve(static_cast<std::size_t>(n));
  const double k = static_cast<double>(n) / static_cast<double>(m);
  for (int i = 0; i < n; ++i) {
    const Buffer& b = base.buffers[static_cast<std::size_t>(i) % m];
    const Time start = static_cast<Time>(static_cast<double>(b.start) * k + rng.uniform() * k);
    const double life = static_cast<double>(b.end - b.start) * k * (0.8 + 0.4 * rng.uniform());
    add(p, start, start + std::max<Time>(1, static_cast<Time>(life)),
        static_cast<Size>(static_cast<double>(b.size) * (0.9 + 0.2 * rng.uniform())));
  }
  return p;
}

}  // namespace sp::alloc
