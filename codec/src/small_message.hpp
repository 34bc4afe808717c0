// Internal: the field layout of BlazeDS small messages (DSK, DSA, DSC), shared by the
// reader and the writer.
#pragma once

#include <span>
#include <string_view>

namespace amf {

/// Field names per flag byte at `level` (0 Abstract, 1 Async, 2 Ack/Command), bit by bit.
/// `third` is 'K' (DSK), 'C' (DSC) or 0 (DSA). Bits past a byte's names are unassigned.
inline std::span<const std::span<const std::string_view>> small_message_fields(int level,
                                                                               char third) {
  static constexpr std::string_view abstract0[] = {
      "body", "clientId", "destination", "headers", "messageId", "timestamp", "timeToLive"};
  static constexpr std::string_view abstract1[] = {"clientIdBytes", "messageIdBytes"};
  static constexpr std::string_view async0[] = {"correlationId", "correlationIdBytes"};
  static constexpr std::string_view command0[] = {"operation"};
  static constexpr std::span<const std::string_view> abstract[] = {abstract0, abstract1};
  static constexpr std::span<const std::string_view> async[] = {async0};
  static constexpr std::span<const std::string_view> command[] = {command0};
  switch (level) {
    case 0:
      return abstract;
    case 1:
      return async;
    default:
      return third == 'C' ? std::span<const std::span<const std::string_view>>(command)
                          : std::span<const std::span<const std::string_view>>{};
  }
}

/// 'K', 'C' or 0 for the alias of a small message class; '?' for any other alias.
inline char small_message_kind(std::string_view alias) {
  if (alias == "DSK") return 'K';
  if (alias == "DSC") return 'C';
  if (alias == "DSA") return 0;
  return '?';
}

}  // namespace amf
