// Hardware descriptions: the built-in spyre numbers and JSON overrides.
#include <cmath>
#include <filesystem>

#include "lx/lx.h"

namespace sp::lx {

Bytes lx_capacity(const Hardware& h) {
  if (h.capacity_override >= 0) return h.capacity_override;
  // NOTES.md §1.4: round_up_128(int((2 MiB - 64 KiB) * (1 - frac))).
  double usable = static_cast<double>(h.lx_bytes - h.lx_backend_bytes) * (1.0 - h.reserved_fraction);
  auto raw = static_cast<Bytes>(usable);
  Bytes a = h.alignment > 0 ? h.alignment : 1;
  return (raw + a - 1) / a * a;
}

Result<Hardware> hardware_from_json(const Json& j, const std::string& source) {
  try {
    JsonCursor c(j, source);
    // usable_lx_bytes is derived (hardware_to_json writes it); it is accepted and recomputed.
    c.expect_keys({"format", "version", "name", "lx_bytes", "lx_backend_bytes", "reserved_fraction", "capacity",
                   "usable_lx_bytes", "alignment", "max_cores", "span_limit", "hbm_bytes_per_s", "core_flops_per_s",
                   "op_overhead_s", "ring_bytes_per_s"});
    c.expect_format("scratchplan-lx-hardware", 1);
    Hardware h;
    if (c.has("name")) h.name = c.at("name").as_string();
    // Byte counts follow the CLI's bytes rule (0..2^62); rates and the overhead keep every time
    // estimate a finite number (a bandwidth of 1e-320 made them inf, written as JSON null).
    auto bytes = [&](const char* key) {
      int64_t v = c.at(key).as_int_at_least(0);
      if (v > kMaxHardwareBytes) c.at(key).fail("expected a byte count 0..2^62, got " + std::to_string(v));
      return v;
    };
    auto in_range = [&](const char* key, double lo, double hi, const char* what, double& out) {
      if (!c.has(key)) return;
      double v = c.at(key).as_number();
      if (!(v >= lo && v <= hi)) c.at(key).fail(std::string("expected ") + what + ", got " + describe_json(c.at(key).node()));
      out = v;
    };
    if (c.has("lx_bytes")) h.lx_bytes = bytes("lx_bytes");
    if (c.has("lx_backend_bytes")) h.lx_backend_bytes = bytes("lx_backend_bytes");
    if (c.has("reserved_fraction")) {
      double f = c.at("reserved_fraction").as_number();
      if (f < 0 || f > 1) c.at("reserved_fraction").fail("expected a fraction in [0, 1]");
      h.reserved_fraction = f;
    }
    if (c.has("capacity")) h.capacity_override = bytes("capacity");
    if (c.has("alignment")) {
      h.alignment = c.at("alignment").as_int_at_least(1);
      if (h.alignment > (int64_t{1} << 30) || (h.alignment & (h.alignment - 1)) != 0)
        c.at("alignment").fail("expected a power of two 1..2^30, got " + std::to_string(h.alignment));
    }
    if (c.has("max_cores")) {
      h.max_cores = static_cast<int>(c.at("max_cores").as_int_at_least(1));
      if (h.max_cores > 32) c.at("max_cores").fail("expected 1..32 (work division supports at most 32 cores)");
    }
    if (c.has("span_limit")) {
      h.span_limit = c.at("span_limit").as_int_at_least(1);
      if (h.span_limit > kMaxHardwareBytes) c.at("span_limit").fail("expected a byte count 1..2^62");
    }
    in_range("hbm_bytes_per_s", 1, 1e18, "bytes per second in [1, 1e18]", h.hbm_bytes_per_s);
    in_range("core_flops_per_s", 1, 1e21, "operations per second in [1, 1e21]", h.core_flops_per_s);
    in_range("op_overhead_s", 0, 1e6, "seconds in [0, 1e6]", h.op_overhead_s);
    in_range("ring_bytes_per_s", 0, 1e18, "bytes per second in [0, 1e18] (0: no ring transfers)", h.ring_bytes_per_s);
    if (h.lx_backend_bytes > h.lx_bytes) c.at("lx_backend_bytes").fail("expected at most lx_bytes");
    // Derived (hardware_to_json writes it): a different value would be silently replaced.
    if (c.has("usable_lx_bytes") && c.at("usable_lx_bytes").as_int() != lx_capacity(h))
      c.at("usable_lx_bytes").fail("is derived from the other keys (" + std::to_string(lx_capacity(h)) +
                                   " here); set \"capacity\" to override the usable bytes");
    return h;
  } catch (const JsonInputError& e) {
    return bad_input(e.what());
  }
}

Result<Hardware> load_hardware(const std::string& name_or_path) {
  if (name_or_path.empty() || name_or_path == "spyre") return Hardware{};
  // A bare word that names no file was meant as a built-in name: say which names exist.
  std::error_code ec;
  if (name_or_path != "-" && name_or_path.find('/') == std::string::npos &&
      name_or_path.find('.') == std::string::npos && !std::filesystem::exists(name_or_path, ec))
    return bad_input("--hardware: unknown hardware '" + name_or_path +
                     "' (expected spyre, or the path of a hardware JSON file)");
  auto j = read_json_file(name_or_path);
  if (!j) return j.error();
  return hardware_from_json(*j, input_name(name_or_path));
}

Json hardware_to_json(const Hardware& h) {
  Json j;
  j["format"] = "scratchplan-lx-hardware";
  j["version"] = 1;
  j["name"] = h.name;
  j["lx_bytes"] = h.lx_bytes;
  j["lx_backend_bytes"] = h.lx_backend_bytes;
  j["reserved_fraction"] = h.reserved_fraction;
  if (h.capacity_override >= 0) j["capacity"] = h.capacity_override;
  j["usable_lx_bytes"] = lx_capacity(h);
  j["alignment"] = h.alignment;
  j["max_cores"] = h.max_cores;
  j["span_limit"] = h.span_limit;
  j["hbm_bytes_per_s"] = h.hbm_bytes_per_s;
  j["ring_bytes_per_s"] = h.ring_bytes_per_s;
  j["core_flops_per_s"] = h.core_flops_per_s;
  j["op_overhead_s"] = h.op_overhead_s;
  return j;
}

Options stage_options(int stage) {
  Options o;
  o.lx = stage >= 2;
  o.only_reduction_outputs = stage == 2;
  o.in_place = stage >= 3;
  o.clone_inputs = stage >= 4;
  o.clone_outputs = false;
  o.eviction = false;
  o.reorder = false;
  o.coopt = false;
  o.fewer_cores = false;
  o.infer_layouts = false;
  return o;
}

}  // namespace sp::lx
