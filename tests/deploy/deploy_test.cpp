// Several instances behind nginx with sessions in Redis, as docker/compose.yaml runs them:
// calls spread, sessions shared, SIGTERM drains under load with no request lost, SIGKILL fails
// at most what was in flight, and a stopped Redis gives the documented fault.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <optional>

#include "amf/decode.hpp"
#include "amf/flex.hpp"
#include "amf/packet.hpp"
#include "stack.hpp"

namespace amfgate::test {
namespace {

constexpr const char* gateway = "/messagebroker/amf";

struct flex_answer {
  amf::flex::kind kind = amf::flex::kind::error;
  std::string fault_code, body;
};

// One Flex message, answered; the answer's body as text when it is a string.
flex_answer flex(client::http_client& http, amf::value (*make)(amf::document&)) {
  amf::document doc;
  const auto res = http.post(gateway, client::flex_request(std::vector{make(doc)}));
  if (res.status != 200) throw std::runtime_error("HTTP " + std::to_string(res.status));
  amf::document rdoc;
  const auto p = amf::decode_packet(amf::as_bytes(res.body), rdoc);
  const auto m = amf::flex::read(p.bodies.at(0).val, rdoc).value();
  flex_answer a;
  a.kind = m.kind;
  a.fault_code = m.fault_code;
  if (m.body.kind() == amf::type::string) a.body = m.body.as_string();
  return a;
}

amf::value login_ann(amf::document& d) {
  return client::flex_command(d, amf::flex::operation::login, "", "ann", "ann-secret");
}
amf::value logout(amf::document& d) {
  return client::flex_command(d, amf::flex::operation::logout, "");
}
amf::value protected_call(amf::document& d) {  // access rule: role "user"
  return client::flex_remoting(d, "amfgate.Introspection", "listServices", {}, "");
}
amf::value echo_call(amf::document& d) {
  const amf::value arg = d.string("hello");
  return client::flex_remoting(d, "EchoService", "echo", {&arg, 1}, "");
}

double metric(client::http_client http, const std::string& name) {
  const std::string m = http.get("/metrics").body;
  const auto at = m.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(m.substr(at + name.size() + 2));
}

TEST(Deploy, CallsAreSpreadAndSessionsAreShared) {
  stack s;
  auto lb = s.via_nginx();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(flex(lb, echo_call).kind, amf::flex::kind::acknowledge);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_GE(metric(s.direct(i), "amfgate_messages_total"), 5) << "instance " << i;
  }

  // Logged in through instance 0, honoured by instance 1.
  auto a = s.direct(0), b = s.direct(1);
  EXPECT_EQ(flex(b, protected_call).fault_code, "Client.Authentication");
  EXPECT_EQ(flex(a, login_ann).body, "success");
  ASSERT_EQ(a.cookies.count("AMFGATESESSIONID"), 1u);
  b.cookies = a.cookies;
  EXPECT_EQ(flex(b, protected_call).kind, amf::flex::kind::acknowledge);
  auto c = s.via_nginx();
  c.cookies = a.cookies;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(flex(c, protected_call).kind, amf::flex::kind::acknowledge);

  // A logout through instance 1 ends it on instance 0 too.
  EXPECT_EQ(flex(b, logout).body, "success");
  EXPECT_EQ(flex(a, protected_call).fault_code, "Client.Authentication");
}

// Clients calling echo through nginx as fast as they can, each checking every answer.
class load {
 public:
  explicit load(const stack& s, int clients) {
    for (int i = 0; i < clients; ++i) {
      threads_.emplace_back([this, &s, i] {
        const std::string port = std::to_string(s.nginx_port);
        std::optional<client::http_client> http;
        http.emplace("127.0.0.1", port);
        for (int n = 0; !stop_; ++n) {
          const std::string sent = "client " + std::to_string(i) + " call " + std::to_string(n);
          std::string why;
          try {
            amf::document doc;
            const amf::value arg = doc.string(sent);
            const auto res =
                http->post("/gateway", client::netconnection_request("echo", {&arg, 1}, false));
            if (res.status != 200) {
              why = "HTTP " + std::to_string(res.status);
            } else {
              const auto p = amf::decode_packet(amf::as_bytes(res.body), doc);
              if (p.bodies.at(0).val.kind() != amf::type::string ||
                  p.bodies[0].val.as_string() != sent) {
                why = "wrong answer";
              }
            }
          } catch (const std::exception& e) {
            why = e.what();
            http.emplace("127.0.0.1", port);  // a new connection after a broken one
          }
          std::lock_guard lock(mutex_);
          if (why.empty()) {
            ++ok_;
          } else {
            failures_.push_back(why);
          }
        }
      });
    }
  }
  ~load() { finish(); }
  void finish() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  int ok() {
    std::lock_guard lock(mutex_);
    return ok_;
  }
  std::vector<std::string> failures() {
    std::lock_guard lock(mutex_);
    return failures_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  int ok_ = 0;
  std::vector<std::string> failures_;
  std::vector<std::thread> threads_;
};

TEST(Deploy, SigtermUnderLoadLosesNoRequest) {
  stack s;
  load l(s, 4);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const int before = l.ok();
  s.instances[0].signal(SIGTERM);
  EXPECT_EQ(s.instances[0].wait(std::chrono::seconds(20)), 0) << s.instances[0].log();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  l.finish();
  const auto failures = l.failures();
  std::cout << "SIGTERM under load: " << l.ok() << " answered, " << failures.size() << " failed\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, first: " << failures.at(0)
                                << "\nnginx:\n"
                                << s.nginx.log();
  EXPECT_GT(before, 50);
  EXPECT_GT(l.ok(), before + 50) << "instance 1 went on serving";
  EXPECT_NE(s.instances[0].log().find("draining"), std::string::npos);
}

TEST(Deploy, SigkillFailsAtMostTheRequestsInFlight) {
  stack s;
  constexpr int clients = 4;  // so at most 4 requests are in flight
  load l(s, clients);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const int before = l.ok();
  s.instances[1].kill(SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  l.finish();
  const auto failures = l.failures();
  std::cout << "SIGKILL under load: " << l.ok() << " answered, " << failures.size() << " failed\n";
  EXPECT_LE(failures.size(), static_cast<std::size_t>(clients));
  for (const auto& f : failures) EXPECT_EQ(f, "HTTP 502");  // nginx: the upstream went away
  EXPECT_GT(l.ok(), before + 50) << "instance 0 went on serving";
}

TEST(Deploy, StoppedRedisGivesTheDocumentedFault) {
  stack s;
  auto http = s.via_nginx();
  ASSERT_EQ(flex(http, login_ann).body, "success");
  ASSERT_EQ(flex(http, protected_call).kind, amf::flex::kind::acknowledge);

  s.redis.signal(SIGTERM);
  ASSERT_EQ(s.redis.wait(std::chrono::seconds(10)), 0);
  for (int i = 0; i < 4; ++i) {                                           // through both instances
    EXPECT_EQ(flex(http, echo_call).kind, amf::flex::kind::acknowledge);  // needs no session
    EXPECT_EQ(flex(http, protected_call).fault_code, "Server.Session.Unavailable");
  }
  auto fresh = s.via_nginx();
  EXPECT_EQ(flex(fresh, login_ann).fault_code, "Server.Session.Unavailable");
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(s.direct(i).get("/healthz").status, 200u);
    EXPECT_EQ(metric(s.direct(i), "amfgate_session_store_up"), 0);
  }
  const std::string log = s.instances[0].log() + s.instances[1].log();
  EXPECT_NE(log.find("session store unreachable: redis 127.0.0.1:"), std::string::npos) << log;

  // Back: new logins work again (the old session went with Redis, which kept no data).
  s.start_redis();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // past the fail-fast second
  EXPECT_EQ(flex(fresh, login_ann).body, "success");
  EXPECT_EQ(flex(fresh, protected_call).kind, amf::flex::kind::acknowledge);
}

}  // namespace
}  // namespace amfgate::test
