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

std::string metrics::render(std::optional<std::size_t> sessions, const worker_pool::stats& pool,
                            const messaging::broker::stats& messaging,
                            std::size_t log_dropped) const {
  std::string out;
  auto sample = [&](std::string_view name, std::string_view labels, double v) {
    char number[32];
    std::snprintf(number, sizeof number, " %.17g\n", v);
    out.append(name).append(labels).append(number);
  };
  auto family = [&](std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  };
  auto total = [&](std::string_view name, std::string_view help, std::size_t k) {
    family(name, "counter", help);
    sample(name, "", static_cast<double>(sum(k)));
  };
  auto gauge = [&](std::string_view name, std::string_view help, double v) {
    family(name, "gauge", help);
    sample(name, "", v);
  };
  family("amfgate_http_requests_total", "counter", "HTTP requests answered, by status class.");
  sample("amfgate_http_requests_total", "{class=\"2xx\"}", static_cast<double>(sum(requests_2xx)));
  sample("amfgate_http_requests_total", "{class=\"4xx\"}", static_cast<double>(sum(requests_4xx)));
  sample("amfgate_http_requests_total", "{class=\"5xx\"}", static_cast<double>(sum(requests_5xx)));
  total("amfgate_messages_total", "AMF messages (bodies and Flex messages) handled.",
        messages_total);
  total("amfgate_faults_total", "Messages answered with a fault.", faults_total);
  total("amfgate_received_bytes_total", "Request body bytes.", bytes_in);
  total("amfgate_sent_bytes_total", "Response body bytes.", bytes_out);
  family("amfgate_request_duration_seconds", "histogram",
         "Time from request read to response ready.");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    cumulative += sum(latency_bucket0 + i);
    char le[32];
    std::snprintf(le, sizeof le, "{le=\"%g\"}", buckets[i]);
    sample("amfgate_request_duration_seconds_bucket", le, static_cast<double>(cumulative));
  }
  sample("amfgate_request_duration_seconds_bucket", "{le=\"+Inf\"}",
         static_cast<double>(sum(latency_count)));
  sample("amfgate_request_duration_seconds_sum", "",
         static_cast<double>(sum(latency_micros)) / 1e6);
  sample("amfgate_request_duration_seconds_count", "", static_cast<double>(sum(latency_count)));
  gauge("amfgate_open_connections", "Client connections open now.",
        static_cast<double>(open_connections_.load()));
  total("amfgate_call_timeouts_total", "Calls answered Server.Timeout at their deadline.",
        call_timeouts);
  total("amfgate_calls_abandoned_total", "Calls cancelled because their client went away.",
        calls_abandoned);
  total("amfgate_busy_refusals_total",
        "Requests or calls refused because the worker pool's queue was full.", busy_refusals);
  total("amfgate_logins_throttled_total",
        "Login attempts refused without a password check (too many failures).", logins_throttled);
  gauge("amfgate_worker_threads", "Threads of the worker pool.", pool.threads);
  gauge("amfgate_workers_busy", "Workers running a call now.", static_cast<double>(pool.busy));
  gauge("amfgate_worker_queue_depth", "Calls waiting for a worker now.",
        static_cast<double>(pool.queued));
  gauge("amfgate_worker_queue_limit", "Calls that may wait for a worker (then 503).",
        static_cast<double>(pool.max_queue));
  family("amfgate_log_lines_dropped_total", "counter",
         "Log lines dropped, the oldest first, because the log queue was full.");
  sample("amfgate_log_lines_dropped_total", "", static_cast<double>(log_dropped));
  gauge("amfgate_session_store_up", "1 when the session store answers, else 0.", sessions ? 1 : 0);
  if (sessions) {
    gauge("amfgate_sessions", "Sessions in the store.", static_cast<double>(*sessions));
  }
  gauge("amfgate_messaging_clients",
        "FlexClients (DSId) with subscriptions, a parked poll or an open stream.",
        static_cast<double>(messaging.clients));
  gauge("amfgate_messaging_parked_polls", "Polls parked for messages now.",
        static_cast<double>(messaging.parked));
  gauge("amfgate_messaging_open_streams", "Streams (StreamingAMFChannel) open now.",
        static_cast<double>(messaging.streams));
  using destination = messaging::broker::destination_stats;
  const auto per_destination = [&](std::string_view name, std::string_view type,
                                   std::string_view help, auto field) {
    family(name, type, help);
    for (const destination& d : messaging.destinations) {
      // Destination names come from the settings: any text, escaped as the format says.
      std::string label = "{destination=\"";
      for (const char c : d.name) {
        if (c == '\\' || c == '"') label += '\\';
        label += c == '\n' ? 'n' : c;
      }
      sample(name, label + "\"}", static_cast<double>(field(d)));
    }
  };
  per_destination("amfgate_messaging_subscriptions", "gauge", "Subscriptions now.",
                  [](const destination& d) { return d.subscriptions; });
  per_destination("amfgate_messaging_published_total", "counter", "Messages published.",
                  [](const destination& d) { return d.published; });
  per_destination("amfgate_messaging_delivered_total", "counter",
                  "Messages delivered, one per subscription that received one.",
                  [](const destination& d) { return d.delivered; });
  per_destination("amfgate_messaging_dropped_total", "counter",
                  "Messages that fell out of retention before a subscription read them.",
                  [](const destination& d) { return d.dropped; });
  per_destination("amfgate_messaging_throttled_total", "counter",
                  "Messages Producers sent past the destination's throttle_inbound: faulted "
                  "(policy error) or dropped (ignore).",
                  [](const destination& d) { return d.throttled; });
  per_destination("amfgate_messaging_passed_total", "counter",
                  "Messages a subscription passed without delivering them, by the "
                  "destination's throttle_outbound: past its frequency (policy ignore), or "
                  "superseded by a newer message of their subtopic (conflate).",
                  [](const destination& d) { return d.passed; });
  per_destination("amfgate_messaging_examined_total", "counter",
                  "Messages polls looked at to choose what to deliver: about one per message "
                  "and subscription that reads it, and one more for each poll that a "
                  "frequency stops.",
                  [](const destination& d) { return d.examined; });
  per_destination("amfgate_messaging_resumed_total", "counter",
                  "Subscriptions a resubscribe continued from where they stopped "
                  "(resume_window).",
                  [](const destination& d) { return d.resumed; });
  per_destination("amfgate_messaging_timed_out_total", "counter",
                  "Subscriptions ended by the destination's subscription_timeout: nothing was "
                  "delivered to them for that long.",
                  [](const destination& d) { return d.timed_out; });
  per_destination("amfgate_messaging_retained_messages", "gauge", "Messages kept now.",
                  [](const destination& d) { return d.kept; });
  per_destination("amfgate_messaging_retained_bytes", "gauge", "Bytes of the messages kept now.",
                  [](const destination& d) { return d.kept_bytes; });
  return out;
}

}  // namespace amfgate::server
