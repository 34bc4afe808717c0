// A daemon of your own: amfgate's command line, settings, logging, session store, signals and
// HTTP server around the services that `setup` binds.
//
//   int main(int argc, char** argv) {
//     return amfgate::run(argc, argv, [](amfgate::services::registry& r,
//                                        const amfgate::config::gateway_config& c) {
//       amfgate::config::service_settings s(c, "Inventory");   // "services": {"Inventory": ...}
//       auto stock = std::make_shared<Stock>(s.string("database", "stock.db"));
//       s.check();
//       r.bind("Inventory", "count", [stock](std::string item) { return stock->count(item); });
//     });
//   }
#pragma once

#include <functional>

#include "amfgate/config.hpp"
#include "amfgate/service_settings.hpp"
#include "amfgate/services/registry.hpp"

namespace amfgate {

/// Binds the application's services; runs once, before the daemon serves (and under
/// --check-config, whose registry is then dropped). The echo services are bound already (and
/// introspection after, when the settings turn it on). A service's own settings are its
/// section of the same file, `config::service_settings(settings, "Name")`; a `config::error`
/// thrown here is printed with the other settings errors and the exit status is 1, as is any
/// other exception (a database that does not open).
using setup = std::function<void(services::registry&, const config::gateway_config&)>;

/// Parses `argv` as `amfgate` does (--config, --check-config, ...), runs the daemon until
/// SIGTERM or SIGINT, and returns the process exit status.
int run(int argc, char** argv, const setup& bind_services);

}  // namespace amfgate
