// HTTP streaming for Flex's StreamingAMFChannel (docs/wire.md, "Polling, long-polling,
// streaming"): the frames of an open stream, which the HTTP layer sends as its body. It is framed
// as the SDK's StreamingConnectionHandler reads it, inside real HTTP/1.1 chunks: optional
// kick-start padding, the "connected" acknowledgement, one AMF3 message per frame, and a 0x00
// heartbeat byte between frames after a silence.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "amfgate/messaging/broker.hpp"

namespace amfgate::messaging {

/// The kick-start padding a User-Agent needs before it hands streamed bytes to the page
/// (BlazeDS UserAgentSettings: Android 4010, MSIE 2048, Safari and its kin 512); 0 if none.
std::size_t kickstart_bytes(std::string_view user_agent);

class stream {
 public:
  /// Frames for the FlexClient of `w` (broker::open_stream) until its client closes it,
  /// goes away, or the daemon drains (then a DISCONNECT command ends it).
  /// A message larger than `max_bytes` is never sent (the stream's next poll says it was
  /// lost); a piece holds at most that much.
  stream(broker& b, std::shared_ptr<broker::waiter> w, std::string stream_id, std::size_t kickstart,
         std::chrono::milliseconds heartbeat, std::size_t max_bytes);
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  /// The next frames, however long they take to come; empty: the stream has ended. They
  /// stay valid until the next call.
  boost::asio::awaitable<std::string_view> next();
  /// The last frames `next` gave were not written (the client went away): what they carried
  /// is read again by the client's next poll or stream.
  void unwritten();

 private:
  /// What waits for the client, appended to `out` as frames: true when what a poll reads
  /// is still to come from the share (`read_shared`).
  bool read(std::string& out, amf::document& doc);
  boost::asio::awaitable<void> read_shared(std::string& out, amf::document& doc);
  void append_polled(std::string& out, amf::document& doc, const broker::batch& b);

  broker& broker_;
  std::shared_ptr<broker::waiter> waiter_;
  std::string stream_id_;
  std::size_t kickstart_;
  std::chrono::milliseconds heartbeat_;
  std::size_t max_bytes_;
  std::vector<broker::moved> last_;                  ///< the cursors the last piece's polls moved
  std::vector<broker::waiter::handed> last_handed_;  ///< and what it carried handed over
  std::vector<broker::waiter::handed> taken_;        ///< (kept for its capacity)
  std::string out_;                                  ///< what `next` gave last
  /// When what the last poll held back by frequency is due (throttle_outbound): read then.
  std::chrono::steady_clock::time_point due_ = std::chrono::steady_clock::time_point::max();
  bool opened_ = false, done_ = false;
};

}  // namespace amfgate::messaging
