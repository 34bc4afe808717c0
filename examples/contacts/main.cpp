// contacts: amfgate's daemon with ContactService bound. Every flag of amfgate works
// (--config, --check-config, --print-config, --healthcheck, --hash-password); the service's
// settings are its section of the same file:
//   "services": {"ContactService": {"database": "/var/lib/contacts/contacts.db",
//                                   "max_results": 100}}
#include <memory>

#include "amfgate/run.hpp"
#include "contact_service.hpp"

int main(int argc, char** argv) {
  return amfgate::run(
      argc, argv, [](amfgate::services::registry& r, const amfgate::config::gateway_config& c) {
        amfgate::config::service_settings settings(c, "ContactService");
        const std::string database = settings.string("database", "contacts.db");
        const std::int64_t max_results = settings.integer("max_results", 100, 1, 10'000);
        if (database.empty()) settings.fail("database", "expected a file name, got \"\"");
        settings.check();
        contacts::bind(r, std::make_shared<contacts::ContactService>(database, max_results));
      });
}
