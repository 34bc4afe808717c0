#include "amfgate/server/metrics.hpp"

#include <cstdio>

namespace amfgate::server {

void metrics::request(unsigned status, double seconds, std::uint64_t bytes_in,
                      std::uint64_t bytes_out) {
  (status < 400 ? requests_2xx_ : status < 500 ? requests_4xx_ : requests_5xx_)++;
  bytes_in_ += bytes_in;
  bytes_out_ += bytes_out;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (seconds <= buckets[i]) {
      ++latency_[i];
      break;
    }
  }
  ++latency_count_;
  latency_micros_ += static_cast<std::uint64_t>(seconds * 1e6);
}

std::string metrics::render(std::size_t sessions) const {
  std::string out;
  auto line = [&](const char* text) { out += text; };
  auto value = [&](const char* name, const char* labels, double v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s%s %.17g\n", name, labels, v);
    out += buf;
  };
  auto u = [](const std::atomic<std::uint64_t>& a) { return static_cast<double>(a.load()); };
  line("# HELP amfgate_http_requests_total HTTP requests answered, by status class.\n");
  line("# TYPE amfgate_http_requests_total counter\n");
  value("amfgate_http_requests_total", "{class=\"2xx\"}", u(requests_2xx_));
  value("amfgate_http_requests_total", "{class=\"4xx\"}", u(requests_4xx_));
  value("amfgate_http_requests_total", "{class=\"5xx\"}", u(requests_5xx_));
  line("# HELP amfgate_messages_total AMF messages (bodies and Flex messages) handled.\n");
  line("# TYPE amfgate_messages_total counter\n");
  value("amfgate_messages_total", "", u(messages_));
  line("# HELP amfgate_faults_total Messages answered with a fault.\n");
  line("# TYPE amfgate_faults_total counter\n");
  value("amfgate_faults_total", "", u(faults_));
  line("# HELP amfgate_received_bytes_total Request body bytes.\n");
  line("# TYPE amfgate_received_bytes_total counter\n");
  value("amfgate_received_bytes_total", "", u(bytes_in_));
  line("# HELP amfgate_sent_bytes_total Response body bytes.\n");
  line("# TYPE amfgate_sent_bytes_total counter\n");
  value("amfgate_sent_bytes_total", "", u(bytes_out_));
  line("# HELP amfgate_request_duration_seconds Time from request read to response ready.\n");
  line("# TYPE amfgate_request_duration_seconds histogram\n");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    cumulative += latency_[i].load();
    char le[64];
    std::snprintf(le, sizeof le, "{le=\"%g\"}", buckets[i]);
    value("amfgate_request_duration_seconds_bucket", le, static_cast<double>(cumulative));
  }
  value("amfgate_request_duration_seconds_bucket", "{le=\"+Inf\"}", u(latency_count_));
  value("amfgate_request_duration_seconds_sum", "", u(latency_micros_) / 1e6);
  value("amfgate_request_duration_seconds_count", "", u(latency_count_));
  line("# HELP amfgate_open_connections Client connections open now.\n");
  line("# TYPE amfgate_open_connections gauge\n");
  value("amfgate_open_connections", "", static_cast<double>(open_connections_.load()));
  line("# HELP amfgate_sessions Sessions in the store.\n");
  line("# TYPE amfgate_sessions gauge\n");
  value("amfgate_sessions", "", static_cast<double>(sessions));
  return out;
}

}  // namespace amfgate::server
