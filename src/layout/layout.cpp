#include "layout/layout.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <sstream>

namespace sp::layout {
namespace {

const std::vector<DTypeInfo>& table() {
  static const std::vector<DTypeInfo> t = {
      {DType::kFp16, "fp16", "SEN169_FP16", 64, 16},  {DType::kBf16, "bf16", "BFLOAT16", 64, 16},
      {DType::kFp32, "fp32", "IEEE_FP32", 32, 32},    {DType::kFp8, "fp8", "SEN143_FP8", 128, 8},
      {DType::kInt4, "int4", "SENINT4", 256, 4},      {DType::kInt2, "int2", "SENINT2", 512, 2},
      {DType::kInt8, "int8", "SENINT8", 128, 8},      {DType::kInt32, "int32", "IEEE_INT32", 32, 32},
      {DType::kInt64, "int64", "IEEE_INT64", 16, 64}, {DType::kBool, "bool", "BOOL", 128, 8},
  };
  return t;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

Status check_host(const std::vector<Dim>& size, const std::vector<Stride>& strides) {
  if (strides.size() != size.size())
    return bad_input("host strides have " + std::to_string(strides.size()) + " entries for " +
                     std::to_string(size.size()) + " dims");
  Dim total = 1;
  for (std::size_t i = 0; i < size.size(); ++i) {
    if (size[i] < 0) return bad_input("host dim " + std::to_string(i) + " has negative size " + std::to_string(size[i]));
    if (size[i] > kMaxExtent) return bad_input("host dim " + std::to_string(i) + " is larger than 2^40");
    if (size[i] > 1 && strides[i] < 0)
      return bad_input("host dim " + std::to_string(i) + " has negative stride " + std::to_string(strides[i]));
    if (size[i] > 0 && total > kMaxExtent / std::max<Dim>(size[i], 1))
      return bad_input("host tensor has more than 2^40 elements");
    total *= std::max<Dim>(size[i], 1);
  }
  return ok_status();
}

// Valid positions of one host dim's levels[0..i] under bound `b` (see HostDimLevels).
Dim count_valid(const Layout& l, const std::vector<Level>& lv, int i, Dim b) {
  if (i < 0) return b > 0 ? 1 : 0;
  const Dim c = lv[i].coef;
  const Dim n = l.device_size[lv[i].device_dim];
  const Dim q = std::min(n, b / c);
  Dim total = q > 0 ? q * count_valid(l, lv, i - 1, c) : 0;
  if (q < n && b - q * c > 0) total += count_valid(l, lv, i - 1, b - q * c);
  return total;
}

// Maps device dims to host dims of the given host view; fails if a stride matches no host dim.
Result<HostDimLevels> decompose_view(const Layout& l, const std::vector<Dim>& hsize, const std::vector<Stride>& hstr) {
  HostDimLevels d;
  d.levels.assign(hsize.size(), {});
  d.host_dim_of.assign(l.device_size.size(), -1);
  d.host_size = hsize;
  d.host_stride = hstr;
  for (std::size_t k = 0; k < l.device_size.size(); ++k) {
    const Stride s = l.stride_map[k];
    if (l.device_size[k] <= 1 || s <= 0) continue;
    int best = -1;
    for (std::size_t h = 0; h < hsize.size(); ++h) {
      if (hsize[h] <= 1 || hstr[h] <= 0 || hstr[h] > s || s % hstr[h] != 0) continue;
      if (best < 0 || hstr[h] > hstr[best]) best = static_cast<int>(h);
    }
    if (best < 0)
      return bad_input("stride_map[" + std::to_string(k) + "] = " + std::to_string(s) +
                       " is not a multiple of any host stride " + format_dims(hstr));
    d.host_dim_of[k] = best;
    d.levels[best].push_back({static_cast<int>(k), s / hstr[best]});
  }
  for (auto& lv : d.levels)  // equal coefficients: the inner device dim is the lower level
    std::sort(lv.begin(), lv.end(), [](const Level& a, const Level& b) {
      return a.coef != b.coef ? a.coef < b.coef : a.device_dim > b.device_dim;
    });
  return d;
}

bool covers(const Layout& l, const HostDimLevels& d, const std::vector<Dim>& hsize) {
  for (std::size_t h = 0; h < hsize.size(); ++h) {
    if (hsize[h] <= 1 || d.host_stride[h] == 0) continue;
    const auto& lv = d.levels[h];
    if (count_valid(l, lv, static_cast<int>(lv.size()) - 1, hsize[h]) != hsize[h]) return false;
  }
  return true;
}

}  // namespace

const std::vector<DTypeInfo>& all_dtypes() { return table(); }

const DTypeInfo& dtype_info(DType d) { return table()[static_cast<std::size_t>(d)]; }

Result<DType> parse_dtype(std::string_view name) {
  const std::string n = lower(name);
  static const std::array<std::pair<const char*, DType>, 9> aliases = {{{"float16", DType::kFp16},
                                                                         {"half", DType::kFp16},
                                                                         {"bfloat16", DType::kBf16},
                                                                         {"float32", DType::kFp32},
                                                                         {"float", DType::kFp32},
                                                                         {"float8_e4m3fn", DType::kFp8},
                                                                         {"fp8_e4m3", DType::kFp8},
                                                                         {"uint2", DType::kInt2},
                                                                         {"uint4", DType::kInt4}}};
  for (const auto& info : table())
    if (n == info.name || n == lower(info.device_name)) return info.dtype;
  for (const auto& [alias, d] : aliases)
    if (n == alias) return d;
  for (const char* ng : {"invalid", "sen153_fp9", "fp9", "senint24", "int24", "sen18f_fp24", "fp24"})
    if (n == ng) return bad_input("dtype '" + std::string(name) + "' has no device stick geometry");
  std::string known;
  for (const auto& info : table()) known += (known.empty() ? "" : ", ") + std::string(info.name);
  return bad_input("unknown dtype '" + std::string(name) + "' (expected one of " + known + ")");
}

std::vector<Stride> contiguous_strides(const std::vector<Dim>& size) {
  // Saturating: strides of a tensor past the supported size are meaningless, and check_host
  // rejects its sizes right after (this runs first, on unchecked input).
  std::vector<Stride> s(size.size(), 1);
  for (int i = static_cast<int>(size.size()) - 2; i >= 0; --i)
    if (__builtin_mul_overflow(s[i + 1], std::max<Dim>(size[i + 1], 1), &s[i])) s[i] = std::numeric_limits<Stride>::max();
  return s;
}

void canonicalize(std::vector<Dim>& size, std::vector<Stride>& strides) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < size.size(); ++i) {
    if (size[i] == 1) continue;
    size[w] = size[i];
    if (i < strides.size()) strides[w] = strides[i];
    ++w;
  }
  size.resize(w);
  strides.resize(std::min(w, strides.size()));
}

Result<Layout> default_layout(const std::vector<Dim>& size, DType dtype, std::vector<Stride> strides) {
  std::vector<Dim> s = size;
  if (strides.empty()) strides = contiguous_strides(size);
  if (strides.size() != size.size())
    return bad_input("host strides have " + std::to_string(strides.size()) + " entries for " +
                     std::to_string(size.size()) + " dims");
  const std::vector<Stride> original = strides;
  canonicalize(s, strides);
  std::vector<int> order(s.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  auto l = layout_from_dim_order(s, dtype, order, strides);
  if (!l) return l;
  l->host_size = size;  // report the caller's (uncanonicalized) host tensor
  l->host_strides = original;
  return l;
}

Result<Layout> layout_from_dim_order(const std::vector<Dim>& size, DType dtype, const std::vector<int>& dim_order,
                                     std::vector<Stride> strides) {
  const int n = static_cast<int>(size.size());
  if (strides.empty()) strides = contiguous_strides(size);
  if (auto st = check_host(size, strides); !st) return st.error();
  const bool sparse = !dim_order.empty() && dim_order.back() == -1;
  const int expect = n + (sparse ? 1 : 0);
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  bool perm = static_cast<int>(dim_order.size()) == expect && (n > 0 || sparse || dim_order.empty());
  for (int i = 0; perm && i < n; ++i) {
    const int d = dim_order[static_cast<std::size_t>(i)];
    if (d < 0 || d >= n || seen[static_cast<std::size_t>(d)]) perm = false;
    else seen[static_cast<std::size_t>(d)] = 1;
  }
  if (!perm)
    return bad_input("dim_order " + format_dims(std::vector<int64_t>(dim_order.begin(), dim_order.end())) +
                     " is not a permutation of 0.." + std::to_string(n - 1) + " (optionally followed by -1)");
  const Dim eps = elems_per_stick(dtype);
  Layout l;
  l.host_size = size;
  l.host_strides = strides;
  l.dtype = dtype;
  if (dim_order.empty()) {  // a scalar: one synthetic stick
    l.device_size = {1, eps};
    l.stride_map = {kSynthetic, kSynthetic};
    return l;
  }
  const int stick = dim_order.back();
  const bool stick_real = stick >= 0 && size[static_cast<std::size_t>(stick)] != 1;
  auto push_normal = [&](int d) {
    const Dim sz = size[static_cast<std::size_t>(d)];
    l.device_size.push_back(sz);
    l.stride_map.push_back(sz == 1 ? kSynthetic : strides[static_cast<std::size_t>(d)]);
  };
  auto push_count = [&] {
    if (!stick_real) {
      l.device_size.push_back(1);
      l.stride_map.push_back(kSynthetic);
    } else {
      const Dim sz = size[static_cast<std::size_t>(stick)];
      l.device_size.push_back((sz + eps - 1) / eps);
      l.stride_map.push_back(strides[static_cast<std::size_t>(stick)] * eps);
    }
  };
  const std::size_t m = dim_order.size();
  if (m == 1) {
    push_count();
  } else {
    for (std::size_t i = 1; i + 1 < m; ++i) push_normal(dim_order[i]);
    push_count();
    push_normal(dim_order[0]);
  }
  l.device_size.push_back(eps);
  l.stride_map.push_back(stick_real ? strides[static_cast<std::size_t>(stick)] : kSynthetic);
  if (auto st = validate(l); !st) return st.error();
  return l;
}

Result<Layout> explicit_layout(const std::vector<Dim>& size, std::vector<Stride> strides, DType dtype,
                               std::vector<Dim> device_size, std::vector<Stride> stride_map) {
  Layout l;
  l.host_size = size;
  l.host_strides = strides.empty() ? contiguous_strides(size) : std::move(strides);
  l.dtype = dtype;
  l.device_size = std::move(device_size);
  l.stride_map = std::move(stride_map);
  if (auto st = validate(l); !st) return st.error();
  return l;
}

Result<HostDimLevels> decompose(const Layout& l) {
  auto d = decompose_view(l, l.host_size, l.host_strides);
  if (d && covers(l, *d, l.host_size)) return d;
  // Folding layouts treat contiguous host dims as one flat dim: coalesce and retry once.
  std::vector<Dim> hs;
  std::vector<Stride> st;
  for (std::size_t h = 0; h < l.host_size.size(); ++h) {
    if (l.host_size[h] == 1) continue;
    if (!hs.empty() && st.back() == l.host_size[h] * l.host_strides[h]) {
      hs.back() *= l.host_size[h];
      st.back() = l.host_strides[h];
    } else {
      hs.push_back(l.host_size[h]);
      st.push_back(l.host_strides[h]);
    }
  }
  const auto non_unit = std::count_if(l.host_size.begin(), l.host_size.end(), [](Dim x) { return x != 1; });
  if (static_cast<std::ptrdiff_t>(hs.size()) == non_unit) return d;  // nothing to coalesce
  auto c = decompose_view(l, hs, st);
  return c ? c : d;
}

Status validate(const Layout& l) {
  if (auto st = check_host(l.host_size, l.host_strides); !st) return st;
  if (l.device_size.empty()) return bad_input("device_size is empty (it needs at least the stick dimension)");
  for (std::size_t k = 0; k < l.device_size.size(); ++k)
    if (l.device_size[k] < 0)
      return bad_input("device dimension " + std::to_string(k) + " has negative size " + std::to_string(l.device_size[k]));
  if (l.stride_map.size() != l.device_size.size())
    return bad_input("stride_map has " + std::to_string(l.stride_map.size()) + " entries for " +
                     std::to_string(l.device_size.size()));
  for (std::size_t k = 0; k < l.stride_map.size(); ++k)
    if (l.stride_map[k] < -1)
      return bad_input("stride_map[" + std::to_string(k) + "] = " + std::to_string(l.stride_map[k]) +
                       ": expected -1, 0 or a positive host stride");
  const Dim eps = elems_per_stick(l.dtype);
  if (l.device_size.back() != eps)
    return bad_input("the stick dimension (device dim " + std::to_string(l.device_size.size() - 1) + ") has size " +
                     std::to_string(l.device_size.back()) + "; " + dtype_name(l.dtype) + " needs " +
                     std::to_string(eps) + " elements per stick");
  Dim total = 1;
  for (Dim x : l.device_size) {
    if (x > 0 && total > kMaxExtent / x) return bad_input("device layout has more than 2^40 elements");
    total *= x;
  }
  if (host_elements(l) == 0 || total == 0) return ok_status();  // empty tensors are legal: 0 bytes
  auto d = decompose(l);
  if (!d) return d.error();
  for (std::size_t h = 0; h < d->host_size.size(); ++h) {
    const Dim hs = d->host_size[h];
    if (hs <= 1 || d->host_stride[h] == 0) continue;  // a broadcast host dim has one element
    const auto& lv = d->levels[h];
    const Dim got = count_valid(l, lv, static_cast<int>(lv.size()) - 1, hs);
    if (got != hs)
      return bad_input("device layout " + format_dims(l.device_size) + " / stride_map " + format_dims(l.stride_map) +
                       " holds " + std::to_string(got) + " of the " + std::to_string(hs) + " positions of host dim " +
                       std::to_string(h));
  }
  return ok_status();
}

Bytes device_bytes(const Layout& l) {
  Bytes b = kBytesInStick;
  for (std::size_t k = 0; k + 1 < l.device_size.size(); ++k) b *= l.device_size[k];
  return l.device_size.empty() || l.device_size.back() == 0 ? 0 : b;
}

Dim device_elements(const Layout& l) {
  Dim n = 1;
  for (Dim x : l.device_size) n *= x;
  return n;
}

std::vector<Offset> device_strides(const Layout& l) { return contiguous_strides(l.device_size); }

Dim host_elements(const Layout& l) {
  Dim n = 1;
  for (Dim x : l.host_size) n *= x;
  return n;
}

Dim distinct_host_elements(const Layout& l) {
  Dim n = 1;
  for (std::size_t h = 0; h < l.host_size.size(); ++h)
    if (h >= l.host_strides.size() || l.host_strides[h] != 0 || l.host_size[h] == 0) n *= l.host_size[h];
  return n;
}

int stick_host_dim(const Layout& l) {
  if (l.stride_map.empty() || l.stride_map.back() <= 0) return -1;
  for (std::size_t h = 0; h < l.host_size.size(); ++h)
    if (l.host_size[h] > 1 && l.host_strides[h] == l.stride_map.back()) return static_cast<int>(h);
  // Stick stride 1 on a broadcast or unusual view: fall back to the innermost host dim with size > 1.
  for (int h = static_cast<int>(l.host_size.size()) - 1; h >= 0; --h)
    if (l.host_size[static_cast<std::size_t>(h)] > 1) return h;
  return -1;
}

bool device_position_valid(const Layout& l, const HostDimLevels& dec, const std::vector<Dim>& coord,
                           Offset* host_offset) {
  Offset off = 0;
  for (std::size_t k = 0; k < coord.size(); ++k) {
    if (dec.host_dim_of[k] < 0 && l.stride_map[k] < 0 && coord[k] != 0) return false;
    if (l.stride_map[k] > 0) off += coord[k] * l.stride_map[k];
  }
  const auto& hsz = dec.host_size;
  for (std::size_t h = 0; h < dec.levels.size(); ++h) {
    const auto& lv = dec.levels[h];
    Dim p = 0;
    for (std::size_t i = 0; i < lv.size(); ++i) {
      p += coord[static_cast<std::size_t>(lv[i].device_dim)] * lv[i].coef;
      const Dim bound = i + 1 < lv.size() ? lv[i + 1].coef : hsz[h];
      if (p >= bound) return false;
    }
  }
  if (host_offset) *host_offset = off;
  return true;
}

std::string format_dims(const std::vector<int64_t>& v) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  o << "]";
  return o.str();
}

std::string to_string(const Layout& l) {
  return "SpyreTensorLayout(device_size=" + format_dims(l.device_size) + ", stride_map =" + format_dims(l.stride_map) +
         ", device_dtype=DataFormats." + dtype_info(l.dtype).device_name + ")";
}

}  // namespace sp::layout
