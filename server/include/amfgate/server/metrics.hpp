// Counters and a latency histogram, rendered as Prometheus text.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace amfgate::server {

class metrics {
 public:
  static constexpr std::array<double, 12> buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                  0.05,   0.1,   0.25,   0.5,   1.0,  5.0};

  void request(unsigned status, double seconds, std::uint64_t bytes_in, std::uint64_t bytes_out);
  void messages(std::uint64_t n, std::uint64_t faults) {
    messages_ += n;
    faults_ += faults;
  }
  void connection_opened() { ++open_connections_; }
  void connection_closed() { --open_connections_; }
  std::int64_t open_connections() const { return open_connections_; }

  /// Prometheus text exposition format; `sessions` is the session store's size.
  std::string render(std::size_t sessions) const;

 private:
  std::atomic<std::uint64_t> requests_2xx_{0}, requests_4xx_{0}, requests_5xx_{0};
  std::atomic<std::uint64_t> messages_{0}, faults_{0}, bytes_in_{0}, bytes_out_{0};
  std::array<std::atomic<std::uint64_t>, buckets.size()> latency_{};
  std::atomic<std::uint64_t> latency_count_{0};
  std::atomic<std::uint64_t> latency_micros_{0};
  std::atomic<std::int64_t> open_connections_{0};
};

}  // namespace amfgate::server
