// The real daemon on a loopback port, driven over HTTP.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <list>

#include "amf/decode.hpp"
#include "amf/flex.hpp"
#include "amf/packet.hpp"
#include "amfgate/services/auth.hpp"
#include "daemon.hpp"
#include "raw_socket.hpp"

namespace amfgate::test {
namespace {

using std::chrono::milliseconds;

amf::packet decode(const std::string& body, amf::document& doc) {
  return amf::decode_packet(amf::as_bytes(body), doc);
}

TEST(Daemon, ServesBothCallStylesOnItsDefaults) {
  daemon d;
  auto http = d.client();
  amf::document doc;
  const amf::value args[] = {doc.string("hello")};
  for (bool amf3 : {false, true}) {
    for (const char* target : {"echo", "EchoService.echo"}) {
      auto res = http.post("/gateway", client::netconnection_request(target, args, amf3));
      ASSERT_EQ(res.status, 200u);
      EXPECT_EQ(res.header("Content-Type"), "application/x-amf");
      amf::packet p = decode(res.body, doc);
      EXPECT_EQ(p.bodies.at(0).target, "/1/onResult");
      EXPECT_EQ(p.bodies.at(0).val.as_string(), "hello");
      EXPECT_EQ(p.bodies.at(0).val.has_flag(amf::value::avmplus), amf3);
    }
  }
  // Flex on BlazeDS's path: ping, then RemotingMessages to both echo destinations.
  const amf::value ping = client::flex_command(doc, amf::flex::operation::client_ping, "");
  auto pong = http.post("/messagebroker/amf", client::flex_request(std::vector{ping}));
  auto ack = amf::flex::read(decode(pong.body, doc).bodies.at(0).val, doc);
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->correlation_id, amf::flex::read(ping, doc)->message_id);
  const std::string dsid(ack->header("DSId").as_string());
  for (const char* destination : {"Red5Echo", "EchoService"}) {
    amf::value msg = client::flex_remoting(doc, destination, "echo", args, dsid);
    auto res = http.post("/messagebroker/amf", client::flex_request(std::vector{msg}));
    auto reply = amf::flex::read(decode(res.body, doc).bodies.at(0).val, doc);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->kind, amf::flex::kind::acknowledge);
    EXPECT_EQ(reply->body.as_string(), "hello");
    EXPECT_EQ(reply->correlation_id, amf::flex::read(msg, doc)->message_id);
    EXPECT_EQ(reply->client_id.kind(), amf::type::string);
  }
}

TEST(Daemon, FaultsReachTheClient) {
  daemon d;
  auto http = d.client();
  amf::document doc;
  auto res = http.post("/gateway", client::netconnection_request("Nope.find", {}, false));
  amf::packet p = decode(res.body, doc);
  EXPECT_EQ(p.bodies.at(0).target, "/1/onStatus");
  const auto* status = p.bodies.at(0).val.as_object();
  ASSERT_NE(status, nullptr);
  ASSERT_NE(status->find("code"), nullptr);
  EXPECT_EQ(status->find("code")->as_string(), "Server.ResourceNotFound");
  const amf::value call = client::flex_remoting(doc, "EchoService", "nope", {}, "");
  res = http.post("/gateway", client::flex_request(std::vector{call}));
  auto err = amf::flex::read(decode(res.body, doc).bodies.at(0).val, doc);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->correlation_id, amf::flex::read(call, doc)->message_id);
  EXPECT_EQ(err->kind, amf::flex::kind::error);
  EXPECT_EQ(err->fault_code, "Server.ResourceUnavailable");
}

TEST(Daemon, LoginsSessionsAndAccessRules) {
  const std::string hash = services::hash_password("pw");
  daemon d("\"introspection\": true, \"users\": [{\"name\": \"ann\", \"password\": \"" + hash +
           "\", \"roles\": [\"admin\"]}], \"access\": {\"amfgate.Introspection\": "
           "{\"roles\": [\"admin\"]}}");
  amf::document doc;
  auto http = d.client();
  const std::string list = "amfgate.Introspection.listServices";
  auto code = [&](const client::response& r) {
    const auto& v = decode(r.body, doc).bodies.at(0).val;
    auto* o = v.as_object();
    return o && o->find("code") ? std::string(o->find("code")->as_string()) : "result";
  };
  EXPECT_EQ(code(http.post("/gateway", client::netconnection_request(list, {}, false))),
            "Client.Authentication");
  EXPECT_EQ(
      code(http.post("/gateway", client::netconnection_request(list, {}, false, "ann", "wrong"))),
      "Client.Authentication");
  EXPECT_TRUE(http.cookies.empty());
  EXPECT_EQ(
      code(http.post("/gateway", client::netconnection_request(list, {}, false, "ann", "pw"))),
      "result");
  ASSERT_EQ(http.cookies.count("AMFGATESESSIONID"), 1u);
  // The session cookie alone now carries the login.
  EXPECT_EQ(code(http.post("/gateway", client::netconnection_request(list, {}, false))), "result");

  // Flex: login, call, logout, refused again.
  auto flex = d.client();
  // The answer to `m`, which must be a Flex message correlated with it.
  std::list<client::response> answers;
  auto flex_call = [&](amf::value m) {
    // Kept: the decoded answer views its bytes.
    answers.push_back(flex.post("/messagebroker/amf", client::flex_request(std::vector{m})));
    const auto reply = amf::flex::read(decode(answers.back().body, doc).bodies.at(0).val, doc);
    if (!reply) throw std::runtime_error("the answer is not a Flex message");
    EXPECT_EQ(reply->correlation_id, amf::flex::read(m, doc)->message_id);
    return *reply;
  };
  EXPECT_EQ(flex_call(client::flex_command(doc, amf::flex::operation::login, "", "ann", "pw"))
                .body.as_string(),
            "success");
  const std::string dest = "amfgate.Introspection";
  EXPECT_EQ(flex_call(client::flex_remoting(doc, dest, "listServices", {}, "")).kind,
            amf::flex::kind::acknowledge);
  flex_call(client::flex_command(doc, amf::flex::operation::logout, ""));
  EXPECT_TRUE(flex.cookies.empty());
  EXPECT_EQ(flex_call(client::flex_remoting(doc, dest, "listServices", {}, "")).fault_code,
            "Client.Authentication");
}

TEST(Daemon, AnonymousLoadCreatesNoSessions) {
  daemon d;
  auto http = d.client();
  amf::document doc;
  const amf::value args[] = {amf::value::integer(1)};
  for (int i = 0; i < 200; ++i) {
    http.post("/gateway", client::netconnection_request("echo", args, i % 2 == 0));
    http.post("/gateway", client::flex_request(std::vector{
                              client::flex_command(doc, amf::flex::operation::client_ping, "")}));
  }
  const auto metrics = http.get("/metrics").body;
  EXPECT_NE(metrics.find("\namfgate_sessions 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\namfgate_messages_total 400\n"), std::string::npos) << metrics;
  EXPECT_TRUE(http.cookies.empty());
}

TEST(Daemon, BadRequestsGetAClearStatus) {
  daemon d("\"limits\": {\"max_body_bytes\": 4096}");
  auto http = d.client();
  auto bad = http.post("/gateway", std::string("\x00\x03\x00\x00\x00\x01\x00", 7));
  EXPECT_EQ(bad.status, 400u);
  EXPECT_EQ(bad.body, "bad AMF packet: length larger than the input left at byte 6\n");
  EXPECT_EQ(http.post("/gateway", std::string(5000, 'x')).status, 413u);
  // An empty body (Content-Length: 0) reaches the gateway, which says what is wrong with it.
  const auto empty = d.client().post("/gateway", "");
  EXPECT_EQ(empty.status, 400u);
  EXPECT_TRUE(empty.body.starts_with("bad AMF packet: ")) << empty.body;
  auto h = d.client();
  EXPECT_EQ(h.post("/gateway", "x", "text/plain").status, 415u);
  EXPECT_EQ(h.get("/gateway").status, 405u);
  EXPECT_EQ(h.get("/nowhere").status, 404u);
  EXPECT_EQ(h.post("/healthz", "x", "text/plain").status, 405u);
  EXPECT_EQ(h.get("/crossdomain.xml").status, 404u);
  EXPECT_TRUE(d.logged("no policy configured")) << d.log();
  raw_socket s(d.port());
  s.send("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_TRUE(s.read_all().starts_with("HTTP/1.1 400"));
  EXPECT_EQ(h.get("/healthz").status, 200u);  // still serving
}

// One request on a connection of its own, as a browser sends it from a page's origin.
std::string from_origin(const daemon& d, const std::string& method, const std::string& origin,
                        const std::string& body = {}, const std::string& path = "/gateway") {
  raw_socket s(d.port());
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: gw.example.com\r\n";
  if (!origin.empty()) req += "Origin: " + origin + "\r\n";
  if (method == "OPTIONS") {
    req +=
        "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n";
  } else {
    req += "Content-Type: application/x-amf\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n";
  }
  s.send(req + "Connection: close\r\n\r\n" + body);
  return s.read_all();
}

TEST(Daemon, CrossOriginCallsFromBrowserPages) {
  const std::string app = "http://app.example.com:8000";
  daemon d(R"("log": {"level": "debug"}, "cors": {"allow_origins": [")" + app +
           R"("], "allow_credentials": true, "max_age_s": 120}, "users": [{"name": "ann",
           "password": ")" +
           services::hash_password("pw") + R"(", "roles": []}])");
  // The preflight: 204 with the matched origin echoed, POST, the headers, credentials, age.
  const std::string preflight = from_origin(d, "OPTIONS", app);
  EXPECT_TRUE(preflight.starts_with("HTTP/1.1 204")) << preflight;
  for (const std::string& h :
       {"Access-Control-Allow-Origin: " + app, std::string("Access-Control-Allow-Methods: POST"),
        std::string("Access-Control-Allow-Headers: Content-Type"),
        std::string("Access-Control-Allow-Credentials: true"),
        std::string("Access-Control-Max-Age: 120"), std::string("Vary: Origin")}) {
    EXPECT_NE(preflight.find(h + "\r\n"), std::string::npos) << h << " in\n" << preflight;
  }
  // A call from the page: answered with the same headers; a login's cookie crosses origins.
  amf::document doc;
  const amf::value args[] = {doc.string("hi")};
  const std::string call = from_origin(
      d, "POST", app, client::netconnection_request("EchoService.echo", args, true, "ann", "pw"));
  EXPECT_TRUE(call.starts_with("HTTP/1.1 200")) << call;
  EXPECT_NE(call.find("Access-Control-Allow-Origin: " + app + "\r\n"), std::string::npos);
  EXPECT_NE(call.find("Access-Control-Allow-Credentials: true\r\n"), std::string::npos);
  EXPECT_NE(call.find("; Path=/; HttpOnly; SameSite=None; Secure\r\n"), std::string::npos) << call;
  // Another origin: no CORS headers (the browser blocks the page), and a debug line.
  const std::string other = from_origin(d, "OPTIONS", "http://evil.example.net");
  EXPECT_TRUE(other.starts_with("HTTP/1.1 403")) << other;
  EXPECT_EQ(other.find("Access-Control-"), std::string::npos) << other;
  const std::string other_call = from_origin(d, "POST", "http://evil.example.net",
                                             client::netconnection_request("echo", args, false));
  EXPECT_TRUE(other_call.starts_with("HTTP/1.1 200")) << other_call;
  EXPECT_EQ(other_call.find("Access-Control-"), std::string::npos) << other_call;
  EXPECT_TRUE(d.logged("from origin \"http://evil.example.net\": not in cors.allow_origins"))
      << d.log();
  // Not a gateway path, or no Origin (not a browser): no CORS.
  EXPECT_EQ(from_origin(d, "OPTIONS", app, {}, "/healthz").find("Access-Control-"),
            std::string::npos);
  EXPECT_EQ(from_origin(d, "POST", "", client::netconnection_request("echo", args, false))
                .find("Access-Control-"),
            std::string::npos);
}

TEST(Daemon, CorsIsOffByDefaultAndStarServesAnyOriginWithoutCredentials) {
  daemon off;
  const std::string app = "http://app.example.com";
  const std::string refused = from_origin(off, "OPTIONS", app);
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 405")) << refused;
  EXPECT_EQ(refused.find("Access-Control-"), std::string::npos) << refused;
  daemon any(R"("cors": {"allow_origins": ["*"], "allow_headers": ["Content-Type", "X-Trace"]})");
  const std::string preflight = from_origin(any, "OPTIONS", app);
  EXPECT_TRUE(preflight.starts_with("HTTP/1.1 204")) << preflight;
  EXPECT_NE(preflight.find("Access-Control-Allow-Origin: *\r\n"), std::string::npos);
  EXPECT_NE(preflight.find("Access-Control-Allow-Headers: Content-Type, X-Trace\r\n"),
            std::string::npos);
  EXPECT_EQ(preflight.find("Access-Control-Allow-Credentials"), std::string::npos);
}

TEST(Daemon, CrossdomainHealthAndMetrics) {
  daemon d("\"crossdomain\": {\"allow_domains\": [\"*.example.com\"]}");
  auto http = d.client();
  auto x = http.get("/crossdomain.xml");
  EXPECT_EQ(x.status, 200u);
  EXPECT_EQ(x.header("Content-Type"), "text/x-cross-domain-policy");
  EXPECT_NE(x.body.find("<allow-access-from domain=\"*.example.com\""), std::string::npos);
  EXPECT_EQ(http.get("/healthz").body, "ok\n");
  const auto m = http.get("/metrics").body;
  for (const char* name : {"amfgate_http_requests_total", "amfgate_messages_total",
                           "amfgate_faults_total", "amfgate_received_bytes_total",
                           "amfgate_request_duration_seconds_bucket", "amfgate_open_connections"}) {
    EXPECT_NE(m.find(name), std::string::npos) << name;
  }
  EXPECT_TRUE(d.logged("\"GET /crossdomain.xml\" 200")) << d.log();
  // The container health check asks the daemon its config names (the test daemon took a port
  // of its own: the probe's config names that one).
  const std::string probe_config = d.config_path() + ".probe.json";
  std::ofstream(probe_config) << "{\"listen\": {\"address\": \"127.0.0.1\", \"port\": " << d.port()
                              << "}}";
  const std::string probe =
      std::string(AMFGATE_BINARY) + " --config " + probe_config + " --healthcheck >/dev/null 2>&1";
  EXPECT_EQ(std::system(probe.c_str()), 0);
  EXPECT_NE(m.find("amfgate_session_store_up 1"), std::string::npos);
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait(), 0);
  EXPECT_NE(std::system(probe.c_str()), 0);  // nobody listening
  std::remove(probe_config.c_str());
}

TEST(Daemon, ThreadsDefaultToTheCpusItMayRunOn) {
  // `threads` and `workers.threads` 0: one I/O thread and four workers per CPU the daemon may
  // run on. Started under taskset on one CPU (as a container's cpuset would), that is one.
  cpu_set_t mine;
  ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &mine)) ++cpu;
  const std::string base = "/tmp/amfgate-test-cpus-" + std::to_string(::getpid());
  std::ofstream(base + ".json") << R"({"listen": {"address": "127.0.0.1", "port": 0}})";
  process d;
  d.start(
      {"/usr/bin/taskset", "-c", std::to_string(cpu), AMFGATE_BINARY, "--config", base + ".json"},
      base + ".log");
  d.listening_port();
  EXPECT_NE(d.log().find(" with 1 threads and 4 workers (queue 256)"), std::string::npos)
      << d.log();
  d.kill(SIGTERM);
  std::remove((base + ".json").c_str());
  std::remove((base + ".log").c_str());
}

TEST(Daemon, TheBatchedLogLosesNothingAtShutdown) {
  // Lines are written in batches (a second at most apart): the access log of every request
  // is in the file once the daemon has exited on SIGTERM, in the usual format.
  const std::string file = "/tmp/amfgate-test-log-" + std::to_string(::getpid()) + ".log";
  std::remove(file.c_str());
  daemon d("\"log\": {\"sinks\": [{\"type\": \"stdout\"}, {\"type\": \"file\", \"path\": \"" +
           file + "\"}]}");
  auto http = d.client();
  amf::document doc;
  const amf::value args[] = {doc.string("x")};
  const std::string body = client::netconnection_request("echo", args, false);
  constexpr int calls = 300;
  for (int i = 0; i < calls; ++i) ASSERT_EQ(http.post("/gateway", body).status, 200u);
  EXPECT_NE(http.get("/metrics").body.find("\namfgate_log_lines_dropped_total 0\n"),
            std::string::npos);
  d.signal(SIGTERM);
  ASSERT_EQ(d.wait(), 0);
  std::ifstream in(file);
  int logged = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("[access] [info] 127.0.0.1:") != std::string::npos &&
        line.find("\"POST /gateway\" 200 in=") != std::string::npos) {
      ++logged;
    }
  }
  EXPECT_EQ(logged, calls);
  std::remove(file.c_str());
}

TEST(Daemon, SlowClientsAreCutOff) {
  daemon d("\"limits\": {\"header_timeout_ms\": 300, \"read_timeout_ms\": 300}");
  raw_socket slow(d.port());
  slow.send("POST /gateway HTTP/1.1\r\nHost: x\r\n");  // and never the rest
  EXPECT_EQ(slow.read_all(), "");
  EXPECT_TRUE(slow.peer_closed());  // the daemon closed it: the client did not give up first

  raw_socket body(d.port());
  body.send(
      "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
      "Content-Length: 100\r\n\r\nabc");
  EXPECT_EQ(body.read_all(), "");
  EXPECT_TRUE(d.logged("request not received in time"));
}

TEST(Daemon, ConnectionsAreLimited) {
  daemon d("\"limits\": {\"max_connections\": 3}");
  raw_socket a(d.port()), b(d.port());
  // This client's keep-alive connection is the third; wait until the daemon counts all three.
  auto http = d.client();
  bool three = false;
  for (int i = 0; i < 250 && !three; ++i) {
    three = http.get("/metrics").body.find("\namfgate_open_connections 3\n") != std::string::npos;
    if (!three) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(three);
  // Over the limit, loopback keeps a few connections for /healthz, and only for it.
  raw_socket health(d.port()), other(d.port());
  health.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(health.read_all().starts_with("HTTP/1.1 200"));
  other.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  const auto refused = other.read_all();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503"));
  EXPECT_NE(refused.find("kept for /healthz"), std::string::npos);
  // Past those, 503 at once. (The two connections above give their slots back when the daemon
  // has finished with them, a moment after they close.)
  std::this_thread::sleep_for(milliseconds(300));
  std::vector<std::unique_ptr<raw_socket>> held;
  for (int i = 0; i < 4; ++i) held.push_back(std::make_unique<raw_socket>(d.port()));
  raw_socket over(d.port());
  const auto answer = over.read_all();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 503"));
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos);
  EXPECT_NE(answer.find("too many connections; retry later"), std::string::npos);
}

TEST(Daemon, ShutdownFinishesRequestsInFlight) {
  daemon d;
  amf::document doc;
  const std::string amf =
      client::netconnection_request("echo", std::vector{doc.string("late")}, false);
  raw_socket s(d.port());
  s.send(
      "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
      "Content-Length: " +
      std::to_string(amf.size()) + "\r\n\r\n" + amf.substr(0, 10));
  std::this_thread::sleep_for(milliseconds(100));
  d.signal(SIGTERM);
  bool refused = false;  // no longer accepting, once the signal is handled
  for (int i = 0; i < 100 && !refused; ++i) {
    try {
      d.client().get("/healthz");
      std::this_thread::sleep_for(milliseconds(20));
    } catch (const std::exception&) {
      refused = true;
    }
  }
  EXPECT_TRUE(refused);
  s.send(amf.substr(10));
  const std::string answer = s.read_all();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  EXPECT_NE(answer.find("late"), std::string::npos);
  EXPECT_EQ(d.wait(), 0);
  EXPECT_NE(d.log().find("draining"), std::string::npos);  // flushed at exit
}

TEST(Daemon, ASecondSignalExitsAtOnce) {
  daemon d("\"shutdown_grace_ms\": 60000");
  raw_socket s(d.port());
  s.send(
      "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
      "Content-Length: 50\r\n\r\nab");
  std::this_thread::sleep_for(milliseconds(100));
  d.signal(SIGTERM);
  std::this_thread::sleep_for(milliseconds(100));
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait(std::chrono::seconds(3)), 1);
}

// The second signal was acted on only when the first I/O thread was free: a request that held
// it for 91 s held the daemon's exit as long.
TEST(Daemon, ASecondSignalExitsWhileEveryIoThreadIsBusy) {
  daemon d("\"shutdown_grace_ms\": 60000", AMFGATE_TEST_DAEMON);
  const std::string spin =
      client::netconnection_request("Slow.spin", std::vector{amf::value::integer(600'000)}, false);
  std::vector<std::unique_ptr<raw_socket>> busy;
  for (int i = 0; i < 2; ++i) {  // one per I/O thread: connections go to them in turn
    busy.push_back(std::make_unique<raw_socket>(d.port()));
    busy.back()->send(
        "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
        "Content-Length: " +
        std::to_string(spin.size()) + "\r\n\r\n" + spin);
  }
  std::this_thread::sleep_for(milliseconds(300));
  d.signal(SIGTERM);
  std::this_thread::sleep_for(milliseconds(100));
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait(std::chrono::seconds(10)), 1);  // the spins have minutes left
}

TEST(Daemon, CorpusRequestsGetWellFormedAnswers) {
  daemon d;
  auto http = d.client();
  int requests = 0;
  for (const char* dir : {"/corpus/rocketamf/request", "/corpus/phpamf/Request/mock"}) {
    for (const auto& f :
         std::filesystem::directory_iterator(AMFGATE_SHARED_DIR + std::string(dir))) {
      std::ifstream in(f.path(), std::ios::binary);
      const std::string bytes(std::istreambuf_iterator<char>(in), {});
      amf::document doc;
      amf::decode_error ec;
      amf::packet req = amf::decode_packet(amf::as_bytes(bytes), doc, ec);
      if (ec || req.bodies.empty() || !req.bodies[0].is_request()) continue;
      ++requests;
      auto res = http.post("/gateway", bytes);
      ASSERT_EQ(res.status, 200u) << f.path() << ": " << res.body;
      amf::packet p = decode(res.body, doc);
      ASSERT_EQ(p.bodies.size(), req.bodies.size()) << f.path();
      for (std::size_t i = 0; i < p.bodies.size(); ++i) {
        const std::string r(req.bodies[i].response);
        EXPECT_TRUE(p.bodies[i].target == r + "/onResult" || p.bodies[i].target == r + "/onStatus")
            << f.path() << ": " << p.bodies[i].target;
        if (req.bodies[i].target == "null") {
          EXPECT_TRUE(amf::flex::read(p.bodies[i].val, doc)) << f.path();
        }
      }
    }
  }
  EXPECT_GE(requests, 10);
}

}  // namespace
}  // namespace amfgate::test
