// The rules for option values (counts, seconds, bytes, bandwidths, enums), shared by the CLI's
// flags (src/cli/options) and the Python bindings' keyword arguments (python/bindings), so both
// front ends reject a value with the same words. Each check takes the value as text (what the
// user wrote) and returns "" when it is acceptable, else what was expected and what was given.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sp::flags {

inline constexpr int kMaxThreads = 256;                 // search threads: 1..256 on any machine
inline constexpr double kMaxSeconds = 1e6;              // time limits: 0..1e6 s (11.5 days)
inline constexpr int64_t kMaxBytes = int64_t{1} << 62;  // byte sizes: 0..2^62, overflow-safe sums
inline constexpr double kMinGbps = 1e-9;                // bandwidths: [1e-9, 1e9] GB/s (1 B/s ..),
inline constexpr double kMaxGbps = 1e9;                 // so every time estimate stays finite

// An integer in [lo, hi] (counts, cores, stages, iterations, seeds).
std::string count_error(const std::string& in, int64_t lo, int64_t hi);
// A finite number of seconds in [0, kMaxSeconds].
std::string seconds_error(const std::string& in);
// An integer number of bytes in [0, kMaxBytes].
std::string bytes_error(const std::string& in);
// A bandwidth in GB/s in [kMinGbps, kMaxGbps].
std::string gbps_error(const std::string& in);
// One of the listed words (the wording of CLI11's IsMember: "foo not in {pack,select}").
std::string member_error(const std::string& in, const std::vector<std::string>& words);

}  // namespace sp::flags
