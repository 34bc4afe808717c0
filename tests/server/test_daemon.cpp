// amfgate with test services, built with amfgate::run: the README's examples, and
// handlers that block, await or count for the execution tests (execution_test.cpp).
#include <algorithm>
#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "../../examples/services/rooms.hpp"
#include "../../examples/services/ticker.hpp"
#include "../../examples/services/user_service.hpp"
#include "../../examples/services/waiting_services.hpp"
#include "amfgate/run.hpp"

namespace {

namespace net = boost::asio;
using amfgate::services::call_context;
using amfgate::services::execution;

// Slow.hold blocks its worker until Slow.release (at most 10 s): a pool kept busy for as
// long as a test needs, whatever the machine's speed.
struct gate {
  std::mutex mutex;
  std::condition_variable opened;
  std::uint64_t generation = 0;
};

struct counters {
  std::atomic<std::int32_t> started{0}, finished{0}, cancelled{0}, late{0};
  std::atomic<std::int32_t> waiting{0}, peak{0};  ///< Slow.wait: at once, and at most so
};

}  // namespace

int main(int argc, char** argv) {
  static examples::inventory stock(":memory:");
  static UserService users;
  static counters count;
  static gate held;
  return amfgate::run(
      argc, argv, [](amfgate::services::registry& r, const amfgate::config::gateway_config& c) {
        examples::bind_waiting_examples(r, stock);
        examples::add_ticker(r, c);  // with a "Ticker" section in the settings
        examples::add_rooms(r, c);   // with a "Rooms" section
        bind_services(r, users);     // the README's example, as a setup of amfgate::run
        // Blocks its worker for `ms`, as a slow database call does.
        r.bind("Slow", "block", [](call_context& ctx, std::int32_t ms) {
          ++count.started;
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          if (ctx.abandoned()) ++count.late;
          ++count.finished;
          return ms;
        });
        // Keeps its I/O thread busy for `ms`: a handler that should not be inline.
        r.bind(
            "Slow", "spin",
            [](std::int32_t ms) {
              const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
              while (std::chrono::steady_clock::now() < until) {
              }
              return ms;
            },
            execution::inline_);
        // A reply as large as asked: for limits.max_response_bytes.
        r.bind("Slow", "text", [](std::int32_t bytes) {
          return std::string(static_cast<std::size_t>(std::max(bytes, 0)), 'x');
        });
        r.bind("Slow", "hold", [] {
          std::unique_lock lock(held.mutex);
          const auto generation = held.generation;
          return held.opened.wait_for(lock, std::chrono::seconds(10),
                                      [&] { return held.generation != generation; });
        });
        r.bind(
            "Slow", "release",
            [] {
              std::lock_guard lock(held.mutex);
              ++held.generation;
              held.opened.notify_all();
            },
            execution::inline_);
        // Awaits a timer for `ms`; counts the waits that were cancelled.
        r.bind("Slow", "wait", [](std::int32_t ms) -> net::awaitable<std::int32_t> {
          ++count.started;
          const std::int32_t now = ++count.waiting;
          for (auto peak = count.peak.load(); now > peak;) {
            if (count.peak.compare_exchange_weak(peak, now)) break;
          }
          net::steady_timer t(co_await net::this_coro::executor, std::chrono::milliseconds(ms));
          try {
            co_await t.async_wait(net::use_awaitable);
          } catch (const boost::system::system_error&) {
            --count.waiting;
            ++count.cancelled;
            throw;
          }
          --count.waiting;
          ++count.finished;
          co_return ms;
        });
        r.bind(
            "Slow", "counters",
            [] {
              return std::vector<std::int32_t>{count.started, count.finished, count.cancelled,
                                               count.late, count.peak};
            },
            execution::inline_);
        r.bind(
            "Slow", "reset",
            [] { count.started = count.finished = count.cancelled = count.late = count.peak = 0; },
            execution::inline_);
        // A handler on the worker pool that publishes to Flex consumers.
        r.bind("Chat", "post", [](call_context& ctx, std::string room, std::string text) {
          ctx.publisher->publish("chat", ctx.doc.string(text), "chat." + room,
                                 {{"room", ctx.doc.string(room)}});
          return true;
        });
      });
}
