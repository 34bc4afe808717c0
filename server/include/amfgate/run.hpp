// A daemon of your own: amfgate's command line, settings, logging, session store, signals and
// HTTP server around the services that `setup` binds.
//
//   int main(int argc, char** argv) {
//     return amfgate::run(argc, argv, [](amfgate::services::registry& r,
//                                        const amfgate::config::gateway_config&) {
//       r.bind("Inventory", "count", [](std::string item) { ... });
//     });
//   }
#pragma once

#include <functional>

#include "amfgate/config.hpp"
#include "amfgate/services/registry.hpp"

namespace amfgate {

/// Binds the application's services; runs once, before the daemon serves. The echo services
/// are bound already (and introspection after, when the settings turn it on).
using setup = std::function<void(services::registry&, const config::gateway_config&)>;

/// Parses `argv` as `amfgate` does (--config, --check-config, ...), runs the daemon until
/// SIGTERM or SIGINT, and returns the process exit status.
int run(int argc, char** argv, const setup& bind_services);

}  // namespace amfgate
