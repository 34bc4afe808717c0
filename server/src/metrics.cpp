#include "amfgate/server/metrics.hpp"

#include <cstdio>

namespace amfgate::server {

metrics::shard& metrics::local() {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t index = next++ % shard_count;
  return shards_[index];
}

std::uint64_t metrics::sum(std::size_t k) const {
  std::uint64_t total = 0;
  for (const auto& s : shards_) total += s.c[k].load(std::memory_order_relaxed);
  return total;
}

void metrics::request(unsigned status, double seconds, std::uint64_t in, std::uint64_t out) {
  add(status < 400 ? requests_2xx : status < 500 ? requests_4xx : requests_5xx, 1);
  add(bytes_in, in);
  add(bytes_out, out);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (seconds <= buckets[i]) {
      add(static_cast<counter>(latency_bucket0 + i), 1);
      break;
    }
  }
  add(latency_count, 1);
  add(latency_micros, static_cast<std::uint64_t>(seconds * 1e6));
}

void metrics::messages(std::uint64_t n, std::uint64_t faults) {
  if (n) add(messages_total, n);
  if (faults) add(faults_total, faults);
}

std::string metrics::render(std::size_t sessions) const {
  std::string out;
  auto line = [&](const char* text) { out += text; };
  auto value = [&](const char* name, const char* labels, double v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s%s %.17g\n", name, labels, v);
    out += buf;
  };
  auto u = [this](std::size_t k) { return static_cast<double>(sum(k)); };
  line("# HELP amfgate_http_requests_total HTTP requests answered, by status class.\n");
  line("# TYPE amfgate_http_requests_total counter\n");
  value("amfgate_http_requests_total", "{class=\"2xx\"}", u(requests_2xx));
  value("amfgate_http_requests_total", "{class=\"4xx\"}", u(requests_4xx));
  value("amfgate_http_requests_total", "{class=\"5xx\"}", u(requests_5xx));
  line("# HELP amfgate_messages_total AMF messages (bodies and Flex messages) handled.\n");
  line("# TYPE amfgate_messages_total counter\n");
  value("amfgate_messages_total", "", u(messages_total));
  line("# HELP amfgate_faults_total Messages answered with a fault.\n");
  line("# TYPE amfgate_faults_total counter\n");
  value("amfgate_faults_total", "", u(faults_total));
  line("# HELP amfgate_received_bytes_total Request body bytes.\n");
  line("# TYPE amfgate_received_bytes_total counter\n");
  value("amfgate_received_bytes_total", "", u(bytes_in));
  line("# HELP amfgate_sent_bytes_total Response body bytes.\n");
  line("# TYPE amfgate_sent_bytes_total counter\n");
  value("amfgate_sent_bytes_total", "", u(bytes_out));
  line("# HELP amfgate_request_duration_seconds Time from request read to response ready.\n");
  line("# TYPE amfgate_request_duration_seconds histogram\n");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    cumulative += sum(latency_bucket0 + i);
    char le[64];
    std::snprintf(le, sizeof le, "{le=\"%g\"}", buckets[i]);
    value("amfgate_request_duration_seconds_bucket", le, static_cast<double>(cumulative));
  }
  value("amfgate_request_duration_seconds_bucket", "{le=\"+Inf\"}", u(latency_count));
  value("amfgate_request_duration_seconds_sum", "", u(latency_micros) / 1e6);
  value("amfgate_request_duration_seconds_count", "", u(latency_count));
  line("# HELP amfgate_open_connections Client connections open now.\n");
  line("# TYPE amfgate_open_connections gauge\n");
  value("amfgate_open_connections", "", static_cast<double>(open_connections_.load()));
  line("# HELP amfgate_sessions Sessions in the store.\n");
  line("# TYPE amfgate_sessions gauge\n");
  value("amfgate_sessions", "", static_cast<double>(sessions));
  return out;
}

}  // namespace amfgate::server
