// DMA (DCI) descriptors between host and device layouts: loop nests of (range, host stride,
// device stride) in decreasing device-stride order, one descriptor for the full tiles plus one per
// partial-tile remainder (e.g. the 22-element tail of a 150-element stick dim), each with a base
// offset on both sides. Derived from the layout's per-host-dim decomposition (layout.h).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "layout/layout.h"

namespace sp::layout {

enum class DmaDirection { kHostToDevice, kDeviceToHost };

struct DmaDescriptor {
  Offset host_offset = 0;               // host element offset of the first element
  Offset device_offset = 0;             // device element offset of the first element
  std::vector<Dim> ranges;              // loop sizes, outermost (largest device stride) first
  std::vector<Offset> device_strides;   // device element stride per loop
  std::vector<Stride> host_strides;     // host element stride per loop (0 for synthetic/broadcast)
};

// Descriptors for one direction. Host to device writes every broadcast copy; device to host reads
// broadcast dims once. Validated by check_dma before being returned.
Result<std::vector<DmaDescriptor>> dma_descriptors(const Layout& l, DmaDirection dir);

// Independent checker: element counts, bounds on both sides, descriptor shapes.
Status check_dma(const Layout& l, const std::vector<DmaDescriptor>& d, DmaDirection dir);

// The seed's tuple form: ((ranges), (device strides), (host strides)) [+ offsets when non-zero].
std::string to_string(const DmaDescriptor& d);

// Executes descriptors on element buffers (host and device indexed in elements).
template <class T>
void run_dma(const std::vector<DmaDescriptor>& descs, DmaDirection dir, T* host, T* device) {
  for (const auto& d : descs) {
    const std::size_t r = d.ranges.size();
    std::vector<Dim> idx(r, 0);
    bool empty = false;
    for (Dim x : d.ranges) empty = empty || x == 0;
    if (empty) continue;
    while (true) {
      Offset h = d.host_offset, v = d.device_offset;
      for (std::size_t i = 0; i < r; ++i) {
        h += idx[i] * d.host_strides[i];
        v += idx[i] * d.device_strides[i];
      }
      if (dir == DmaDirection::kHostToDevice) device[v] = host[h];
      else host[h] = device[v];
      std::size_t i = r;
      while (i > 0 && ++idx[i - 1] == d.ranges[i - 1]) idx[--i] = 0;
      if (i == 0) break;
    }
  }
}

}  // namespace sp::layout
