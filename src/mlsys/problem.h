// The MLSys 2026 contest problem: a DAG of MatMul and Pointwise ops over 2-D tensors, a fast
// memory of fixed capacity, a slow memory of fixed bandwidth and a native granularity.
// See the contest's PROBLEM.md and RULES.md (docs/sources.md; docs/mlsys.md restates our reading).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/result.h"

namespace sp::mlsys {

using TensorId = int32_t;  // index into Problem::tensors
using OpId = int32_t;      // index into Problem::ops
using Elements = int64_t;  // a count of tensor elements (the unit of memory)

// Largest supported tensor width or height (2^24).
inline constexpr int64_t kMaxDimension = int64_t{1} << 24;
// Bandwidth and base costs are bounded so that every latency (at most ~1e22 elements moved or
// 5M steps of cost x 2^24 per subgraph) stays a finite double: a bandwidth of 1e-320 would make
// latencies infinite, which JSON cannot carry.
inline constexpr double kMinBandwidth = 1e-100;
inline constexpr double kMaxBandwidth = 1e100;
inline constexpr double kMaxBaseCost = 1e100;

enum class OpKind { kMatMul, kPointwise };

struct Tensor {
  int64_t width = 0;   // columns
  int64_t height = 0;  // rows
  Elements size() const { return width * height; }
};

struct Op {
  OpKind kind = OpKind::kPointwise;  // MatMul: inputs are (LHS H×K, RHS K×N), output H×N
  std::vector<TensorId> inputs;      // consumed tensors, in order
  std::vector<TensorId> outputs;     // produced tensors
  double base_cost = 0;              // compute cost of one native tile
};

struct Consumer {
  OpId op = 0;   // consuming op
  int slot = 0;  // position among the op's inputs
};

struct Problem {
  std::vector<Tensor> tensors;
  std::vector<Op> ops;
  Elements fast_memory_capacity = 0;  // elements that fit in fast memory at once
  double slow_memory_bandwidth = 0;   // elements per unit of time
  int64_t native_w = 0;               // native granularity; native k equals native_w
  int64_t native_h = 0;
  int64_t native_k = 0;

  // Derived by finalize():
  std::vector<OpId> producer;                   // per tensor, -1 for graph inputs
  std::vector<std::vector<Consumer>> consumers;  // per tensor
  std::vector<char> is_graph_input;             // no producer
  std::vector<char> is_graph_output;            // no consumer
  std::vector<OpId> topo_order;                 // a topological order of the ops

  bool is_matmul(OpId o) const { return ops[o].kind == OpKind::kMatMul; }
  // Reduction length of a MatMul: the LHS width.
  int64_t reduction(OpId o) const { return tensors[ops[o].inputs[0]].width; }
  int num_tensors() const { return static_cast<int>(tensors.size()); }
  int num_ops() const { return static_cast<int>(ops.size()); }
};

// Checks consistency (ids in range, one producer per tensor, acyclic, shapes, positive sizes)
// and fills the derived fields. `source` names the input in error messages.
Status finalize(Problem& problem, const std::string& source = "problem");

// Reads a problem JSON document (PROBLEM.md format) and finalizes it.
Result<Problem> problem_from_json(const Json& json, const std::string& source);
Result<Problem> read_problem(const std::string& path);
Json problem_to_json(const Problem& problem);

const char* op_kind_name(OpKind kind);

}  // namespace sp::mlsys
