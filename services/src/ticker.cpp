#include "amfgate/services/ticker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "amf/flex.hpp"
#include "amfgate/service_settings.hpp"

namespace amfgate::services {

namespace net = boost::asio;

namespace {

net::awaitable<void> tick(messaging& m, std::string destination, std::chrono::milliseconds every,
                          std::shared_ptr<std::atomic<std::int64_t>> published) {
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
    m.publish(destination, amf::value::of(o));
  }
}

}  // namespace

void add_ticker(registry& r, const config::gateway_config& c) {
  if (!c.services.contains("Ticker")) return;
  config::service_settings s(c, "Ticker");
  std::string destination = s.string("destination", "ticks");
  const auto every = std::chrono::milliseconds(s.integer("interval_ms", 1000, 10, 86'400'000));
  if (!c.messaging.destinations.contains(destination)) {
    s.fail("destination", "no messaging destination \"" + destination +
                              "\" (add it under messaging.destinations)");
  }
  s.check();
  auto published = std::make_shared<std::atomic<std::int64_t>>(0);
  messaging& m = r.messaging();
  m.on_start([&m, destination, every, published](net::any_io_executor ex) {
    net::co_spawn(ex, tick(m, destination, every, published), net::detached);
  });
  r.bind(
      "Ticker", "published", [published] { return static_cast<double>(published->load()); },
      execution::inline_);
}

}  // namespace amfgate::services
