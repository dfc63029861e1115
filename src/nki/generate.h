// Synthetic NKI kernels for benchmarks and property tests: stages of (possibly nested) loops,
// each a pipeline HBM -> DMA load -> compute chain on several engines (PSUM for TensorE) ->
// DMA store, with some tiles carried from one stage to the next. Same seed, same kernel.
#pragma once

#include <cstdint>

#include "core/json_reader.h"

namespace sp::nki {

struct GenerateOptions {
  int tensors = 50;        // tensors in total (HBM inputs/outputs included)
  int loops = 10;          // loops in total
  int max_trip = 8;        // loop trips are drawn from [2, max_trip]
  uint64_t seed = 1;       // deterministic
};

// Returns kernel JSON in the format of docs/nki.md (all SBUF/PSUM tensors automatic).
Json generate_kernel_json(const GenerateOptions& opt);

}  // namespace sp::nki
