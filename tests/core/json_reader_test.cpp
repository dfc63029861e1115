#include "core/json_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace sp {
namespace {

TEST(JsonReader, SyntaxErrorNamesLineAndColumn) {
  auto r = parse_json_text("{\n  \"a\": [1, 2,\n}", "f.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(r.error().message.find("f.json:3:"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
}

TEST(JsonReader, RepeatedKeyIsBadInputNamedByItsPath) {
  // nlohmann keeps the last value of a repeated key: {"size": 600, "size": 10} would read 10.
  auto r = parse_json_text(R"({"buffers": [{"id": "p"}, {"id": "q", "size": 600, "size": 10}]})", "d.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  EXPECT_EQ(r.error().message, "d.json: $.buffers[1]: duplicate key \"size\" (each key may appear once)");
  // The same key in two objects, and nested objects after arrays, are fine.
  auto ok = parse_json_text(R"({"a": {"k": 1}, "b": [[{"k": 2}], {"k": 3}], "k": [1, {"k": {"k": 4}}]})", "d.json");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ((*ok)["b"][1]["k"], 3);
  auto nested = parse_json_text(R"({"a": [1, {"x": [2, 3]}, {"y": {"z": 1, "z": 2}}]})", "n.json");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().message, "n.json: $.a[2].y: duplicate key \"z\" (each key may appear once)");
}

TEST(JsonReader, NestingPastTheStatedDepthIsBadInputNotACrash) {
  const std::size_t deep = 20000;  // a recursive reader's stack would not survive this
  auto r = parse_json_text(std::string(deep, '[') + std::string(deep, ']'), "deep.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(r.error().message.find("deep.json: $[0][0]"), std::string::npos) << r.error().message.substr(0, 80);
  EXPECT_NE(r.error().message.find("nesting deeper than 512 levels"), std::string::npos);
  // At the limit it is accepted.
  auto at = parse_json_text(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'), "ok.json");
  EXPECT_TRUE(at.ok());
}

TEST(JsonReader, EmptyFileIsBadInput) {
  auto r = parse_json_text("  \n", "e.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("empty"), std::string::npos);
}

TEST(JsonReader, TypeErrorNamesPath) {
  Json j = Json::parse(R"({"xs": [1, "two", 3]})");
  JsonCursor c(j, "x.json");
  try {
    c.at("xs").as_int_array(0);
    FAIL() << "expected an error";
  } catch (const JsonInputError& e) {
    EXPECT_STREQ(e.what(), "x.json: $.xs[1]: expected an integer, got \"two\"");
  }
}

TEST(JsonReader, MissingFieldAndRange) {
  Json j = Json::parse(R"({"n": -3})");
  JsonCursor c(j, "y.json");
  EXPECT_THROW(c.at("m"), JsonInputError);
  try {
    c.at("n").as_int_at_least(1);
    FAIL();
  } catch (const JsonInputError& e) {
    EXPECT_STREQ(e.what(), "y.json: $.n: expected a positive integer, got -3");
  }
}

TEST(JsonReader, IntegralFloatsAreIntegers) {
  Json j = Json::parse(R"([128.0, 1.5])");
  JsonCursor c(j, "z.json");
  EXPECT_EQ(c.at(0).as_int(), 128);
  EXPECT_THROW(c.at(1).as_int(), JsonInputError);
}

TEST(JsonReader, MissingFileIsBadInput) {
  auto r = read_json_file("/nonexistent/dir/file.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(exit_code(r.error()), kExitBadInput);
}

TEST(JsonReader, ByteOrderMarkIsNotContent) {
  // Windows tools write a UTF-8 BOM before CSV and JSON text; the CSV header check saw it.
  const std::string path = ::testing::TempDir() + "bom.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << "\xEF\xBB\xBFid,lower,upper,size\n";
  }
  auto r = read_text_file(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "id,lower,upper,size\n");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sp
