#include "amfgate/service_settings.hpp"

namespace amfgate::config {

service_settings::service_settings(const gateway_config& c, std::string name)
    : name_(std::move(name)), json_(nlohmann::json::object()) {
  if (auto it = c.services.find(name_); it != c.services.end()) {
    json_ = nlohmann::json::parse(it->second);
  }
}

std::string service_settings::path(std::string_view key) const {
  return "/services/" + name_ + "/" + std::string(key);
}

const nlohmann::json& service_settings::read(std::string_view key) {
  static const nlohmann::json absent;
  read_.emplace(key);
  const auto it = json_.find(key);
  return it == json_.end() ? absent : *it;
}

std::string service_settings::string(std::string_view key, std::string fallback) {
  const auto& v = read(key);
  if (v.is_null()) return fallback;
  if (v.is_string()) return v.get<std::string>();
  fail(key, "expected a string, got " + v.dump());
  return fallback;
}

bool service_settings::boolean(std::string_view key, bool fallback) {
  const auto& v = read(key);
  if (v.is_null()) return fallback;
  if (v.is_boolean()) return v.get<bool>();
  fail(key, "expected true or false, got " + v.dump());
  return fallback;
}

std::int64_t service_settings::integer(std::string_view key, std::int64_t fallback,
                                       std::int64_t min, std::int64_t max) {
  const auto& v = read(key);
  if (v.is_null()) return fallback;
  // nlohmann keeps a non-negative literal unsigned: compare it unsigned, so 2^64-1 is no -1.
  if (v.is_number_unsigned() && max >= 0 &&
      v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max) && v.get<std::int64_t>() >= min) {
    return v.get<std::int64_t>();
  }
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() >= min &&
      v.get<std::int64_t>() <= max) {
    return v.get<std::int64_t>();
  }
  fail(key, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                ", got " + v.dump());
  return fallback;
}

void service_settings::fail(std::string_view key, std::string_view what) {
  errors_.push_back(path(key) + ": " + std::string(what));
}

void service_settings::check() const {
  std::vector<std::string> all = errors_;
  for (const auto& [key, v] : json_.items()) {
    if (!read_.contains(key)) all.push_back(path(key) + ": unknown key");
  }
  if (!all.empty()) throw error(all);
}

}  // namespace amfgate::config
