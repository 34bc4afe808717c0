#include "amfgate/config.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>

namespace amfgate::config {

namespace {

using json = nlohmann::ordered_json;

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += (s.empty() ? "" : "\n") + l;
  return s;
}

// Walks a JSON document, collecting every error with its path.
class walker {
 public:
  using field = std::function<void(const json&, const std::string&)>;

  std::vector<std::string> errors;

  void fail(const std::string& path, const std::string& expected, const json& got) {
    errors.push_back((path.empty() ? "/" : path) + ": expected " + expected + ", got " +
                     got.dump());
  }

  void object(const json& j, const std::string& path,
              const std::vector<std::pair<std::string, field>>& fields) {
    if (!j.is_object()) return fail(path, "an object", j);
    for (const auto& [key, v] : j.items()) {
      auto it =
          std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == key; });
      if (it == fields.end()) {
        std::string known;
        for (const auto& f : fields) known += (known.empty() ? "" : ", ") + f.first;
        errors.push_back(path + "/" + key + ": unknown key (known here: " + known + ")");
        continue;
      }
      it->second(v, path + "/" + key);
    }
  }

  field string(std::string& out) {
    return [this, &out](const json& v, const std::string& p) {
      if (v.is_string()) {
        out = v.get<std::string>();
      } else {
        fail(p, "a string", v);
      }
    };
  }
  field boolean(bool& out) {
    return [this, &out](const json& v, const std::string& p) {
      if (v.is_boolean()) {
        out = v.get<bool>();
      } else {
        fail(p, "true or false", v);
      }
    };
  }
  /// true, false, or null: as `debug`.
  field debug_default(std::optional<bool>& out) {
    return [this, &out](const json& v, const std::string& p) {
      if (v.is_null()) {
        out.reset();
      } else if (v.is_boolean()) {
        out = v.get<bool>();
      } else {
        fail(p, "true, false or null (on in debug mode only)", v);
      }
    };
  }
  template <class T>
  field integer(T& out, std::uint64_t min, std::uint64_t max) {
    return [this, &out, min, max](const json& v, const std::string& p) {
      if (v.is_number_unsigned() && v.get<std::uint64_t>() >= min &&
          v.get<std::uint64_t>() <= max) {
        out = static_cast<T>(v.get<std::uint64_t>());
      } else {
        fail(p, "an integer from " + std::to_string(min) + " to " + std::to_string(max), v);
      }
    };
  }
  field millis(milliseconds& out) {
    return [this, &out](const json& v, const std::string& p) {
      if (v.is_number_unsigned() && v.get<std::uint64_t>() <= 86'400'000) {
        out = milliseconds(v.get<std::int64_t>());
      } else {
        fail(p, "milliseconds from 0 to 86400000", v);
      }
    };
  }
  field strings(std::vector<std::string>& out) {
    return [this, &out](const json& v, const std::string& p) {
      if (!v.is_array()) return fail(p, "an array of strings", v);
      out.clear();
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i].is_string()) {
          out.push_back(v[i].get<std::string>());
        } else {
          fail(p + "/" + std::to_string(i), "a string", v[i]);
        }
      }
    };
  }
  field one_of(std::string& out, std::vector<std::string> allowed) {
    return [this, &out, allowed](const json& v, const std::string& p) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      if (v.is_string() &&
          std::find(allowed.begin(), allowed.end(), v.get<std::string>()) != allowed.end()) {
        out = v.get<std::string>();
      } else {
        fail(p, "one of " + list, v);
      }
    };
  }
};

// An HTTP token (RFC 9110 5.6.2): what a header name is made of.
bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char ch) {
    return std::isalnum(ch) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(ch)) !=
                                   std::string_view::npos;
  });
}

// What a browser sends as Origin: "http(s)://host[:port]", lower case, no path or slash.
bool valid_origin(std::string_view o) {
  std::string_view rest;
  if (o.starts_with("https://")) {
    rest = o.substr(8);
  } else if (o.starts_with("http://")) {
    rest = o.substr(7);
  } else {
    return false;
  }
  return !rest.empty() && std::all_of(rest.begin(), rest.end(), [](unsigned char ch) {
    return std::islower(ch) || std::isdigit(ch) || ch == '.' || ch == '-' || ch == ':' ||
           ch == '[' || ch == ']';
  });
}

// null (anyone) or {"authenticated", "roles"}, as in "access".
walker::field optional_rule(walker& w, std::optional<access_rule>& out) {
  return [&w, &out](const json& v, const std::string& p) {
    if (v.is_null()) {
      out.reset();
      return;
    }
    access_rule r;
    w.object(v, p, {{"authenticated", w.boolean(r.authenticated)}, {"roles", w.strings(r.roles)}});
    out = r;
  };
}

json rule_json(const std::optional<access_rule>& r) {
  if (!r) return nullptr;
  return {{"authenticated", r->authenticated}, {"roles", r->roles}};
}

void destination(walker& w, const json& v, const std::string& p, destination_settings& d) {
  w.object(v, p,
           {{"allow_subtopics", w.boolean(d.allow_subtopics)},
            {"subtopic_separator", w.string(d.subtopic_separator)},
            {"disallow_wildcard_subtopics", w.boolean(d.disallow_wildcard_subtopics)},
            {"send", optional_rule(w, d.send)},
            {"subscribe", optional_rule(w, d.subscribe)},
            {"message_ttl_ms",
             [&](const json& t, const std::string& tp) {
               if (t.is_null()) return d.message_ttl.reset();
               d.message_ttl.emplace();
               w.millis (*d.message_ttl)(t, tp);
             }},
            {"retention", [&](const json& r, const std::string& rp) {
               w.object(r, rp,
                        {{"max_messages", w.integer(d.max_messages, 1, 10'000'000)},
                         {"max_bytes", w.integer(d.max_bytes, 1024, std::uint64_t{1} << 34)}});
             }}});
  if (d.subtopic_separator.empty() || d.subtopic_separator.find('*') != std::string::npos) {
    w.fail(p + "/subtopic_separator", "a separator (not empty, no '*')", d.subtopic_separator);
  }
}

void messaging(walker& w, const json& v, const std::string& p, messaging_settings& m) {
  w.object(
      v, p,
      {{"poll_wait_ms", w.millis(m.poll_wait)},
       {"client_wait_ms", w.millis(m.client_wait)},
       {"busy_wait_ms", w.millis(m.busy_wait)},
       {"max_parked", w.integer(m.max_parked, 0, 10'000'000)},
       {"max_streams", w.integer(m.max_streams, 0, 10'000'000)},
       {"max_held_per_session", w.integer(m.max_held_per_session, 0, 1'000'000)},
       {"stream_heartbeat_ms", w.millis(m.stream_heartbeat)},
       {"max_messages_per_poll", w.integer(m.max_messages_per_poll, 1, 1'000'000)},
       {"max_subscriptions", w.integer(m.max_subscriptions, 1, 100'000'000)},
       {"max_subscriptions_per_client", w.integer(m.max_subscriptions_per_client, 1, 1'000'000)},
       {"max_clients_per_caller", w.integer(m.max_clients_per_caller, 0, 100'000'000)},
       {"max_subscriptions_per_caller", w.integer(m.max_subscriptions_per_caller, 0, 100'000'000)},
       {"max_filters_per_subscription", w.integer(m.max_filters_per_subscription, 1, 10'000)},
       {"max_header_bytes", w.integer(m.max_header_bytes, 256, std::uint64_t{1} << 30)},
       {"max_id_bytes", w.integer(m.max_id_bytes, 36, 4096)},
       {"client_idle_timeout_ms", w.millis(m.client_idle_timeout)},
       {"store",
        [&](const json& s, const std::string& sp) {
          if (s.is_null()) return m.store.reset();
          if (!s.is_string() || (s != "memory" && s != "redis")) {
            return w.fail(sp, "\"memory\", \"redis\" or null (as sessions.store)", s);
          }
          m.store = s.get<std::string>();
        }},
       {"redis_key_prefix", w.string(m.redis_key_prefix)},
       {"destinations", [&](const json& d, const std::string& dp) {
          if (!d.is_object()) return w.fail(dp, "an object of \"name\": destination", d);
          for (const auto& [name, section] : d.items()) {
            destination(w, section, dp + "/" + name, m.destinations[name]);
          }
        }}});
  if (m.stream_heartbeat < milliseconds(100)) {
    w.fail(p + "/stream_heartbeat_ms", "at least 100 milliseconds", m.stream_heartbeat.count());
  }
}

json messaging_json(const messaging_settings& m) {
  json destinations = json::object();
  for (const auto& [name, d] : m.destinations) {
    destinations[name] = {
        {"allow_subtopics", d.allow_subtopics},
        {"subtopic_separator", d.subtopic_separator},
        {"disallow_wildcard_subtopics", d.disallow_wildcard_subtopics},
        {"send", rule_json(d.send)},
        {"subscribe", rule_json(d.subscribe)},
        {"message_ttl_ms", d.message_ttl ? json(d.message_ttl->count()) : json(nullptr)},
        {"retention", {{"max_messages", d.max_messages}, {"max_bytes", d.max_bytes}}}};
  }
  return {{"poll_wait_ms", m.poll_wait.count()},
          {"client_wait_ms", m.client_wait.count()},
          {"busy_wait_ms", m.busy_wait.count()},
          {"max_parked", m.max_parked},
          {"max_streams", m.max_streams},
          {"max_held_per_session", m.max_held_per_session},
          {"stream_heartbeat_ms", m.stream_heartbeat.count()},
          {"max_messages_per_poll", m.max_messages_per_poll},
          {"max_subscriptions", m.max_subscriptions},
          {"max_subscriptions_per_client", m.max_subscriptions_per_client},
          {"max_clients_per_caller", m.max_clients_per_caller},
          {"max_subscriptions_per_caller", m.max_subscriptions_per_caller},
          {"max_filters_per_subscription", m.max_filters_per_subscription},
          {"max_header_bytes", m.max_header_bytes},
          {"max_id_bytes", m.max_id_bytes},
          {"client_idle_timeout_ms", m.client_idle_timeout.count()},
          {"store", m.store ? json(*m.store) : json(nullptr)},
          {"redis_key_prefix", m.redis_key_prefix},
          {"destinations", destinations}};
}

void apply(walker& w, const json& j, gateway_config& c) {
  w.object(
      j, "",
      {
          {"listen",
           [&](const json& v, const std::string& p) {
             w.object(v, p,
                      {{"address", w.string(c.listen.address)},
                       {"port", w.integer(c.listen.port, 0, 65535)}});
           }},
          {"threads", w.integer(c.threads, 0, 256)},
          {"gateway_paths",
           [&](const json& v, const std::string& p) {
             w.strings(c.gateway_paths)(v, p);
             for (std::size_t i = 0; i < c.gateway_paths.size(); ++i) {
               if (!c.gateway_paths[i].starts_with('/')) {
                 w.fail(p + "/" + std::to_string(i), "a path starting with /", c.gateway_paths[i]);
               }
             }
           }},
          {"default_service", w.string(c.default_service)},
          {"debug", w.boolean(c.debug)},
          {"introspection", w.debug_default(c.introspection)},
          {"shutdown_grace_ms", w.millis(c.shutdown_grace)},
          {"shutdown_idle_wait_ms", w.millis(c.shutdown_idle_wait)},
          {"limits",
           [&](const json& v, const std::string& p) {
             auto& l = c.limits;
             w.object(
                 v, p,
                 {{"max_body_bytes", w.integer(l.max_body_bytes, 1, std::uint64_t{1} << 32)},
                  {"max_header_bytes", w.integer(l.max_header_bytes, 1024, 1 << 20)},
                  {"max_connections", w.integer(l.max_connections, 1, 1'000'000)},
                  {"max_connections_per_client",
                   w.integer(l.max_connections_per_client, 0, 1'000'000)},
                  {"max_requests_per_client", w.integer(l.max_requests_per_client, 0, 1'000'000)},
                  {"max_inflight_bytes",
                   w.integer(l.max_inflight_bytes, 1 << 20, std::uint64_t{1} << 40)},
                  {"max_response_bytes",
                   w.integer(l.max_response_bytes, 1024, std::uint64_t{1} << 32)},
                  {"max_decoded_bytes",
                   w.integer(l.max_decoded_bytes, 1 << 20, std::uint64_t{1} << 40)},
                  {"max_credential_bytes", w.integer(l.max_credential_bytes, 16, 65536)},
                  {"header_timeout_ms", w.millis(l.header_timeout)},
                  {"read_timeout_ms", w.millis(l.read_timeout)},
                  {"idle_timeout_ms", w.millis(l.idle_timeout)},
                  {"max_depth", w.integer(l.max_depth, 1, 4096)},
                  {"call_timeout_ms", w.millis(l.call_timeout)},
                  {"call_timeouts", [&](const json& t, const std::string& tp) {
                     if (!t.is_object()) {
                       return w.fail(tp, "an object of \"Service[.method]\": milliseconds", t);
                     }
                     for (const auto& [target, ms] : t.items()) {
                       w.millis(l.call_timeouts[target])(ms, tp + "/" + target);
                     }
                   }}});
           }},
          {"workers",
           [&](const json& v, const std::string& p) {
             w.object(v, p,
                      {{"threads", w.integer(c.workers.threads, 0, 4096)},
                       {"max_queue", w.integer(c.workers.max_queue, 0, 1'000'000)}});
           }},
          {"logins",
           [&](const json& v, const std::string& p) {
             w.object(v, p,
                      {{"max_failures", w.integer(c.logins.max_failures, 1, 1'000'000)},
                       {"window_ms", w.millis(c.logins.window)},
                       {"backoff_ms", w.millis(c.logins.backoff)}});
           }},
          {"log",
           [&](const json& v, const std::string& p) {
             w.object(v, p,
                      {{"level", w.one_of(c.log.level, {"trace", "debug", "info", "warn", "error",
                                                        "critical", "off"})},
                       {"access", w.boolean(c.log.access)},
                       {"sinks", [&](const json& s, const std::string& sp) {
                          if (!s.is_array()) return w.fail(sp, "an array of sinks", s);
                          c.log.sinks.clear();
                          for (std::size_t i = 0; i < s.size(); ++i) {
                            log_sink sink;
                            const std::string ip = sp + "/" + std::to_string(i);
                            w.object(s[i], ip,
                                     {{"type", w.one_of(sink.type, {"stdout", "stderr", "file"})},
                                      {"path", w.string(sink.path)}});
                            if (sink.type == "file" && sink.path.empty()) {
                              w.errors.push_back(ip + "/path: a file sink needs a path");
                            }
                            c.log.sinks.push_back(sink);
                          }
                        }}});
           }},
          {"crossdomain",
           [&](const json& v, const std::string& p) {
             if (v.is_null()) {
               c.crossdomain.reset();
               return;
             }
             crossdomain_settings x;
             w.object(
                 v, p,
                 {{"allow_domains", w.strings(x.allow_domains)}, {"secure", w.boolean(x.secure)}});
             for (const auto& d : x.allow_domains) {
               if (d.find_first_of("<>\"&'") != std::string::npos) {
                 w.fail(p + "/allow_domains", "domain names", d);
               }
             }
             c.crossdomain = x;
           }},
          {"cors",
           [&](const json& v, const std::string& p) {
             auto& x = c.cors;
             w.object(v, p,
                      {{"allow_origins", w.strings(x.allow_origins)},
                       {"allow_credentials", w.boolean(x.allow_credentials)},
                       {"max_age_s", w.integer(x.max_age_s, 0, 86'400)},
                       {"allow_headers", w.strings(x.allow_headers)}});
             for (std::size_t i = 0; i < x.allow_origins.size(); ++i) {
               const auto& o = x.allow_origins[i];
               if (o == "*") {
                 if (x.allow_credentials) {
                   w.errors.push_back(p + "/allow_origins/" + std::to_string(i) +
                                      ": \"*\" cannot go with \"allow_credentials\": true "
                                      "(browsers refuse credentials for any origin); list the "
                                      "origins");
                 }
               } else if (!valid_origin(o)) {
                 w.fail(p + "/allow_origins/" + std::to_string(i),
                        "\"*\" or an origin, scheme://host[:port] with no path", o);
               }
             }
             for (std::size_t i = 0; i < x.allow_headers.size(); ++i) {
               if (!is_token(x.allow_headers[i])) {
                 w.fail(p + "/allow_headers/" + std::to_string(i), "a header name",
                        x.allow_headers[i]);
               }
             }
           }},
          {"json_endpoint",
           [&](const json& v, const std::string& p) {
             w.object(v, p, {{"enabled", w.boolean(c.json_endpoint.enabled)}});
           }},
          {"console",
           [&](const json& v, const std::string& p) {
             w.object(v, p,
                      {{"enabled", w.debug_default(c.console.enabled)},
                       {"roles", w.strings(c.console.roles)}});
           }},
          {"sessions",
           [&](const json& v, const std::string& p) {
             auto& s = c.sessions;
             w.object(
                 v, p,
                 {{"store", w.one_of(s.store, {"memory", "redis"})},
                  {"max_sessions", w.integer(s.max_sessions, 1, 100'000'000)},
                  {"idle_timeout_ms", w.millis(s.idle_timeout)},
                  {"cookie", w.string(s.cookie)},
                  {"cookie_secure", w.boolean(s.cookie_secure)},
                  {"cookie_same_site", w.one_of(s.cookie_same_site, {"Strict", "Lax", "None"})},
                  {"redis", [&](const json& r, const std::string& rp) {
                     auto& x = s.redis;
                     w.object(r, rp,
                              {{"host", w.string(x.host)},
                               {"port", w.integer(x.port, 1, 65535)},
                               {"password", w.string(x.password)},
                               {"db", w.integer(x.db, 0, 15)},
                               {"key_prefix", w.string(x.key_prefix)},
                               {"connect_timeout_ms", w.millis(x.connect_timeout)},
                               {"command_timeout_ms", w.millis(x.command_timeout)}});
                   }}});
             if (s.cookie_same_site == "None" && !s.cookie_secure) {
               w.errors.push_back(p +
                                  "/cookie_same_site: \"None\" requires \"cookie_secure\": true "
                                  "(browsers drop a SameSite=None cookie that is not Secure)");
             }
             if (s.cookie.empty() || s.cookie.find_first_of(" ;=,\"\t") != std::string::npos) {
               w.fail(p + "/cookie", "a cookie name (no spaces, ';', '=', ',' or quotes)",
                      s.cookie);
             }
           }},
          {"small_messages", w.boolean(c.small_messages)},
          {"ruffle_collections_as_arrays", w.boolean(c.ruffle_collections_as_arrays)},
          {"messaging",
           [&](const json& v, const std::string& p) { messaging(w, v, p, c.messaging); }},
          {"users",
           [&](const json& v, const std::string& p) {
             if (!v.is_array()) return w.fail(p, "an array of users", v);
             c.users.clear();
             for (std::size_t i = 0; i < v.size(); ++i) {
               user u;
               const std::string ip = p + "/" + std::to_string(i);
               w.object(v[i], ip,
                        {{"name", w.string(u.name)},
                         {"password", w.string(u.password)},
                         {"roles", w.strings(u.roles)}});
               if (u.name.empty()) w.errors.push_back(ip + "/name: a user needs a name");
               if (!u.password.starts_with("$y$") && !u.password.starts_with("$6$") &&
                   !u.password.starts_with("$5$") && !u.password.starts_with("$2b$")) {
                 w.errors.push_back(ip +
                                    "/password: expected a crypt(3) hash ($y$..., $6$...; "
                                    "make one with amfgate --hash-password), not plain text");
               }
               c.users.push_back(u);
             }
           }},
          {"access",
           [&](const json& v, const std::string& p) {
             if (!v.is_object()) return w.fail(p, "an object of \"Service[.method]\": rule", v);
             for (const auto& [target, rule] : v.items()) {
               access_rule r;
               w.object(
                   rule, p + "/" + target,
                   {{"authenticated", w.boolean(r.authenticated)}, {"roles", w.strings(r.roles)}});
               c.access[target] = r;
             }
           }},
          {"services",
           [&](const json& v, const std::string& p) {
             if (!v.is_object()) return w.fail(p, "an object of \"Service\": its settings", v);
             for (const auto& [name, section] : v.items()) {
               if (section.is_object()) {
                 c.services[name] = section.dump();
               } else {
                 w.fail(p + "/" + name, "an object (the service's own settings)", section);
               }
             }
           }},
      });
}

json to_json(const gateway_config& c) {
  json sinks = json::array();
  for (const auto& s : c.log.sinks) {
    json j{{"type", s.type}};
    if (!s.path.empty()) j["path"] = s.path;
    sinks.push_back(j);
  }
  json users = json::array();
  for (const auto& u : c.users)
    users.push_back({{"name", u.name}, {"password", u.password}, {"roles", u.roles}});
  json access = json::object();
  for (const auto& [k, r] : c.access) {
    access[k] = {{"authenticated", r.authenticated}, {"roles", r.roles}};
  }
  json timeouts = json::object();
  for (const auto& [k, ms] : c.limits.call_timeouts) timeouts[k] = ms.count();
  json services = json::object();
  for (const auto& [name, text] : c.services) services[name] = json::parse(text);
  json cross = nullptr;
  if (c.crossdomain) {
    cross = {{"allow_domains", c.crossdomain->allow_domains}, {"secure", c.crossdomain->secure}};
  }
  return {
      {"listen", {{"address", c.listen.address}, {"port", c.listen.port}}},
      {"threads", c.threads},
      {"gateway_paths", c.gateway_paths},
      {"default_service", c.default_service},
      {"debug", c.debug},
      {"introspection", c.introspection ? json(*c.introspection) : json(nullptr)},
      {"shutdown_grace_ms", c.shutdown_grace.count()},
      {"shutdown_idle_wait_ms", c.shutdown_idle_wait.count()},
      {"limits",
       {{"max_body_bytes", c.limits.max_body_bytes},
        {"max_header_bytes", c.limits.max_header_bytes},
        {"max_connections", c.limits.max_connections},
        {"max_connections_per_client", c.limits.max_connections_per_client},
        {"max_requests_per_client", c.limits.max_requests_per_client},
        {"max_inflight_bytes", c.limits.max_inflight_bytes},
        {"max_response_bytes", c.limits.max_response_bytes},
        {"max_decoded_bytes", c.limits.max_decoded_bytes},
        {"max_credential_bytes", c.limits.max_credential_bytes},
        {"header_timeout_ms", c.limits.header_timeout.count()},
        {"read_timeout_ms", c.limits.read_timeout.count()},
        {"idle_timeout_ms", c.limits.idle_timeout.count()},
        {"max_depth", c.limits.max_depth},
        {"call_timeout_ms", c.limits.call_timeout.count()},
        {"call_timeouts", timeouts}}},
      {"workers", {{"threads", c.workers.threads}, {"max_queue", c.workers.max_queue}}},
      {"logins",
       {{"max_failures", c.logins.max_failures},
        {"window_ms", c.logins.window.count()},
        {"backoff_ms", c.logins.backoff.count()}}},
      {"log", {{"level", c.log.level}, {"access", c.log.access}, {"sinks", sinks}}},
      {"crossdomain", cross},
      {"cors",
       {{"allow_origins", c.cors.allow_origins},
        {"allow_credentials", c.cors.allow_credentials},
        {"max_age_s", c.cors.max_age_s},
        {"allow_headers", c.cors.allow_headers}}},
      {"json_endpoint", {{"enabled", c.json_endpoint.enabled}}},
      {"console",
       {{"enabled", c.console.enabled ? json(*c.console.enabled) : json(nullptr)},
        {"roles", c.console.roles}}},
      {"sessions",
       {{"store", c.sessions.store},
        {"max_sessions", c.sessions.max_sessions},
        {"idle_timeout_ms", c.sessions.idle_timeout.count()},
        {"cookie", c.sessions.cookie},
        {"cookie_secure", c.sessions.cookie_secure},
        {"cookie_same_site", c.sessions.cookie_same_site},
        {"redis",
         {{"host", c.sessions.redis.host},
          {"port", c.sessions.redis.port},
          {"password", c.sessions.redis.password},
          {"db", c.sessions.redis.db},
          {"key_prefix", c.sessions.redis.key_prefix},
          {"connect_timeout_ms", c.sessions.redis.connect_timeout.count()},
          {"command_timeout_ms", c.sessions.redis.command_timeout.count()}}}}},
      {"small_messages", c.small_messages},
      {"ruffle_collections_as_arrays", c.ruffle_collections_as_arrays},
      {"messaging", messaging_json(c.messaging)},
      {"users", users},
      {"access", access},
      {"services", services},
  };
}

}  // namespace

milliseconds gateway_config::call_timeout(std::string_view service, std::string_view method) const {
  if (!limits.call_timeouts.empty()) {
    auto it = limits.call_timeouts.find(std::string(service) + "." + std::string(method));
    if (it == limits.call_timeouts.end()) it = limits.call_timeouts.find(std::string(service));
    if (it != limits.call_timeouts.end()) return it->second;
  }
  return limits.call_timeout;
}

error::error(const std::vector<std::string>& errors)
    : std::runtime_error(join(errors)), errors_(errors) {}

gateway_config parse(const std::string& json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw error({std::string("/: not JSON: ") + e.what()});
  }
  gateway_config c;
  walker w;
  apply(w, j, c);
  if (!w.errors.empty()) throw error(w.errors);
  return c;
}

gateway_config load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw error({path + ": cannot read the config file"});
  return parse(std::string(std::istreambuf_iterator<char>(f), {}));
}

std::string to_json_text(const gateway_config& c) {
  std::string out = to_json(c).dump(2);
  out += '\n';
  return out;
}

std::string defaults_json() {
  const gateway_config defaults;
  return to_json_text(defaults);
}

}  // namespace amfgate::config
