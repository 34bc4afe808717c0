#include "amf/error.hpp"

#include <gtest/gtest.h>

namespace amf {
namespace {

TEST(Error, CategoryAndMessages) {
  std::error_code ec = errc::bad_reference;
  EXPECT_STREQ(ec.category().name(), "amf");
  EXPECT_EQ(ec.message(), "reference to a missing or mismatched table entry");
  EXPECT_EQ(ec, make_error_code(errc::bad_reference));
  for (int e = static_cast<int>(errc::truncated); e <= static_cast<int>(errc::trailing_bytes);
       ++e) {
    EXPECT_NE(make_error_code(static_cast<errc>(e)).message(), "unknown amf error") << e;
  }
}

TEST(Error, DecodeErrorIsFalseOnSuccessAndNamesTheOffset) {
  decode_error ok;
  EXPECT_FALSE(ok);
  decode_error bad{errc::truncated, 12};
  EXPECT_TRUE(bad);
  EXPECT_EQ(bad.message(), "input ends inside a value at byte 12");
  decode_exception x(bad);
  EXPECT_EQ(x.error().offset, 12u);
}

}  // namespace
}  // namespace amf
