#include "amfgate/services/auth.hpp"

#include <crypt.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <array>

#include <memory>
#include <stdexcept>

namespace amfgate::services {

namespace {

// `password` hashed with the algorithm, cost and salt that `setting` names (a salt from
// crypt_gensalt, or a whole hash).
std::string hash_with(std::string_view password, const char* setting) {
  auto data = std::make_unique<crypt_data>();
  const std::string pw(password);
  const char* h = crypt_rn(pw.c_str(), setting, data.get(), sizeof(crypt_data));
  if (!h || h[0] == '*') throw std::runtime_error("crypt: hashing failed");
  return h;
}

// Equal text, compared in time that depends on the lengths only (a secret's digest or hash
// is not given away a byte at a time).
bool same_text(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

constexpr char hex_digits[] = "0123456789abcdef";

std::string hex(const unsigned char* p, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += hex_digits[p[i] >> 4];
    out += hex_digits[p[i] & 15];
  }
  return out;
}

// SHA-256 of the salt (its hex text), the user, a NUL and the password, in hex.
std::string salted_digest(std::string_view salt, std::string_view user, std::string_view password) {
  std::string input;
  input.reserve(salt.size() + user.size() + password.size() + 1);
  input.append(salt).append(user).append(1, '\0').append(password);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (!EVP_Digest(input.data(), input.size(), md, &size, EVP_sha256(), nullptr)) {
    throw std::runtime_error("EVP_Digest: SHA-256 failed");
  }
  return hex(md, size);
}

}  // namespace

std::string credential_digest(std::string_view user, std::string_view password) {
  std::array<unsigned char, 16> salt;
  if (::getrandom(salt.data(), salt.size(), 0) != static_cast<ssize_t>(salt.size())) {
    throw std::runtime_error("getrandom: no salt");
  }
  const std::string s = hex(salt.data(), salt.size());
  return s + ":" + salted_digest(s, user, password);
}

bool digest_matches(std::string_view digest, std::string_view user, std::string_view password) {
  const auto colon = digest.find(':');
  if (colon == std::string_view::npos) return false;
  return same_text(salted_digest(digest.substr(0, colon), user, password),
                   digest.substr(colon + 1));
}

std::string hash_password(std::string_view password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$y$", 0, nullptr, 0, salt, sizeof salt)) {
    throw std::runtime_error("crypt_gensalt: no yescrypt salt");
  }
  return hash_with(password, salt);
}

bool verify_password(std::string_view password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  const std::string pw(password);
  const char* h = crypt_rn(pw.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  return h && h[0] != '*' && same_text(h, hash);
}

// An unknown user is checked against a decoy hashed like the first configured user's hash
// (same algorithm and cost), so that timing does not tell a known name from an unknown one.
user_table::user_table(std::vector<user_record> users)
    : users_(std::move(users)),
      decoy_(users_.empty() ? hash_password("decoy password")
                            : hash_with("decoy password", users_.front().password_hash.c_str())) {}

std::optional<principal> user_table::authenticate(std::string_view user,
                                                  std::string_view password) const {
  for (const auto& u : users_) {
    if (u.name == user) {
      if (!verify_password(password, u.password_hash)) return std::nullopt;
      return principal{u.name, u.roles};
    }
  }
  verify_password(password, decoy_);
  return std::nullopt;
}

}  // namespace amfgate::services
