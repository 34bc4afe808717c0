// A plain socket for requests that misbehave on purpose.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace amfgate::test {

class raw_socket {
 public:
  /// `from`: a loopback source address of its own ("127.0.0.2"), to be another client.
  explicit raw_socket(std::uint16_t port, const char* from = nullptr)
      : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (from) {
      sockaddr_in src{};
      src.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &src.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
        throw std::runtime_error(std::string("bind to ") + from + " failed");
      }
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      throw std::runtime_error("connect failed");
    }
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~raw_socket() { ::close(fd_); }
  void send(const std::string& s) { (void)::send(fd_, s.data(), s.size(), MSG_NOSIGNAL); }
  /// What has come within `ms` (at least one read's worth, if anything came).
  std::string read_some(int ms = 2000) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    const ssize_t n = receive(buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }
  /// Everything until the peer closes (or 10 s pass: then peer_closed() is false).
  std::string read_all() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = receive(buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    peer_closed_ = n == 0;
    return out;
  }
  bool peer_closed() const { return peer_closed_; }

 private:
  // A receive that a signal interrupts is tried again. With a receive timeout set, the kernel
  // does not restart it, and io_uring's task work (in a process built on it) interrupts it
  // like a signal.
  ssize_t receive(char* buf, std::size_t size) {
    ssize_t n;
    do n = ::recv(fd_, buf, size, 0);
    while (n < 0 && errno == EINTR);
    return n;
  }

  int fd_;
  bool peer_closed_ = false;
};

}  // namespace amfgate::test
