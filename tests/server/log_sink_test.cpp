// The batched log sink: whole lines in order, and when its output stalls, the newest lines
// kept and the oldest dropped and counted.
#include "../../server/src/log_sink.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace amfgate::logging {
namespace {

TEST(LogSink, AStalledOutputKeepsTheNewestLinesAndCountsTheDropped) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::uint64_t dropped_before = dropped_lines();
  auto sink = std::make_shared<batched_sink>(fds[1]);
  spdlog::logger log("test", sink);
  log.set_pattern("%v");
  // Nobody reads the pipe yet: it fills at 64 KiB and the writer blocks, while 32 MiB of
  // lines arrive.
  const std::string filler(1000, 'x');
  constexpr int lines = 32 * 1024;
  for (int i = 0; i < lines; ++i) log.info("{} {}", i, filler);
  const std::uint64_t dropped = dropped_lines() - dropped_before;
  EXPECT_GT(dropped, 0u);
  // Now read everything while the sink goes (its destructor writes what it kept).
  std::string got;
  std::thread reader([&] {
    char buf[65536];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, buf + n);
  });
  log.sinks().clear();
  sink.reset();
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  std::size_t received = 0;
  long previous = -1;
  bool ordered = true;
  for (std::size_t at = 0; at < got.size();) {
    const std::size_t end = got.find('\n', at);
    ASSERT_NE(end, std::string::npos) << "a line was cut";
    const long n = std::stol(got.substr(at, got.find(' ', at) - at));
    ordered = ordered && n > previous;
    previous = n;
    EXPECT_EQ(end - at, std::to_string(n).size() + 1 + filler.size());
    ++received;
    at = end + 1;
  }
  EXPECT_TRUE(ordered);
  EXPECT_EQ(previous, lines - 1);  // the newest line is there
  EXPECT_EQ(received + dropped, static_cast<std::size_t>(lines));
}

}  // namespace
}  // namespace amfgate::logging
