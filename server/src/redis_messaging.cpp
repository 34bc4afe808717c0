#include "amfgate/server/redis_messaging.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "amf/flex.hpp"
#include "amfgate/services/session.hpp"

namespace amfgate::server {

using messaging::broker;
using services::store_unavailable;

namespace net = boost::asio;

namespace {

// KEYS[1] the log, KEYS[2] the logs' epoch; ARGV[1] the epoch the caller knows ("" before
// it knows one), ARGV[2] the log's bound, then the entry's fields and values. Refused while
// the epoch is not the one the caller knows: the store lost its logs, and the reader has not
// yet carried their numbering on (a publish then fails, instead of being numbered anew).
constexpr const char* append_script = R"(
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return redis.error_reply('AMFGATE the store lost its logs; the numbering is being carried on')
end
local entry = {}
for i = 3, #ARGV do entry[#entry + 1] = ARGV[i] end
return redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], '0-*', unpack(entry))
)";

// KEYS[1] the client's hash; ARGV[1] its idle expiry (ms, 0 none). Its fields, flat.
constexpr const char* load_script = R"(
local ttl = tonumber(ARGV[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return redis.call('HGETALL', KEYS[1])
)";

// KEYS[1] the client's hash, KEYS[2] the changes stream; ARGV[1] the expiry, ARGV[2] the
// DSId, then (clientId, subscription JSON, cursor) for each subscription. Subscriptions not
// given go; a kept one keeps its cursor.
constexpr const char* save_script = R"(
local keep = {}
for i = 3, #ARGV, 3 do keep[ARGV[i]] = true end
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if not keep[string.sub(f, 3)] then redis.call('HDEL', KEYS[1], f) end
end
for i = 3, #ARGV, 3 do
  redis.call('HSET', KEYS[1], 's:' .. ARGV[i], ARGV[i + 1])
  redis.call('HSETNX', KEYS[1], 'c:' .. ARGV[i], ARGV[i + 2])
end
local ttl = tonumber(ARGV[1])
if ttl > 0 and #ARGV > 2 then redis.call('PEXPIRE', KEYS[1], ttl) end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', '10000', '*', 'c', ARGV[2])
return 1
)";

// KEYS[1] the client's hash; ARGV[1] the expiry, then (clientId, cursor) pairs: cursors of
// subscriptions that still exist move forward, never back.
constexpr const char* advance_script = R"(
for i = 2, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], 's:' .. ARGV[i]) == 1 then
    local now = tonumber(redis.call('HGET', KEYS[1], 'c:' .. ARGV[i]) or '0')
    if tonumber(ARGV[i + 1]) > now then redis.call('HSET', KEYS[1], 'c:' .. ARGV[i], ARGV[i + 1]) end
  end
end
local ttl = tonumber(ARGV[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
)";

// KEYS[1] the client's hash; then (clientId, from, to) triples: a cursor still at `to` goes
// back to `from` (a poll's reply was not written, and no other poll read on since).
constexpr const char* rewind_script = R"(
for i = 1, #ARGV, 3 do
  local now = redis.call('HGET', KEYS[1], 'c:' .. ARGV[i])
  if now and tonumber(now) == tonumber(ARGV[i + 2]) then
    redis.call('HSET', KEYS[1], 'c:' .. ARGV[i], ARGV[i + 1])
  end
end
return 1
)";

// The sequence of a log entry's id "0-<n>".
std::uint64_t sequence(const std::string& id) {
  return std::stoull(id.substr(id.find('-') + 1));
}

std::map<std::string, std::string> fields(const redis_value& flat) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < flat.elements.size(); i += 2) {
    out[flat.elements[i].str] = flat.elements[i + 1].str;
  }
  return out;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

redis_options reader_options(redis_options o) {
  o.command_timeout += std::chrono::milliseconds(1000);  // XREAD BLOCK 1000 waits that long
  o.on_state_change = nullptr;
  return o;
}

}  // namespace

redis_messaging::redis_messaging(const redis_options& connection,
                                 config::messaging_settings settings, std::string key_prefix,
                                 std::function<void(const std::string&)> warn)
    : cfg_(std::move(settings)),
      prefix_(std::move(key_prefix)),
      warn_(std::move(warn)),
      commands_([&] {
        redis_options o = connection;
        o.on_state_change = [warn = warn_](bool reachable, const std::string& detail) {
          warn(reachable ? "messaging store reachable again: " + detail
                         : "messaging store unreachable: " + detail +
                               "; messaging calls fault with Server.Messaging.Unavailable");
        };
        return o;
      }()),
      reader_(reader_options(connection)) {}

redis_messaging::~redis_messaging() = default;

void redis_messaging::ping() {
  commands_.wait([](redis_client& c) -> net::awaitable<void> {
    std::vector<std::string> args{"PING"};
    co_await c.command(std::move(args));
  }(commands_));
}

void redis_messaging::start(net::any_io_executor ex, broker& m) {
  commands_.attach(ex);
  reader_.attach(ex);
  net::co_spawn(ex, read(m), [warn = warn_](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const std::exception& x) {
      warn(std::string("messaging: the log reader stopped: ") + x.what());
    }
  });
}

net::awaitable<void> redis_messaging::append(std::shared_ptr<const broker::stored> m) {
  const auto d = cfg_.destinations.find(m->destination);
  const std::size_t max = d == cfg_.destinations.end() ? 1000 : d->second.max_messages;
  std::vector<std::string> args{"EVAL",
                                append_script,
                                "2",
                                prefix_ + "log:" + m->destination,
                                prefix_ + "epoch",
                                epoch(),
                                std::to_string(max),  // numbered 0-1, 0-2 ...: the index
                                "id",
                                m->message_id,
                                "s",
                                m->subtopic,
                                "b",
                                m->body,
                                "h",
                                m->headers,
                                "t",
                                number(m->timestamp),
                                "l",
                                number(m->time_to_live)};
  co_await commands_.command(std::move(args));
}

void redis_messaging::post(std::shared_ptr<const broker::stored> m) {
  // Spawned on the connection's strand in the order given: sent in that order.
  net::co_spawn(commands_.strand(), append(std::move(m)), [warn = warn_](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const std::exception& x) {
      warn(std::string("messaging: a published message is lost: ") + x.what());
    }
  });
}

net::awaitable<std::vector<broker::shared_subscription>> redis_messaging::load(std::string client) {
  std::vector<std::string> args{"EVAL", load_script, "1", prefix_ + "client:" + client,
                                std::to_string(cfg_.client_idle_timeout.count())};
  const auto r = co_await commands_.command(std::move(args));
  const auto f = fields(r);
  std::vector<broker::shared_subscription> out;
  for (const auto& [name, value] : f) {
    if (!name.starts_with("s:")) continue;
    broker::shared_subscription& s = out.emplace_back();
    s.id = name.substr(2);
    try {
      const auto j = nlohmann::json::parse(value);
      s.destination = j.at("destination").get<std::string>();
      s.owner = j.value("owner", std::string());
      s.max_frequency =
          std::min(j.value("max_frequency", std::uint32_t{0}), broker::max_consumer_frequency);
      for (const auto& p : j.at("filters")) {
        s.filters.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
      }
      const auto c = f.find("c:" + s.id);
      s.cursor = c == f.end() ? 0 : std::stoull(c->second);
    } catch (const std::exception&) {
      out.pop_back();  // not one of ours: left out
    }
  }
  co_return out;
}

net::awaitable<void> redis_messaging::save(std::string client,
                                           std::vector<broker::shared_subscription> subs) {
  std::vector<std::string> args{"EVAL",
                                save_script,
                                "2",
                                prefix_ + "client:" + client,
                                prefix_ + "changes",
                                std::to_string(cfg_.client_idle_timeout.count()),
                                client};
  for (const auto& s : subs) {
    nlohmann::json filters = nlohmann::json::array();
    for (const auto& [subtopic, selector] : s.filters) filters.push_back({subtopic, selector});
    args.push_back(s.id);
    args.push_back(nlohmann::json{{"destination", s.destination},
                                  {"filters", filters},
                                  {"owner", s.owner},
                                  {"max_frequency", s.max_frequency}}
                       .dump());
    args.push_back(std::to_string(s.cursor));
  }
  co_await commands_.command(std::move(args));
}

net::awaitable<void> redis_messaging::advance(
    std::string client, std::vector<std::pair<std::string, std::uint64_t>> cursors) {
  std::vector<std::string> args{"EVAL", advance_script, "1", prefix_ + "client:" + client,
                                std::to_string(cfg_.client_idle_timeout.count())};
  for (const auto& [id, cursor] : cursors) {
    args.push_back(id);
    args.push_back(std::to_string(cursor));
  }
  co_await commands_.command(std::move(args));
}

net::awaitable<void> redis_messaging::rewind(std::string client,
                                             std::vector<broker::moved> cursors) {
  std::vector<std::string> args{"EVAL", rewind_script, "1", prefix_ + "client:" + client};
  for (const auto& c : cursors) {
    args.push_back(*c.subscription);
    args.push_back(std::to_string(c.from));
    args.push_back(std::to_string(c.to));
  }
  co_await commands_.command(std::move(args));
}

std::string redis_messaging::epoch() const {
  const std::lock_guard lock(epoch_mutex_);
  return epoch_;
}

net::awaitable<void> redis_messaging::read(broker& m) {
  // Each log from its start (what is kept), the changes from now on.
  std::vector<std::string> keys, names, last;
  for (const auto& [name, d] : cfg_.destinations) {
    keys.push_back(prefix_ + "log:" + name);
    names.push_back(name);
    last.push_back("0-0");
  }
  const std::string changes = prefix_ + "changes";
  // The logs' epoch: a token that lives as long as the logs do. A Redis that restarts empty
  // (or is flushed) loses it, and would number its logs from 0-1 again, below every cursor:
  // what was published then would never be read. So the reader that finds the token gone
  // carries each log's numbering on (an entry at the last id it read, which readers skip)
  // before a new token lets publishes in again. Subscriptions went with the store: their
  // consumers get NotSubscribed, and resubscribe.
  const std::string epoch_key = prefix_ + "epoch";
  std::string changes_last, failed_before;
  net::steady_timer pause(co_await net::this_coro::executor);
  for (;;) {
    std::string failure;
    try {
      const std::string known = epoch();
      std::vector<std::string> get{"GET", epoch_key};
      const auto now = co_await reader_.command(std::move(get));
      if (now.type == redis_value::kind::nil || now.str != known) {
        if (!known.empty()) {
          warn_(
              "messaging: the store lost its logs (Redis restarted empty, or was flushed): "
              "their numbering carries on; consumers resubscribe");
        }
        for (std::size_t i = 0; i < keys.size(); ++i) {
          if (last[i] == "0-0") continue;
          std::vector<std::string> mark{"XADD", keys[i], last[i], "carried", "1"};
          try {
            co_await reader_.command(std::move(mark));
          } catch (const store_unavailable&) {
            // the id is not past the top: another instance carried it on as far or further
          }
        }
        // The first instance to get here names the new epoch; the others take it.
        std::vector<std::string> claim{"SET", epoch_key, amf::flex::new_uuid(), "NX"};
        co_await reader_.command(std::move(claim));
        std::vector<std::string> read_back{"GET", epoch_key};
        const auto current = co_await reader_.command(std::move(read_back));
        const std::lock_guard lock(epoch_mutex_);
        epoch_ = current.str;
      }
      if (changes_last.empty()) {
        std::vector<std::string> args{"XREVRANGE", changes, "+", "-", "COUNT", "1"};
        const auto r = co_await reader_.command(std::move(args));
        changes_last = r.elements.empty() ? "0-0" : r.elements.at(0).elements.at(0).str;
      }
      std::vector<std::string> args{"XREAD", "COUNT", "1000", "BLOCK", "1000", "STREAMS"};
      args.insert(args.end(), keys.begin(), keys.end());
      args.push_back(changes);
      args.insert(args.end(), last.begin(), last.end());
      args.push_back(changes_last);
      const auto r = co_await reader_.command(std::move(args));
      for (const auto& stream : r.elements) {  // [key, [[id, [field, value ...]] ...]]
        const std::string& key = stream.elements.at(0).str;
        const auto& entries = stream.elements.at(1).elements;
        if (key == changes) {
          for (const auto& e : entries) {
            changes_last = e.elements.at(0).str;
            m.changed(fields(e.elements.at(1))["c"]);
          }
          continue;
        }
        const auto i =
            static_cast<std::size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
        for (const auto& e : entries) {
          last.at(i) = e.elements.at(0).str;
          auto f = fields(e.elements.at(1));
          if (f.contains("carried")) continue;  // where the numbering was carried on
          m.mirror(broker::restore(names[i], sequence(last[i]), std::move(f["id"]),
                                   std::move(f["s"]), std::move(f["b"]), std::move(f["h"]),
                                   std::stod(f["t"]), std::stod(f["l"])));
        }
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
    // Redis away, or an entry that is not ours: said once, tried again every second.
    if (failure != failed_before && !failure.empty())
      warn_("messaging: reading the logs: " + failure);
    failed_before = failure;
    if (!failure.empty()) {
      pause.expires_after(std::chrono::seconds(1));
      boost::system::error_code ec;
      co_await pause.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
  }
}

}  // namespace amfgate::server
