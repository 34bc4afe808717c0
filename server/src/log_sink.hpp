// The daemon's log output. Lines go into a buffer that a writer thread of the output's own
// writes in batches: never a system call, nor a thread wake-up, per line. (spdlog's stdout
// sink flushed after every line, and its async queue woke its thread for every line: on the
// defaults, with the access log on, that cost a request about a third more CPU.) The access
// log is a synchronous spdlog logger on these sinks, so an I/O thread only formats and
// appends; the rest of the log stays on spdlog's async logger. The buffer is written when it
// holds a batch, at each flush (spdlog::flush_every, each second), and when the sink goes at
// shutdown. If the output stalls (a pipe nobody reads), the buffer keeps its newest lines up
// to a bound and counts the oldest it drops, as the async queue does.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace amfgate::logging {

/// Log lines dropped so far because an output or spdlog's queue was full.
std::uint64_t dropped_lines();

class batched_sink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  /// Writes to `fd` (standard output or error; not closed).
  explicit batched_sink(int fd);
  /// Appends to the file `path`, created if missing (throws spdlog_ex if it cannot be).
  explicit batched_sink(const std::string& path);
  /// Writes what is buffered, then stops the writer.
  ~batched_sink() override;
  batched_sink(const batched_sink&) = delete;
  batched_sink& operator=(const batched_sink&) = delete;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;

 private:
  static constexpr std::size_t batch_bytes = 64 * 1024;         ///< wakes the writer
  static constexpr std::size_t max_pending = 16 * 1024 * 1024;  ///< then the oldest go
  void append(std::string_view lines);
  void run();

  int fd_;
  bool owned_;
  spdlog::memory_buf_t line_;  ///< one formatted line (under base_sink's mutex)
  std::mutex pending_mutex_;
  std::condition_variable wake_;
  std::string pending_;
  bool wanted_ = false;  ///< the writer has been asked to write
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace amfgate::logging
