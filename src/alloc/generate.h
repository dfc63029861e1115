// Deterministic synthetic instances for scale benchmarks and tests. Each generator stands for a
// family of real inputs, so that what is tuned on is not what is measured: a tensor stream, a
// uniform random family, XLA auto-sharding traces and MindSpore SOMAS training dumps of language
// models (statistics from the idealloc instances in tests/data/dsa), activation chains, and
// SOMAS dumps of language models with recompute and near-equal sizes.
#pragma once

#include <cstdint>

#include "alloc/problem.h"

namespace sp::alloc {

// n buffers, about `per_tick` starting per tick; sizes multiples of 64 in [64, 256 KiB].
Problem generate_stream(int n, uint64_t seed, int per_tick = 4);

// Uniform random: starts uniform over n/8 ticks, lifetimes 1..200 ticks, sizes 64 B..64 KiB.
Problem generate_random(int n, uint64_t seed);

// XLA auto-sharding trace (like iopddl_G_1): about 1.3 buffers per tick; sizes log-uniform
// between 8 B and 1 GiB, peaked at 128 KiB-1 MiB, of the form k * 2^m + 1 (odd); parameters
// loaded early and freed at their one use (load falls over the trace, lifetimes cross rather
// than nest); activations live to a last consumer a geometric or uniform distance away.
Problem generate_xla_trace(int n, uint64_t seed);

// Activation chain of a deep network's inference (a ResNet's, say): stages of 20-200 ops at one
// activation size (log-uniform over 64 KiB .. 16 MiB, +-10 % per op for the op types); op i
// writes one tensor that op i + 1 reads, and every third tensor (a block's input) is read again
// by the block's residual add three ops later. Every buffer is live with two or three others.
Problem generate_activation_chain(int n, uint64_t seed);

// MindSpore SOMAS dump of a transformer's training step (like somas_bert_base): layers of
// forward ops whose saved activations live until the mirrored backward op (nested brackets,
// peak load at the end of the forward pass), short-lived temporaries and workspaces, many
// 1-4 byte scalars, whole-step weights and optimizer state; sizes from a few tensor shapes.
Problem generate_somas_llm(int n, uint64_t seed);

// MindSpore SOMAS dump of a large language model's training step with activation recompute:
// identical layers whose forward ops write tensors of a few shapes (hidden, QKV, FFN, norm
// statistics), each jittered by up to 2 % (per-op padding, fused workspaces), so thousands of
// buffers have near-equal sizes. Nine layers in ten keep only their input and recompute the rest
// just before their backward ops; saved tensors are freed by their backward op give or take four
// ops (lifetimes cross rather than nest). The load has many near-equal peaks (one per layer's
// backward); among near-equal sizes a size order is the jitter's, not time's.
Problem generate_somas_layers(int n, uint64_t seed);

// A real trace stretched to n buffers (the same program with n / |base| times as many ops):
// buffer i is a copy of base buffer i mod |base| with its times scaled by k = n / |base| (start
// jittered over the k ticks its tick became, lifetime x U(0.8, 1.2)) and its size x U(0.9, 1.1).
// The load profile keeps the base's shape (a narrow early peak for iopddl_G_1, the forward and
// backward brackets of somas_bert_base), which the synthetic generators above only imitate.
// Fixed offsets and in-place edges are not copied. Requires a non-empty base.
Problem generate_scaled(const Problem& base, int n, uint64_t seed);

}  // namespace sp::alloc
