#include "amfgate/services/auth.hpp"

#include <crypt.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace amfgate::services {
namespace {
extern std::vector<std::string> hashed;
}  // namespace
}  // namespace amfgate::services

// The executable's crypt_rn comes before libcrypt's: it records the setting, then hashes.
char* crypt_rn(const char* phrase, const char* setting, void* data, int size) __THROW {
  amfgate::services::hashed.emplace_back(setting);
  using real_crypt = char* (*)(const char*, const char*, void*, int);
  static const auto real = reinterpret_cast<real_crypt>(::dlsym(RTLD_NEXT, "crypt_rn"));
  return real(phrase, setting, data, size);
}

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

TEST(Auth, CredentialDigestsAreSaltedAndMatchTheirPairOnly) {
  const std::string a = credential_digest("ann", "pw");
  EXPECT_NE(a, credential_digest("ann", "pw"));  // a salt of its own
  EXPECT_TRUE(digest_matches(a, "ann", "pw"));
  EXPECT_FALSE(digest_matches(a, "ann", "pw!"));
  EXPECT_FALSE(digest_matches(a, "bob", "pw"));
  // The user and password stay apart: "an" + "npw" is another pair.
  EXPECT_FALSE(digest_matches(a, "an", "npw"));
  EXPECT_FALSE(digest_matches("", "ann", "pw"));  // a session without a login
  EXPECT_FALSE(digest_matches(a.substr(0, a.size() - 1), "ann", "pw"));
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
// against 3 ms, which told which names exist. The decoy is now hashed like the users' hashes:
// an unknown name runs one hash of the same algorithm and cost as a known one. (Which hash
// ran is seen, not timed: a timed ratio fails on a busy machine.)
std::vector<std::string> hashed;  // the crypt(3) settings, in the order they ran

// "$6$salt$hash" -> "$6$", "$y$j9T$salt$hash" -> "$y$j9T$": the algorithm and its cost.
std::string algorithm_and_cost(const std::string& setting) {
  auto end = setting.rfind('$');
  if (end != std::string::npos && end > 0) end = setting.rfind('$', end - 1);
  return end == std::string::npos ? setting : setting.substr(0, end + 1);
}

TEST(Auth, AnUnknownUserRunsTheHashAKnownOneRuns) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  ASSERT_NE(crypt_gensalt_rn("$6$", 0, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  const std::string sha512 = crypt_rn("pw", salt, &data, sizeof data);
  ASSERT_TRUE(sha512.starts_with("$6$"));
  const user_table users({{"ann", sha512, {}}});
  hashed.clear();
  EXPECT_FALSE(users.authenticate("ann", "wrong"));
  ASSERT_EQ(hashed.size(), 1u);
  EXPECT_EQ(hashed[0], sha512);
  hashed.clear();
  EXPECT_FALSE(users.authenticate("nobody", "wrong"));
  ASSERT_EQ(hashed.size(), 1u);
  EXPECT_EQ(algorithm_and_cost(hashed[0]), algorithm_and_cost(sha512)) << hashed[0];
  EXPECT_NE(hashed[0], sha512);  // a decoy of its own, not a user's hash
}

}  // namespace
}  // namespace amfgate::services
