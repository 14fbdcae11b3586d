// The server's request framing (every framing under the body limit, conflicting and unsupported
// ones refused with the status RFC 9112 asks for) and the JSON nesting bound, without a model.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/request.h"
#include "server/request_framing.h"

namespace nvfp4::server {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

int status_of(const std::string& method, const Headers& h, size_t max = 1000) {
  try {
    check_framing(method, h, max);
  } catch (const ApiError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    return e.status;
  }
  return 200;
}

TEST(ServerFraming, EveryFramingIsCheckedBeforeTheBody) {
  EXPECT_EQ(status_of("POST", {}), 200);  // no framing: no body
  EXPECT_FALSE(check_framing("POST", {}, 1000).has_body);
  const Framing f = check_framing("POST", {{"content-length", " 12 "}}, 1000);
  EXPECT_TRUE(f.has_body);
  EXPECT_EQ(f.length, 12u);
  EXPECT_TRUE(check_framing("POST", {{"Transfer-Encoding", "Chunked"}}, 1000).chunked);
  EXPECT_EQ(status_of("POST", {{"Content-Length", "1000"}}), 200);
  EXPECT_EQ(status_of("POST", {{"Content-Length", "1001"}}), 413);
  EXPECT_EQ(status_of("POST", {{"Content-Length", "9999999999999999999"}}), 413);
  for (const char* bad : {"-1", "", "1e3", "+5", "0x10", "12 13", "99999999999999999999", "1.0"})
    EXPECT_EQ(status_of("POST", {{"Content-Length", bad}}), 400) << bad;
  EXPECT_EQ(status_of("POST", {{"Content-Length", "5"}, {"Content-Length", "6"}}), 400);
  EXPECT_EQ(status_of("POST", {{"Content-Length", "5"}, {"content-length", "5"}}), 200);  // equal: one length
  EXPECT_EQ(status_of("POST", {{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}}), 400);
  for (const char* te : {"gzip", "gzip, chunked", "identity", "deflate", "chunked, chunked"})
    EXPECT_EQ(status_of("POST", {{"Transfer-Encoding", te}}), 501) << te;
  EXPECT_EQ(status_of("POST", {{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}}), 501);
  for (const char* m : {"GET", "PUT", "DELETE", "PATCH"}) {
    EXPECT_EQ(status_of(m, {{"Content-Length", "3"}}), 405) << m;
    EXPECT_EQ(status_of(m, {{"Transfer-Encoding", "chunked"}}), 405) << m;
    EXPECT_EQ(status_of(m, {{"Content-Length", "0"}}), 200) << m;
  }
}

TEST(ServerFraming, JsonDepthIsBoundedBeforeParsing) {
  EXPECT_FALSE(json_too_deep(std::string(64, '[') + std::string(64, ']'), 64));
  EXPECT_TRUE(json_too_deep(std::string(65, '['), 64));
  EXPECT_TRUE(json_too_deep(R"({"a":)" + std::string(70, '{'), 64));
  EXPECT_FALSE(json_too_deep(R"({"a":")" + std::string(1000, '[') + R"("})", 64));  // inside a string
  EXPECT_FALSE(json_too_deep(R"({"a":"\")" + std::string(1000, '[') + R"("})", 64));  // escaped quote
  try {
    parse_gen_request(R"({"prompt":)" + std::string(3000000, '['), false);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.code, "invalid_json");
    EXPECT_NE(std::string(e.what()).find("64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvfp4::server
