#include "amfgate/services/auth.hpp"

#include <gtest/gtest.h>

namespace amfgate::services {
namespace {

TEST(Auth, HashesAreSaltedYescryptAndVerify) {
  const std::string a = hash_password("s3cret");
  const std::string b = hash_password("s3cret");
  EXPECT_TRUE(a.starts_with("$y$"));
  EXPECT_NE(a, b);
  EXPECT_TRUE(verify_password("s3cret", a));
  EXPECT_FALSE(verify_password("s3cret!", a));
  EXPECT_FALSE(verify_password("s3cret", "not a hash"));
}

TEST(Auth, UserTable) {
  user_table users({{"ann", hash_password("pw"), {"admin"}}});
  auto p = users.authenticate("ann", "pw");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "ann");
  EXPECT_TRUE(p->has_role("admin"));
  EXPECT_FALSE(p->has_role("user"));
  EXPECT_FALSE(users.authenticate("ann", "wrong"));
  EXPECT_FALSE(users.authenticate("bob", "pw"));
}

}  // namespace
}  // namespace amfgate::services
