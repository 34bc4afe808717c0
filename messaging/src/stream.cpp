#include "amfgate/messaging/stream.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include "amf/encode.hpp"
#include "amf/flex.hpp"

namespace amfgate::messaging {

namespace net = boost::asio;
using wake = broker::wake;

namespace {

// One inner frame: "<hex length>\r\n<bytes>\r\n", its bytes in pieces.
void append_frame(std::string& out, std::initializer_list<std::string_view> bytes) {
  std::size_t total = 0;
  for (const auto b : bytes) total += b.size();
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", total);
  out.append(size, static_cast<std::size_t>(n));
  for (const auto b : bytes) out.append(b);
  out.append("\r\n");
}

// A message as a frame: a standalone AMF3 value (its own reference tables). Full form
// always: every Flex client reads it, small or not (BlazeDS sends DSA when negotiated).
void append_message(std::string& out, const amf::value& message) {
  std::string bytes;
  amf::encode_amf3(message, bytes);
  append_frame(out, {bytes});
}

// A message handed over by the broker: its bytes encoded once, with the subscription's id
// (the message's clientId) between them as an AMF3 string.
void append_handed(std::string& out, const broker::waiter::handed& h, amf::document& doc) {
  const auto [before, after] = broker::encoded_for(*h.message);
  const std::string& id = *h.subscription;
  if (before.empty() || id.empty() || id.size() >= (1U << 27)) {  // (the empty one has no slot)
    append_message(out, broker::message_for(doc, {h.subscription, h.message}));
    return;
  }
  char header[4];  // the inline string's: a U29 of (size << 1 | 1)
  const std::size_t n = amf::write_u29(header, static_cast<std::uint32_t>(id.size() << 1 | 1));
  append_frame(out, {before, std::string_view(header, n), id, after});
}

// What a stream's buffer keeps between pieces, at most.
constexpr std::size_t kept_capacity = 64 << 10;

}  // namespace

std::size_t kickstart_bytes(std::string_view ua) {
  if (ua.find("Android") != std::string_view::npos) return 4010;
  if (ua.find("MSIE") != std::string_view::npos || ua.find("Trident") != std::string_view::npos) {
    return 2048;
  }
  if (ua.find("Safari") != std::string_view::npos) return 512;
  return 0;
}

stream::stream(broker& b, std::shared_ptr<broker::waiter> w, std::string stream_id,
               std::size_t kickstart, std::chrono::milliseconds heartbeat, std::size_t max_bytes)
    : broker_(b),
      waiter_(std::move(w)),
      stream_id_(std::move(stream_id)),
      kickstart_(kickstart),
      heartbeat_(heartbeat),
      max_bytes_(max_bytes) {}

stream::~stream() {
  broker_.unpark(waiter_);
}

void stream::unwritten() {
  // What a poll read goes back first: it was read after what was handed over (which a poll
  // of a later message would otherwise count as read on past).
  auto cursors = std::move(last_);
  const auto handed = broker::unwritten(last_handed_);
  cursors.insert(cursors.end(), handed.begin(), handed.end());
  last_.clear();
  last_handed_.clear();
  if (cursors.empty()) return;
  net::co_spawn(waiter_->timer.get_executor(),
                broker_.rewind(waiter_->flex_client, std::move(cursors)), net::detached);
}

net::awaitable<std::string_view> stream::next() {
  // Its capacity is kept (no allocation per piece), unless a large piece grew it.
  std::string& out = out_;
  if (out.capacity() > kept_capacity) std::string().swap(out);
  out.clear();
  last_.clear();
  last_handed_.clear();
  if (done_) co_return out;
  amf::document doc;
  if (!opened_) {
    opened_ = true;
    // Padding that a buffering User-Agent fills before it passes anything on: one frame of
    // zero bytes (the SDK skips frames that start with 0x00), its framing included.
    const std::size_t framing = 4 + (kickstart_ > 0xfff ? 4 : 3);
    if (kickstart_ > framing) append_frame(out, {std::string(kickstart_ - framing, '\0')});
    amf::flex::message ack;
    ack.kind = amf::flex::kind::acknowledge;
    ack.correlation_id = "open";  // "connected"
    ack.message_id = doc.copy(amf::flex::new_uuid());
    ack.body = doc.string(stream_id_);
    append_message(out, amf::flex::make(doc, ack));
    co_return out;
  }
  for (;;) {
    if (read(out, doc)) co_await read_shared(out, doc);
    if (!out.empty()) co_return out;
    const auto beat = std::chrono::steady_clock::now() + heartbeat_;
    const wake why = co_await waiter_->wait_until(std::min(beat, due_));
    switch (why) {
      case wake::drained: {  // the server closes: what is left, then DISCONNECT, no reconnect
        if (read(out, doc)) co_await read_shared(out, doc);
        amf::flex::message bye;
        bye.kind = amf::flex::kind::command;
        bye.command = static_cast<std::int32_t>(amf::flex::operation::disconnect);
        bye.message_id = doc.copy(amf::flex::new_uuid());
        append_message(out, amf::flex::make(doc, bye));
        done_ = true;
        co_return out;
      }
      case wake::replaced:  // the client's own close, or a disconnect
        done_ = true;
        co_return out;
      case wake::message:
        continue;  // read again
      case wake::none:
        if (due_ < beat) {  // what was held back by its frequency: a poll reads it now
          due_ = std::chrono::steady_clock::time_point::max();
          waiter_->poll_needed = true;
          continue;
        }
        co_return std::string_view("\0", 1);  // silence: a heartbeat
    }
  }
}

bool stream::read(std::string& out, amf::document& doc) {
  // What the broker handed over as it was published (in order, before anything a poll
  // reads), then a poll if something was not. (Not a coroutine: a frame for each piece.)
  broker::take(*waiter_, taken_);
  const auto now = std::chrono::steady_clock::now();
  for (auto& h : taken_) {
    if (h.message->expires < now) continue;  // as a poll passes it
    append_handed(out, h, doc);
    last_handed_.push_back(std::move(h));
  }
  if (broker_.shared()) return true;
  if (!waiter_->poll_needed.exchange(false)) return false;
  try {
    const std::string_view all;  // every subscription
    append_polled(
        out, doc,
        broker_.poll(waiter_->flex_client, all, {waiter_->session, waiter_->address}, max_bytes_));
  } catch (const services::fault&) {
    // No subscriptions yet (a stream opens when its channel connects, before them): the
    // next wake or heartbeat reads again.
  }
  return false;
}

net::awaitable<void> stream::read_shared(std::string& out, amf::document& doc) {
  try {
    const std::string_view all;
    append_polled(out, doc,
                  co_await broker_.async_poll(waiter_->flex_client, all,
                                              {waiter_->session, waiter_->address}, max_bytes_));
  } catch (const services::fault&) {
    // As above, or the share cannot be reached for now.
  }
}

void stream::append_polled(std::string& out, amf::document& doc, const broker::batch& b) {
  for (const auto& e : b.invalidated) append_message(out, broker::notice_for(doc, e));
  for (const auto& d : b.messages) {
    append_message(out, broker::message_for(doc, d));
  }
  last_.insert(last_.end(), b.cursors.begin(), b.cursors.end());
  due_ = b.due;
}

}  // namespace amfgate::messaging
