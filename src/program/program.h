// The tensor program format shared by work division and LX planning: named
// tensors (shape, dtype, optional device layout, graph input/output) and ops in execution order,
// each with a kind, operands and a linalg.generic-style iteration space (one indexing map per
// operand naming the iteration variable of every tensor dim; iterator types parallel/reduction).
// docs/program.md documents the JSON format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/result.h"
#include "layout/layout.h"

namespace sp::program {

using layout::Dim;
using layout::DType;
using TensorId = int32_t;  // index into Program::tensors
using OpId = int32_t;      // index into Program::ops
using VarId = int32_t;     // iteration variable d<i> of an op

inline constexpr VarId kConstZero = -1;  // an indexing-map result that is the constant 0
inline constexpr VarId kSummed = -2;     // an indexing-map result that is no single var: see Op::exprs

// One result of an indexing map: sum of coeff * d<var> plus offset (no terms = the constant
// `offset`). A "plain" result is one var with coefficient 1 and offset 0.
struct AffineTerm {
  VarId var = 0;       // iteration variable
  int64_t coeff = 1;   // >= 1
};
struct AffineExpr {
  std::vector<AffineTerm> terms;  // distinct vars
  int64_t offset = 0;             // >= 0
  bool prefix = false;            // derived: a lone var whose given range is below the dim size (a slice [0, n))
};

enum class OpKind {
  kPointwise,  // elementwise (with broadcasts); every iterator parallel
  kReduction,  // reduces over its reduction iterators (sum, max, mean, ...)
  kMatmul,     // C[.., m, n] += A[.., m, k] * B[.., k, n]; exactly one reduction iterator (K)
  kOpaque,     // not divided across cores (extern kernels: gather, top-k routing, ...)
};
enum class IteratorType { kParallel, kReduction };

struct ExplicitLayout {
  std::vector<Dim> device_size;          // device dims; last = elements per stick
  std::vector<layout::Stride> stride_map;  // host stride per device dim
};

struct Tensor {
  std::string name;                       // unique
  std::vector<Dim> shape;                 // host sizes, all >= 1
  DType dtype = DType::kFp16;             // element type
  std::vector<int> dim_order;             // optional; empty = default layout (-1 last = sparse)
  std::optional<ExplicitLayout> layout;   // optional explicit device layout (exclusive with dim_order)
  bool graph_input = false;               // provided by the caller (weights, activations)
  bool load_time = false;                 // a graph input known when the model is loaded (weights, folded
                                          // constants): laid out once, so an open one's layout is the planner's
  bool graph_output = false;              // read back by the caller
};

struct Op {
  std::string name;                              // unique
  OpKind kind = OpKind::kPointwise;              // what the op does, for layout rules and division
  std::string payload;                           // informational: "add", "exp", "sum", ...
  std::vector<TensorId> inputs;                  // read operands, in order
  std::vector<TensorId> outputs;                 // written operands
  std::vector<IteratorType> iterators;           // one per iteration variable d0..d(n-1)
  std::vector<std::vector<VarId>> indexing_maps; // inputs then outputs: per tensor dim, a var, kConstZero or kSummed
  std::vector<std::vector<AffineExpr>> exprs;    // same shape, the full results (affine sums); empty = all from indexing_maps
  std::vector<Dim> given_ranges;                 // optional "ranges" of the JSON (needed when a var is in no plain dim)
  std::vector<Dim> ranges;                       // derived: extent of each iteration variable
};

struct Program {
  std::string name;              // free-form
  std::vector<Tensor> tensors;   // all tensors
  std::vector<Op> ops;           // in execution order
  // Derived by finalize():
  std::vector<OpId> producer;                 // per tensor: the op writing it, or -1
  std::vector<std::vector<OpId>> consumers;   // per tensor: ops reading it, in order
};

const char* op_kind_name(OpKind k);
const char* iterator_name(IteratorType t);

// Checks consistency (names, ranks, maps vs shapes, iterator extents, kind rules, graph I/O)
// and fills the derived fields. Errors name `source` and the JSON path.
Status finalize(Program& p, const std::string& source);

Result<Program> program_from_json(const Json& j, const std::string& source);
Result<Program> read_program(const std::string& path);
Json program_to_json(const Program& p);
// The canonical file text: program_to_json laid out one tensor / one op per line, keys in a fixed
// readable order (the bundled examples are written this way).
std::string program_to_text(const Program& p);

// The device layout a tensor uses: explicit layout, else its dim_order, else the default layout.
Result<layout::Layout> tensor_layout(const Tensor& t);

// Parses "(d0, d1, d2) -> (d0, 0, d2)" into results over `num_vars` vars; errors are one line.
// Rejects affine sums (use parse_affine_exprs for the full grammar).
Result<std::vector<VarId>> parse_affine_map(const std::string& text, int* num_vars);
std::string format_affine_map(const std::vector<VarId>& results, int num_vars);
// The full grammar: each result is a sum of terms `d<i>`, `c * d<i>`, `d<i> * c` and one
// non-negative constant, e.g. "(d0, d1, d2, d3) -> (d0, d1 * 2 + d3, d2 + 1)".
Result<std::vector<AffineExpr>> parse_affine_exprs(const std::string& text, int* num_vars);
std::string format_affine_exprs(const std::vector<AffineExpr>& results, int num_vars);
// kConstZero / the var of a plain result / kSummed for anything else.
VarId simple_var(const AffineExpr& e);
bool is_plain(const AffineExpr& e);
// Largest value of `e` when every var v ranges over [0, extent[v]); 0-based, so the dim extent
// the result touches is this + 1 - offset (overflow-safe: saturates at 2^62).
int64_t expr_max(const AffineExpr& e, const std::vector<Dim>& extent);
// Vars that appear in some non-plain result of the op: work division never splits them (a split
// of h in `2*h + r` would need a halo of r rows on each core).
std::vector<char> summed_vars(const Op& op);

}  // namespace sp::program
