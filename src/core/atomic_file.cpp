#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace sp {

std::string temp_path_beside(const std::string& path, const char* tag) {
  namespace fs = std::filesystem;
  static std::atomic<unsigned> counter{0};
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  return (dir / ("." + target.filename().string() + "." + tag + "." + std::to_string(::getpid()) + "." +
                 std::to_string(counter.fetch_add(1))))
      .string();
}

Status write_new_file(const std::string& tmp, const std::string& content, const std::string& path) {
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

Status write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = temp_path_beside(path, "tmp");
  if (Status st = write_new_file(tmp, content, path); !st) return st;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return internal_error(path + ": rename failed: " + why);
  }
  return ok_status();
}

}  // namespace sp
