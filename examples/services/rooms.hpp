// The example of rights per subtopic: who may subscribe to, and send to, which room of a chat
// destination (publisher::authorize; BlazeDS's allowSubscribe and allowSend).
//
//   "services": {"Rooms": {"destination": "chat",
//                          "members": {"lobby": ["ann", "bob"], "a": ["ann"], "b": ["bob"]}}}
//
// A user may subscribe and send to the subtopic "rooms.<room>" only if the room lists them.
// Nobody may use the destination without a subtopic, another subtopic, or a wildcard
// ("rooms.*" would read every room). `Rooms.mine()` answers the caller's rooms. The test
// daemon (tests/server/test_daemon.cpp) binds it; docs/messaging.md shows it.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "amfgate/config.hpp"
#include "amfgate/service_settings.hpp"
#include "amfgate/services/registry.hpp"

namespace examples {

/// Binds Rooms when the settings have a "Rooms" section; throws config::error for a
/// destination that messaging does not have, or members that are not lists of names.
inline void add_rooms(amfgate::services::registry& r, const amfgate::config::gateway_config& c) {
  using amfgate::services::access_request;
  if (!c.services.contains("Rooms")) return;
  amfgate::config::service_settings s(c, "Rooms");
  const std::string destination = s.string("destination", "chat");
  if (!c.messaging.destinations.contains(destination)) {
    s.fail("destination", "no messaging destination \"" + destination +
                              "\" (add it under messaging.destinations)");
  }
  // room: its members
  auto members = std::make_shared<std::map<std::string, std::set<std::string>, std::less<>>>();
  const auto& listed = s.read("members");
  if (!listed.is_null() && !listed.is_object()) s.fail("members", "an object of room: [names]");
  if (listed.is_object()) {
    for (const auto& [room, names] : listed.items()) {
      if (!names.is_array()) s.fail("members", "an object of room: [names]");
      for (const auto& n : names) {
        if (n.is_string()) (*members)[room].insert(n.get<std::string>());
      }
    }
  }
  s.check();
  static constexpr std::string_view prefix = "rooms.";
  r.publisher().authorize(destination, [members](const access_request& a) {
    if (!a.user || !a.subtopic.starts_with(prefix)) return false;
    const auto room = members->find(a.subtopic.substr(prefix.size()));
    return room != members->end() && room->second.contains(a.user->name);
  });
  r.bind("Rooms", "mine", [members](amfgate::services::call_context& ctx) {
    std::vector<std::string> mine;
    for (const auto& [room, names] : *members) {
      if (ctx.user && names.contains(ctx.user->name)) mine.push_back(room);
    }
    return mine;
  });
}

}  // namespace examples
