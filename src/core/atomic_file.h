// Atomic output: content goes to a temporary file in the target's directory, is flushed, then
// renamed over the target, so an interrupted run never leaves a truncated output file.
#pragma once

#include <string>

#include "core/result.h"

namespace sp {

Status write_file_atomic(const std::string& path, const std::string& content);

}  // namespace sp
