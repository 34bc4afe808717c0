// Heap allocations per request on the daemon's request path (issue 13, goal 5): amfgate's
// HTTP server, router and gateway in this process on a loopback port, on the defaults (2 I/O
// threads, the access log on, written by a batched sink to /dev/null), and a client thread
// that keeps one connection busy. Counting versions of malloc and its kin count every
// allocation of every thread but the client's. After a warm-up, the count over N requests divided
// by N: per AMF0 echo, per Flex RemotingMessage echo, and per message a Producer publishes to
// Consumers that long-poll or stream.
//
// It exits 1 if a request allocates on either path: an average past half an allocation above
// the goal (0 for AMF0, 4 for Flex) is an allocation per request, not a stray one of the
// sink's thread. Likewise if a message delivered to a stream allocates (beyond its publish's
// own, which do not grow with its subscribers).
//
//   alloc_count [REQUESTS]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../../server/src/log_sink.hpp"
#include "amf/flex.hpp"
#include "amfgate/server/client.hpp"
#include "amfgate/server/http.hpp"
#include "amfgate/server/router.hpp"
#include "amfgate/services/builtin.hpp"

// The allocator's entry points, so that every allocation counts: operator new's, and those
// that bypass it (Asio's coroutine frames come from aligned_alloc). glibc's own functions
// do the work.
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
}

namespace {

std::atomic<std::uint64_t> allocations{0};
thread_local bool uncounted = false;  // the client's thread

void count() {
  if (!uncounted) allocations.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

extern "C" {
void* malloc(std::size_t n) {
  count();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t size) {
  count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t n) {
  count();
  return __libc_realloc(p, n);
}
void* aligned_alloc(std::size_t align, std::size_t n) {
  count();
  return __libc_memalign(align, n);
}
void* memalign(std::size_t align, std::size_t n) {
  count();
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, std::size_t align, std::size_t n) {
  count();
  void* p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
}

namespace {

using namespace amfgate;

// One keep-alive connection: a request, then its whole response (by Content-Length).
class connection {
 public:
  explicit connection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) std::abort();
  }
  ~connection() { ::close(fd_); }
  void exchange(const std::string& request) {
    send(request);
    receive();
  }
  void send(const std::string& request) {
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) < 0) std::abort();
  }
  void receive() {
    buf_.clear();
    std::size_t need = std::string::npos;
    char chunk[65536];
    while (need == std::string::npos || buf_.size() < need) {
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) std::abort();
      buf_.append(chunk, static_cast<std::size_t>(n));
      const auto end = buf_.find("\r\n\r\n");
      if (need == std::string::npos && end != std::string::npos) {
        const auto at = buf_.find("Content-Length: ");
        if (at == std::string::npos || buf_.compare(9, 3, "200") != 0) std::abort();
        need = end + 4 + std::stoul(buf_.substr(at + 16));
      }
    }
  }
  const std::string& response() const { return buf_; }
  /// Reads what has come, however much: how many times `needle` occurs in it.
  std::size_t receive_some(std::string_view needle) {
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) std::abort();
    std::size_t count = 0;
    const std::string_view got(chunk, static_cast<std::size_t>(n));
    for (auto at = got.find(needle); at != got.npos; at = got.find(needle, at + 1)) ++count;
    return count;
  }

 private:
  int fd_;
  std::string buf_;
};

std::string post(const std::string& body) {
  return "POST /gateway HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amf\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

template <class Exchange>
double per_exchange(Exchange once, int n) {
  for (int i = 0; i < n / 10 + 100; ++i) once();  // warm-up
  const auto before = allocations.load();
  for (int i = 0; i < n; ++i) once();
  return static_cast<double>(allocations.load() - before) / n;
}

// A Flex message of FlexClient `dsid`, alone in a request, as a channel posts it.
std::string flex_post(amf::document& doc, amf::flex::message m, std::string_view dsid) {
  amf::flex::set_header(doc, m, "DSId", doc.string(dsid));
  amf::flex::set_header(doc, m, "DSEndpoint", doc.string("my-amf"));
  m.message_id = doc.copy(amf::flex::new_uuid());
  const std::vector<amf::value> messages{amf::flex::make(doc, m)};
  return post(client::flex_request(messages));
}

// A Producer's message delivered to a Consumer whose poll had parked for it: the poll's
// request and the publish's, both counted.
double per_long_poll_delivery(std::uint16_t port, messaging::broker& broker, int n) {
  amf::document doc;
  const std::string consumer_id = amf::flex::new_uuid(), producer_id = amf::flex::new_uuid();
  amf::flex::message subscribe, poll, publish;
  subscribe.kind = poll.kind = amf::flex::kind::command;
  subscribe.command = static_cast<std::int32_t>(amf::flex::operation::subscribe);
  poll.command = static_cast<std::int32_t>(amf::flex::operation::poll);
  subscribe.destination = publish.destination = "ticks";
  publish.kind = amf::flex::kind::async;
  publish.body = doc.string("tick");
  connection consumer(port), producer(port);
  consumer.exchange(flex_post(doc, subscribe, consumer_id));
  const std::string poll_request = flex_post(doc, poll, consumer_id),
                    publish_request = flex_post(doc, publish, producer_id);
  return per_exchange(
      [&] {
        consumer.send(poll_request);
        while (broker.snapshot().parked == 0) std::this_thread::yield();
        producer.exchange(publish_request);
        consumer.receive();
        if (consumer.response().find("tick") == std::string::npos) std::abort();  // delivered
      },
      n);
}

// The same to the Consumers of `streams` open streams (StreamingAMFChannel), each its own
// FlexClient: the publish's request and the frames it brings on the streams, all counted.
double per_streamed_publish(std::uint16_t port, int n, int streams) {
  amf::document doc;
  const std::string producer_id = amf::flex::new_uuid();
  amf::flex::message subscribe, publish;
  subscribe.kind = amf::flex::kind::command;
  subscribe.command = static_cast<std::int32_t>(amf::flex::operation::subscribe);
  subscribe.destination = publish.destination = "ticks";
  publish.kind = amf::flex::kind::async;
  publish.body = doc.string("tick");
  std::vector<std::unique_ptr<connection>> open;
  connection consumer(port), producer(port);
  for (int i = 0; i < streams; ++i) {
    const std::string consumer_id = amf::flex::new_uuid(), form = "DSId=" + consumer_id;
    open.push_back(std::make_unique<connection>(port));
    open.back()->send(
        "POST /gateway?command=open&version=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        "application/x-www-form-urlencoded\r\nContent-Length: " +
        std::to_string(form.size()) + "\r\n\r\n" + form);
    consumer.exchange(flex_post(doc, subscribe, consumer_id));
  }
  const std::string publish_request = flex_post(doc, publish, producer_id);
  std::vector<std::size_t> seen(open.size());  // "tick"s each stream brought so far
  return per_exchange(
      [&] {
        producer.exchange(publish_request);
        for (std::size_t i = 0; i < open.size(); ++i) {
          const std::size_t want = seen[i] + 1;
          while (seen[i] < want) seen[i] += open[i]->receive_some("tick");
        }
      },
      n);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  config::gateway_config cfg;
  cfg.listen.address = "127.0.0.1";
  cfg.listen.port = 0;
  cfg.threads = 2;
  cfg.messaging.poll_wait = std::chrono::seconds(30);  // long-polling
  cfg.messaging.destinations["ticks"] = {};
  const int devnull = ::open("/dev/null", O_WRONLY);
  auto sink = std::make_shared<logging::batched_sink>(devnull);
  auto log = std::make_shared<spdlog::logger>("amfgate", sink);
  auto access = std::make_shared<spdlog::logger>("access", sink);
  messaging::broker broker(cfg.messaging);
  services::registry registry;
  registry.publish_through(broker);
  services::add_echo_service(registry);
  registry.freeze();
  services::memory_session_store sessions(cfg.sessions.max_sessions, cfg.sessions.idle_timeout);
  services::user_table users({});
  server::metrics stats;
  server::http_server http(cfg, stats, log, access);
  messaging::channel flex_channel(broker, sessions, cfg.limits.max_response_bytes);
  server::gateway gw(cfg, registry, flex_channel, sessions, users, http.workers(), stats, log);
  bridge::bridge none(cfg);
  server::router routes(cfg, gw, flex_channel, registry, stats, sessions, http.workers(), none,
                        log);
  std::thread serving([&] { http.run(routes.routes()); });
  uncounted = true;
  while (http.port() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));

  amf::document doc;
  amf::object_node* product = doc.object();
  product->dynamic.push_back({"id", amf::value::number(42)});
  product->dynamic.push_back({"name", doc.string("product-0042")});
  product->dynamic.push_back({"price", amf::value::number(53.49)});
  const std::vector<amf::value> args{amf::value::of(product)};
  const std::string amf0 = post(client::netconnection_request("EchoService.echo", args, false));
  const std::vector<amf::value> messages{
      client::flex_remoting(doc, "EchoService", "echo", args, "")};
  const std::string flex = post(client::flex_request(messages));
  connection c(http.port());
  constexpr int many = 16;
  const double per_amf0 = per_exchange([&] { c.exchange(amf0); }, n),
               per_flex = per_exchange([&] { c.exchange(flex); }, n),
               per_push = per_long_poll_delivery(http.port(), broker, n / 4),
               per_streamed = per_streamed_publish(http.port(), n / 4, 1),
               per_many = per_streamed_publish(http.port(), n / 4, many);
  const double per_further = (per_many - per_streamed) / (many - 1);
  std::printf(
      "heap allocations per request after warm-up, %d requests each: AMF0 echo %.2f (goal 0), "
      "Flex echo %.2f (goal <= 4); per message delivered, its publish included, %d messages: "
      "to a long poll %.2f, to a stream %.2f; to %d streams %.2f a publish, so %.2f a "
      "delivery beyond the first (goal 0)\n",
      n, per_amf0, per_flex, n / 4, per_push, per_streamed, many, per_many, per_further);
  std::raise(SIGTERM);
  serving.join();
  return per_amf0 <= 0.5 && per_flex <= 4.5 && per_further <= 0.5 ? 0 : 1;
}
