// The daemon's log output: lines formatted into a buffer and written in batches, never a
// system call per line. spdlog's own stdout sink flushes (one write) after every line, which
// cost an access-logged request half again its CPU. The async logger's one thread calls this
// sink; spdlog::flush_every (each second), warnings and shutdown flush it.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <mutex>
#include <string>

namespace amfgate::logging {

class batched_sink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  /// Writes to `fd` (standard output or error; not closed).
  explicit batched_sink(int fd);
  /// Appends to the file `path`, created if missing (throws spdlog_ex if it cannot be).
  explicit batched_sink(const std::string& path);
  ~batched_sink() override;
  batched_sink(const batched_sink&) = delete;
  batched_sink& operator=(const batched_sink&) = delete;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;

 private:
  /// Lines are written when this much is buffered, or at a flush.
  static constexpr std::size_t batch_bytes = 64 * 1024;
  void write_out();

  int fd_;
  bool owned_;
  std::string buffer_;
};

}  // namespace amfgate::logging
