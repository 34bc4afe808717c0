// Idle keep-alive connections (tests/bench/load/run.sh, issue 13 goal 6): opens COUNT
// connections to an amfgate on loopback, posts one AMF call on each and reads its answer (so
// each is a connection that has served a request, as a browser's are), then holds them idle
// until its standard input closes.
//
//   idle_conns PORT COUNT BODY_FILE
//
// Prints "held=N failed=M" once every connection is open (or has failed), and at the end
// "closed_by_server=K": how many of the held connections the daemon had closed meanwhile.
#include <poll.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

struct run_state {
  tcp::endpoint target;
  std::string request;  ///< the whole HTTP request, the same on every connection
  std::size_t count = 0, next = 0, failed = 0;
  std::vector<tcp::socket> held;
};

// Opens connections one after another until `count` have been started: each posts the
// request, reads the answer, and is kept if it was 200 with keep-alive.
net::awaitable<void> opener(run_state& st) {
  const auto ex = co_await net::this_coro::executor;
  while (st.next < st.count) {
    ++st.next;
    try {
      beast::tcp_stream s(ex);
      co_await s.async_connect(st.target, net::use_awaitable);
      co_await net::async_write(s, net::buffer(st.request), net::use_awaitable);
      beast::flat_buffer buf;
      http::response<http::string_body> res;
      co_await http::async_read(s, buf, res, net::use_awaitable);
      if (res.result() != http::status::ok || !res.keep_alive())
        throw std::runtime_error("refused");
      st.held.push_back(s.release_socket());
    } catch (const std::exception&) {
      ++st.failed;
    }
  }
}

// A socket the server closed (or reset) polls readable with nothing to read.
bool closed_by_peer(tcp::socket& s) {
  pollfd p{s.native_handle(), POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLIN));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: idle_conns PORT COUNT BODY_FILE\n";
    return 2;
  }
  run_state st;
  st.target = tcp::endpoint(net::ip::make_address("127.0.0.1"),
                            static_cast<std::uint16_t>(std::stoi(argv[1])));
  st.count = std::stoul(argv[2]);
  std::ifstream in(argv[3], std::ios::binary);
  std::ostringstream body;
  body << in.rdbuf();
  st.request =
      "POST /gateway HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amf\r\n"
      "Content-Length: " +
      std::to_string(body.str().size()) + "\r\n\r\n" + body.str();
  st.held.reserve(st.count);

  net::io_context ioc(1);
  for (int i = 0; i < 64; ++i) net::co_spawn(ioc, opener(st), net::detached);
  ioc.run();
  std::printf("held=%zu failed=%zu\n", st.held.size(), st.failed);
  std::fflush(stdout);

  while (std::getchar() != EOF) {
  }
  std::size_t closed = 0;
  for (auto& s : st.held) closed += closed_by_peer(s) ? 1 : 0;
  std::printf("closed_by_server=%zu\n", closed);
  return 0;
}
