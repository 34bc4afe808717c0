// The example service of the README ("Writing services"), compiled and tested by
// tests/services/example_test.cpp so that the documentation cannot drift from the API.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "amfgate/services/registry.hpp"

struct User {  // arrives from Flex as [RemoteClass(alias="com.example.User")]
  std::int32_t id = 0;
  std::string name;
  std::optional<std::string> email;
  std::vector<std::string> roles;
  std::chrono::system_clock::time_point created;
};
AMF_CLASS(User, "com.example.User", id, name, email, roles, created);

class UserService {  // its methods run on the worker pool, several at once
 public:
  User getUser(std::int32_t id) {
    std::lock_guard lock(mutex_);
    auto it = users_.find(id);
    if (it == users_.end()) {
      throw amfgate::services::fault("User.NotFound", "no user " + std::to_string(id));
    }
    return it->second;
  }
  User save(User u) {
    std::lock_guard lock(mutex_);
    return users_[u.id] = std::move(u);
  }
  // An ArrayCollection, what Flex binds a DataGrid to.
  amf::array_collection<User> list() {
    std::lock_guard lock(mutex_);
    amf::array_collection<User> all;
    for (const auto& [id, u] : users_) all.push_back(u);
    return all;
  }

 private:
  std::mutex mutex_;
  std::map<std::int32_t, User> users_;
};

inline void bind_services(amfgate::services::registry& r, UserService& users) {
  r.bind("UserService", "getUser", &UserService::getUser, &users);
  r.bind("UserService", "save", &UserService::save, &users);
  r.bind("UserService", "list", &UserService::list, &users);
  // A leading call_context& gives the caller: headers, address, session, principal, logger.
  r.bind("UserService", "whoami", [](amfgate::services::call_context& ctx) {
    return ctx.user ? ctx.user->name : std::string("anonymous");
  });
}
