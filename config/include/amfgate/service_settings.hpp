// A service's own settings: the object under "services": {"<Name>": {...}} of the daemon's
// settings file, read by the service's setup with the daemon's own rules. Every problem names
// its JSON path, a key that nothing read is an error, and all problems are reported together:
// thrown from a setup, `check()`'s error is printed like any other settings error and the
// daemon exits with status 1 (`--check-config` runs the setup too).
//
//   amfgate::config::service_settings s(cfg, "ContactService");
//   const std::string file = s.string("database", "contacts.db");
//   const auto page = s.integer("max_results", 100, 1, 10'000);
//   s.check();  // "/services/ContactService/database: expected a string, got 5"
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "amfgate/config.hpp"

namespace amfgate::config {

class service_settings {
 public:
  /// The section of service `name` (an empty object when the file has none).
  service_settings(const gateway_config& c, std::string name);

  /// The whole section, for settings the typed readers do not cover (mark them with `read`).
  const nlohmann::json& json() const noexcept { return json_; }
  /// The value of `key` (null when absent), marked as read.
  const nlohmann::json& read(std::string_view key);

  std::string string(std::string_view key, std::string fallback);
  bool boolean(std::string_view key, bool fallback);
  std::int64_t integer(std::string_view key, std::int64_t fallback, std::int64_t min,
                       std::int64_t max);

  /// A problem found by the service's own checks: "/services/<name>/<key>: <what>".
  void fail(std::string_view key, std::string_view what);
  /// Throws `error` listing every problem so far, and each key that nothing read.
  void check() const;

 private:
  std::string path(std::string_view key) const;

  std::string name_;
  nlohmann::json json_;
  std::set<std::string, std::less<>> read_;
  std::vector<std::string> errors_;
};

}  // namespace amfgate::config
