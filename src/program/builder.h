// Builders for tensor programs: add tensors and ops with the indexing maps derived from shapes
// (numpy-style broadcasting for pointwise ops, kept or dropped reduced dims, batched matmul), and
// the bundled example programs (softmax, norms, matmul/bmm, MLP, SwiGLU, SDPA, GQA, MoE).
// Builders never fail early: build() runs finalize() and reports the first problem.
#pragma once

#include <string>
#include <vector>

#include "program/program.h"

namespace sp::program {

class Builder {
 public:
  explicit Builder(std::string name) { p_.name = std::move(name); }

  TensorId input(const std::string& name, std::vector<Dim> shape, DType dtype = DType::kFp16);
  TensorId tensor(const std::string& name, std::vector<Dim> shape, DType dtype = DType::kFp16);
  void output(TensorId t) { p_.tensors[t].graph_output = true; }
  void set_dim_order(TensorId t, std::vector<int> order) { p_.tensors[t].dim_order = std::move(order); }
  const Tensor& tensor_at(TensorId t) const { return p_.tensors[t]; }

  // out[i..] = f(inputs broadcast to out's shape); inputs are right-aligned like numpy.
  OpId pointwise(const std::string& name, const std::string& payload, const std::vector<TensorId>& inputs, TensorId out);
  // Reduces `in` over `axes`; `out` either keeps the reduced dims as size 1 or drops them.
  OpId reduce(const std::string& name, const std::string& payload, TensorId in, const std::vector<int>& axes, TensorId out);
  // C[batch.., m, n] = sum_k A[batch.., m, k] * B[batch.., k, n]; B may have fewer batch dims
  // (right-aligned, broadcast). transpose_b: B is [batch.., n, k].
  OpId matmul(const std::string& name, TensorId a, TensorId b, TensorId c, bool transpose_b = false);
  // Any op with explicit maps: maps are per operand (inputs then outputs), each entry a var or kConstZero.
  OpId generic(const std::string& name, OpKind kind, const std::string& payload, const std::vector<TensorId>& inputs,
               const std::vector<TensorId>& outputs, const std::vector<IteratorType>& iterators,
               const std::vector<std::vector<VarId>>& maps);
  // An op that is not divided (no iteration space).
  OpId opaque(const std::string& name, const std::string& payload, const std::vector<TensorId>& inputs,
              const std::vector<TensorId>& outputs);

  Result<Program> build(const std::string& source = "builder");

 private:
  OpId add(Op op);
  Program p_;
};

// Bundled examples (examples/programs/<name>.json are these, written by the example test).
std::vector<std::string> example_names();
Result<Program> example_program(const std::string& name);
// Softmax over axis 0 of [rows, cols] (the softmax_dim0 example is 4096 x 1024).
Result<Program> softmax_dim0_program(int64_t rows, int64_t cols);

// A synthetic chain of `num_ops` ops (transformer-like blocks: matmuls, norms, softmax,
// pointwise) for benchmarks and scale tests; deterministic for a seed.
Result<Program> synthetic_program(int num_ops, uint64_t seed);

}  // namespace sp::program
