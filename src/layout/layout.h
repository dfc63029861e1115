// Device tensor layouts (Spyre-style tiled layouts): how a host tensor (size + strides) is laid
// out in device memory as 128-byte sticks. A layout is a device_size vector (last entry = elements
// per stick) and a stride_map giving, per device dim, the host element stride (-1 synthetic or
// padded, 0 broadcast). Also: data types, canonicalization, default and dim_order layouts,
// validation, bytes on device and the per-host-dim decomposition DMA and work division build on.
// docs/layout.md documents the rules and every decision.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace sp::layout {

using Dim = int64_t;     // an extent (number of positions along a dimension)
using Stride = int64_t;  // a host element stride; -1 = synthetic/padded, 0 = broadcast
using Offset = int64_t;  // an element offset in host or device memory
using Bytes = int64_t;   // a byte count

inline constexpr Bytes kBytesInStick = 128;
inline constexpr Stride kSynthetic = -1;
// Largest supported extent (and element count) so that products stay far from overflow.
inline constexpr Dim kMaxExtent = int64_t{1} << 40;

enum class DType { kFp16, kBf16, kFp32, kFp8, kInt4, kInt2, kInt8, kInt32, kInt64, kBool };

struct DTypeInfo {
  DType dtype;             // the type
  const char* name;        // canonical short name (fp16, ...)
  const char* device_name; // torch-spyre DataFormats name, for printing
  int elems_per_stick;     // elements in one 128-byte stick
  int bits;                // storage bits per element
};

const DTypeInfo& dtype_info(DType d);
inline int elems_per_stick(DType d) { return dtype_info(d).elems_per_stick; }
inline const char* dtype_name(DType d) { return dtype_info(d).name; }
// Accepts short names (fp16), torch names (float16) and device names (SEN169_FP16). Formats
// without stick geometry (fp9, int24, fp24) are rejected with a message saying so.
Result<DType> parse_dtype(std::string_view name);
// Every supported dtype, for property tests and help text.
const std::vector<DTypeInfo>& all_dtypes();

struct Layout {
  std::vector<Dim> host_size;       // PyTorch sizes
  std::vector<Stride> host_strides; // PyTorch strides (elements)
  DType dtype = DType::kFp16;       // element type
  std::vector<Dim> device_size;     // device dims, outermost first; last = elements per stick
  std::vector<Stride> stride_map;   // host stride per device dim (-1 synthetic/padded, 0 broadcast)
};

// Row-major strides of `size` (elements).
std::vector<Stride> contiguous_strides(const std::vector<Dim>& size);
// Drops size-1 dims (they must not contribute to the default layout).
void canonicalize(std::vector<Dim>& size, std::vector<Stride>& strides);

// The default layout: canonicalize, stick on the last dim, tile along the first, pad the stick
// dim to whole sticks. Strides default to contiguous when empty.
Result<Layout> default_layout(const std::vector<Dim>& size, DType dtype, std::vector<Stride> strides = {});
// A layout from an explicit dim_order (host dims outermost..innermost, last = stick dim, or a
// trailing -1 for a sparse layout with a synthetic stick dim). Size-1 dims are kept (as -1).
Result<Layout> layout_from_dim_order(const std::vector<Dim>& size, DType dtype, const std::vector<int>& dim_order,
                                     std::vector<Stride> strides = {});
// An explicit (device_size, stride_map) layout, validated against the host tensor.
Result<Layout> explicit_layout(const std::vector<Dim>& size, std::vector<Stride> strides, DType dtype,
                               std::vector<Dim> device_size, std::vector<Stride> stride_map);

// Structural validation with precise errors plus coverage: every host element must have a device
// position. Independent of how the layout was built.
Status validate(const Layout& l);

// 128 bytes per stick: 128 * prod(device_size[:-1]).
Bytes device_bytes(const Layout& l);
// Number of device elements (prod(device_size)) and row-major device strides.
Dim device_elements(const Layout& l);
std::vector<Offset> device_strides(const Layout& l);
Dim host_elements(const Layout& l);
// Host elements with distinct addresses (a broadcast host dim, stride 0, counts once).
Dim distinct_host_elements(const Layout& l);
// Host dim that the stick dimension holds (-1 when the stick is synthetic, i.e. sparse).
int stick_host_dim(const Layout& l);

// How device dims decompose each host dim. A host coordinate along dim h is
// sum(coord[k] * coef[k]) over its device dims ("levels", innermost coefficient first); a device
// position is valid (not padding) iff every partial sum stays below the next level's coefficient
// and the full sum below the host size. -1 dims are valid only at 0; 0 dims broadcast.
struct Level {
  int device_dim = 0;  // device dimension index
  Dim coef = 1;        // host-dim coordinate step per device step (stride_map / host stride)
};
struct HostDimLevels {
  std::vector<std::vector<Level>> levels;  // per host dim, ordered by increasing coef
  std::vector<int> host_dim_of;            // per device dim: host dim, or -1 (unmapped)
  std::vector<Dim> host_size;              // the host view decomposed (contiguous dims coalesced
  std::vector<Stride> host_stride;         //   only for folding layouts); index of `levels`
};
Result<HostDimLevels> decompose(const Layout& l);

// True if a device coordinate holds a host element; sets *host_offset when non-null.
bool device_position_valid(const Layout& l, const HostDimLevels& dec, const std::vector<Dim>& coord,
                           Offset* host_offset);

// torch-spyre's printed form: SpyreTensorLayout(device_size=[...], stride_map =[...], device_dtype=...)
std::string to_string(const Layout& l);
std::string format_dims(const std::vector<int64_t>& v);

}  // namespace sp::layout
