#include "amfgate/services/session.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace amfgate::services {
namespace {

TEST(Sessions, CreateFindSaveRemove) {
  memory_session_store store(10, std::chrono::minutes(5));
  session s = store.create();
  EXPECT_EQ(s.id.size(), 32u);
  s.user = principal{"ann", {"admin"}};
  store.save(s);
  auto found = store.find(s.id);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->user->name, "ann");
  store.remove(s.id);
  EXPECT_FALSE(store.find(s.id));
  EXPECT_FALSE(store.find("unknown"));
}

TEST(Sessions, BoundedByCountLeastRecentlyUsedFirst) {
  memory_session_store store(3, std::chrono::minutes(5));
  session a = store.create(), b = store.create(), c = store.create();
  store.find(a.id);  // a is now the most recent
  session d = store.create();
  EXPECT_EQ(store.size(), 3u);
  EXPECT_TRUE(store.find(a.id));
  EXPECT_FALSE(store.find(b.id));
  EXPECT_TRUE(store.find(c.id));
  EXPECT_TRUE(store.find(d.id));
}

TEST(Sessions, ExpireWhenIdle) {
  memory_session_store store(10, std::chrono::milliseconds(30));
  session a = store.create();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_FALSE(store.find(a.id));
  store.create();
  EXPECT_EQ(store.size(), 1u);
}

}  // namespace
}  // namespace amfgate::services
