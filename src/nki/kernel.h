// NeuronCore kernels with explicit SBUF/PSUM allocation: the hardware description, tensors
// (block, partition and free dims), their allocations (automatic, mod_alloc, func, factory,
// table), and a loop nest of engine instructions whose block indices are affine in the loop
// variables. Read from the JSON format of docs/nki.md; every structural error is bad input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/result.h"

namespace sp::nki {

using Bytes = int64_t;      // a byte count or a byte address inside one partition
using Partition = int64_t;  // a partition index (0..127 on NeuronCore-v2)
using Cycles = int64_t;     // engine time
using TensorId = int;       // index into Kernel::tensors
using LoopId = int;         // index into Kernel::loops

// Names and defaults of the per-instruction cycle model (Hardware::cycle_model); docs/nki.md.
const std::vector<std::pair<std::string, double>>& default_cycle_model();

// One NeuronCore version's on-chip memory. v2 is built in; others come from a JSON file.
struct Hardware {
  std::string name = "neuroncore-v2";     // for messages
  Partition partitions = 128;             // SBUF and PSUM partitions
  Bytes sbuf_partition_bytes = 192 * 1024;  // physical bytes per SBUF partition
  Bytes sbuf_reserved_bytes = 16 * 1024;  // reserved for the compiler at the top of each partition
  Bytes sbuf_min_align = 4;               // byte_addr alignment (AWS's tested kernels use 4-byte multiples)
  int psum_banks = 8;                     // PSUM banks per partition
  Bytes psum_bank_bytes = 2 * 1024;       // bytes per PSUM bank per partition
  int dma_queues = 4;                     // DMA instructions run on this many parallel queues (assumption)
  // Per-instruction cycle model used by the Python tracer to cost each call (docs/nki.md);
  // (name, value) pairs, kept here so a hardware file overrides them. Only known names allowed.
  std::vector<std::pair<std::string, double>> cycle_model = default_cycle_model();
  Bytes sbuf_usable() const { return sbuf_partition_bytes - sbuf_reserved_bytes; }
  Bytes psum_bytes() const { return psum_banks * psum_bank_bytes; }
};

// Built-in cores by name: trn1 (= neuroncore-v2, inf2, the default) and trn2 (= neuroncore-v3). The
// Python tracer gets these numbers from here (the CLI hands it the description as JSON), so its
// nl.tile_size and the checker agree.
Result<Hardware> builtin_hardware(const std::string& name);
bool is_builtin_hardware_name(const std::string& name);
Json hardware_to_json(const Hardware& hw);
Result<Hardware> hardware_from_json(const JsonCursor& c);
Result<Hardware> read_hardware_file(const std::string& path);

enum class Engine { kDma, kScalar, kVector, kTensor, kGpSimd };
inline constexpr int kNumEngines = 5;
const char* engine_name(Engine e);

enum class Memory { kSbuf, kPsum, kHbm };  // the memory a tensor lives in (NKI's buffer=)
const char* memory_name(Memory b);

// Kernel parameter or result; kNone = internal (not allowed beside direct allocation in the old API);
// kScratch = working space the kernel declares in HBM (the new API allows it beside address= tensors).
enum class HbmRole { kNone, kInput, kOutput, kScratch };

enum class AllocKind {
  kAuto,      // compiler-chosen (nl.sbuf / nl.psum)
  kModAlloc,  // ncc.*.mod_alloc: modulo formula
  kFunc,      // ncc.*.alloc(func) with func affine in the block index, pdim_size and fdim_size
  kFactory,   // the seed's simple_1d_alloc_factory: bump pointer in declaration order
  kTable,     // one (start_partition, byte_addr) per logical block, row-major
};
const char* alloc_kind_name(AllocKind k);

// An affine form: constant + sum of coef * variable. Variables are loop ids (or block dims).
struct Affine {
  int64_t constant = 0;                              // value when every variable is 0
  std::vector<std::pair<int, int64_t>> terms;        // (variable, coefficient), coefficient != 0
};

struct Allocation {
  AllocKind kind = AllocKind::kAuto;       // which API the tensor was declared with
  Bytes base_addr = 0;                     // mod_alloc
  Partition base_partition = 0;            // mod_alloc
  int base_bank = 0;                       // psum mod_alloc: first bank
  std::vector<int64_t> num_par_tiles;      // mod_alloc: moduli per block dim (empty = all 1; zip-truncated)
  std::vector<int64_t> num_free_tiles;     // mod_alloc: moduli per block dim (empty = all 1; zip-truncated)
  std::vector<int64_t> num_bank_tiles;     // psum mod_alloc: bank moduli per block dim
  Affine start_partition_fn;               // func: variables are block dims
  Affine byte_addr_fn;                     // func
  Bytes factory_size = 0;                  // factory: total_fdim_size reserved
  std::vector<std::pair<Partition, Bytes>> table;  // table: (start_partition, byte_addr) per block
  Bytes align = 0;                         // SBUF byte_addr alignment this use requires (0: hardware's sbuf_min_align)
  bool compiler_placed = false;            // auto SBUF/PSUM next to address= tensors (new API): the compiler places it in free space
};

struct Tensor {
  std::string name;                 // unique
  Memory buffer = Memory::kSbuf;    // where it lives
  HbmRole role = HbmRole::kNone;    // hbm only
  bool shared_by_cores = false;     // hbm only: nl.shared_hbm in a launch of several logical cores (another may write it)
  std::vector<int64_t> blocks;      // block dims (logical tiles), may be empty
  Partition pdim = 1;               // partition dim size
  std::vector<int64_t> free;        // free dims (elements)
  std::string dtype = "bfloat16";   // element type name
  Bytes dtype_bytes = 2;            // element size
  Allocation alloc;                 // sbuf/psum only
  std::string json_path;            // where it was declared, for messages
  std::string source;               // "kernel.py:12" when traced from Python source ("" otherwise)
  int64_t num_blocks() const;       // product of block dims (1 if none)
  Bytes fbytes() const;             // bytes per partition of one tile
  std::vector<int64_t> unflatten(int64_t linear) const;  // linear block -> block index
  // Read before the kernel writes it without a violation: an input, or HBM another logical core
  // shares and may have written (each core is traced and checked on its own).
  bool arrives_written() const { return role == HbmRole::kInput || shared_by_cores; }
};

struct Access {
  TensorId tensor = -1;        // which tensor
  std::vector<Affine> index;   // one affine per block dim, over loop ids
  Affine linear;               // row-major linear block index, over loop ids
  Partition p0 = 0, p1 = -1;   // partitions [p0, p1) of the tile touched (p1 < 0: the whole tile)
  Bytes b0 = 0, b1 = -1;       // bytes [b0, b1) of each partition touched (b1 < 0: the whole tile)
  bool accumulate = false;     // writes only: PSUM += (reads the tile first when it holds data)
};

struct Instruction {
  std::string name;            // label for messages (defaults to "op<N>")
  Engine engine = Engine::kDma;
  Cycles cost = 1;             // cycles on its engine
  std::vector<Access> reads;   // tiles read (before writes take effect)
  std::vector<Access> writes;  // tiles written
  std::vector<LoopId> loops;   // enclosing loops, outermost first
  std::vector<Affine> when;    // executes only in iterations where every one is >= 0 (a mask on loop indices)
  std::string json_path;
  std::string source;          // "kernel.py:14" when traced from Python source ("" otherwise)
};

struct Loop {
  std::string var;    // loop variable name
  int64_t trip = 1;   // affine_range(trip): var = 0..trip-1
  LoopId parent = -1; // enclosing loop
  std::string kind = "affine";  // affine | sequential | spmd (what the source said; same simulation)
};

// Program order: a tree of loops and instructions.
struct Node {
  bool is_loop = false;
  int id = 0;                  // LoopId or instruction index
  std::vector<Node> body;      // loops only
};

struct Kernel {
  std::string source;                 // file name for messages
  Hardware hw;                        // target core
  std::vector<Tensor> tensors;
  std::vector<Loop> loops;
  std::vector<Instruction> instrs;
  std::vector<Node> body;             // top level, program order
  int64_t dynamic_instructions = 0;   // instruction executions of the whole nest
  std::vector<std::pair<std::string, std::string>> generic_calls;  // (call, first "file:line") the tracer modelled generically
  TensorId find_tensor(const std::string& name) const;  // -1 if absent
  bool uses_direct_allocation() const;
};

// Dynamic instruction executions allowed: exact simulation must stay fast.
inline constexpr int64_t kMaxDynamicInstructions = 20'000'000;

// `hw`, when given, replaces the kernel's own "hardware" entry.
Result<Kernel> kernel_from_json(const Json& json, const std::string& source, const Hardware* hw = nullptr);
Result<Kernel> read_kernel(const std::string& path, const Hardware* hw = nullptr);
// Writes the kernel back in the same format (allocations as they are now).
Json kernel_to_json(const Kernel& k);

int64_t eval(const Affine& a, const std::vector<int64_t>& vars);
std::string affine_to_string(const Affine& a, const std::vector<std::string>& names);
// Parses "2*i + j - 1" style text; identifiers resolve through `vars` (variable ids) or
// `consts` (substituted); anything non-affine is an error message in `error`.
bool parse_affine(const std::string& text, const std::vector<std::string>& vars,
                  const std::vector<std::pair<std::string, int64_t>>& consts, Affine& out, std::string& error);

// Calls f(instr_index, loop_values) for every instruction execution in program order;
// loop_values is indexed by LoopId. Stops early when f returns false.
template <class F>
void for_each_execution(const Kernel& k, F&& f);

namespace detail {
template <class F>
bool walk(const Kernel& k, const std::vector<Node>& nodes, std::vector<int64_t>& vals, F& f) {
  for (const Node& n : nodes) {
    if (!n.is_loop) {
      bool on = true;
      for (const Affine& g : k.instrs[n.id].when) on = on && eval(g, vals) >= 0;
      if (on && !f(n.id, static_cast<const std::vector<int64_t>&>(vals))) return false;
      continue;
    }
    const int64_t trip = k.loops[n.id].trip;
    for (int64_t v = 0; v < trip; ++v) {
      vals[n.id] = v;
      if (!walk(k, n.body, vals, f)) return false;
    }
    vals[n.id] = 0;
  }
  return true;
}
}  // namespace detail

template <class F>
void for_each_execution(const Kernel& k, F&& f) {
  std::vector<int64_t> vals(k.loops.size(), 0);
  detail::walk(k, k.body, vals, f);
}

// "{i=2, j=0}" for the loops enclosing an instruction.
std::string iteration_string(const Kernel& k, const Instruction& ins, const std::vector<int64_t>& vals);
std::string block_string(const std::vector<int64_t>& idx);  // "(2, 0)"

// The SDK's reference modulo index: m_d = idx_d mod T_d over zip(idx, T) (the shorter one
// truncates), linearised row-major in the shape T; empty T gives 0.
int64_t modulo_linear(const std::vector<int64_t>& tiles, const std::vector<int64_t>& idx);


}  // namespace sp::nki
