// Server push under load (tests/bench/load/run.sh): long-polling and streaming Flex consumers
// subscribed to one destination of an amfgate, while a Producer publishes at a fixed rate.
// Every message carries the time it was sent; each consumer records when it arrived.
//
//   push_load PORT DAEMON_PID LONG_POLLERS STREAMERS MESSAGES_PER_SECOND SECONDS
//
// Prints one line of key=value: messages published, deliveries expected and made (every
// message to every consumer), deliveries per second, p50/p99 publish-to-receive latency,
// the daemon's RSS at the end and its CPU time per delivery over the run, and the bytes of a
// streamed message's frame (push_floor writes frames of that size).
#include <unistd.h>
#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
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
  std::size_t frame_bytes = 0;  ///< a streamed message's frame, its inner framing included
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

// The steady state of a consumer reads its socket directly: the client's cost per delivery
// is part of what the two cores share with the daemon, so it is kept small (no parser or
// composed operation per reply, no copy per frame).
struct inbox {
  std::string bytes;  ///< received and not yet consumed
  std::array<char, 16384> chunk;

  net::awaitable<void> receive(tcp::socket& s) {
    const net::mutable_buffer into = net::buffer(chunk);
    const std::size_t n = co_await s.async_read_some(into, net::use_awaitable);
    bytes.append(chunk.data(), n);
  }
};

// Where a response's head ends (past its blank line), or npos; throws unless the status is 200.
std::size_t head_end(std::string_view bytes) {
  const auto end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return end;
  if (!bytes.starts_with("HTTP/1.1 200"))
    throw std::runtime_error(std::string(bytes.substr(0, 12)));
  return end + 4;
}

std::size_t content_length(std::string_view head) {
  const std::string_view name = "\r\ncontent-length:";
  const auto at = std::search(head.begin(), head.end(), name.begin(), name.end(),
                              [](char a, char b) { return std::tolower(a) == b; });
  if (at == head.end()) throw std::runtime_error("a reply without Content-Length");
  return std::stoul(std::string(at + static_cast<std::ptrdiff_t>(name.size()), head.end()));
}

// One reply of Content-Length: its body (taken out of `in`).
net::awaitable<std::string> read_reply(tcp::socket& s, inbox& in) {
  for (;;) {
    const std::size_t body = head_end(in.bytes);
    if (body != std::string::npos) {
      const std::size_t length = content_length(std::string_view(in.bytes).substr(0, body));
      if (in.bytes.size() >= body + length) {
        std::string reply = in.bytes.substr(body, length);
        in.bytes.erase(0, body + length);
        co_return reply;
      }
    }
    co_await in.receive(s);
  }
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
  // The same poll every time: the Flex SDK gives each poll a new messageId, which the daemon
  // only echoes back as the reply's correlationId.
  amf::document doc;
  amf::flex::message poll;
  poll.kind = amf::flex::kind::command;
  poll.command = static_cast<std::int32_t>(amf::flex::operation::poll);
  const std::string body = packet(doc, poll, dsid);
  const std::string request = std::string("POST ") + path +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Type: application/x-amf\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  inbox in;
  try {
    for (;;) {
      co_await net::async_write(s.socket(), net::buffer(request), net::use_awaitable);
      const std::string reply = co_await read_reply(s.socket(), in);
      amf::document d;
      const auto m = first(reply, d);
      if (!m || !m->body.as_array()) continue;
      for (const auto& v : m->body.as_array()->dense) {
        if (const auto msg = amf::flex::read(v, d)) record(r, *msg);
      }
    }
  } catch (const std::exception&) {
    ++r.failed;
  }
}

// HTTP/1.1 chunked transfer coding, undone as bytes arrive.
class dechunker {
 public:
  /// Moves what `in` holds of chunk data to `out`; false at the last chunk.
  bool feed(std::string& in, std::string& out) {
    std::size_t at = 0;
    bool more = true;
    while (at < in.size() && more) {
      if (left_ > 0) {
        const std::size_t n = std::min(left_, in.size() - at);
        out.append(in, at, n);
        at += n;
        left_ -= n;
        if (left_ == 0) crlf_ = 2;
      } else if (crlf_ > 0) {
        const std::size_t n = std::min(crlf_, in.size() - at);
        at += n;
        crlf_ -= n;
      } else {
        const auto line = in.find("\r\n", at);
        if (line == std::string::npos) break;
        left_ = std::stoul(in.substr(at, line - at), nullptr, 16);
        at = line + 2;
        more = left_ > 0;
      }
    }
    in.erase(0, at);
    return more;
  }

 private:
  std::size_t left_ = 0;  ///< bytes of the current chunk still to come
  std::size_t crlf_ = 0;  ///< bytes of the CRLF after a chunk still to come
};

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
  // The HTTP chunks are undone into `payload`; the inner frames "<hex>\r\n<bytes>\r\n" are
  // read from it, heartbeat bytes (0x00) between them skipped.
  inbox in;
  dechunker chunks;
  std::string payload;
  try {
    std::size_t body = std::string::npos;
    while (body == std::string::npos) {
      co_await in.receive(s.socket());
      body = head_end(in.bytes);
    }
    in.bytes.erase(0, body);
    for (bool more = true; more;) {
      more = chunks.feed(in.bytes, payload);  // the frames before the last chunk count too
      std::size_t at = 0;
      for (;;) {
        while (at < payload.size() && payload[at] == '\0') ++at;
        const auto cr = payload.find("\r\n", at);
        if (cr == std::string::npos) break;
        const std::size_t size = std::stoul(payload.substr(at, cr - at), nullptr, 16);
        if (payload.size() < cr + 2 + size + 2) break;
        amf::document doc;
        const auto frame = amf::as_bytes(std::string_view(payload).substr(cr + 2, size));
        if (const auto m = amf::flex::read(amf::decode_amf3(frame, doc), doc)) record(r, *m);
        r.frame_bytes = cr + 2 + size + 2 - at;
        at = cr + 2 + size + 2;
      }
      payload.erase(0, at);
      if (more) co_await in.receive(s.socket());
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
  // The Producer has a thread of its own, so that it publishes on time however far behind
  // the consumers' loop runs.
  std::size_t sent = 0;
  const double cpu0 = cpu_seconds(pid);
  net::io_context publishing;
  net::co_spawn(publishing, publisher(port, rate, end, sent), net::detached);
  std::thread producer([&] { publishing.run(); });
  io.run_for(std::chrono::milliseconds(static_cast<long>(seconds * 1000)));
  io.run_for(std::chrono::seconds(2));  // what is on its way arrives
  producer.join();
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
      "rss_mb=%.1f cpu_us_per_delivery=%.2f stream_frame_bytes=%zu\n",
      polled.ready, streamed.ready, polled.failed + streamed.failed, sent, expected, delivered,
      polled.received, streamed.received, static_cast<double>(delivered) / seconds, pct(0.5),
      pct(0.99), rss_mb(pid), delivered ? cpu * 1e6 / static_cast<double>(delivered) : 0.0,
      streamed.frame_bytes);
  return delivered == expected && polled.failed + streamed.failed == 0 ? 0 : 1;
}
