#include "amfgate/server/workers.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <string>

namespace amfgate::server {

worker_pool::worker_pool(unsigned threads, std::size_t max_queue)
    : threads_(threads), max_queue_(max_queue), pool_(threads) {}

worker_pool::~worker_pool() {
  join();
}

void worker_pool::join() {
  pool_.join();
}

worker_pool::stats worker_pool::snapshot() const noexcept {
  return {threads_, max_queue_, busy_.load(std::memory_order_relaxed),
          queued_.load(std::memory_order_relaxed)};
}

void worker_pool::reserve() {
  // Counted against workers and queue together: a burst that idle workers are about to take
  // is not refused for a queue that only looks full for an instant.
  if (outstanding_.fetch_add(1) >= threads_ + max_queue_) {
    outstanding_.fetch_sub(1);
    throw pool_full("all " + std::to_string(threads_) + " workers are busy and " +
                    std::to_string(max_queue_) + " calls wait for one");
  }
  queued_.fetch_add(1);
}

void worker_pool::start(std::shared_ptr<job_base> j) {
  boost::asio::post(pool_, [this, j = std::move(j)] {
    // Workers yield the CPU to the I/O threads: a flood of password hashes or other heavy
    // handlers then slows itself, not every other connection's calls.
    thread_local const bool niced = ::setpriority(PRIO_PROCESS, ::gettid(), 5) == 0;
    (void)niced;
    queued_.fetch_sub(1);
    int expected = job_base::queued;
    if (!j->state.compare_exchange_strong(expected, job_base::running)) {  // abandoned
      outstanding_.fetch_sub(1);
      return;
    }
    busy_.fetch_add(1);
    j->fn(j->abandoned_flag);
    busy_.fetch_sub(1);
    outstanding_.fetch_sub(1);
    expected = job_base::running;
    if (j->state.compare_exchange_strong(expected, job_base::done)) j->complete(false);
    // else: the caller stopped waiting while this ran; what it produced is dropped here
  });
}

void worker_pool::abandon(job_base& j) {
  j.abandoned_flag = true;
  for (int s = j.state.load(); s == job_base::queued || s == job_base::running;) {
    if (j.state.compare_exchange_weak(s, job_base::abandoned)) return j.complete(true);
  }
}

}  // namespace amfgate::server
