#include "log_sink.hpp"

#include <fcntl.h>
#include <spdlog/async.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace amfgate::logging {

namespace {

std::atomic<std::uint64_t> dropped_by_sinks{0};

// All of `bytes`, past short writes and signals. A failing output (a closed pipe, a full
// disk) loses the batch: logging must not stop the daemon.
void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

std::uint64_t dropped_lines() {
  const auto queue = spdlog::thread_pool();  // none where nothing logs asynchronously
  return dropped_by_sinks.load() + (queue ? queue->overrun_counter() : 0);
}

batched_sink::batched_sink(int fd) : fd_(fd), owned_(false), writer_([this] { run(); }) {}

batched_sink::batched_sink(const std::string& path)
    : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640)), owned_(true) {
  if (fd_ < 0) {
    throw spdlog::spdlog_ex("cannot open the log file " + path + ": " + std::strerror(errno));
  }
  writer_ = std::thread([this] { run(); });
}

batched_sink::~batched_sink() {
  {
    std::lock_guard lock(pending_mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  writer_.join();
  if (owned_) ::close(fd_);
}

void batched_sink::sink_it_(const spdlog::details::log_msg& msg) {
  line_.clear();
  formatter_->format(msg, line_);
  append({line_.data(), line_.size()});
}

void batched_sink::flush_() {
  {
    std::lock_guard lock(pending_mutex_);
    wanted_ = true;
  }
  wake_.notify_one();
}

void batched_sink::append(std::string_view lines) {
  bool wake = false;
  {
    std::lock_guard lock(pending_mutex_);
    if (pending_.size() + lines.size() > max_pending) {
      // The output stalls: the oldest half goes at once (whole lines, counted), so that a
      // stalled output costs no more than a flowing one.
      std::size_t cut = pending_.find('\n', pending_.size() / 2);
      cut = cut == std::string::npos ? pending_.size() : cut + 1;
      dropped_by_sinks += static_cast<std::uint64_t>(
          std::count(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(cut), '\n'));
      pending_.erase(0, cut);
    }
    pending_.append(lines);
    if (pending_.size() >= batch_bytes && !wanted_) wake = wanted_ = true;
  }
  if (wake) wake_.notify_one();
}

void batched_sink::run() {
  std::string batch;
  std::unique_lock lock(pending_mutex_);
  for (;;) {
    wake_.wait_for(lock, std::chrono::seconds(1), [this] { return wanted_ || stop_; });
    batch.swap(pending_);
    wanted_ = false;
    const bool last = stop_;
    lock.unlock();
    write_all(fd_, batch);
    batch.clear();
    lock.lock();
    if (last && pending_.empty()) return;
  }
}

}  // namespace amfgate::logging
