// The example publisher: a service that pushes to Flex consumers from C++.
//
//   "services": {"Ticker": {"destination": "ticks", "interval_ms": 1000}}
//
// publishes {sequence, time} to the messaging destination every interval, from a timer on the
// daemon's I/O executor (publisher::on_start); `Ticker.published()` answers how many so far.
// The test daemon (tests/server/test_daemon.cpp) binds it; docs/messaging.md shows it.
#pragma once

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "amf/flex.hpp"
#include "amfgate/config.hpp"
#include "amfgate/service_settings.hpp"
#include "amfgate/services/registry.hpp"

namespace examples {

inline boost::asio::awaitable<void> tick(amfgate::services::publisher& p, std::string destination,
                                         std::chrono::milliseconds every,
                                         std::shared_ptr<std::atomic<std::int64_t>> published) {
  namespace net = boost::asio;
  net::steady_timer timer(co_await net::this_coro::executor);
  for (auto next = std::chrono::steady_clock::now() + every;; next += every) {
    timer.expires_at(next);
    co_await timer.async_wait(net::use_awaitable);
    // Counted before it is published: a consumer that receives tick n and then asks
    // Ticker.published must read at least n.
    const std::int64_t sequence = ++*published;
    amf::document doc;
    amf::object_node* o = doc.object();
    o->dynamic.push_back({"sequence", amf::value::number(static_cast<double>(sequence))});
    o->dynamic.push_back({"time", doc.date(amf::flex::now_ms())});
    p.publish(destination, amf::value::of(o));
  }
}

/// Binds the Ticker when the settings have a "Ticker" section; throws config::error for a
/// destination that messaging does not have.
inline void add_ticker(amfgate::services::registry& r, const amfgate::config::gateway_config& c) {
  namespace net = boost::asio;
  if (!c.services.contains("Ticker")) return;
  amfgate::config::service_settings s(c, "Ticker");
  std::string destination = s.string("destination", "ticks");
  const auto every = std::chrono::milliseconds(s.integer("interval_ms", 1000, 10, 86'400'000));
  if (!c.messaging.destinations.contains(destination)) {
    s.fail("destination", "no messaging destination \"" + destination +
                              "\" (add it under messaging.destinations)");
  }
  s.check();
  auto published = std::make_shared<std::atomic<std::int64_t>>(0);
  amfgate::services::publisher& p = r.publisher();
  p.on_start([&p, destination, every, published](net::any_io_executor ex) {
    net::co_spawn(ex, tick(p, destination, every, published), net::detached);
  });
  r.bind(
      "Ticker", "published", [published] { return static_cast<double>(published->load()); },
      amfgate::services::execution::inline_);
}

}  // namespace examples
