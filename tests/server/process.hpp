// Test helpers for child processes: a free loopback port (for programs that cannot take port
// 0 and tell theirs: Redis, nginx), and a program started with its output in a log file,
// signalled and waited for.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace amfgate::test {

inline std::uint16_t free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(s);
  return ntohs(a.sin_port);
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/// A child process with its output in a log file.
class process {
 public:
  process() = default;
  process(const process&) = delete;
  process& operator=(const process&) = delete;
  ~process() { kill(SIGKILL); }

  /// posix_spawn, not fork: the tests are threaded, and a forked child may only call
  /// async-signal-safe functions before exec.
  void start(const std::vector<std::string>& argv, const std::filesystem::path& log) {
    log_ = log;
    posix_spawn_file_actions_t files;
    ::posix_spawn_file_actions_init(&files);
    ::posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(),
                                       O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int err = ::posix_spawn(&pid_, args[0], &files, nullptr, args.data(), environ);
    ::posix_spawn_file_actions_destroy(&files);
    if (err != 0) {
      pid_ = -1;
      throw std::runtime_error("cannot start " + argv.at(0) + ": " + std::strerror(err));
    }
  }
  bool running() {
    if (pid_ <= 0) return false;
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      status_ = status;
      return false;
    }
    return true;
  }
  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  void kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    ::waitpid(pid_, &status_, 0);
    pid_ = -1;
  }
  /// The exit status once it has exited (-1 on timeout or death by a signal).
  int wait(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      if (std::chrono::steady_clock::now() > end) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }
  std::string log() const { return std::filesystem::exists(log_) ? read_file(log_) : ""; }

  /// The port amfgate took (started with listen.port 0), from its "listening on" line.
  std::uint16_t listening_port(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const std::string mark = "listening on ";
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      const std::string text = log();
      if (const auto at = text.find(mark); at != std::string::npos) {
        const auto space = text.find(' ', at + mark.size());
        const auto colon = text.rfind(':', space);
        return static_cast<std::uint16_t>(std::stoi(text.substr(colon + 1, space - colon - 1)));
      }
      if (!running()) throw std::runtime_error("exited at start:\n" + text);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("no \"listening on\" line in the log:\n" + log());
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  std::filesystem::path log_;
};

}  // namespace amfgate::test
