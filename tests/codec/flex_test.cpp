#include "amf/flex.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/packet.hpp"
#include "corpus.hpp"

namespace amf::test {
namespace {

value first_message(const std::string& file, document& doc, std::string& keep) {
  keep = read_file(shared_dir() + "/corpus/" + file);
  packet p = decode_packet(bytes(keep), doc);
  value v = p.bodies.at(0).val;
  if (auto* a = v.as_array()) v = a->dense.at(0);
  return v;
}

TEST(Flex, ReadsAFlashPingCommand) {
  document doc;
  std::string keep;
  auto m = flex::read(first_message("rocketamf/request/commandMessage.bin", doc, keep), doc);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, flex::kind::command);
  EXPECT_EQ(m->command, static_cast<int>(flex::operation::client_ping));
  EXPECT_EQ(m->message_id, "7B0ACE15-8D57-6AE5-B9D4-99C2D32C8246");
  EXPECT_TRUE(m->client_id.is_null());
  EXPECT_EQ(m->header("DSId").as_string(), "nil");
  EXPECT_EQ(m->header("DSMessagingVersion").as_int(), 1);
}

// An operation that is not a whole int32 is unknown (10000), not converted (fuzz_gateway: 1e300
// was converted to int32_t, undefined behaviour).
TEST(Flex, OperationsOutOfRangeAreUnknown) {
  for (const double op : {1e300, -0x1p31 - 1, 0x1p31, 2.5}) {
    document doc;
    flex::message in;
    in.kind = flex::kind::command;
    in.command = 5;
    value v = flex::make(doc, in);
    auto* o = v.as_object();
    for (std::size_t i = 0; i < o->cls->sealed.size(); ++i) {
      if (o->cls->sealed[i] == "operation") o->sealed[i] = value::number(op);
    }
    auto m = flex::read(v, doc);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->command, static_cast<int>(flex::operation::unknown)) << op;
  }
}

TEST(Flex, ReadsARemotingMessage) {
  document doc;
  std::string keep;
  auto m = flex::read(first_message("rocketamf/request/remotingMessage.bin", doc, keep), doc);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, flex::kind::remoting);
  EXPECT_FALSE(m->method.empty());
  EXPECT_FALSE(m->destination.empty());
}

TEST(Flex, ReadsBlazeDSSmallAcknowledge) {
  document doc;
  std::string keep;
  auto m = flex::read(first_message("rocketamf/request/blaze-response.bin", doc, keep), doc);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, flex::kind::acknowledge);
  EXPECT_EQ(m->client_id.as_string(), "8814A067-FE0D-3A9C-A274-4AAED9BD7B0B");
  EXPECT_EQ(m->timestamp, 1306275431838.0);
}

TEST(Flex, BuildsFullAndSmallAcknowledgements) {
  document doc;
  flex::message ack;
  ack.kind = flex::kind::acknowledge;
  ack.body = doc.string("ok");
  ack.correlation_id = "7B0ACE15-8D57-6AE5-B9D4-99C2D32C8246";
  const std::string id = flex::new_uuid();
  ack.message_id = id;
  ack.client_id = doc.string(id);
  ack.timestamp = 1700000000000.0;
  flex::set_header(doc, ack, "DSMessagingVersion", value::number(1.0));

  for (bool small : {false, true}) {
    value v = small ? flex::make_small(doc, ack) : flex::make(doc, ack);
    std::string out;
    encode_amf3(v, out);
    document doc2;
    value back = decode_amf3(bytes(out), doc2);
    auto m = flex::read(back, doc2);
    ASSERT_TRUE(m) << small;
    EXPECT_EQ(m->kind, flex::kind::acknowledge);
    EXPECT_EQ(m->correlation_id, ack.correlation_id);
    EXPECT_EQ(m->message_id, id);
    EXPECT_EQ(m->client_id.as_string(), id);
    EXPECT_EQ(m->body.as_string(), "ok");
    EXPECT_EQ(m->timestamp, 1700000000000.0);
    EXPECT_EQ(m->header("DSMessagingVersion").as_double(), 1.0);
    EXPECT_EQ(back.as_external() != nullptr, small);
  }
}

TEST(Flex, ErrorMessagesCarryEveryMember) {
  document doc;
  flex::message err;
  err.kind = flex::kind::error;
  err.fault_code = "Server.Processing";
  err.fault_string = "boom";
  value v = flex::make_small(doc, err);  // no small form: full
  auto* o = v.as_object();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->cls->alias, flex::error_alias);
  for (auto name : {"body", "clientId", "correlationId", "destination", "extendedData", "faultCode",
                    "faultDetail", "faultString", "headers", "messageId", "rootCause", "timeToLive",
                    "timestamp"}) {
    EXPECT_NE(o->find(name), nullptr) << name;
  }
}

// Ruffle's AMF0 writer drops class names: a Flex message is an anonymous object, typed by its
// shape.
TEST(Flex, ReadsAnonymousMessagesByTheirShape) {
  document doc;
  auto object = [&](std::initializer_list<std::pair<std::string_view, value>> members) {
    object_node* o = doc.object();
    for (const auto& [k, v] : members) o->dynamic.push_back({k, v});
    return value::of(o);
  };
  const value headers =
      object({{"DSId", doc.string("nil")}, {"DSMessagingVersion", value::number(1)}});
  auto ping = flex::read(object({{"body", object({})},
                                 {"clientId", value::null()},
                                 {"destination", doc.string("")},
                                 {"headers", headers},
                                 {"messageId", doc.string("812767E9-0233-59BD-A66A-49E3C3085033")},
                                 {"operation", value::number(5)}}),
                         doc);
  ASSERT_TRUE(ping);
  EXPECT_TRUE(ping->anonymous);
  EXPECT_EQ(ping->kind, flex::kind::command);
  EXPECT_EQ(ping->command, 5);
  EXPECT_EQ(ping->header("DSId").as_string(), "nil");

  auto call = flex::read(object({{"body", value::of(doc.array())},
                                 {"destination", doc.string("EchoService")},
                                 {"messageId", doc.string("A")},
                                 {"operation", doc.string("echo")}}),
                         doc);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->kind, flex::kind::remoting);
  EXPECT_EQ(call->method, "echo");

  auto sent = flex::read(object({{"body", doc.string("hi")},
                                 {"destination", doc.string("chat")},
                                 {"messageId", doc.string("B")}}),
                         doc);
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->kind, flex::kind::async);

  // Not messages: a string operation without a destination, or an object of another shape.
  EXPECT_FALSE(flex::read(object({{"operation", doc.string("echo")}}), doc));
  EXPECT_FALSE(
      flex::read(object({{"body", doc.string("hi")}, {"messageId", doc.string("C")}}), doc));
  // A typed message is still read by its class, not its shape.
  EXPECT_FALSE(flex::read(value::of(doc.object(doc.make_traits("com.example.User", true))), doc));
}

TEST(Flex, CollectionsBecomeArraysInPlace) {
  document doc;
  traits* t = doc.make_traits("flex.messaging.io.ArrayCollection", false);
  t->externalizable = true;
  array_node* items = doc.array();
  items->dense.push_back(value::integer(1));
  external_node* collection = doc.external(t);
  collection->payload = value::of(items);
  // Shared twice, and inside an object that holds itself.
  object_node* o = doc.object();
  o->dynamic.push_back({"a", value::of(collection)});
  o->dynamic.push_back({"b", value::of(collection)});
  o->dynamic.push_back({"self", value::of(o)});
  value root = value::of(o);
  flex::collections_as_arrays(root);
  EXPECT_EQ(o->find("a")->as_array(), items);
  EXPECT_EQ(o->find("b")->as_array(), items);
  value bare = value::of(collection);
  flex::collections_as_arrays(bare);
  EXPECT_EQ(bare.as_array(), items);
}

TEST(Flex, Uuids) {
  const std::string u = flex::new_uuid();
  ASSERT_EQ(u.size(), 36u);
  for (char c : u) EXPECT_TRUE(c == '-' || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'));
  auto b = flex::uuid_bytes(u);
  ASSERT_TRUE(b);
  EXPECT_EQ(flex::uuid_text(std::as_bytes(std::span(b->data(), b->size()))), u);
  EXPECT_FALSE(flex::uuid_bytes("8814a067-fe0d-3a9c-a274-4aaed9bd7b0b"));  // lowercase
  EXPECT_FALSE(flex::uuid_bytes("nil"));
}

// Ids are bearer tokens: they must not follow from state a process shares with another. A
// seeded generator (the mt19937_64 these once came from) continues the same in a parent and
// in each child it forks, and its outputs, sent to every client, reveal its state.
TEST(Flex, UuidsDifferAcrossAFork) {
  (void)flex::new_uuid();  // the thread's generator is in use before the fork
  std::vector<std::string> ids;
  for (int child = 0; child < 2; ++child) {
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string id = flex::new_uuid();
      const auto written = ::write(out[1], id.data(), id.size());
      ::_exit(written == static_cast<ssize_t>(id.size()) ? 0 : 1);
    }
    ::close(out[1]);
    char text[64];
    const auto got = ::read(out[0], text, sizeof text);
    ::close(out[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_EQ(got, 36);
    ids.emplace_back(text, 36);
  }
  ids.push_back(flex::new_uuid());
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_NE(ids[0], ids[2]);
  EXPECT_NE(ids[1], ids[2]);
}

}  // namespace
}  // namespace amf::test
