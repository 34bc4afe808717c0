// amfgate::run: the daemon around a user's services (amfgate itself binds none of its own).
#include <malloc.h>
#include <spdlog/async.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <iostream>
#include <string>

#include "amfgate/run.hpp"

#include "amfgate/bridge/bridge.hpp"
#include "amfgate/config.hpp"
#include "amfgate/server/client.hpp"
#include "amfgate/server/gateway.hpp"
#include "amfgate/server/http.hpp"
#include "amfgate/server/redis_messaging.hpp"
#include "amfgate/server/redis_session_store.hpp"
#include "amfgate/server/router.hpp"
#include "amfgate/services/builtin.hpp"
#include "log_sink.hpp"

#ifndef AMFGATE_VERSION
#define AMFGATE_VERSION "0.0.0"
#endif

namespace {

constexpr const char* usage =
    "usage: amfgate [--config FILE] [--check-config | --print-config | --healthcheck]\n"
    "       amfgate --hash-password      (reads the password from standard input)\n"
    "       amfgate --version | --help\n"
    "\n"
    "Serves AMF remoting (NetConnection AMF0/AMF3, Flex RemoteObject) over HTTP on the\n"
    "built-in defaults, or on FILE's settings (JSON; see config/amfgate.json).\n"
    "  --config FILE    settings to apply over the defaults\n"
    "  --check-config   validate the settings, print every error, and exit\n"
    "  --print-config   print the settings in force (defaults and FILE) as JSON\n"
    "  --healthcheck    ask the daemon running on these settings for /healthz; exit 0 if\n"
    "                   it answers 200 (for container health checks)\n"
    "  --hash-password  print a crypt(3) yescrypt hash for a user's \"password\" setting\n";

// Async logging: a full queue drops the oldest line rather than stalling a request (counted in
// /metrics); lines are written in batches (log_sink.hpp).
std::pair<std::shared_ptr<spdlog::logger>, std::shared_ptr<spdlog::logger>> make_loggers(
    const amfgate::config::log_settings& s) {
  spdlog::init_thread_pool(16384, 1);
  std::vector<spdlog::sink_ptr> sinks;
  for (const auto& k : s.sinks) {
    if (k.type == "stdout") {
      sinks.push_back(std::make_shared<amfgate::logging::batched_sink>(STDOUT_FILENO));
    } else if (k.type == "stderr") {
      sinks.push_back(std::make_shared<amfgate::logging::batched_sink>(STDERR_FILENO));
    } else {
      sinks.push_back(std::make_shared<amfgate::logging::batched_sink>(k.path));
    }
  }
  auto make = [&](std::shared_ptr<spdlog::logger> l) {
    l->set_level(spdlog::level::from_str(s.level));
    l->flush_on(spdlog::level::warn);
    spdlog::register_logger(l);
    return l;
  };
  // The daemon's own lines on the async logger; the access log, one line per request,
  // synchronous: the sinks only buffer, so an I/O thread formats and appends and wakes no one.
  auto log = make(std::make_shared<spdlog::async_logger>(
      "amfgate", sinks.begin(), sinks.end(), spdlog::thread_pool(),
      spdlog::async_overflow_policy::overrun_oldest));
  auto access = make(std::make_shared<spdlog::logger>("access", sinks.begin(), sinks.end()));
  spdlog::flush_every(std::chrono::seconds(1));
  return {log, access};
}

amfgate::server::redis_options redis_options_of(const amfgate::config::session_settings& s) {
  amfgate::server::redis_options o;
  o.host = s.redis.host;
  o.port = s.redis.port;
  o.password = s.redis.password;
  o.db = s.redis.db;
  o.key_prefix = s.redis.key_prefix;
  o.connect_timeout = s.redis.connect_timeout;
  o.command_timeout = s.redis.command_timeout;
  o.idle_timeout = s.idle_timeout;
  return o;
}

// The session store of the settings. A Redis store checks its server, then moves onto the
// I/O threads of `io` (it is then destroyed before them).
std::unique_ptr<amfgate::services::session_store> make_session_store(
    const amfgate::config::session_settings& s, const std::shared_ptr<spdlog::logger>& log,
    boost::asio::any_io_executor io) {
  if (s.store == "memory") {
    return std::make_unique<amfgate::services::memory_session_store>(s.max_sessions,
                                                                     s.idle_timeout);
  }
  auto o = redis_options_of(s);
  o.on_state_change = [log](bool reachable, const std::string& detail) {
    if (reachable) {
      log->info("session store reachable again: {}", detail);
    } else {
      log->error(
          "session store unreachable: {}; calls that need no session go on, logins and "
          "calls that need one fault with Server.Session.Unavailable",
          detail);
    }
  };
  auto store = std::make_unique<amfgate::server::redis_session_store>(o);
  log->info("sessions in {} under the prefix \"{}\"", store->where(), o.key_prefix);
  try {
    store->ping();
  } catch (const amfgate::services::store_unavailable&) {
    // logged by on_state_change; the daemon starts anyway and reconnects when it can
  }
  store->attach(std::move(io));
  return store;
}

// With messaging.store "redis" (or unset, with sessions in Redis), messaging is shared there:
// every instance serves every poll. None (memory) otherwise. It must be destroyed before the I/O
// threads it runs on.
std::unique_ptr<amfgate::server::redis_messaging> make_messaging_store(
    const amfgate::config::gateway_config& cfg, const std::shared_ptr<spdlog::logger>& log) {
  if (cfg.messaging_store() != "redis") return nullptr;
  auto share = std::make_unique<amfgate::server::redis_messaging>(
      redis_options_of(cfg.sessions), cfg.messaging, cfg.messaging.redis_key_prefix,
      [log](const std::string& what) { log->warn("{}", what); });
  log->info("messaging shared in redis {}:{} under the prefix \"{}\"", cfg.sessions.redis.host,
            cfg.sessions.redis.port, cfg.messaging.redis_key_prefix);
  try {
    share->ping();
  } catch (const amfgate::services::store_unavailable&) {
    // logged by the connection; polls fault until Redis answers
  }
  return share;
}

// GET /healthz from the daemon that these settings run (on loopback when it listens on all
// addresses).
int healthcheck(const amfgate::config::listen_settings& l) {
  std::string host = l.address;
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host == "::") host = "::1";
  try {
    amfgate::client::http_client http(host, std::to_string(l.port));
    const auto res = http.get("/healthz");
    if (res.status == 200) return 0;
    std::cerr << "amfgate: /healthz answered " << res.status << ": " << res.body;
  } catch (const std::exception& e) {
    std::cerr << "amfgate: /healthz on " << host << ":" << l.port << ": " << e.what() << "\n";
  }
  return 1;
}

}  // namespace

namespace amfgate {

int run(int argc, char** argv, const setup& bind_services) {
  std::string config_file;
  bool check = false, print = false, health = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      config_file = argv[++i];
    } else if (a.starts_with("--config=")) {
      config_file = a.substr(9);
    } else if (a == "--check-config") {
      check = true;
    } else if (a == "--print-config") {
      print = true;
    } else if (a == "--healthcheck") {
      health = true;
    } else if (a == "--version") {
      std::cout << "amfgate " << AMFGATE_VERSION << "\n";
      return 0;
    } else if (a == "--help" || a == "-h") {
      std::cout << usage;
      return 0;
    } else if (a == "--hash-password") {
      std::string password;
      if (isatty(STDIN_FILENO)) std::cerr << "password: ";
      std::getline(std::cin, password);
      if (password.empty()) {
        std::cerr << "amfgate: empty password\n";
        return 1;
      }
      std::cout << amfgate::services::hash_password(password) << "\n";
      return 0;
    } else {
      std::cerr << "amfgate: unknown argument " << a << "\n" << usage;
      return 2;
    }
  }

  amfgate::config::gateway_config cfg;
  const std::string source = config_file.empty() ? "built-in defaults" : config_file;
  const auto settings_error = [&](const amfgate::config::error& e) {
    std::cerr << "amfgate: " << source << ":\n";
    for (const auto& line : e.errors()) std::cerr << "  " << line << "\n";
    return 1;
  };
  try {
    if (!config_file.empty()) cfg = amfgate::config::load(config_file);
  } catch (const amfgate::config::error& e) {
    return settings_error(e);
  }
  if (print) {
    std::cout << amfgate::config::to_json_text(cfg);
    return 0;
  }
  if (health) return healthcheck(cfg.listen);

  // The application's services are bound before anything starts, and under --check-config
  // too: their setup reads their own settings ("services"), whose errors count like ours.
  // The message broker of Flex messaging, which services publish through.
  amfgate::messaging::broker broker(cfg.messaging);
  amfgate::services::registry services;
  std::optional<amfgate::bridge::bridge> bridged;
  try {
    bridged.emplace(cfg);
    services.publish_through(broker);
    amfgate::services::add_echo_service(services);
    if (bind_services) bind_services(services, cfg);
    bridged->bind(services);
    if (cfg.introspection_enabled()) amfgate::services::add_introspection_service(services);
    services.freeze();
  } catch (const amfgate::config::error& e) {
    return settings_error(e);
  } catch (const std::exception& e) {
    std::cerr << "amfgate: cannot bind the services: " << e.what() << "\n";
    return 1;
  }
  if (check) {
    std::cout << "amfgate: " << source << ": ok\n";
    return 0;
  }

  auto [log, access] = make_loggers(cfg.log);
  int status = 1;
  try {
    std::vector<amfgate::services::user_record> users;
    for (const auto& u : cfg.users) users.push_back({u.name, u.password, u.roles});
    amfgate::services::user_table auth(std::move(users));
    // Blocks of 1 MiB and more (large bodies, replies, arenas) are mapped and unmapped on
    // their own. glibc raises this threshold each time such a block is freed, after which a
    // burst of large requests left its peak resident for good.
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    amfgate::server::metrics stats;
    amfgate::server::http_server server(cfg, stats, log, access);
    const auto store = make_session_store(cfg.sessions, log, server.executor());
    auto& sessions = *store;
    amfgate::messaging::channel flex(broker, sessions, cfg.limits.max_response_bytes);
    amfgate::server::gateway gw(cfg, services, flex, sessions, auth, server.workers(), stats, log);
    amfgate::server::router routes(cfg, gw, flex, services, stats, sessions, server.workers(),
                                   *bridged, log);
    bridged->start(log, server.executor());
    struct stop_bridge {
      amfgate::bridge::bridge& b;
      ~stop_bridge() { b.stop(); }  // before `server` and its I/O contexts
    } stopped_first{*bridged};
    broker.forward_through(&*bridged);
    log->info("amfgate {} starting{}", AMFGATE_VERSION, cfg.debug ? " in debug mode" : "");
    const auto share = make_messaging_store(cfg, log);
    struct unshare {
      amfgate::messaging::broker& b;
      ~unshare() { b.share(nullptr); }
    } unshared_at_exit{broker};
    broker.share(share.get());
    broker.start(server.executor());
    status = server.run(routes.routes());
  } catch (const std::exception& e) {
    log->critical("cannot run: {}", e.what());
    status = 1;
  }
  spdlog::shutdown();
  return status;
}

}  // namespace amfgate
