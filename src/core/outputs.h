// All outputs of a run, or none: every verb registers its output paths before it starts working
// (each is checked then, so an unwritable path fails at once with exit 2 instead of after the
// time budget), stages their contents, and commits them together: every file is written to a
// temporary beside its target first and only when all of them are complete are they renamed
// into place. "-" is standard output (at most one output may be "-").
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace sp {

class OutputSet {
 public:
  // Registers an output named by `flag` (for messages); an empty path is "not requested".
  // Checks that the target is not a directory, its directory exists and accepts new files, and
  // that no other output has the same path. Errors are bad input (exit 2), one line.
  Status add(const std::string& flag, const std::string& path);
  // Stages the content of a registered output (ignored for paths never registered or empty).
  void set(const std::string& path, std::string content);
  // Writes every staged output: temporaries first, then renames; on any failure the
  // temporaries and the files already renamed are removed, so no output is left behind.
  // Standard output is written last, after every file is in place.
  Status commit();
  // True when some registered output is standard output (the human summary goes to stderr).
  bool uses_stdout() const;

 private:
  struct Entry {
    std::string flag;     // e.g. "-o", "--svg"
    std::string path;     // target path or "-"
    std::string content;  // staged bytes
    bool staged = false;  // set() was called
  };
  std::vector<Entry> entries_;
};

// Checks that `path` could be created or replaced now (used by OutputSet::add).
Status check_output_path(const std::string& flag, const std::string& path);

}  // namespace sp
