// ContactService: an address book in SQLite, the service of the contacts example daemon.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "amf/adaptor.hpp"
#include "amfgate/services/registry.hpp"

struct sqlite3;

namespace contacts {

/// A Flex client's [RemoteClass(alias="com.example.contacts.Contact")] class Contact.
struct Contact {
  std::int32_t id = 0;  ///< 0 in a contact that save() has not stored yet
  std::string name;
  std::string email;
  std::string phone;
  std::optional<std::string> notes;
  /// Set by save(); a new contact from a Flex client has null (an unset Date).
  std::optional<std::chrono::system_clock::time_point> updated;
};

/// The contacts in one SQLite database file. Every method blocks on the database, so the
/// daemon runs them on its worker pool (the registry's default for plain functions), never
/// on an I/O thread. One connection in serialized mode, shared by the workers.
class ContactService {
 public:
  /// Opens (or creates) the database and its table; throws std::runtime_error if it cannot.
  ContactService(const std::string& database, std::int64_t max_results);
  ~ContactService();
  ContactService(const ContactService&) = delete;
  ContactService& operator=(const ContactService&) = delete;

  std::vector<Contact> list() const;
  /// Throws the fault Contact.NotFound.
  Contact get(std::int32_t id) const;
  /// Stores a new contact (id 0) or replaces one; returns it with its id and time. Throws
  /// Contact.Invalid for a contact without a name, Contact.NotFound for an unknown id.
  Contact save(Contact c);
  /// Throws Contact.NotFound.
  void remove(std::int32_t id);
  /// Contacts whose name, email or phone contain `text` (ASCII letters in any case), by
  /// name, at most `max_results` of them.
  std::vector<Contact> search(const std::string& text) const;

 private:
  class statement;
  sqlite3* db_ = nullptr;
  std::int64_t max_results_;
};

/// Binds ContactService.list, get, save, remove and search to `service`.
void bind(amfgate::services::registry& r, std::shared_ptr<ContactService> service);

}  // namespace contacts

AMF_CLASS(contacts::Contact, "com.example.contacts.Contact", id, name, email, phone, notes,
          updated);
