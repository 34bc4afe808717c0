// Subtopics: a destination's messages divided by a dotted name ("stocks.ibm"), which a
// Consumer selects by pattern ("stocks.*"), as BlazeDS's MessageService does
// (docs/messaging.md).
#pragma once

#include <string_view>

#include "amfgate/config.hpp"

namespace amfgate::messaging {

/// A subtopic pattern checked against a destination's rules: 10553 when the destination
/// allows none, 10554 for an empty token or a `*` inside one, 10560 (subscribe) or 10556
/// (send) for a wildcard where none is allowed.
void check_subtopic(const config::destination_settings& d, std::string_view subtopic, bool sending);
/// Whether a subscription's subtopic (with `*` tokens) selects a message's: token by token,
/// `*` any one token, a trailing `*` any number of deeper ones too (`a.*` selects `a.b.c`,
/// not `a`).
bool subtopic_matches(std::string_view pattern, std::string_view subtopic,
                      std::string_view separator);

}  // namespace amfgate::messaging
