#include "amfgate/services/redis_session_store.hpp"

#include <hiredis.h>
#include <sys/time.h>

#include <nlohmann/json.hpp>

namespace amfgate::services {

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

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
  s.flex_client_id = j.at("dsid").get<std::string>();
  s.small_messages = j.at("small_messages").get<bool>();
  return s;
}

void redis_session_store::connection_deleter::operator()(redisContext* c) const noexcept {
  redisFree(c);
}

class redis_session_store::reply {
 public:
  explicit reply(redisReply* r) : r_(r) {}
  explicit operator bool() const noexcept { return r_ != nullptr; }
  const redisReply* operator->() const noexcept { return r_.get(); }

 private:
  struct deleter {
    void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
  };
  std::unique_ptr<redisReply, deleter> r_;
};

redis_session_store::redis_session_store(redis_options options) : opt_(std::move(options)) {}

redis_session_store::~redis_session_store() = default;

std::string redis_session_store::where() const {
  return "redis " + opt_.host + ":" + std::to_string(opt_.port);
}

void redis_session_store::failed(const std::string& why) {
  bool was_up;
  {
    std::lock_guard lock(mutex_);
    was_up = !down_;
    down_ = true;
    last_error_ = why;
    retry_at_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    idle_.clear();  // connections made before the failure are suspect
  }
  if (was_up && opt_.on_state_change) opt_.on_state_change(false, where() + ": " + why);
  throw store_unavailable(where() + ": " + why);
}

redis_session_store::connection redis_session_store::acquire(bool& pooled) {
  {
    std::lock_guard lock(mutex_);
    if (down_ && std::chrono::steady_clock::now() < retry_at_) {
      throw store_unavailable(where() + ": " + last_error_);
    }
    pooled = !idle_.empty();
    if (pooled) {
      connection c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  connection c(redisConnectWithTimeout(opt_.host.c_str(), static_cast<int>(opt_.port),
                                       to_timeval(opt_.connect_timeout)));
  if (!c) failed("cannot allocate a connection");
  if (c->err) failed(c->errstr);
  redisSetTimeout(c.get(), to_timeval(opt_.command_timeout));
  auto setup = [&](std::vector<const char*> argv) {
    reply r(static_cast<redisReply*>(
        redisCommandArgv(c.get(), static_cast<int>(argv.size()), argv.data(), nullptr)));
    if (!r) failed(c->errstr);
    if (r->type == REDIS_REPLY_ERROR) failed(std::string(argv[0]) + ": " + r->str);
  };
  if (!opt_.password.empty()) setup({"AUTH", opt_.password.c_str()});
  if (opt_.db != 0) {
    const std::string db = std::to_string(opt_.db);
    setup({"SELECT", db.c_str()});
  }
  return c;
}

void redis_session_store::release(connection c) {
  bool was_down;
  {
    std::lock_guard lock(mutex_);
    was_down = down_;
    down_ = false;
    idle_.push_back(std::move(c));
  }
  if (was_down && opt_.on_state_change) opt_.on_state_change(true, where());
}

redis_session_store::reply redis_session_store::command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  // A pooled connection may have been closed by a Redis restart, and so the whole pool: then
  // one more try on a new connection. A new connection that fails is not tried again.
  for (bool retried = false;; retried = true) {
    bool pooled = false;
    connection c = acquire(pooled);
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()));
    if (!r) {
      const std::string why = c->errstr;
      c.reset();
      if (pooled && !retried) {
        std::lock_guard lock(mutex_);
        idle_.clear();
        continue;
      }
      failed(why);
    }
    reply out(r);
    if (out->type == REDIS_REPLY_ERROR) {
      const std::string why = args[0] + ": " + std::string(out->str, out->len);
      release(std::move(c));
      throw store_unavailable(where() + ": " + why);
    }
    release(std::move(c));
    return out;
  }
}

std::optional<session> redis_session_store::find(const std::string& id) {
  if (!plausible_id(id)) return std::nullopt;
  const reply r =
      command({"GETEX", opt_.key_prefix + id, "PX", std::to_string(opt_.idle_timeout.count())});
  if (r->type != REDIS_REPLY_STRING) return std::nullopt;
  try {
    return session_from_json(id, std::string(r->str, r->len));
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // not a session of ours: treated as none
  }
}

session redis_session_store::create() {
  session s;
  s.id = random_id();
  command({"SET", opt_.key_prefix + s.id, session_to_json(s), "PX",
           std::to_string(opt_.idle_timeout.count()), "NX"});
  return s;
}

void redis_session_store::save(const session& s) {
  // XX: a session removed meanwhile (a logout through another instance) stays removed.
  command({"SET", opt_.key_prefix + s.id, session_to_json(s), "PX",
           std::to_string(opt_.idle_timeout.count()), "XX"});
}

void redis_session_store::remove(const std::string& id) {
  if (plausible_id(id)) command({"DEL", opt_.key_prefix + id});
}

void redis_session_store::ping() {
  command({"PING"});
}

std::size_t redis_session_store::size() {
  std::size_t count = 0;
  std::string cursor = "0";
  do {
    const reply r =
        command({"SCAN", cursor, "MATCH", glob_prefix(opt_.key_prefix), "COUNT", "1000"});
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
      throw store_unavailable(where() + ": unexpected SCAN reply");
    }
    cursor.assign(r->element[0]->str, r->element[0]->len);
    count += r->element[1]->elements;
  } while (cursor != "0");
  return count;
}

}  // namespace amfgate::services
