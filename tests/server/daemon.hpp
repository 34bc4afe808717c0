// Starts the real amfgate binary on a free loopback port with a config of the test's, and
// stops it with a signal.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>

#include "amfgate/server/client.hpp"

namespace amfgate::test {

inline std::uint16_t free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(s);
  return ntohs(a.sin_port);
}

class daemon {
 public:
  /// `settings` are JSON members added to the config ("\"debug\": true, ...").
  explicit daemon(const std::string& settings = "") : port_(free_port()) {
    const std::string base =
        "/tmp/amfgate-test-" + std::to_string(::getpid()) + "-" + std::to_string(port_);
    config_ = base + ".json";
    log_ = base + ".log";
    std::ofstream(config_) << "{\"listen\": {\"address\": \"127.0.0.1\", \"port\": " << port_
                           << "}, \"threads\": 2" << (settings.empty() ? "" : ", ") << settings
                           << "}";
    pid_ = ::fork();
    if (pid_ == 0) {
      std::freopen(log_.c_str(), "w", stdout);
      std::freopen(log_.c_str(), "a", stderr);
      ::execl(AMFGATE_BINARY, AMFGATE_BINARY, "--config", config_.c_str(), nullptr);
      std::_Exit(127);
    }
    for (int i = 0; i < 200; ++i) {
      try {
        if (client().get("/healthz").status == 200) return;
      } catch (const std::exception&) {
      }
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("amfgate exited at start:\n" + log());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    throw std::runtime_error("amfgate did not answer /healthz:\n" + log());
  }

  ~daemon() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::remove(config_.c_str());
    std::remove(log_.c_str());
  }

  client::http_client client() const {
    return client::http_client("127.0.0.1", std::to_string(port_));
  }
  std::uint16_t port() const { return port_; }
  const std::string& config_path() const { return config_; }
  pid_t pid() const { return pid_; }

  void signal(int sig) const { ::kill(pid_, sig); }

  /// Waits for the process to exit; its exit status, or -1 on timeout / death by signal.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      int status;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  /// True once the log holds `text`; the daemon logs asynchronously and flushes each second.
  bool logged(const std::string& text,
              std::chrono::milliseconds timeout = std::chrono::seconds(5)) const {
    const auto end = std::chrono::steady_clock::now() + timeout;
    do {
      if (log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (std::chrono::steady_clock::now() < end);
    return false;
  }

  std::string log() const {
    std::ifstream f(log_);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

 private:
  std::uint16_t port_;
  pid_t pid_ = -1;
  std::string config_, log_;
};

}  // namespace amfgate::test
