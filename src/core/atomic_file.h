// Atomic output: content goes to a temporary file in the target's directory, is flushed, then
// renamed over the target, so an interrupted run never leaves a truncated output file.
#pragma once

#include <string>

#include "core/result.h"

namespace sp {

// Writes `content` to `path` through a flushed temporary file renamed into place.
Status write_file_atomic(const std::string& path, const std::string& content);

// A fresh hidden name beside `path` (same directory, so the final rename stays on one filesystem).
std::string temp_path_beside(const std::string& path, const char* tag);

// Creates `tmp` (which must not exist), writes and flushes `content`; removes it on failure.
// Messages name `path`, the file the user asked for.
Status write_new_file(const std::string& tmp, const std::string& content, const std::string& path);

}  // namespace sp
