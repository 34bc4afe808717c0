// The bounded worker pool where handlers that may block run (plain functions, password
// checks), so that no I/O thread waits.
//
//   amf::value v = co_await pool.run([&] { return handler(...); });
//
// `run` suspends the calling coroutine until a worker has run the job, and resumes it on its
// own executor with the job's result (or exception). Backpressure is explicit: when every
// worker has a job and `max_queue` more wait, `run` throws `pool_full` before queueing
// anything. Cancellation (the caller's cancellation slot: a deadline raced with `||`, a client
// that went away) resumes the caller at once with `operation_aborted`; a job that has not
// started is then skipped, and one that is running finishes on its worker with its result
// dropped (the job learns it through the flag that `run` hands it).
#pragma once

#include <atomic>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>

namespace amfgate::server {

/// `max_queue` jobs wait already: answer 503 (HTTP) or a busy fault, do not queue.
class pool_full : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class worker_pool {
 public:
  /// `threads` workers; at most `max_queue` jobs waiting for one.
  worker_pool(unsigned threads, std::size_t max_queue);
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  struct stats {
    unsigned threads = 0;
    std::size_t max_queue = 0, busy = 0, queued = 0;
  };
  stats snapshot() const noexcept;

  /// Runs `job()` on a worker; see the file comment. `job` may take a
  /// `const std::atomic<bool>&` that turns true once its caller has stopped waiting.
  /// Not a coroutine itself, and callers in coroutines pass a named closure, never a
  /// temporary of the co_await expression: GCC 12 copies such closures byte for byte (a short
  /// std::string member then points into another frame). Only handles cross into coroutines.
  template <class F>
  auto run(F job) -> boost::asio::awaitable<std::invoke_result_t<F, const std::atomic<bool>&>> {
    using R = std::invoke_result_t<F, const std::atomic<bool>&>;
    auto out = std::make_shared<outcome<R>>();
    auto done = submit([out, job = std::move(job)](const std::atomic<bool>& abandoned) mutable {
      try {
        if constexpr (std::is_void_v<R>) {
          job(abandoned);
        } else {
          out->value.emplace(job(abandoned));
        }
      } catch (...) {
        out->error = std::current_exception();
      }
    });
    return result_of(std::move(done), std::move(out));
  }

  /// Waits for running jobs and stops the threads (the destructor does too).
  void join();

 private:
  using job_fn = std::function<void(const std::atomic<bool>&)>;

  template <class R>
  struct outcome {
    std::conditional_t<std::is_void_v<R>, bool, std::optional<R>> value{};
    std::exception_ptr error;
  };
  template <class R>
  static boost::asio::awaitable<R> result_of(boost::asio::awaitable<void> done,
                                             std::shared_ptr<outcome<R>> out) {
    co_await std::move(done);
    if (out->error) std::rethrow_exception(out->error);
    if constexpr (!std::is_void_v<R>) co_return std::move(*out->value);
  }

  // One queued job: the worker and a cancellation race to complete the caller; `state`
  // decides who does, once.
  struct job_base {
    enum : int { queued, running, done, abandoned };
    std::atomic<int> state{queued};
    std::atomic<bool> abandoned_flag{false};
    job_fn fn;
    virtual ~job_base() = default;
    virtual void complete(bool aborted) = 0;  // posts the caller's handler
  };

  template <class Handler>
  struct pending final : job_base {
    explicit pending(Handler&& h)
        : handler(std::move(h)),
          work(boost::asio::make_work_guard(boost::asio::get_associated_executor(handler))) {}
    void complete(bool aborted) override {
      auto ex = work.get_executor();
      boost::asio::post(ex, [h = std::move(handler), w = std::move(work), aborted]() mutable {
        boost::system::error_code ec;
        if (aborted) ec = boost::asio::error::operation_aborted;
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        if (slot.is_connected()) slot.clear();
        std::move(h)(ec);
      });
    }
    Handler handler;
    boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>> work;
  };

  boost::asio::awaitable<void> submit(job_fn fn) {
    reserve();
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>,
                                       void(boost::system::error_code)>(
        [this](auto handler, job_fn f) {
          using H = decltype(handler);
          auto j = std::make_shared<pending<H>>(std::move(handler));
          j->fn = std::move(f);
          auto slot = boost::asio::get_associated_cancellation_slot(j->handler);
          if (slot.is_connected()) {
            slot.assign([w = std::weak_ptr<job_base>(j)](boost::asio::cancellation_type) {
              if (auto p = w.lock()) abandon(*p);
            });
          }
          start(std::move(j));
        },
        boost::asio::use_awaitable, std::move(fn));
  }

  void reserve();  // counts a queued job or throws pool_full
  void start(std::shared_ptr<job_base> j);
  static void abandon(job_base& j);

  unsigned threads_;
  std::size_t max_queue_;
  std::atomic<std::size_t> queued_{0}, busy_{0};
  std::atomic<std::size_t> outstanding_{0};  // queued or running: at most threads + max_queue
  boost::asio::thread_pool pool_;
};

}  // namespace amfgate::server
