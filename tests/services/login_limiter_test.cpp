#include "amfgate/services/login_limiter.hpp"

#include <gtest/gtest.h>

#include <string>

namespace amfgate::services {
namespace {

using clock = login_limiter::clock;

// Anyone could lock a user out by name: 5 wrong passwords every 30 s, renewable forever.
TEST(LoginLimiter, OneAddressCannotLockAnotherOutByName) {
  login_limiter limiter({5, std::chrono::seconds(60), std::chrono::seconds(30)});
  const auto now = clock::now();
  for (int i = 0; i < 5; ++i) limiter.failed("10.0.0.66", "ann", now);
  EXPECT_GT(limiter.retry_after("10.0.0.66", "ann", now).count(), 0);  // the guesser waits
  EXPECT_GT(limiter.retry_after("10.0.0.66", "bob", now).count(), 0);  // for any name
  EXPECT_EQ(limiter.retry_after("10.0.0.7", "ann", now).count(), 0);   // ann elsewhere: not
}

TEST(LoginLimiter, GuessesForOneNameFromManyAddressesMeetABound) {
  login_limiter limiter({5, std::chrono::seconds(60), std::chrono::seconds(30)});
  const auto now = clock::now();
  // 4 failures (under the limit) from each of 25 addresses: 100, the bound for a name.
  for (int a = 0; a < 25; ++a) {
    for (int i = 0; i < 4; ++i) limiter.failed("10.1.0." + std::to_string(a), "ann", now);
  }
  EXPECT_GT(limiter.retry_after("10.2.0.1", "ann", now).count(), 0);
  EXPECT_EQ(limiter.retry_after("10.2.0.1", "bob", now).count(), 0);
}

TEST(LoginLimiter, ASuccessForgetsThatAddressesFailuresForTheName) {
  login_limiter limiter({3, std::chrono::seconds(60), std::chrono::seconds(30)});
  const auto now = clock::now();
  for (int i = 0; i < 2; ++i) {
    limiter.failed("10.0.0.1", "ann", now);
    limiter.failed("10.0.0.2", "ann", now);
  }
  limiter.succeeded("10.0.0.1", "ann");
  limiter.failed("10.0.0.2", "ann", now);  // 3 from .2: it waits
  EXPECT_GT(limiter.retry_after("10.0.0.2", "ann", now).count(), 0);
  EXPECT_EQ(limiter.retry_after("10.0.0.1", "ann", now).count(), 0);
}

}  // namespace
}  // namespace amfgate::services
