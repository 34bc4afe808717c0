// The compose topology without Docker, on loopback ports of its own: a real redis-server and
// nginx from Debian, and two amfgate instances. The amfgate settings are docker/amfgate.json
// and the nginx config is docker/nginx.conf, changed only where an address must differ.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../server/process.hpp"
#include "amfgate/server/client.hpp"

namespace amfgate::test {

inline std::string find_program(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    const std::string p = std::string(dir) + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  throw std::runtime_error(name + " is not installed (scripts/install-deps.sh test installs it)");
}

// PING over a plain socket: true on +PONG (or NOAUTH from a server with a password).
inline bool redis_ping(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  timeval tv{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char reply[8] = {};
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::write(fd, "PING\r\n", 6) == 6 && ::read(fd, reply, 5) == 5 &&
                  (std::string(reply, 5) == "+PONG" || std::string(reply, 5) == "-NOAU");
  ::close(fd);
  return ok;
}

/// redis-server on `port`, no persistence, its files in `dir`; returns once it answers PING.
inline void start_redis(process& p, std::uint16_t port, const std::filesystem::path& dir,
                        const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv{find_program("redis-server"),
                                "--port",
                                std::to_string(port),
                                "--bind",
                                "127.0.0.1",
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                                "--dir",
                                dir.string()};
  argv.insert(argv.end(), more.begin(), more.end());
  p.start(argv, dir / "redis.log");
  for (int i = 0; i < 400 && !redis_ping(port); ++i) {
    if (!p.running()) throw std::runtime_error("redis-server exited at start:\n" + p.log());
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (!redis_ping(port)) throw std::runtime_error("redis-server did not answer:\n" + p.log());
}

class stack {
 public:
  stack() {
    char tmpl[] = "/tmp/amfgate-deploy-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    work_ = tmpl;
    ::chmod(work_.c_str(), 0755);  // nginx workers may run as another user
    redis_port = free_port();
    nginx_port = free_port();
    ports = {0, 0};  // each instance takes one, and keeps it when restarted
    start_redis();
    for (std::size_t i = 0; i < instances.size(); ++i) start_amfgate(i);
    start_nginx();
  }
  ~stack() {
    // SIGTERM: nginx's master stops its workers and waits for them (a SIGKILLed master
    // leaves them running, holding their listening socket).
    nginx.kill(SIGTERM);
    for (auto& a : instances) a.kill(SIGKILL);
    redis.kill(SIGKILL);
    std::error_code ec;
    std::filesystem::remove_all(work_, ec);
  }

  client::http_client via_nginx() const {
    return client::http_client("127.0.0.1", std::to_string(nginx_port));
  }
  client::http_client direct(std::size_t i) const {
    return client::http_client("127.0.0.1", std::to_string(ports.at(i)));
  }

  void start_redis() { test::start_redis(redis, redis_port, work_); }

  /// docker/amfgate.json with its listen address and Redis address moved to loopback ports.
  void start_amfgate(std::size_t i) {
    auto cfg = nlohmann::ordered_json::parse(read_file(AMFGATE_SOURCE_DIR "/docker/amfgate.json"));
    cfg["listen"] = {{"address", "127.0.0.1"}, {"port", ports[i]}};
    cfg["sessions"]["redis"]["host"] = "127.0.0.1";
    cfg["sessions"]["redis"]["port"] = redis_port;
    cfg["log"]["access"] = false;
    const auto path = work_ / ("amfgate-" + std::to_string(i) + ".json");
    std::ofstream(path) << cfg.dump(2);
    const auto log = work_ / ("amfgate-" + std::to_string(i) + ".log");
    instances[i].start({AMFGATE_BINARY, "--config", path.string()}, log);
    ports[i] = instances[i].listening_port();
    wait_until("amfgate", instances[i], [&] { return direct(i).get("/healthz").status == 200; });
  }

  /// docker/nginx.conf with one upstream server line per instance and its own listen port.
  void start_nginx() {
    std::string conf = read_file(AMFGATE_SOURCE_DIR "/docker/nginx.conf");
    replace(conf, "listen 80;", "listen 127.0.0.1:" + std::to_string(nginx_port) + ";");
    const std::string server_line = "server amfgate:8080";
    const auto at = conf.find(server_line);
    if (at == std::string::npos) throw std::runtime_error("nginx.conf: no upstream server line");
    const auto eol = conf.find('\n', at);
    const std::string rest = conf.substr(at + server_line.size(), eol - at - server_line.size());
    std::string lines;
    for (auto p : ports) {
      lines += (lines.empty() ? "" : "\n    ") + ("server 127.0.0.1:" + std::to_string(p)) + rest;
    }
    conf.replace(at, eol - at, lines);
    std::ofstream(work_ / "nginx.conf") << conf;
    nginx.start(
        {find_program("nginx"), "-p", work_.string() + "/", "-c", (work_ / "nginx.conf").string(),
         "-g", "daemon off; pid " + (work_ / "nginx.pid").string() + ";"},
        work_ / "nginx.log");
    wait_until("nginx", nginx, [&] { return via_nginx().get("/healthz").status == 200; });
  }

  process redis, nginx;
  std::vector<process> instances = std::vector<process>(2);
  std::uint16_t redis_port = 0, nginx_port = 0;
  std::vector<std::uint16_t> ports;

 private:
  static void replace(std::string& s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    if (at == std::string::npos) throw std::runtime_error("nginx.conf: no \"" + from + "\"");
    s.replace(at, from.size(), to);
  }

  template <class Ready>
  void wait_until(const std::string& what, process& p, Ready ready) {
    for (int i = 0; i < 400; ++i) {
      try {
        if (ready()) return;
      } catch (const std::exception&) {
      }
      if (!p.running()) throw std::runtime_error(what + " exited at start:\n" + p.log());
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    throw std::runtime_error(what + " did not come up:\n" + p.log());
  }

  std::filesystem::path work_;
};

}  // namespace amfgate::test
