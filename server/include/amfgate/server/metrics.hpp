// Counters and a latency histogram, rendered as Prometheus text.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "amfgate/messaging/broker.hpp"
#include "amfgate/server/workers.hpp"

namespace amfgate::server {

class metrics {
 public:
  static constexpr std::array<double, 12> buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                  0.05,   0.1,   0.25,   0.5,   1.0,  5.0};

  void request(unsigned status, double seconds, std::uint64_t bytes_in, std::uint64_t bytes_out);
  void messages(std::uint64_t n, std::uint64_t faults);
  void call_timed_out() { add(call_timeouts, 1); }
  void call_abandoned() { add(calls_abandoned, 1); }
  void busy_refused() { add(busy_refusals, 1); }
  void login_throttled() { add(logins_throttled, 1); }
  void connection_opened() { open_connections_.fetch_add(1, std::memory_order_relaxed); }
  void connection_closed() { open_connections_.fetch_sub(1, std::memory_order_relaxed); }
  std::int64_t open_connections() const { return open_connections_.load(); }

  /// Prometheus text exposition format. `sessions`: the store's count, or none when the
  /// store cannot be reached; `pool`: the worker pool now; `messaging`: its destinations.
  /// `log_dropped`: log lines the full log queue dropped (spdlog's overrun counter).
  std::string render(std::optional<std::size_t> sessions, const worker_pool::stats& pool,
                     const messaging::broker::stats& messaging, std::size_t log_dropped = 0) const;

 private:
  // Counters are sharded by thread so that I/O threads do not fight over cache lines;
  // rendering sums the shards.
  enum counter : std::size_t {
    requests_2xx,
    requests_4xx,
    requests_5xx,
    messages_total,
    faults_total,
    bytes_in,
    bytes_out,
    call_timeouts,
    calls_abandoned,
    busy_refusals,
    logins_throttled,
    latency_count,
    latency_micros,
    latency_bucket0,
    counter_count = latency_bucket0 + buckets.size()
  };
  struct alignas(64) shard {
    std::array<std::atomic<std::uint64_t>, counter_count> c{};
  };
  static constexpr std::size_t shard_count = 16;
  shard& local();
  void add(counter k, std::uint64_t n) { local().c[k].fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t sum(std::size_t k) const;

  std::array<shard, shard_count> shards_{};
  std::atomic<std::int64_t> open_connections_{0};
};

}  // namespace amfgate::server
