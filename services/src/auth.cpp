#include "amfgate/services/auth.hpp"

#include <crypt.h>

#include <cstring>
#include <memory>
#include <stdexcept>

namespace amfgate::services {

std::string hash_password(std::string_view password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$y$", 0, nullptr, 0, salt, sizeof salt)) {
    throw std::runtime_error("crypt_gensalt: no yescrypt salt");
  }
  auto data = std::make_unique<crypt_data>();
  const std::string pw(password);
  const char* h = crypt_rn(pw.c_str(), salt, data.get(), sizeof(crypt_data));
  if (!h || h[0] == '*') throw std::runtime_error("crypt: hashing failed");
  return h;
}

bool verify_password(std::string_view password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  const std::string pw(password);
  const char* h = crypt_rn(pw.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  if (!h || h[0] == '*' || std::strlen(h) != hash.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < hash.size(); ++i) {
    diff |= static_cast<unsigned char>(h[i] ^ hash[i]);
  }
  return diff == 0;
}

std::optional<principal> user_table::authenticate(std::string_view user,
                                                  std::string_view password) const {
  // An unknown user is checked against a fixed hash, so that timing does not tell.
  static const std::string decoy = hash_password("decoy password");
  for (const auto& u : users_) {
    if (u.name == user) {
      if (!verify_password(password, u.password_hash)) return std::nullopt;
      return principal{u.name, u.roles};
    }
  }
  verify_password(password, decoy);
  return std::nullopt;
}

}  // namespace amfgate::services
