// The router as a plain function of an http_request, with no socket: which part answers what,
// and the headers it adds (CORS, Allow, the session cookie).
#include "amfgate/server/router.hpp"

#include <gtest/gtest.h>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "amf/decode.hpp"
#include "amf/packet.hpp"
#include "amfgate/server/client.hpp"
#include "amfgate/services/builtin.hpp"

namespace amfgate::server {
namespace {

class Router : public ::testing::Test {
 protected:
  static config::gateway_config settings() {
    config::gateway_config c;
    c.cors.allow_origins = {"https://app.example.com"};
    return c;
  }

  Router() { services::add_echo_service(registry_); }

  // Routes `req` on the test's I/O context, to its answer.
  http_reply route(http_request req) {
    http_reply out;
    std::exception_ptr error;
    boost::asio::co_spawn(io_, router_.route(req), [&](std::exception_ptr e, http_reply r) {
      error = e;
      out = std::move(r);
    });
    io_.restart();
    io_.run();
    if (error) std::rethrow_exception(error);
    return out;
  }

  static http_request request(std::string_view method, std::string_view target) {
    http_request r;
    r.method = method;
    r.target = target;
    r.client = "127.0.0.1:5000";
    return r;
  }

  static std::string header(const http_reply& r, std::string_view name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return {};
  }

  boost::asio::io_context io_;  // outlives what waits on it (an open stream's timer)
  config::gateway_config cfg_ = settings();
  services::registry registry_;
  services::memory_session_store sessions_{100, std::chrono::minutes(1)};
  messaging::broker broker_{cfg_.messaging};
  messaging::channel channel_{broker_, sessions_, cfg_.limits.max_response_bytes};
  services::user_table users_{std::vector<services::user_record>{}};
  worker_pool pool_{1, 4};
  metrics stats_;
  std::shared_ptr<spdlog::logger> log_ =
      std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
  gateway gateway_{cfg_, registry_, channel_, sessions_, users_, pool_, stats_, log_};
  bridge::bridge bridge_{cfg_};
  router router_{cfg_, gateway_, channel_, registry_, stats_, sessions_, pool_, bridge_, log_};
};

TEST_F(Router, HealthzAnswersUntilTheDrainBegins) {
  auto ok = route(request("GET", "/healthz"));
  EXPECT_EQ(ok.status, 200u);
  EXPECT_EQ(ok.body, "ok\n");
  router_.routes().on_drain();
  EXPECT_EQ(route(request("GET", "/healthz")).status, 503u);
}

TEST_F(Router, UnknownPathsAndMethodsAreRefusedWithWhatIsAllowed) {
  EXPECT_EQ(route(request("GET", "/nothing-here")).status, 404u);
  auto post = route(request("POST", "/metrics"));
  EXPECT_EQ(post.status, 405u);
  EXPECT_EQ(header(post, "Allow"), "GET, HEAD");
  auto get = route(request("GET", "/gateway"));
  EXPECT_EQ(get.status, 405u);
  EXPECT_EQ(header(get, "Allow"), "POST, OPTIONS");
  auto text = request("POST", "/gateway");
  text.content_type = "text/plain";
  EXPECT_EQ(route(text).status, 415u);
  EXPECT_EQ(route(request("GET", "/crossdomain.xml")).status, 404u);  // none configured
}

TEST_F(Router, AnAllowedOriginGetsItsPreflightAndCorsHeadersOnRefusalsToo) {
  auto preflight = request("OPTIONS", "/gateway");
  preflight.origin = "https://app.example.com";
  const auto allowed = route(preflight);
  EXPECT_EQ(allowed.status, 204u);
  EXPECT_EQ(header(allowed, "Access-Control-Allow-Origin"), "https://app.example.com");
  preflight.origin = "https://evil.example.com";
  EXPECT_EQ(route(preflight).status, 403u);
  auto text = request("POST", "/gateway");
  text.origin = "https://app.example.com";
  const auto refused = route(text);
  EXPECT_EQ(refused.status, 415u);
  EXPECT_EQ(header(refused, "Access-Control-Allow-Origin"), "https://app.example.com");
}

TEST_F(Router, AStreamingCommandIsTheChannelsAndRefusedWithoutWhatItNeeds) {
  auto old = request("POST", "/gateway?command=open");
  old.version = 10;
  EXPECT_EQ(route(old).status, 400u);
  const auto unknown = route(request("POST", "/gateway?command=jump"));
  EXPECT_EQ(unknown.status, 400u);
  EXPECT_NE(unknown.body.find("expected open or close"), std::string::npos) << unknown.body;
  const auto anonymous = route(request("POST", "/gateway?command=open"));
  EXPECT_EQ(anonymous.status, 400u);
  EXPECT_NE(anonymous.body.find("DSId"), std::string::npos) << anonymous.body;
  auto close = request("POST", "/gateway?command=close");
  close.body = "DSId=4F2A";
  EXPECT_EQ(route(close).status, 400u);  // it has no stream open
  auto open = request("POST", "/gateway?command=open");
  open.body = "DSId=4F2A";
  const auto stream = route(open);
  EXPECT_EQ(stream.status, 200u);
  ASSERT_TRUE(stream.stream);
  EXPECT_EQ(broker_.snapshot().streams, 1u);
}

TEST_F(Router, AnAmfPostGoesThroughTheGateway) {
  amf::document doc;
  const std::vector<amf::value> args{doc.string("hello")};
  auto post = request("POST", "/gateway");
  post.content_type = "application/x-amf";
  post.body = client::netconnection_request("EchoService.echo", args, false);
  const auto answer = route(post);
  ASSERT_EQ(answer.status, 200u) << answer.body;
  EXPECT_EQ(answer.content_type, "application/x-amf");
  amf::document out;
  const amf::packet packet = amf::decode_packet(amf::as_bytes(answer.body), out);
  ASSERT_EQ(packet.bodies.size(), 1u);
  EXPECT_EQ(packet.bodies[0].target, "/1/onResult");
  EXPECT_EQ(packet.bodies[0].val.as_string(), "hello");
}

}  // namespace
}  // namespace amfgate::server
