// Authentication: who the caller is, and the interface that decides it.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace amfgate::services {

struct principal {
  std::string name;
  std::vector<std::string> roles;
  bool has_role(std::string_view r) const {
    return std::find(roles.begin(), roles.end(), r) != roles.end();
  }
};

/// Turns credentials (the AMF0 Credentials header, a Flex login) into a principal.
class authenticator {
 public:
  virtual ~authenticator() = default;
  /// nullopt refuses the login.
  virtual std::optional<principal> authenticate(std::string_view user,
                                                std::string_view password) const = 0;
};

struct user_record {
  std::string name;
  std::string password_hash;  ///< crypt(3)
  std::vector<std::string> roles;
};

/// Users with salted password hashes, checked with crypt(3) (libcrypt: yescrypt, SHA-512).
/// An unknown user costs as much time as a wrong password (of the first user: configure every
/// user with the same algorithm and cost).
class user_table : public authenticator {
 public:
  /// Throws std::runtime_error when the first user's hash is not one crypt(3) can use.
  explicit user_table(std::vector<user_record> users);
  std::optional<principal> authenticate(std::string_view user,
                                        std::string_view password) const override;

 private:
  std::vector<user_record> users_;
  std::string decoy_;
};

/// What a session keeps of the credentials it logged in with, so that a request that repeats
/// them (a NetConnection's Credentials header comes with every call) is known without a
/// second password check: a random salt and the SHA-256 of salt, user and password, as
/// "salt:digest" in hex. Fast by design; never a stand-in for the password hash itself.
std::string credential_digest(std::string_view user, std::string_view password);
/// True if `user` and `password` are the ones `digest` was made from (constant time).
bool digest_matches(std::string_view digest, std::string_view user, std::string_view password);

/// A new yescrypt hash of `password` with a random salt ("$y$...").
std::string hash_password(std::string_view password);
/// True if `password` matches the crypt(3) `hash`; compared in constant time.
bool verify_password(std::string_view password, const std::string& hash);

}  // namespace amfgate::services
