#include "core/outputs.h"

#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace sp {

namespace fs = std::filesystem;

Status check_output_path(const std::string& flag, const std::string& path) {
  if (path == "-") return ok_status();
  const std::string where = flag + " " + path + ": ";
  std::error_code ec;
  if (fs::is_directory(path, ec)) return bad_input(where + "is a directory, expected a file path");
  fs::path target(path);
  if (target.filename().empty()) return bad_input(where + "expected a file path");
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) return bad_input(where + "directory " + dir.string() + " does not exist");
  // The only reliable test of "can we create a file here" is to create one.
  const std::string probe = temp_path_beside(path, "probe");
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return bad_input(where + "cannot write in " + dir.string() + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return ok_status();
}

Status OutputSet::add(const std::string& flag, const std::string& path) {
  if (path.empty()) return ok_status();
  for (const Entry& e : entries_) {
    if (path == "-" && e.path == "-")
      return bad_input(flag + " -: standard output is already the destination of " + e.flag);
    std::error_code ec;
    if (e.path == path || (path != "-" && e.path != "-" && fs::weakly_canonical(e.path, ec) == fs::weakly_canonical(path, ec)))
      return bad_input(flag + " " + path + ": the same file is already the destination of " + e.flag);
  }
  if (Status st = check_output_path(flag, path); !st) return st;
  entries_.push_back({flag, path, {}, false});
  return ok_status();
}

void OutputSet::set(const std::string& path, std::string content) {
  if (path.empty()) return;
  for (Entry& e : entries_)
    if (e.path == path) {
      e.content = std::move(content);
      e.staged = true;
      return;
    }
}

bool OutputSet::uses_stdout() const {
  for (const Entry& e : entries_)
    if (e.path == "-") return true;
  return false;
}

Status OutputSet::commit() {
  std::vector<std::string> temps(entries_.size());
  auto remove_temps = [&] {
    for (const std::string& t : temps)
      if (!t.empty()) ::unlink(t.c_str());
  };
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (!e.staged || e.path == "-") continue;
    temps[i] = temp_path_beside(e.path, "tmp");
    if (Status st = write_new_file(temps[i], e.content, e.path); !st) {
      temps[i].clear();
      remove_temps();
      return st;
    }
  }
  std::vector<char> renamed(entries_.size(), 0);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (temps[i].empty()) continue;
    if (std::rename(temps[i].c_str(), entries_[i].path.c_str()) != 0) {
      std::string why = std::strerror(errno);
      remove_temps();
      for (std::size_t j = 0; j < i; ++j)
        if (renamed[j]) ::unlink(entries_[j].path.c_str());  // none rather than some
      return internal_error(entries_[i].path + ": rename failed: " + why);
    }
    temps[i].clear();
    renamed[i] = 1;
  }
  for (const Entry& e : entries_)
    if (e.staged && e.path == "-") {
      std::cout << e.content;
      std::cout.flush();
    }
  return ok_status();
}

}  // namespace sp
