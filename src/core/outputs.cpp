#include "core/outputs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace sp {
namespace {

namespace fs = std::filesystem;

std::string temp_name(const std::string& path, const char* tag) {
  static unsigned counter = 0;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  return (dir / ("." + target.filename().string() + "." + tag + "." + std::to_string(::getpid()) + "." +
                 std::to_string(counter++)))
      .string();
}

// Writes `content` to a new file `tmp` and flushes it; the file is removed on failure.
Status write_new(const std::string& tmp, const std::string& content, const std::string& path) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return bad_input(path + ": cannot create the output file: " + std::strerror(errno));
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return internal_error(path + ": write failed: " + why);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return internal_error(path + ": flush failed: " + why);
  }
  return ok_status();
}

}  // namespace

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
  const std::string probe = temp_name(path, "probe");
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
    temps[i] = temp_name(e.path, "tmp");
    if (Status st = write_new(temps[i], e.content, e.path); !st) {
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
