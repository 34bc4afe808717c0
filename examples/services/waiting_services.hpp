// The three ways to run a handler (README, "Writing services"), compiled into the test daemon
// (tests/server/test_daemon.cpp) and called over HTTP by tests/server/execution_test.cpp:
//
// - a pure computation never waits: bind it `execution::inline_` (runs on the I/O thread);
// - a database call blocks its thread: bind the plain function (runs on the worker pool);
// - a call to another HTTP service waits on a socket: write a coroutine (returns
//   `awaitable<T>`; runs on the connection's executor and holds no thread while it waits).
#pragma once

#include <sqlite3.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "amfgate/services/registry.hpp"

namespace examples {

namespace net = boost::asio;
namespace http = boost::beast::http;
using amfgate::services::call_context;
using amfgate::services::execution;

// 1. A pure computation: the first `n` Fibonacci numbers.
inline std::vector<double> fibonacci(std::int32_t n) {
  if (n < 0 || n > 1000) throw amfgate::services::fault("Math.Range", "n must be 0 to 1000");
  std::vector<double> out;
  for (double a = 0, b = 1; static_cast<std::int32_t>(out.size()) < n; b += a, a = b - a) {
    out.push_back(a);
  }
  return out;
}

// 2. A database: SQLite, whose calls block. One connection in serialized mode, so that the
// pool's workers may share it.
class inventory {
 public:
  explicit inventory(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      throw std::runtime_error("sqlite: cannot open " + path + ": " + sqlite3_errmsg(db_));
    }
    exec("CREATE TABLE IF NOT EXISTS stock (item TEXT PRIMARY KEY, count INTEGER NOT NULL)");
  }
  ~inventory() { sqlite3_close(db_); }
  inventory(const inventory&) = delete;
  inventory& operator=(const inventory&) = delete;

  /// Adds `n` of `item`; returns the new count.
  std::int32_t add(const std::string& item, std::int32_t n) {
    statement s(db_,
                "INSERT INTO stock VALUES (?1, ?2) "
                "ON CONFLICT(item) DO UPDATE SET count = count + ?2 RETURNING count");
    sqlite3_bind_text(s.get(), 1, item.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s.get(), 2, n);
    return s.step_int();
  }
  std::int32_t count(const std::string& item) {
    statement s(db_, "SELECT coalesce((SELECT count FROM stock WHERE item = ?1), 0)");
    sqlite3_bind_text(s.get(), 1, item.c_str(), -1, SQLITE_TRANSIENT);
    return s.step_int();
  }

 private:
  class statement {
   public:
    statement(sqlite3* db, const char* sql) : db_(db) {
      if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) fail();
    }
    ~statement() { sqlite3_finalize(s_); }
    sqlite3_stmt* get() { return s_; }
    std::int32_t step_int() {
      if (sqlite3_step(s_) != SQLITE_ROW) fail();
      return sqlite3_column_int(s_, 0);
    }

   private:
    [[noreturn]] void fail() {
      throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db_));
    }
    sqlite3* db_;
    sqlite3_stmt* s_ = nullptr;
  };
  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db_));
    }
  }
  sqlite3* db_ = nullptr;
};

// 3. Another HTTP service: GET http://host:port/target, awaited. The call's deadline cancels
// the awaited step (the coroutine sees operation_aborted) and the client gets Server.Timeout.
inline net::awaitable<std::string> http_get(call_context& ctx, std::string host, std::string port,
                                            std::string target) {
  net::ip::tcp::resolver resolver(ctx.executor);
  boost::beast::tcp_stream stream(ctx.executor);
  co_await stream.async_connect(co_await resolver.async_resolve(host, port, net::use_awaitable),
                                net::use_awaitable);
  http::request<http::empty_body> req(http::verb::get, target, 11);
  req.set(http::field::host, host);
  co_await http::async_write(stream, req, net::use_awaitable);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  co_await http::async_read(stream, buffer, res, net::use_awaitable);
  if (res.result_int() != 200) {
    throw amfgate::services::fault("Upstream.Status",
                                   target + " answered " + std::to_string(res.result_int()));
  }
  co_return res.body();
}

inline void bind_waiting_examples(amfgate::services::registry& r, inventory& stock) {
  r.bind("Math", "fibonacci", fibonacci, execution::inline_);
  r.bind("Inventory", "add",
         [&stock](std::string item, std::int32_t n) { return stock.add(item, n); });
  r.bind("Inventory", "count", [&stock](std::string item) { return stock.count(item); });
  r.bind("Upstream", "get", http_get);
}

}  // namespace examples
