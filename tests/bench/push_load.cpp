// Server push under load (tests/bench/load/run.sh): long-polling and streaming Flex consumers
// subscribed to one destination of an amfgate, while a Producer publishes at a fixed rate.
// Every message carries the time it was sent; each consumer records when it arrived.
//
//   push_load PORT DAEMON_PID LONG_POLLERS STREAMERS MESSAGES_PER_SECOND SECONDS
//
// Prints one line of key=value: messages published, deliveries expected and made (every
// message to every consumer), deliveries per second, p50/p99 publish-to-receive latency,
// the daemon's RSS at the end and its CPU time per delivery over the run.
#include <unistd.h>
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/flex.hpp"
#include "amf/packet.hpp"
#include "amfgate/server/client.hpp"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

const char* path = "/messagebroker/amf";
const char* destination = "bench";

double now_ms() {
  return std::chrono::duration<double, std::milli>(clock_type::now().time_since_epoch()).count();
}

struct results {
  std::vector<double> latencies;  ///< ms, of messages sent in the measured window
  std::size_t received = 0;
  double window_start = 0, window_end = 0;
  int ready = 0, failed = 0;
};

// One Flex message in a packet of one body, as a channel posts it.
std::string packet(amf::document& doc, amf::flex::message& m, std::string_view dsid) {
  amf::flex::set_header(doc, m, "DSId", doc.string(dsid.empty() ? "nil" : dsid));
  amf::flex::set_header(doc, m, "DSEndpoint", doc.string("bench"));
  if (m.message_id.empty()) m.message_id = doc.copy(amf::flex::new_uuid());
  const std::vector<amf::value> messages{amf::flex::make(doc, m)};
  return amfgate::client::flex_request(messages);
}

net::awaitable<std::string> post(beast::tcp_stream& s, std::string body,
                                 std::string target = path) {
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/x-amf");
  req.body() = std::move(body);
  req.prepare_payload();
  co_await http::async_write(s, req, net::use_awaitable);
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  co_await http::async_read(s, buf, res, net::use_awaitable);
  co_return std::move(res.body());
}

// The Flex message of the first body of a reply (its views into `body` and `doc`).
std::optional<amf::flex::message> first(const std::string& body, amf::document& doc) {
  const amf::packet p = amf::decode_packet(amf::as_bytes(body), doc);
  return amf::flex::read(p.bodies.at(0).val, doc);
}

// Connects and pings, as a channel connects: its DSId.
net::awaitable<std::string> connect(beast::tcp_stream& s, std::uint16_t port) {
  co_await s.async_connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port),
                           net::use_awaitable);
  amf::document doc;
  amf::flex::message ping;
  ping.kind = amf::flex::kind::command;
  ping.command = static_cast<std::int32_t>(amf::flex::operation::client_ping);
  const std::string pong = co_await post(s, packet(doc, ping, ""));
  co_return std::string(first(pong, doc)->header("DSId").as_string());
}

// Connects, pings for a DSId and subscribes: the DSId.
net::awaitable<std::string> subscribe(beast::tcp_stream& s, std::uint16_t port) {
  std::string dsid = co_await connect(s, port);
  amf::document doc;
  amf::flex::message sub;
  sub.kind = amf::flex::kind::command;
  sub.command = static_cast<std::int32_t>(amf::flex::operation::subscribe);
  sub.destination = destination;
  const std::string ack = co_await post(s, packet(doc, sub, dsid));
  if (first(ack, doc)->kind != amf::flex::kind::acknowledge) throw std::runtime_error("refused");
  co_return dsid;
}

void record(results& r, const amf::flex::message& m) {
  const amf::value sent = m.header("sentAt");
  if (!sent.is_numeric()) return;
  const double t = sent.to_double();
  if (t < r.window_start || t > r.window_end) return;
  ++r.received;
  r.latencies.push_back(now_ms() - t);
}

net::awaitable<void> long_poller(std::uint16_t port, results& r) {
  beast::tcp_stream s(co_await net::this_coro::executor);
  std::string dsid;
  try {
    dsid = co_await subscribe(s, port);
  } catch (const std::exception&) {
    ++r.failed;
    co_return;
  }
  ++r.ready;
  for (;;) {
    amf::document doc;
    amf::flex::message poll;
    poll.kind = amf::flex::kind::command;
    poll.command = static_cast<std::int32_t>(amf::flex::operation::poll);
    std::string reply;
    try {
      reply = co_await post(s, packet(doc, poll, dsid));
    } catch (const std::exception&) {
      ++r.failed;
      co_return;
    }
    const auto m = first(reply, doc);
    if (!m || !m->body.as_array()) continue;
    for (const auto& v : m->body.as_array()->dense) {
      if (const auto msg = amf::flex::read(v, doc)) record(r, *msg);
    }
  }
}

net::awaitable<void> streamer(std::uint16_t port, results& r) {
  const auto ex = co_await net::this_coro::executor;
  beast::tcp_stream control(ex), s(ex);
  std::string dsid;
  try {
    dsid = co_await subscribe(control, port);
    co_await s.async_connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port),
                             net::use_awaitable);
    http::request<http::string_body> req{http::verb::post,
                                         std::string(path) + "?command=open&version=1", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/x-www-form-urlencoded");
    req.body() = "DSId=" + dsid;
    req.prepare_payload();
    co_await http::async_write(s, req, net::use_awaitable);
  } catch (const std::exception&) {
    ++r.failed;
    co_return;
  }
  ++r.ready;
  // Beast decodes the HTTP chunks; the inner frames "<hex>\r\n<bytes>\r\n" are read here,
  // heartbeat bytes (0x00) between them skipped.
  beast::flat_buffer buf;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  std::string payload;
  char chunk[16384];
  try {
    co_await http::async_read_header(s, buf, parser, net::use_awaitable);
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      boost::system::error_code ec;
      co_await http::async_read_some(s, buf, parser, net::redirect_error(net::use_awaitable, ec));
      if (ec && ec != http::error::need_buffer) break;
      payload.append(chunk, sizeof chunk - parser.get().body().size);
      for (;;) {
        std::size_t skip = 0;
        while (skip < payload.size() && payload[skip] == '\0') ++skip;
        payload.erase(0, skip);
        const auto cr = payload.find("\r\n");
        if (cr == std::string::npos) break;
        const std::size_t size = std::stoul(payload.substr(0, cr), nullptr, 16);
        if (payload.size() < cr + 2 + size + 2) break;
        amf::document doc;
        const std::string frame = payload.substr(cr + 2, size);
        payload.erase(0, cr + 2 + size + 2);
        if (const auto m = amf::flex::read(amf::decode_amf3(amf::as_bytes(frame), doc), doc)) {
          record(r, *m);
        }
      }
    }
  } catch (const std::exception&) {
    ++r.failed;
  }
}

net::awaitable<void> publisher(std::uint16_t port, double rate, double end, std::size_t& sent) {
  const auto ex = co_await net::this_coro::executor;
  beast::tcp_stream s(ex);
  const std::string dsid = co_await connect(s, port);
  net::steady_timer t(ex);
  const auto every = std::chrono::duration<double>(1.0 / rate);
  auto next = clock_type::now();
  for (;;) {
    next += std::chrono::duration_cast<clock_type::duration>(every);
    t.expires_at(next);
    co_await t.async_wait(net::use_awaitable);
    if (now_ms() > end) co_return;  // only what the consumers count as in the window
    amf::document d;
    amf::flex::message m;
    m.kind = amf::flex::kind::async;
    m.destination = destination;
    m.body = d.string("tick " + std::to_string(sent));
    amf::flex::set_header(d, m, "sentAt", amf::value::number(now_ms()));
    co_await post(s, packet(d, m, dsid));
    ++sent;
  }
}

double cpu_seconds(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  std::istringstream in(line.substr(line.rfind(')') + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; in >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) {
      stime = std::stod(field);
      break;
    }
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double rss_mb(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);) {
    if (line.starts_with("VmRSS:")) return std::stod(line.substr(6)) / 1024;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: push_load PORT DAEMON_PID LONG_POLLERS STREAMERS RATE SECONDS\n";
    return 2;
  }
  const auto port = static_cast<std::uint16_t>(std::stoi(argv[1]));
  const int pid = std::stoi(argv[2]);
  const int pollers = std::stoi(argv[3]), streamers = std::stoi(argv[4]);
  const double rate = std::stod(argv[5]), seconds = std::stod(argv[6]);
  net::io_context io;
  results polled, streamed;
  for (int i = 0; i < pollers; ++i) net::co_spawn(io, long_poller(port, polled), net::detached);
  for (int i = 0; i < streamers; ++i) net::co_spawn(io, streamer(port, streamed), net::detached);
  // Everyone subscribed (or failed), then a second to settle, then the measured window.
  const auto deadline = clock_type::now() + std::chrono::seconds(60);
  while (polled.ready + polled.failed + streamed.ready + streamed.failed < pollers + streamers &&
         clock_type::now() < deadline) {
    io.run_for(std::chrono::milliseconds(50));
  }
  io.run_for(std::chrono::seconds(1));
  const double start = now_ms(), end = start + seconds * 1000;
  for (auto* r : {&polled, &streamed}) {
    r->window_start = start;
    r->window_end = end;
  }
  std::size_t sent = 0;
  const double cpu0 = cpu_seconds(pid);
  net::co_spawn(io, publisher(port, rate, end, sent), net::detached);
  io.run_for(std::chrono::milliseconds(static_cast<long>(seconds * 1000)));
  io.run_for(std::chrono::seconds(2));  // what is on its way arrives
  const double cpu = cpu_seconds(pid) - cpu0;
  std::vector<double> all = polled.latencies;
  all.insert(all.end(), streamed.latencies.begin(), streamed.latencies.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    return all.empty() ? 0.0
                       : all[std::min(all.size() - 1, static_cast<std::size_t>(p * all.size()))];
  };
  const std::size_t delivered = polled.received + streamed.received;
  const std::size_t expected = sent * static_cast<std::size_t>(polled.ready + streamed.ready);
  std::printf(
      "long_pollers=%d streamers=%d failed=%d published=%zu expected=%zu delivered=%zu "
      "poll_delivered=%zu stream_delivered=%zu deliveries_per_s=%.0f p50_ms=%.2f p99_ms=%.2f "
      "rss_mb=%.1f cpu_us_per_delivery=%.2f\n",
      polled.ready, streamed.ready, polled.failed + streamed.failed, sent, expected, delivered,
      polled.received, streamed.received, static_cast<double>(delivered) / seconds, pct(0.5),
      pct(0.99), rss_mb(pid), delivered ? cpu * 1e6 / static_cast<double>(delivered) : 0.0);
  return delivered == expected && polled.failed + streamed.failed == 0 ? 0 : 1;
}
