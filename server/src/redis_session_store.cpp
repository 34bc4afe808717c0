#include "amfgate/server/redis_session_store.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <cctype>
#include <nlohmann/json.hpp>

namespace amfgate::server {

using services::principal;
using services::random_id;
using services::session;
using services::store_unavailable;

namespace net = boost::asio;
using clock = std::chrono::steady_clock;

namespace {

// Session ids are ours (32 hex digits); anything else from a cookie is not looked up.
bool plausible_id(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

// A SCAN MATCH pattern for keys starting with `prefix`.
std::string glob_prefix(const std::string& prefix) {
  std::string out;
  for (char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out + "*";
}

}  // namespace

std::string session_to_json(const session& s) {
  nlohmann::json j;
  j["user"] = nullptr;
  if (s.user) j["user"] = {{"name", s.user->name}, {"roles", s.user->roles}};
  j["credential"] = s.credential;
  j["dsid"] = s.flex_client_id;
  j["small_messages"] = s.small_messages;
  return j.dump();
}

session session_from_json(const std::string& id, const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  session s;
  s.id = id;
  if (j.at("user").is_object()) {
    s.user = principal{j["user"].at("name").get<std::string>(),
                       j["user"].at("roles").get<std::vector<std::string>>()};
  }
  s.credential = j.value("credential", std::string());  // absent in sessions of 0.1.0
  s.flex_client_id = j.at("dsid").get<std::string>();
  s.small_messages = j.at("small_messages").get<bool>();
  return s;
}

struct redis_session_store::impl {
  explicit impl(redis_options o) : redis(std::move(o)), opt(redis.options()) {}

  /// SET of a session with its expiry; `condition` NX (a new one) or XX (an existing one).
  std::vector<std::string> set(const session& s, const char* condition) const {
    return {"SET",
            opt.key_prefix + s.id,
            session_to_json(s),
            "PX",
            std::to_string(opt.idle_timeout.count()),
            condition};
  }
  net::awaitable<redis_value> command(std::vector<std::string> args) {
    return redis.command(std::move(args));
  }

  redis_client redis;
  const redis_options& opt;
};

redis_session_store::redis_session_store(redis_options options)
    : impl_(std::make_unique<impl>(std::move(options))) {}

redis_session_store::~redis_session_store() = default;

std::string redis_session_store::where() const {
  return impl_->redis.where();
}

net::awaitable<std::optional<session>> redis_session_store::async_find(std::string id) {
  if (!plausible_id(id)) co_return std::nullopt;
  // Arguments as a named local: GCC 12 cannot take a braced list inside a co_await.
  std::vector<std::string> args{"GETEX", impl_->opt.key_prefix + id, "PX",
                                std::to_string(impl_->opt.idle_timeout.count())};
  const auto r = co_await impl_->command(std::move(args));
  if (r.type != redis_value::kind::string) co_return std::nullopt;
  try {
    co_return session_from_json(id, r.str);
  } catch (const nlohmann::json::exception&) {
    co_return std::nullopt;  // not a session of ours: treated as none
  }
}

net::awaitable<session> redis_session_store::async_create() {
  session s;
  s.id = random_id();
  co_await impl_->command(impl_->set(s, "NX"));
  co_return s;
}

net::awaitable<void> redis_session_store::async_save(session s) {
  // XX: a session removed meanwhile (a logout through another instance) stays removed.
  co_await impl_->command(impl_->set(s, "XX"));
}

net::awaitable<void> redis_session_store::async_remove(std::string id) {
  std::vector<std::string> args{"DEL", impl_->opt.key_prefix + id};
  if (plausible_id(id)) co_await impl_->command(std::move(args));
}

net::awaitable<std::size_t> redis_session_store::async_size() {
  std::size_t count = 0;
  std::string cursor = "0";
  do {
    std::vector<std::string> args{"SCAN",  cursor, "MATCH", glob_prefix(impl_->opt.key_prefix),
                                  "COUNT", "1000"};
    const auto r = co_await impl_->command(std::move(args));
    if (r.type != redis_value::kind::array || r.elements.size() != 2) {
      throw store_unavailable(where() + ": unexpected SCAN reply");
    }
    cursor = r.elements[0].str;
    count += r.elements[1].elements.size();
  } while (cursor != "0");
  co_return count;
}

void redis_session_store::attach(boost::asio::any_io_executor executor) {
  impl_->redis.attach(std::move(executor));
}

// The synchronous calls run the asynchronous ones on the client's strand and wait.
std::optional<session> redis_session_store::find(const std::string& id) {
  return impl_->redis.wait(async_find(id));
}
session redis_session_store::create() {
  return impl_->redis.wait(async_create());
}
void redis_session_store::save(const session& s) {
  impl_->redis.wait(async_save(s));
}
void redis_session_store::remove(const std::string& id) {
  impl_->redis.wait(async_remove(id));
}
std::size_t redis_session_store::size() {
  return impl_->redis.wait(async_size());
}
void redis_session_store::ping() {
  impl_->redis.wait([](impl& i) -> net::awaitable<void> {
    std::vector<std::string> args{"PING"};
    co_await i.command(std::move(args));
  }(*impl_));
}

}  // namespace amfgate::server
