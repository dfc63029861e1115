#include "core/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sp {
namespace {

TEST(AtomicFile, WritesAndReplacesWithoutLeftovers) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sp_atomic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path f = dir / "out.json";
  ASSERT_TRUE(write_file_atomic(f.string(), "first").ok());
  ASSERT_TRUE(write_file_atomic(f.string(), "second").ok());
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "second");
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);  // no temporary file left behind
  fs::remove_all(dir);
}

TEST(AtomicFile, UnwritableDirectoryIsAnError) {
  auto st = write_file_atomic("/nonexistent/dir/out.json", "x");
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace sp
