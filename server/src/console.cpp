#include "amfgate/server/console.hpp"

#include <nlohmann/json.hpp>

namespace amfgate::server {

namespace console_files {
// console_files.cpp, generated from server/console at build time.
extern const std::pair<std::string_view, std::string_view> all[];
extern const std::size_t count;
}  // namespace console_files

std::optional<http_reply> console::asset(std::string_view path) const {
  std::string_view name = path == "/console" || path == "/console/" ? "index.html" : path;
  if (name.starts_with("/console/")) name.remove_prefix(9);
  for (std::size_t i = 0; i < console_files::count; ++i) {
    if (console_files::all[i].first != name) continue;
    http_reply r;
    r.content_type = name.ends_with(".html") ? "text/html; charset=utf-8"
                     : name.ends_with(".js") ? "text/javascript; charset=utf-8"
                                             : "text/css; charset=utf-8";
    r.body = console_files::all[i].second;
    // The page runs no script but its own, and no one frames it.
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'self'; frame-ancestors 'none'; base-uri 'none'");
    r.headers.emplace_back("X-Content-Type-Options", "nosniff");
    return r;
  }
  return std::nullopt;
}

http_reply console::services() const {
  auto all = nlohmann::ordered_json::array();
  for (const auto& s : services_.describe()) {
    auto methods = nlohmann::ordered_json::array();
    for (const auto& m : s.methods) {
      methods.push_back({{"name", m.name}, {"parameters", m.parameters}, {"returns", m.result}});
    }
    all.push_back({{"name", s.name}, {"methods", methods}});
  }
  http_reply r;
  r.content_type = "application/json";
  r.body = all.dump();
  return r;
}

}  // namespace amfgate::server
