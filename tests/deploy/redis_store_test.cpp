// The Redis session store against a real redis-server on a loopback port of its own.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

#include "amfgate/server/redis_session_store.hpp"
#include "stack.hpp"

namespace amfgate::test {
namespace {

using namespace std::chrono_literals;
using server::redis_session_store;
using services::store_unavailable;

class RedisStore : public ::testing::Test {
 protected:
  RedisStore() {
    char tmpl[] = "/tmp/amfgate-redis-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    port_ = free_port();
    start_redis(redis_, port_, dir_);
  }
  ~RedisStore() override {
    redis_.kill(SIGKILL);
    std::filesystem::remove_all(dir_);
  }

  server::redis_options options(std::chrono::milliseconds idle = 60s) {
    server::redis_options o;
    o.port = port_;
    o.key_prefix = "test:";
    o.idle_timeout = idle;
    o.on_state_change = [this](bool up, const std::string& detail) {
      transitions_.push_back((up ? "up " : "down ") + detail);
    };
    return o;
  }

  process redis_;
  std::filesystem::path dir_;
  std::uint16_t port_;
  std::vector<std::string> transitions_;
};

TEST_F(RedisStore, SessionsAreSharedBetweenStores) {
  redis_session_store a(options()), b(options());
  auto s = a.create();
  EXPECT_EQ(s.id.size(), 32u);
  s.user = services::principal{"ann", {"admin", "user"}};
  s.flex_client_id = "DSID-1";
  s.small_messages = true;
  a.save(s);
  const auto seen = b.find(s.id);
  ASSERT_TRUE(seen);
  ASSERT_TRUE(seen->user);
  EXPECT_EQ(seen->user->name, "ann");
  EXPECT_EQ(seen->user->roles, (std::vector<std::string>{"admin", "user"}));
  EXPECT_EQ(seen->flex_client_id, "DSID-1");
  EXPECT_TRUE(seen->small_messages);
  EXPECT_EQ(a.size(), 1u);

  // Removed through one store: gone for the other, and a late save does not bring it back.
  b.remove(s.id);
  EXPECT_FALSE(a.find(s.id));
  a.save(s);
  EXPECT_FALSE(b.find(s.id));
  EXPECT_EQ(b.size(), 0u);
  EXPECT_FALSE(b.find("not a session id!"));
}

TEST_F(RedisStore, SessionsExpireWhenIdleAndEveryUseRenewsThem) {
  redis_session_store store(options(1500ms));
  const auto used = store.create();
  const auto idle = store.create();
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(500ms);
    EXPECT_TRUE(store.find(used.id)) << "use " << i;
  }
  EXPECT_FALSE(store.find(idle.id));  // 2 s without use
}

TEST_F(RedisStore, UnreachableRedisThrowsAndReportsEachTransitionOnce) {
  redis_session_store store(options());
  const auto s = store.create();
  redis_.signal(SIGTERM);
  ASSERT_EQ(redis_.wait(10s), 0);
  for (int i = 0; i < 3; ++i) {
    try {
      store.find(s.id);
      FAIL() << "no exception";
    } catch (const store_unavailable& e) {
      EXPECT_NE(std::string(e.what()).find("redis 127.0.0.1:" + std::to_string(port_)),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(store.create(), store_unavailable);
  ASSERT_EQ(transitions_.size(), 1u);
  EXPECT_TRUE(transitions_[0].starts_with("down redis 127.0.0.1:")) << transitions_[0];

  start_redis(redis_, port_, dir_);
  std::this_thread::sleep_for(1100ms);  // past the second of failing fast
  EXPECT_FALSE(store.find(s.id));       // Redis kept no data
  EXPECT_TRUE(store.find(store.create().id));
  ASSERT_EQ(transitions_.size(), 2u);
  EXPECT_TRUE(transitions_[1].starts_with("up ")) << transitions_[1];
}

TEST_F(RedisStore, ARestartBetweenCallsIsNotAnOutage) {
  redis_session_store store(options());
  std::vector<services::session> made;
  for (int i = 0; i < 3; ++i) made.push_back(store.create());
  redis_.signal(SIGTERM);
  ASSERT_EQ(redis_.wait(10s), 0);
  start_redis(redis_, port_, dir_);
  EXPECT_FALSE(store.find(made[0].id));  // the closed connection is made again
  EXPECT_TRUE(store.find(store.create().id));
  EXPECT_TRUE(transitions_.empty()) << transitions_.at(0);
}

// The asynchronous calls, as the gateway awaits them: 500 at once on one connection
// (pipelined), each resuming on the caller's own I/O context with its own session.
TEST_F(RedisStore, ConcurrentAsyncCallsArePipelinedAndAnsweredInTurn) {
  redis_session_store store(options());
  std::vector<services::session> made;
  for (int i = 0; i < 500; ++i) {
    made.push_back(store.create());
    made.back().flex_client_id = "client-" + std::to_string(i);
    store.save(made.back());
  }
  boost::asio::io_context io;
  int right = 0;
  const auto here = std::this_thread::get_id();
  for (const auto& m : made) {
    boost::asio::co_spawn(
        io,
        [&store, &right, &m, here]() -> boost::asio::awaitable<void> {
          const auto s = co_await store.async_find(m.id);
          if (s && s->flex_client_id == m.flex_client_id && std::this_thread::get_id() == here) {
            ++right;
          }
        },
        boost::asio::detached);
  }
  io.run();
  EXPECT_EQ(right, 500);  // each answer to its own call, on the caller's thread
}

// Attached to an I/O context (as the daemon attaches it to its own), the store has no thread
// of its own: its socket, its timer and the callers all run on that context, here on this
// test's thread alone.
TEST_F(RedisStore, AnAttachedStoreRunsOnTheCallersThreads) {
  boost::asio::io_context io;  // declared first: the store goes before it
  redis_session_store store(options());
  std::vector<services::session> made;
  for (int i = 0; i < 100; ++i) made.push_back(store.create());
  store.attach(io.get_executor());
  int right = 0, saved = 0;
  const auto here = std::this_thread::get_id();
  for (const auto& m : made) {
    boost::asio::co_spawn(
        io,
        [&store, &right, &saved, &m, here]() -> boost::asio::awaitable<void> {
          const auto s = co_await store.async_find(m.id);
          if (!s) co_return;
          if (s->id == m.id && std::this_thread::get_id() == here) ++right;
          auto again = *s;
          again.flex_client_id = "saved";
          co_await store.async_save(again);
          ++saved;
        },
        boost::asio::detached);
  }
  // The store's socket keeps the context busy: run it until every call is done (the steps are
  // counted, not timed: at most 1,200 idle ones of 100 ms, ctest's own timeout).
  for (int step = 0; saved < 100 && step < 1200; ++step) io.run_one_for(100ms);
  EXPECT_EQ(right, 100);
  EXPECT_EQ(saved, 100);
  // Read back by a store of its own thread.
  redis_session_store other(options());
  EXPECT_EQ(other.find(made[99].id)->flex_client_id, "saved");
}

// A Redis that stops answering (SIGSTOP) fails calls after the command timeout, not later,
// and once it answers again so does the store.
TEST_F(RedisStore, AHungRedisTimesOut) {
  auto o = options();
  o.command_timeout = 300ms;
  redis_session_store store(o);
  const auto s = store.create();
  redis_.signal(SIGSTOP);
  try {
    store.find(s.id);
    FAIL() << "no exception";
  } catch (const store_unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no reply within 300 ms"), std::string::npos) << e.what();
  }
  redis_.signal(SIGCONT);
  std::this_thread::sleep_for(1100ms);  // past the second of failing fast
  EXPECT_TRUE(store.find(s.id));
  ASSERT_EQ(transitions_.size(), 2u);
  EXPECT_TRUE(transitions_[1].starts_with("up ")) << transitions_[1];
}

TEST_F(RedisStore, PasswordAndDatabase) {
  process guarded;
  const auto port = free_port();
  start_redis(guarded, port, dir_, {"--requirepass", "s3cret"});
  auto o = options();
  o.port = port;
  o.db = 3;
  o.password = "wrong";
  redis_session_store refused(o);
  try {
    refused.create();
    FAIL() << "no exception";
  } catch (const store_unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("AUTH"), std::string::npos) << e.what();
  }
  o.password = "s3cret";
  redis_session_store store(o);
  const auto s = store.create();
  EXPECT_TRUE(store.find(s.id));
  o.db = 0;
  EXPECT_FALSE(redis_session_store(o).find(s.id));  // another database
}

}  // namespace
}  // namespace amfgate::test
