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

// One description per settings struct, `describe(v, s)` below: its keys in order, each with
// its field, its form and its bounds, then the checks across its fields. `reader` walks a
// description to apply a JSON object over the struct, naming every error by its path;
// `writer` walks the same description to print the struct. So a key is read exactly when it
// is printed (--print-config, config/amfgate.json), and the README's table is checked against
// what is printed (tests/config/config_test.cpp). A new key is one line in one description.

std::string expected_got(const std::string& path, std::string_view expected, const json& got) {
  return (path.empty() ? "/" : path) + ": expected " + std::string(expected) + ", got " +
         got.dump();
}

std::string list_of(std::initializer_list<const char*> allowed, bool quoted = false) {
  std::string list;
  for (const char* a : allowed) {
    list += (list.empty() ? "" : ", ") + (quoted ? json(a).dump() : std::string(a));
  }
  return list;
}

class reader {
 public:
  reader(const json& in, std::string path, std::vector<std::string>& errors,
         std::string_view expected = "an object")
      : in_(in.is_object() ? &in : nullptr), path_(std::move(path)), errors_(errors) {
    if (!in_) errors_.push_back(expected_got(path_, expected, in));
  }
  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;

  /// Reads `in` at `path` by `keys(reader&)`, then says which keys it did not know.
  template <class F>
  static void walk(const json& in, std::string path, std::vector<std::string>& errors, F keys) {
    reader r(in, std::move(path), errors);
    keys(r);
    r.unknown_keys();
  }

  void text(std::string_view key, std::string& out) {
    read(key, [&](const json& v, const std::string& p) {
      if (!v.is_string()) return fail(p, "a string", v);
      out = v.get<std::string>();
    });
  }
  /// As `text`; printed only when not empty.
  void maybe_text(std::string_view key, std::string& out) { text(key, out); }
  void boolean(std::string_view key, bool& out) {
    read(key, [&](const json& v, const std::string& p) {
      if (!v.is_boolean()) return fail(p, "true or false", v);
      out = v.get<bool>();
    });
  }
  /// true, false, or null: as `debug`.
  void maybe_boolean(std::string_view key, std::optional<bool>& out) {
    read(key, [&](const json& v, const std::string& p) {
      if (v.is_null()) return out.reset();
      if (!v.is_boolean()) return fail(p, "true, false or null (on in debug mode only)", v);
      out = v.get<bool>();
    });
  }
  template <class T>
  void integer(std::string_view key, T& out, std::uint64_t min, std::uint64_t max) {
    read(key, [&](const json& v, const std::string& p) { read_integer(v, p, out, min, max); });
  }
  void millis(std::string_view key, milliseconds& out) {
    read(key, [&](const json& v, const std::string& p) { read_millis(v, p, out); });
  }
  /// Milliseconds, or null for none.
  void maybe_millis(std::string_view key, std::optional<milliseconds>& out) {
    read(key, [&](const json& v, const std::string& p) {
      if (v.is_null()) return out.reset();
      read_millis(v, p, out.emplace());
    });
  }
  void strings(std::string_view key, std::vector<std::string>& out) {
    read(key, [&](const json& v, const std::string& p) {
      if (!v.is_array()) return fail(p, "an array of strings", v);
      out.clear();
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i].is_string()) {
          out.push_back(v[i].get<std::string>());
        } else {
          fail(p + "/" + std::to_string(i), "a string", v[i]);
        }
      }
    });
  }
  void one_of(std::string_view key, std::string& out, std::initializer_list<const char*> allowed) {
    read(key, [&](const json& v, const std::string& p) {
      if (!allowed_value(v, allowed)) return fail(p, "one of " + list_of(allowed), v);
      out = v.get<std::string>();
    });
  }
  /// One of `allowed`, or null, which means `if_null`.
  void maybe_one_of(std::string_view key, std::optional<std::string>& out,
                    std::initializer_list<const char*> allowed, std::string_view if_null) {
    read(key, [&](const json& v, const std::string& p) {
      if (v.is_null()) return out.reset();
      if (!allowed_value(v, allowed)) {
        return fail(p, list_of(allowed, true) + " or null (" + std::string(if_null) + ")", v);
      }
      out = v.get<std::string>();
    });
  }
  /// An object whose keys are `describe(v, out)`'s.
  template <class S>
  void section(std::string_view key, S& out) {
    read(key, [&](const json& v, const std::string& p) {
      walk(v, p, errors_, [&](reader& r) { describe(r, out); });
    });
  }
  /// As `section`, or null for none.
  template <class S>
  void maybe_section(std::string_view key, std::optional<S>& out) {
    read(key, [&](const json& v, const std::string& p) {
      if (v.is_null()) return out.reset();
      S x = out.value_or(S{});
      walk(v, p, errors_, [&](reader& r) { describe(r, x); });
      out = std::move(x);
    });
  }
  /// An object whose keys `keys(v)` describes: fields of the struct being described.
  template <class F>
  void group(std::string_view key, F keys) {
    read(key, [&](const json& v, const std::string& p) { walk(v, p, errors_, keys); });
  }
  /// An object of "name": section, each described by `describe(v, S&)`.
  template <class M>
  void sections(std::string_view key, M& out, std::string_view expected) {
    read(key, [&](const json& v, const std::string& p) {
      if (!v.is_object()) return fail(p, expected, v);
      for (const auto& [name, entry] : v.items()) {
        walk(entry, p + "/" + name, errors_, [&](reader& r) { describe(r, out[name]); });
      }
    });
  }
  /// An object of "name": milliseconds.
  void millis_by_name(std::string_view key, std::map<std::string, milliseconds>& out,
                      std::string_view expected) {
    read(key, [&](const json& v, const std::string& p) {
      if (!v.is_object()) return fail(p, expected, v);
      for (const auto& [name, ms] : v.items()) read_millis(ms, p + "/" + name, out[name]);
    });
  }
  /// An object of "name": string.
  void names_by_name(std::string_view key, std::map<std::string, std::string>& out,
                     std::string_view expected) {
    read(key, [&](const json& v, const std::string& p) {
      if (!v.is_object()) return fail(p, expected, v);
      for (const auto& [name, text] : v.items()) {
        if (!text.is_string()) {
          fail(p + "/" + name, "a string", text);
        } else {
          out[name] = text.get<std::string>();
        }
      }
    });
  }
  /// An array of sections, which replaces the default one.
  template <class S>
  void list(std::string_view key, std::vector<S>& out, std::string_view expected) {
    read(key, [&](const json& v, const std::string& p) {
      if (!v.is_array()) return fail(p, expected, v);
      out.clear();
      for (std::size_t i = 0; i < v.size(); ++i) {
        S x;
        walk(v[i], p + "/" + std::to_string(i), errors_, [&](reader& r) { describe(r, x); });
        out.push_back(std::move(x));
      }
    });
  }
  /// An object of "name": any object, kept as its JSON text (the services' own settings).
  void objects(std::string_view key, std::map<std::string, std::string>& out,
               std::string_view expected, std::string_view each) {
    read(key, [&](const json& v, const std::string& p) {
      if (!v.is_object()) return fail(p, expected, v);
      for (const auto& [name, entry] : v.items()) {
        if (entry.is_object()) {
          out[name] = entry.dump();
        } else {
          fail(p + "/" + name, each, entry);
        }
      }
    });
  }
  /// A check across fields, after they are read: "<path>/<key>: expected ..., got `got`".
  template <class T>
  void expect(bool ok, std::string_view key, std::string_view expected, const T& got) {
    if (!ok) fail(at(key), expected, json(got));
  }
  /// A check across fields, after they are read: "<path>/<key>: `message`".
  void require(bool ok, std::string_view key, std::string_view message) {
    if (!ok) errors_.push_back(at(key) + ": " + std::string(message));
  }

 private:
  void unknown_keys() {
    if (!in_) return;
    for (const auto& [key, v] : in_->items()) {
      if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
      std::string known;
      for (const auto k : known_) known += (known.empty() ? "" : ", ") + std::string(k);
      errors_.push_back(path_ + "/" + key + ": unknown key (known here: " + known + ")");
    }
  }

  template <class F>
  void read(std::string_view key, F f) {
    known_.push_back(key);
    if (!in_) return;
    if (const auto it = in_->find(key); it != in_->end()) f(*it, at(key));
  }
  std::string at(std::string_view key) const { return path_ + "/" + std::string(key); }
  void fail(const std::string& path, std::string_view expected, const json& got) {
    errors_.push_back(expected_got(path, expected, got));
  }
  static bool allowed_value(const json& v, std::initializer_list<const char*> allowed) {
    return v.is_string() &&
           std::find(allowed.begin(), allowed.end(), v.get<std::string>()) != allowed.end();
  }
  template <class T>
  void read_integer(const json& v, const std::string& p, T& out, std::uint64_t min,
                    std::uint64_t max) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min || v.get<std::uint64_t>() > max) {
      return fail(p, "an integer from " + std::to_string(min) + " to " + std::to_string(max), v);
    }
    out = static_cast<T>(v.get<std::uint64_t>());
  }
  void read_millis(const json& v, const std::string& p, milliseconds& out) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 86'400'000) {
      return fail(p, "milliseconds from 0 to 86400000", v);
    }
    out = milliseconds(v.get<std::int64_t>());
  }

  const json* in_;
  std::string path_;
  std::vector<std::string>& errors_;
  std::vector<std::string_view> known_;
};

class writer {
 public:
  explicit writer(json& out) : out_(out) { out_ = json::object(); }

  void text(std::string_view key, const std::string& v) { put(key, v); }
  void maybe_text(std::string_view key, const std::string& v) {
    if (!v.empty()) put(key, v);
  }
  void boolean(std::string_view key, bool v) { put(key, v); }
  void maybe_boolean(std::string_view key, const std::optional<bool>& v) {
    put(key, v ? json(*v) : json(nullptr));
  }
  template <class T>
  void integer(std::string_view key, T v, std::uint64_t, std::uint64_t) {
    put(key, v);
  }
  void millis(std::string_view key, milliseconds v) { put(key, v.count()); }
  void maybe_millis(std::string_view key, const std::optional<milliseconds>& v) {
    put(key, v ? json(v->count()) : json(nullptr));
  }
  void strings(std::string_view key, const std::vector<std::string>& v) { put(key, v); }
  void one_of(std::string_view key, const std::string& v, std::initializer_list<const char*>) {
    put(key, v);
  }
  void maybe_one_of(std::string_view key, const std::optional<std::string>& v,
                    std::initializer_list<const char*>, std::string_view) {
    put(key, v ? json(*v) : json(nullptr));
  }
  template <class S>
  void section(std::string_view key, S& v) {
    writer w(slot(key));
    describe(w, v);
  }
  template <class S>
  void maybe_section(std::string_view key, std::optional<S>& v) {
    if (!v) return put(key, nullptr);
    section(key, *v);
  }
  template <class F>
  void group(std::string_view key, F keys) {
    writer w(slot(key));
    keys(w);
  }
  template <class M>
  void sections(std::string_view key, M& v, std::string_view) {
    json& all = slot(key) = json::object();
    for (auto& [name, s] : v) {
      writer w(all[name]);
      describe(w, s);
    }
  }
  void millis_by_name(std::string_view key, const std::map<std::string, milliseconds>& v,
                      std::string_view) {
    json& all = slot(key) = json::object();
    for (const auto& [name, ms] : v) all[name] = ms.count();
  }
  void names_by_name(std::string_view key, const std::map<std::string, std::string>& v,
                     std::string_view) {
    json& all = slot(key) = json::object();
    for (const auto& [name, text] : v) all[name] = text;
  }
  template <class S>
  void list(std::string_view key, std::vector<S>& v, std::string_view) {
    json& all = slot(key) = json::array();
    for (auto& s : v) {
      writer w(all.emplace_back());
      describe(w, s);
    }
  }
  void objects(std::string_view key, const std::map<std::string, std::string>& v, std::string_view,
               std::string_view) {
    json& all = slot(key) = json::object();
    for (const auto& [name, text] : v) all[name] = json::parse(text);
  }
  template <class T>
  void expect(bool, std::string_view, std::string_view, const T&) {}
  void require(bool, std::string_view, std::string_view) {}

 private:
  json& slot(std::string_view key) { return out_[std::string(key)]; }
  template <class T>
  void put(std::string_view key, T&& v) {
    slot(key) = std::forward<T>(v);
  }

  json& out_;
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

// The descriptions, in the order that --print-config prints.

template <class V>
void describe(V& v, listen_settings& l) {
  v.text("address", l.address);
  v.integer("port", l.port, 0, 65535);
}

template <class V>
void describe(V& v, limit_settings& l) {
  v.integer("max_body_bytes", l.max_body_bytes, 1, std::uint64_t{1} << 32);
  v.integer("max_header_bytes", l.max_header_bytes, 1024, 1 << 20);
  v.integer("max_connections", l.max_connections, 1, 1'000'000);
  v.integer("max_connections_per_client", l.max_connections_per_client, 0, 1'000'000);
  v.integer("max_requests_per_client", l.max_requests_per_client, 0, 1'000'000);
  v.integer("max_inflight_bytes", l.max_inflight_bytes, 1 << 20, std::uint64_t{1} << 40);
  v.integer("max_response_bytes", l.max_response_bytes, 1024, std::uint64_t{1} << 32);
  v.integer("max_decoded_bytes", l.max_decoded_bytes, 1 << 20, std::uint64_t{1} << 40);
  v.integer("max_credential_bytes", l.max_credential_bytes, 16, 65536);
  v.millis("header_timeout_ms", l.header_timeout);
  v.millis("read_timeout_ms", l.read_timeout);
  v.millis("idle_timeout_ms", l.idle_timeout);
  v.integer("max_depth", l.max_depth, 1, 4096);
  v.millis("call_timeout_ms", l.call_timeout);
  v.millis_by_name("call_timeouts", l.call_timeouts,
                   "an object of \"Service[.method]\": milliseconds");
}

template <class V>
void describe(V& v, worker_settings& w) {
  v.integer("threads", w.threads, 0, 4096);
  v.integer("max_queue", w.max_queue, 0, 1'000'000);
}

template <class V>
void describe(V& v, login_settings& l) {
  v.integer("max_failures", l.max_failures, 1, 1'000'000);
  v.millis("window_ms", l.window);
  v.millis("backoff_ms", l.backoff);
}

template <class V>
void describe(V& v, log_sink& s) {
  v.one_of("type", s.type, {"stdout", "stderr", "file"});
  v.maybe_text("path", s.path);
  v.require(s.type != "file" || !s.path.empty(), "path", "a file sink needs a path");
}

template <class V>
void describe(V& v, log_settings& l) {
  v.one_of("level", l.level, {"trace", "debug", "info", "warn", "error", "critical", "off"});
  v.boolean("access", l.access);
  v.list("sinks", l.sinks, "an array of sinks");
}

template <class V>
void describe(V& v, crossdomain_settings& x) {
  v.strings("allow_domains", x.allow_domains);
  v.boolean("secure", x.secure);
  for (const auto& d : x.allow_domains) {
    v.expect(d.find_first_of("<>\"&'") == std::string::npos, "allow_domains", "domain names", d);
  }
}

template <class V>
void describe(V& v, cors_settings& x) {
  v.strings("allow_origins", x.allow_origins);
  v.boolean("allow_credentials", x.allow_credentials);
  v.integer("max_age_s", x.max_age_s, 0, 86'400);
  v.strings("allow_headers", x.allow_headers);
  for (std::size_t i = 0; i < x.allow_origins.size(); ++i) {
    const auto& o = x.allow_origins[i];
    const std::string key = "allow_origins/" + std::to_string(i);
    if (o == "*") {
      v.require(!x.allow_credentials, key,
                "\"*\" cannot go with \"allow_credentials\": true (browsers refuse credentials "
                "for any origin); list the origins");
    } else {
      v.expect(valid_origin(o), key, "\"*\" or an origin, scheme://host[:port] with no path", o);
    }
  }
  for (std::size_t i = 0; i < x.allow_headers.size(); ++i) {
    v.expect(is_token(x.allow_headers[i]), "allow_headers/" + std::to_string(i), "a header name",
             x.allow_headers[i]);
  }
}

template <class V>
void describe(V& v, json_endpoint_settings& j) {
  v.boolean("enabled", j.enabled);
}

template <class V>
void describe(V& v, console_settings& c) {
  v.maybe_boolean("enabled", c.enabled);
  v.strings("roles", c.roles);
}

template <class V>
void describe(V& v, redis_settings& r) {
  v.text("host", r.host);
  v.integer("port", r.port, 1, 65535);
  v.text("password", r.password);
  v.integer("db", r.db, 0, 15);
  v.text("key_prefix", r.key_prefix);
  v.millis("connect_timeout_ms", r.connect_timeout);
  v.millis("command_timeout_ms", r.command_timeout);
}

template <class V>
void describe(V& v, session_settings& s) {
  v.one_of("store", s.store, {"memory", "redis"});
  v.integer("max_sessions", s.max_sessions, 1, 100'000'000);
  v.millis("idle_timeout_ms", s.idle_timeout);
  v.text("cookie", s.cookie);
  v.boolean("cookie_secure", s.cookie_secure);
  v.one_of("cookie_same_site", s.cookie_same_site, {"Strict", "Lax", "None"});
  v.section("redis", s.redis);
  v.require(s.cookie_same_site != "None" || s.cookie_secure, "cookie_same_site",
            "\"None\" requires \"cookie_secure\": true (browsers drop a SameSite=None cookie "
            "that is not Secure)");
  v.expect(!s.cookie.empty() && s.cookie.find_first_of(" ;=,\"\t") == std::string::npos, "cookie",
           "a cookie name (no spaces, ';', '=', ',' or quotes)", s.cookie);
}

template <class V>
void describe(V& v, user& u) {
  v.text("name", u.name);
  v.text("password", u.password);
  v.strings("roles", u.roles);
  v.require(!u.name.empty(), "name", "a user needs a name");
  const bool hashed = u.password.starts_with("$y$") || u.password.starts_with("$6$") ||
                      u.password.starts_with("$5$") || u.password.starts_with("$2b$");
  v.require(hashed, "password",
            "expected a crypt(3) hash ($y$..., $6$...; make one with amfgate --hash-password), "
            "not plain text");
}

template <class V>
void describe(V& v, access_rule& r) {
  v.boolean("authenticated", r.authenticated);
  v.strings("roles", r.roles);
}

template <class V>
void describe(V& v, destination_settings& d) {
  v.boolean("allow_subtopics", d.allow_subtopics);
  v.text("subtopic_separator", d.subtopic_separator);
  v.boolean("disallow_wildcard_subtopics", d.disallow_wildcard_subtopics);
  v.maybe_section("send", d.send);
  v.maybe_section("subscribe", d.subscribe);
  v.maybe_millis("message_ttl_ms", d.message_ttl);
  v.group("retention", [&](auto& r) {
    r.integer("max_messages", d.max_messages, 1, 10'000'000);
    r.integer("max_bytes", d.max_bytes, 1024, std::uint64_t{1} << 34);
  });
  v.maybe_text("forward", d.forward);
  v.group("throttle_inbound", [&](auto& t) {
    t.integer("max_frequency", d.throttle_inbound.max_frequency, 0, 1'000'000);
    t.integer("max_client_frequency", d.throttle_inbound.max_client_frequency, 0, 1'000'000);
    t.one_of("policy", d.throttle_inbound.policy, {"error", "ignore"});
  });
  v.group("throttle_outbound", [&](auto& t) {
    t.integer("max_client_frequency", d.throttle_outbound.max_client_frequency, 0, 1'000'000);
    t.one_of("policy", d.throttle_outbound.policy, {"buffer", "conflate", "ignore"});
  });
  v.millis("subscription_timeout_ms", d.subscription_timeout);
  v.maybe_text("authorize", d.authorize);
  v.expect(!d.subtopic_separator.empty() && d.subtopic_separator.find('*') == std::string::npos,
           "subtopic_separator", "a separator (not empty, no '*')", d.subtopic_separator);
}

template <class V>
void describe(V& v, messaging_settings& m) {
  v.millis("poll_wait_ms", m.poll_wait);
  v.millis("client_wait_ms", m.client_wait);
  v.millis("busy_wait_ms", m.busy_wait);
  v.integer("max_parked", m.max_parked, 0, 10'000'000);
  v.integer("max_streams", m.max_streams, 0, 10'000'000);
  v.integer("max_held_per_session", m.max_held_per_session, 0, 1'000'000);
  v.millis("stream_heartbeat_ms", m.stream_heartbeat);
  v.integer("max_messages_per_poll", m.max_messages_per_poll, 1, 1'000'000);
  v.integer("max_subscriptions", m.max_subscriptions, 1, 100'000'000);
  v.integer("max_subscriptions_per_client", m.max_subscriptions_per_client, 1, 1'000'000);
  v.integer("max_clients_per_caller", m.max_clients_per_caller, 0, 100'000'000);
  v.integer("max_subscriptions_per_caller", m.max_subscriptions_per_caller, 0, 100'000'000);
  v.integer("max_filters_per_subscription", m.max_filters_per_subscription, 1, 10'000);
  v.integer("max_header_bytes", m.max_header_bytes, 256, std::uint64_t{1} << 30);
  v.integer("max_id_bytes", m.max_id_bytes, 36, 4096);
  v.millis("client_idle_timeout_ms", m.client_idle_timeout);
  v.millis("resume_window_ms", m.resume_window);
  v.maybe_one_of("store", m.store, {"memory", "redis"}, "as sessions.store");
  v.text("redis_key_prefix", m.redis_key_prefix);
  v.sections("destinations", m.destinations, "an object of \"name\": destination");
  v.expect(m.stream_heartbeat >= milliseconds(100), "stream_heartbeat_ms",
           "at least 100 milliseconds", m.stream_heartbeat.count());
}

// What an upstream's url may be (the bridge parses it again, into its parts).
bool valid_upstream_url(std::string_view u) {
  const bool unix_socket = u.starts_with("unix:/") || u.starts_with("http://unix:/");
  const bool web =
      (u.starts_with("http://") && u.size() > 7) || (u.starts_with("https://") && u.size() > 8);
  return (unix_socket || web) && u.find_first_of(" \t\r\n") == std::string_view::npos;
}

template <class V>
void describe(V& v, upstream_settings& u) {
  v.text("url", u.url);
  v.one_of("mapping", u.mapping, {"plain", "typed"});
  v.integer("max_connections", u.max_connections, 1, 100'000);
  v.integer("max_inflight", u.max_inflight, 1, 1'000'000);
  v.millis("connect_timeout_ms", u.connect_timeout);
  v.millis("read_timeout_ms", u.read_timeout);
  v.millis("idle_timeout_ms", u.idle_timeout);
  v.integer("failure_threshold", u.failure_threshold, 1, 1'000'000);
  v.millis("down_ms", u.down);
  v.maybe_text("ca_file", u.ca_file);
  v.strings("forward_headers", u.forward_headers);
  v.integer("max_request_bytes", u.max_request_bytes, 1024, std::uint64_t{1} << 32);
  v.expect(valid_upstream_url(u.url), "url",
           "http://host[:port]/path/, https://..., unix:/path.sock or "
           "http://unix:/path.sock:/path/",
           u.url);
  v.expect(u.max_inflight >= u.max_connections, "max_inflight",
           "at least max_connections (" + std::to_string(u.max_connections) + ")", u.max_inflight);
}

template <class V>
void describe(V& v, publish_settings& p) {
  v.boolean("enabled", p.enabled);
  v.text("path", p.path);
  v.strings("tokens", p.tokens);
  v.strings("roles", p.roles);
  v.maybe_section("listen", p.listen);
  v.expect(p.path.starts_with('/') && p.path.ends_with('/'), "path",
           "a path that starts and ends with /", p.path);
  for (std::size_t i = 0; i < p.tokens.size(); ++i) {
    v.expect(p.tokens[i].size() >= 16, "tokens/" + std::to_string(i),
             "a token of at least 16 characters", std::string(p.tokens[i].size(), '*'));
  }
  v.require(!p.enabled || !p.tokens.empty() || !p.roles.empty(), "enabled",
            "publishing needs \"tokens\" or \"roles\": it is never open to anyone");
}

template <class V>
void describe(V& v, gateway_config& c) {
  v.section("listen", c.listen);
  v.integer("threads", c.threads, 0, 256);
  v.strings("gateway_paths", c.gateway_paths);
  for (std::size_t i = 0; i < c.gateway_paths.size(); ++i) {
    v.expect(c.gateway_paths[i].starts_with('/'), "gateway_paths/" + std::to_string(i),
             "a path starting with /", c.gateway_paths[i]);
  }
  v.text("default_service", c.default_service);
  v.boolean("debug", c.debug);
  v.maybe_boolean("introspection", c.introspection);
  v.millis("shutdown_grace_ms", c.shutdown_grace);
  v.millis("shutdown_idle_wait_ms", c.shutdown_idle_wait);
  v.section("limits", c.limits);
  v.section("workers", c.workers);
  v.section("logins", c.logins);
  v.section("log", c.log);
  v.maybe_section("crossdomain", c.crossdomain);
  v.section("cors", c.cors);
  v.section("json_endpoint", c.json_endpoint);
  v.section("console", c.console);
  v.section("sessions", c.sessions);
  v.boolean("small_messages", c.small_messages);
  v.boolean("ruffle_collections_as_arrays", c.ruffle_collections_as_arrays);
  v.section("messaging", c.messaging);
  v.list("users", c.users, "an array of users");
  v.sections("access", c.access, "an object of \"Service[.method]\": rule");
  v.sections("upstreams", c.upstreams, "an object of \"name\": upstream");
  v.names_by_name("bridge", c.bridge, "an object of \"Service[.method]\": upstream name");
  for (const auto& [target, upstream] : c.bridge) {
    v.expect(c.upstreams.count(upstream) > 0, "bridge/" + target, "the name of an upstream",
             upstream);
    v.expect(!target.empty() && target.front() != '.' && target.back() != '.', "bridge/" + target,
             "a target \"Service\" or \"Service.method\"", target);
  }
  for (const auto& [name, d] : c.messaging.destinations) {
    v.expect(d.forward.empty() || c.upstreams.count(d.forward) > 0,
             "messaging/destinations/" + name + "/forward", "the name of an upstream", d.forward);
    v.expect(d.authorize.empty() || c.upstreams.count(d.authorize) > 0,
             "messaging/destinations/" + name + "/authorize", "the name of an upstream",
             d.authorize);
  }
  v.section("publish", c.publish);
  v.objects("services", c.services, "an object of \"Service\": its settings",
            "an object (the service's own settings)");
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
  std::vector<std::string> errors;
  reader::walk(j, "", errors, [&](reader& r) { describe(r, c); });
  if (!errors.empty()) throw error(errors);
  return c;
}

gateway_config load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw error({path + ": cannot read the config file"});
  return parse(std::string(std::istreambuf_iterator<char>(f), {}));
}

std::string to_json_text(const gateway_config& c) {
  json j;
  {
    gateway_config copy = c;  // the description's walks take what they read and print alike
    writer w(j);
    describe(w, copy);
  }
  std::string out = j.dump(2);
  out += '\n';
  return out;
}

std::string defaults_json() {
  const gateway_config defaults;
  return to_json_text(defaults);
}

}  // namespace amfgate::config
