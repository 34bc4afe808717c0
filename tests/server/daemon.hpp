// Starts the real amfgate binary on a loopback port of its choosing (port 0, read from its
// log) with a config of the test's, and stops it with a signal.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "amfgate/server/client.hpp"
#include "process.hpp"

namespace amfgate::test {

class daemon {
 public:
  /// `settings` are JSON members added to the config ("\"debug\": true, ...").
  /// `binary`: amfgate, or a daemon of the tests' own built with amfgate::run.
  explicit daemon(const std::string& settings = "", const char* binary = AMFGATE_BINARY) {
    static std::atomic<int> started{0};
    const std::string base =
        "/tmp/amfgate-test-" + std::to_string(::getpid()) + "-" + std::to_string(++started);
    config_ = base + ".json";
    log_ = base + ".log";
    std::ofstream(config_) << "{\"listen\": {\"address\": \"127.0.0.1\", \"port\": 0}, "
                           << "\"threads\": 2" << (settings.empty() ? "" : ", ") << settings << "}";
    std::remove(log_.c_str());
    process_.start({binary, "--config", config_}, log_);
    port_ = process_.listening_port();
    for (int i = 0; i < 200; ++i) {
      try {
        if (client().get("/healthz").status == 200) return;
      } catch (const std::exception&) {
      }
      if (!process_.running()) throw std::runtime_error("amfgate exited at start:\n" + log());
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    throw std::runtime_error("amfgate did not answer /healthz:\n" + log());
  }

  ~daemon() {
    process_.kill(SIGKILL);
    std::remove(config_.c_str());
    std::remove(log_.c_str());
  }

  client::http_client client() const {
    return client::http_client("127.0.0.1", std::to_string(port_));
  }
  std::uint16_t port() const { return port_; }
  const std::string& config_path() const { return config_; }

  void signal(int sig) const { process_.signal(sig); }

  /// Waits for the process to exit; its exit status, or -1 on timeout / death by signal.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
    return process_.wait(timeout);
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

  std::string log() const { return process_.log(); }

  /// A value of /metrics: the series `name` without labels. Throws if there is none.
  double metric(const std::string& name) const {
    const auto text = client().get("/metrics").body;
    const auto at = text.find("\n" + name + " ");
    if (at == std::string::npos) throw std::runtime_error("no metric " + name);
    return std::stod(text.substr(at + name.size() + 2));
  }
  /// Whether `name` comes to read `value`: asked every 20 ms, for at most 10 s. What a test
  /// waits for is a state the daemon reports, never a time.
  bool metric_reaches(const std::string& name, double value) const {
    for (int i = 0; i < 500; ++i) {
      if (metric(name) == value) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

 private:
  std::uint16_t port_ = 0;
  std::string config_, log_;
  process process_;
};

}  // namespace amfgate::test
