// Flex messaging (BlazeDS) messages: typed access to RemotingMessage, CommandMessage,
// AcknowledgeMessage, ErrorMessage and AsyncMessage, in full (sealed object) or small
// (DSK/DSA/DSC externalizable) form, and construction of either form.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "amf/value.hpp"

namespace amf::flex {

inline constexpr std::string_view remoting_alias = "flex.messaging.messages.RemotingMessage";
inline constexpr std::string_view command_alias = "flex.messaging.messages.CommandMessage";
inline constexpr std::string_view acknowledge_alias = "flex.messaging.messages.AcknowledgeMessage";
inline constexpr std::string_view error_alias = "flex.messaging.messages.ErrorMessage";
inline constexpr std::string_view async_alias = "flex.messaging.messages.AsyncMessage";

enum class kind : std::uint8_t { remoting, command, acknowledge, error, async };

/// CommandMessage operation codes.
enum class operation : std::int32_t {
  subscribe = 0,
  unsubscribe = 1,
  poll = 2,
  client_sync = 4,
  client_ping = 5,
  cluster_request = 7,
  login = 8,
  logout = 9,
  subscription_invalidate = 10,
  multi_subscribe = 11,
  disconnect = 12,
  trigger_connect = 13,
  unknown = 10000,
};

/// One message, with views into the document it was read from or will be written to.
/// String fields that are null on the wire are empty here; `client_id` keeps null apart.
struct message {
  flex::kind kind = flex::kind::acknowledge;
  value body = value::null();
  value client_id = value::null();  ///< string or null
  std::string_view destination;
  value headers = value::null();  ///< an object, or null
  std::string_view message_id;
  double timestamp = 0;
  double time_to_live = 0;
  std::string_view correlation_id;  ///< async, acknowledge, error, command
  std::string_view method;          ///< remoting: the operation (method name)
  value source = value::null();     ///< remoting
  std::int32_t command = static_cast<std::int32_t>(operation::unknown);  ///< command
  std::string_view fault_code, fault_string, fault_detail;               ///< error
  value root_cause = value::null(), extended_data = value::null();       ///< error
  bool anonymous = false;  ///< read from an object without a class name, by its shape

  /// The header `name`, or undefined.
  value header(std::string_view name) const;
};

/// Reads a message in full or small form; nullopt if `v` is none of the five classes.
/// Numbers may arrive as AMF3 int or double; ids in small form become UUID text (copied
/// into `doc`).
///
/// An object without a class name (Ruffle writes every object so) is read by its shape, and
/// `anonymous` is set: a numeric `operation` makes a CommandMessage; a string `operation`
/// with a `destination`, a RemotingMessage; `body`, `destination` and `messageId` without an
/// `operation`, an AsyncMessage. Anything else is not a message.
std::optional<message> read(const value& v, document& doc);

/// Builds the full (sealed) form of `m`.
value make(document& doc, const message& m);
/// Builds the small form: DSK for acknowledge, DSA for async, DSC for command. Error and
/// remoting messages have no small form and are built in full.
value make_small(document& doc, const message& m);

/// Now, as Flex messages carry time (timestamp) and AMF dates hold it: milliseconds since the
/// Unix epoch, whole.
double now_ms();

/// A new random UUID in Flex's form: 36 characters, uppercase hex.
std::string new_uuid();
/// The same, in `doc`'s arena (no allocation of its own).
std::string_view new_uuid(document& doc);
/// 16 bytes -> "8814A067-FE0D-3A9C-A274-4AAED9BD7B0B".
std::string uuid_text(std::span<const std::byte> bytes);
/// The 16 bytes of a valid UUID text, or nullopt.
std::optional<std::string> uuid_bytes(std::string_view text);

/// Replaces each ArrayCollection and ArrayList (flex.messaging.io.*) in the graph of `v` by
/// its source array, in place (for clients that cannot read them: Ruffle drops a reply that
/// holds one). Shared and cyclic graphs are walked once.
void collections_as_arrays(value& v);

/// Sets (or adds) header `name` of a message object's headers.
void set_header(document& doc, message& m, std::string_view name, value v);

}  // namespace amf::flex
