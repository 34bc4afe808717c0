// The load benchmark's ceilings: bare Boost.Beast endpoints that answer every request with a
// fixed AMF body and do no AMF work. By default built like amfgate's HTTP layer (one strand
// per connection, keep-alive, THREADS threads); with --sync, Beast's synchronous server (a
// thread per connection, blocking reads and writes), which measured faster on this machine.
//
//   bare_server PORT [THREADS] [--sync]
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// A minimal AMF0 response packet: /1/onResult with the string "ok".
const std::string reply_body(
    "\x00\x00\x00\x00\x00\x01\x00\x0b/1/onResult\x00\x04null\xff\xff\xff\xff\x02\x00\x02ok", 36);

class session : public std::enable_shared_from_this<session> {
 public:
  explicit session(tcp::socket&& s) : stream_(std::move(s)) {}
  void read() {
    parser_.emplace();
    parser_->body_limit(16 << 20);
    http::async_read(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (ec) return self->stream_.socket().close();
          self->write(self->parser_->get().keep_alive(), self->parser_->get().version());
        });
  }

 private:
  void write(bool keep_alive, unsigned version) {
    res_.emplace(http::status::ok, version);
    res_->set(http::field::content_type, "application/x-amf");
    res_->body() = reply_body;
    res_->keep_alive(keep_alive);
    res_->prepare_payload();
    http::async_write(stream_, *res_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                        if (ec || !keep_alive) return self->stream_.socket().close();
                        self->read();
                      });
  }
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> res_;
};

void accept(tcp::acceptor& a, net::io_context& ioc) {
  a.async_accept(net::make_strand(ioc), [&a, &ioc](beast::error_code ec, tcp::socket s) {
    if (!ec) std::make_shared<session>(std::move(s))->read();
    accept(a, ioc);
  });
}

// One connection of the synchronous server, on a thread of its own.
void serve_blocking(tcp::socket socket) {
  beast::flat_buffer buffer;
  beast::error_code ec;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(16 << 20);
    http::read(socket, buffer, parser, ec);
    if (ec) break;
    http::response<http::string_body> res(http::status::ok, parser.get().version());
    res.set(http::field::content_type, "application/x-amf");
    res.body() = reply_body;
    res.keep_alive(parser.get().keep_alive());
    res.prepare_payload();
    http::write(socket, res, ec);
    if (ec || !res.keep_alive()) break;
  }
  socket.shutdown(tcp::socket::shutdown_send, ec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const auto port = static_cast<unsigned short>(std::atoi(argv[1]));
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  if (argc > 3 && std::string(argv[3]) == "--sync") {
    net::io_context ioc(1);
    tcp::acceptor acceptor(ioc, {net::ip::make_address("127.0.0.1"), port});
    for (;;) {
      tcp::socket socket(ioc);
      acceptor.accept(socket);
      std::thread(serve_blocking, std::move(socket)).detach();
    }
  }
  net::io_context ioc(threads);
  tcp::acceptor acceptor(ioc, {net::ip::make_address("127.0.0.1"), port});
  accept(acceptor, ioc);
  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int) { ioc.stop(); });
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
}
