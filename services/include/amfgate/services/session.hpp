// Sessions: the login principal and the Flex client id (DSId) kept across calls, behind an
// interface so several instances can share a store.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "amfgate/services/auth.hpp"
#include "amfgate/services/fault.hpp"

namespace amfgate::services {

struct session {
  std::string id;
  std::optional<principal> user;
  std::string credential;  ///< credential_digest of the login that made `user`, if one did
  std::string flex_client_id;
  bool small_messages = false;  ///< the client negotiated BlazeDS small messages
};

/// A shared store that cannot be reached: what it says names the store and the reason.
class store_unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a client is told when a call needs the session store and the store cannot be reached
/// (`why`): Server.Session.Unavailable.
fault session_store_fault(const std::string& why);

/// Sessions by id. Sessions are values: `find` returns a copy, `save` writes one back.
/// A store on the network throws `store_unavailable` from any call when it cannot answer.
///
/// The server awaits the `async_` forms on its I/O threads. Their defaults call the
/// synchronous ones at once, which suits a store in this process; a store on the network
/// overrides them so that no thread waits for its answers.
class session_store {
 public:
  virtual ~session_store() = default;
  /// The session, if it exists and has not expired; counts as a use.
  virtual std::optional<session> find(const std::string& id) = 0;
  /// A new session with a fresh random id, already stored.
  virtual session create() = 0;
  virtual void save(const session& s) = 0;
  virtual void remove(const std::string& id) = 0;
  virtual std::size_t size() = 0;

  virtual boost::asio::awaitable<std::optional<session>> async_find(std::string id);
  virtual boost::asio::awaitable<session> async_create();
  virtual boost::asio::awaitable<void> async_save(session s);
  virtual boost::asio::awaitable<void> async_remove(std::string id);
  virtual boost::asio::awaitable<std::size_t> async_size();
};

/// In-process store, bounded in count (least recently used go first) and idle time.
class memory_session_store : public session_store {
 public:
  using clock = std::chrono::steady_clock;
  memory_session_store(std::size_t max_sessions, clock::duration idle_timeout)
      : max_(max_sessions), idle_(idle_timeout) {}

  std::optional<session> find(const std::string& id) override;
  session create() override;
  void save(const session& s) override;
  void remove(const std::string& id) override;
  std::size_t size() override;

 private:
  struct entry {
    session data;
    clock::time_point last_used;
    std::list<std::string>::iterator lru;
  };
  void put(const session& s);

  std::mutex mutex_;
  std::unordered_map<std::string, entry> sessions_;
  std::list<std::string> lru_;  // most recent first
  std::size_t max_;
  clock::duration idle_;
};

/// 32 hex digits from the system's random source.
std::string random_id();

}  // namespace amfgate::services
