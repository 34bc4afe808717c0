// The floor of server push (tests/bench/load/run.sh): what the kernel alone costs to deliver
// frames of the same size over the same number of loopback TCP connections, with no HTTP,
// AMF or broker. One thread writes, as an I/O thread of the daemon does; another reads every
// connection, as the consumers do. Two runs: one send per frame, then frames gathered (GATHER
// of them in one writev per connection). A daemon's CPU per delivery against these is what
// its user-space work costs on top of the kernel's.
//
//   push_floor CONNECTIONS FRAME_BYTES MESSAGES_PER_SECOND SECONDS [GATHER=4]
//
// Prints one line of key=value: deliveries made and expected (per run), and the writer's CPU
// time per delivery of each run.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// The CPU time (user and system) of the calling thread, in microseconds.
double thread_cpu_us() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

struct connections {
  std::vector<int> writers, readers;
  ~connections() {
    for (int fd : writers) ::close(fd);
    for (int fd : readers) ::close(fd);
  }
};

// `n` loopback connections: the accepted ends write, the connecting ends read (non-blocking).
void connect_all(connections& c, int n) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) fail("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
  if (::listen(listener, 4096) != 0) fail("listen");
  if (::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) fail("getsockname");
  for (int i = 0; i < n; ++i) {
    const int r = ::socket(AF_INET, SOCK_STREAM, 0);
    if (r < 0) fail("socket");
    if (::connect(r, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("connect");
    const int w = ::accept(listener, nullptr, nullptr);
    if (w < 0) fail("accept");
    const int one = 1;
    ::setsockopt(w, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as the daemon's sockets
    ::fcntl(r, F_SETFL, O_NONBLOCK);
    c.writers.push_back(w);
    c.readers.push_back(r);
  }
  ::close(listener);
}

// Reads every connection until `expected` bytes came in all, or `until`.
std::size_t read_all(const std::vector<int>& fds, std::size_t expected,
                     clock_type::time_point until) {
  const int ep = ::epoll_create1(0);
  if (ep < 0) fail("epoll_create1");
  for (int fd : fds) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) != 0) fail("epoll_ctl");
  }
  std::vector<epoll_event> events(256);
  std::vector<char> buffer(64 * 1024);
  std::size_t got = 0;
  while (got < expected && clock_type::now() < until) {
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
    for (int i = 0; i < n; ++i) {
      for (;;) {
        const auto r = ::read(events[i].data.fd, buffer.data(), buffer.size());
        if (r <= 0) break;
        got += static_cast<std::size_t>(r);
      }
    }
  }
  ::close(ep);
  return got;
}

struct run_result {
  std::size_t delivered = 0, expected = 0;
  double cpu_us_per_delivery = 0;
};

// `messages` frames to every connection at `per_second`, `gather` frames per write.
run_result deliver(const connections& c, const std::string& frame, int messages, int per_second,
                   int gather) {
  const std::size_t expected = c.writers.size() * static_cast<std::size_t>(messages);
  std::atomic<std::size_t> bytes{0};
  const auto deadline = clock_type::now() + std::chrono::seconds(messages / per_second + 30);
  std::thread reader([&] { bytes = read_all(c.readers, expected * frame.size(), deadline); });
  std::vector<iovec> iov(static_cast<std::size_t>(gather),
                         iovec{const_cast<char*>(frame.data()), frame.size()});
  const auto every = std::chrono::nanoseconds(1'000'000'000LL / per_second);
  auto next = clock_type::now();
  const double cpu0 = thread_cpu_us();
  for (int sent = 0; sent < messages; sent += gather) {
    // A gathered write goes out when its last frame is due.
    next += every * gather;
    std::this_thread::sleep_until(next);
    const int k = std::min(gather, messages - sent);
    for (int fd : c.writers) {
      const auto n = k == 1 ? ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL)
                            : ::writev(fd, iov.data(), k);
      if (n < 0) fail("send");
    }
  }
  const double cpu = thread_cpu_us() - cpu0;
  reader.join();
  run_result r;
  r.expected = expected;
  r.delivered = bytes / frame.size();
  r.cpu_us_per_delivery = r.delivered ? cpu / static_cast<double>(r.delivered) : 0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: push_floor CONNECTIONS FRAME_BYTES MESSAGES_PER_SECOND SECONDS "
                 "[GATHER=4]\n");
    return 2;
  }
  const int n = std::atoi(argv[1]), bytes = std::atoi(argv[2]), per_second = std::atoi(argv[3]),
            seconds = std::atoi(argv[4]), gather = argc > 5 ? std::atoi(argv[5]) : 4;
  if (n < 1 || bytes < 1 || per_second < 1 || seconds < 1 || gather < 1) {
    std::fprintf(stderr, "push_floor: every argument must be at least 1\n");
    return 2;
  }
  try {
    connections c;
    connect_all(c, n);
    const std::string frame(static_cast<std::size_t>(bytes), 'x');
    const int messages = per_second * seconds;
    const run_result one = deliver(c, frame, messages, per_second, 1);
    const run_result gathered = deliver(c, frame, messages, per_second, gather);
    std::printf(
        "connections=%d frame_bytes=%d delivered=%zu expected=%zu cpu_us_per_delivery=%.2f "
        "gather=%d gathered_delivered=%zu gathered_cpu_us_per_delivery=%.2f\n",
        n, bytes, one.delivered, one.expected, one.cpu_us_per_delivery, gather, gathered.delivered,
        gathered.cpu_us_per_delivery);
    return one.delivered == one.expected && gathered.delivered == gathered.expected ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "push_floor: %s\n", e.what());
    return 1;
  }
}
