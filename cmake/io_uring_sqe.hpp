// Force-included in every C++ translation unit of an AMFGATE_IO_URING build (CMakeLists.txt).
//
// liburing 2.3 (Debian 12) leaves a submission's user_data as the last user of its ring slot
// left it, and the io_uring backend of Boost 1.81's Asio prepares its cancellations and
// timeout removals without setting it. Their completions then come back with another
// operation's user_data, and Asio completes whatever waits first in that queue with the
// cancellation's result: a read on another connection ends as if its peer had closed
// (liburing issue 848). So every submission Asio takes is cleared first.
#pragma once

#include <liburing.h>

inline io_uring_sqe* amfgate_io_uring_get_sqe(io_uring* ring) {
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe) io_uring_sqe_set_data(sqe, nullptr);
  return sqe;
}
#define io_uring_get_sqe amfgate_io_uring_get_sqe
