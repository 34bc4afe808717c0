#include "log_sink.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace amfgate::logging {

batched_sink::batched_sink(int fd) : fd_(fd), owned_(false) {
  buffer_.reserve(2 * batch_bytes);
}

batched_sink::batched_sink(const std::string& path)
    : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640)), owned_(true) {
  if (fd_ < 0) {
    throw spdlog::spdlog_ex("cannot open the log file " + path + ": " + std::strerror(errno));
  }
  buffer_.reserve(2 * batch_bytes);
}

batched_sink::~batched_sink() {
  std::lock_guard lock(mutex_);
  write_out();
  if (owned_) ::close(fd_);
}

void batched_sink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t line;
  formatter_->format(msg, line);
  buffer_.append(line.data(), line.size());
  if (buffer_.size() >= batch_bytes) write_out();
}

void batched_sink::flush_() {
  write_out();
}

// Everything buffered, retried past short writes and signals. A failing output (a closed
// pipe, a full disk) drops the batch: logging must not stop the daemon.
void batched_sink::write_out() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

}  // namespace amfgate::logging
