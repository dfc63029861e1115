// Flag rules shared by every verb: one validator per kind of value, so `--cores -1`,
// `--time-limit nan` or `--threads 1000` fail the same way everywhere (exit 2, one line naming
// the flag, the value and what was expected). README "Flags" lists the rules.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <iostream>
#include <string>

#include "core/flags.h"
#include "core/result.h"

namespace sp::cli {

// The rules themselves live in core/flags.h, shared with the Python bindings.
using flags::kMaxBytes;
using flags::kMaxGbps;
using flags::kMinGbps;
using flags::kMaxSeconds;
using flags::kMaxThreads;

// An integer in [lo, hi] (counts, cores, stages, iterations, seeds).
CLI::Validator count_in(int64_t lo, int64_t hi);
// A finite number of seconds in [0, kMaxSeconds].
CLI::Validator seconds();
// An integer number of bytes in [0, kMaxBytes].
CLI::Validator byte_size();
// A bandwidth in GB/s in [kMinGbps, kMaxGbps].
CLI::Validator bandwidth_gbps();
// A thread count in [1, kMaxThreads].
CLI::Validator thread_count();

// Names the input in an error about its contents: the library's planners report what is wrong
// ("op 'up_proj': ...") but not which file; flag errors ("--cores ...") and messages that already
// start with the file name are left as they are.
Error located(Error e, const std::string& input_path);

// Starts every one-line error of the CLI, from the flag parser as from the verbs: the program
// name, as Unix tools do (README, "Conventions of every verb").
inline constexpr const char* kErrorPrefix = "scratchplan: ";

// Prints "scratchplan: <message>" on one line (newlines in names are flattened) and returns the exit code.
int fail(const Error& e);

}  // namespace sp::cli
