// Rights per subtopic against a live daemon: the Rooms example (examples/services/rooms.hpp)
// registers a hook for the destination "chat" (publisher::authorize), and two users, each
// in a room of their own and both in the lobby, see and write only their own rooms.
#include <gtest/gtest.h>

#include "amfgate/services/auth.hpp"
#include "daemon.hpp"
#include "flex_messaging.hpp"

namespace amfgate::test {
namespace {

using op = amf::flex::operation;

class Rooms : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string hash = services::hash_password("pw");
    shared = std::make_unique<daemon>(
        R"("messaging": {"destinations": {"chat": {"allow_subtopics": true}}},
           "services": {"Rooms": {"destination": "chat",
             "members": {"lobby": ["ann", "bob"], "a": ["ann"], "b": ["bob"]}}},
           "users": [{"name": "ann", "password": ")" +
            hash + R"("}, {"name": "bob", "password": ")" + hash + R"("}])",
        AMFGATE_TEST_DAEMON);
  }
  static void TearDownTestSuite() { shared.reset(); }
  static std::uint16_t port() { return shared->port(); }

  /// A channel logged in as `user`.
  static flex_channel logged_in(const std::string& user) {
    flex_channel c = connected(port());
    EXPECT_TRUE(login(c, user, "pw")) << user;
    return c;
  }

  static std::unique_ptr<daemon> shared;
};
std::unique_ptr<daemon> Rooms::shared;

TEST_F(Rooms, EachUserReadsAndWritesOnlyTheirOwnRooms) {
  flex_channel ann = logged_in("ann"), bob = logged_in("bob");
  flex_consumer ann_a{ann, "chat", "rooms.a"}, ann_lobby{ann, "chat", "rooms.lobby"};
  flex_consumer bob_b{bob, "chat", "rooms.b"}, bob_lobby{bob, "chat", "rooms.lobby"};
  for (auto* c : {&ann_a, &ann_lobby, &bob_b, &bob_lobby}) {
    ASSERT_EQ(fault_text(c->subscribe()), "") << c->subtopic;
  }
  // Another's room, every room at once, or no room: refused (BlazeDS's 10557).
  flex_consumer ann_b{ann, "chat", "rooms.b"};
  EXPECT_EQ(fault_text(ann_b.subscribe()),
            "Client.Authorization: user \"ann\" may not subscribe to subtopic \"rooms.b\" of "
            "destination \"chat\" (10557)");
  flex_consumer ann_all{ann, "chat", "rooms.*"}, ann_none{ann, "chat"};
  EXPECT_NE(fault_text(ann_all.subscribe()).find("(10557)"), std::string::npos);
  EXPECT_NE(fault_text(ann_none.subscribe()).find("(10557)"), std::string::npos);

  flex_producer ann_to_a{ann, "chat", "rooms.a"}, ann_to_lobby{ann, "chat", "rooms.lobby"};
  flex_producer ann_to_b{ann, "chat", "rooms.b"};
  flex_producer bob_to_b{bob, "chat", "rooms.b"}, bob_to_lobby{bob, "chat", "rooms.lobby"};
  ASSERT_EQ(fault_text(ann_to_a.send("ann in a")), "");
  ASSERT_EQ(fault_text(ann_to_lobby.send("ann in lobby")), "");
  ASSERT_EQ(fault_text(bob_to_b.send("bob in b")), "");
  ASSERT_EQ(fault_text(bob_to_lobby.send("bob in lobby")), "");
  // Written into another's room: blocked, and nobody receives it (BlazeDS's 10558).
  EXPECT_EQ(fault_text(ann_to_b.send("ann in b")),
            "Client.Authorization: user \"ann\" may not send to subtopic \"rooms.b\" of "
            "destination \"chat\" (10558)");

  EXPECT_EQ(texts(ann_a.receive()), std::vector<std::string>{"ann in a"});
  EXPECT_EQ(texts(ann_lobby.receive()), (std::vector<std::string>{"ann in lobby", "bob in lobby"}));
  EXPECT_EQ(texts(bob_b.receive()), std::vector<std::string>{"bob in b"});
  EXPECT_EQ(texts(bob_lobby.receive()), (std::vector<std::string>{"ann in lobby", "bob in lobby"}));
  // A general poll reads every subscription of the FlexClient: still only their own rooms.
  EXPECT_TRUE(ann.poll().messages().empty());
}

TEST_F(Rooms, AMultiTopicSubscribeWithOneForbiddenRoomIsRefusedWhole) {
  flex_channel ann = logged_in("ann"), bob = logged_in("bob");
  flex_consumer multi{ann, "chat"};
  amf::document doc;
  amf::array_node* add = doc.array();
  for (const char* e : {"rooms.a_;_", "rooms.b_;_"}) add->dense.push_back(doc.string(e));
  const flex_reply r = multi.command(op::multi_subscribe, {{"DSAddSub", amf::value::of(add)}});
  EXPECT_NE(fault_text(r).find("subtopic \"rooms.b\" of destination \"chat\" (10557)"),
            std::string::npos)
      << fault_text(r);
  // Nothing was subscribed: what bob writes in b does not reach ann's FlexClient.
  flex_producer bob_to_b{bob, "chat", "rooms.b"};
  ASSERT_EQ(fault_text(bob_to_b.send("private")), "");
  EXPECT_EQ(fault_text(ann.poll()).rfind("Server.Processing.NotSubscribed", 0), 0u);
}

TEST_F(Rooms, ACallerWithoutALoginIsRefusedEveryRoom) {
  flex_channel anon = connected(port());
  flex_consumer lobby{anon, "chat", "rooms.lobby"};
  EXPECT_EQ(fault_text(lobby.subscribe()),
            "Client.Authorization: a caller without a login may not subscribe to subtopic "
            "\"rooms.lobby\" of destination \"chat\" (10557)");
  flex_producer to_lobby{anon, "chat", "rooms.lobby"};
  EXPECT_NE(fault_text(to_lobby.send("hello")).find("(10558)"), std::string::npos);
}

}  // namespace
}  // namespace amfgate::test
