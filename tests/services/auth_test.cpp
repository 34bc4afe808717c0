#include "amfgate/services/auth.hpp"

#include <crypt.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

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

// With SHA-512 ($6$) users, an unknown name used to be checked against a yescrypt decoy: 40 ms
// against 3 ms, which told which names exist. The decoy is now hashed like the users' hashes.
TEST(Auth, AnUnknownUserCostsWhatAKnownOneCosts) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  ASSERT_NE(crypt_gensalt_rn("$6$", 0, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  const std::string sha512 = crypt_rn("pw", salt, &data, sizeof data);
  ASSERT_TRUE(sha512.starts_with("$6$"));
  const user_table users({{"ann", sha512, {}}});
  std::vector<double> known, unknown;
  auto time = [&](const char* user, std::vector<double>& into) {
    const auto t = std::chrono::steady_clock::now();
    EXPECT_FALSE(users.authenticate(user, "wrong"));
    into.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  };
  for (int i = 0; i < 21; ++i) {  // interleaved, so that a busy moment hits both alike
    time("ann", known);
    time("nobody", unknown);
  }
  std::sort(known.begin(), known.end());
  std::sort(unknown.begin(), unknown.end());
  const double ratio = unknown[10] / known[10];
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 2.0) << "known " << known[10] * 1000 << " ms, unknown " << unknown[10] * 1000
                        << " ms";
}

}  // namespace
}  // namespace amfgate::services
