#include "contact_service.hpp"

#include <sqlite3.h>

#include <stdexcept>

namespace contacts {

using amfgate::services::fault;

// A prepared statement with its parameters bound in order; finalized when it goes.
class ContactService::statement {
 public:
  statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) fail();
  }
  ~statement() { sqlite3_finalize(s_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(const std::string& text) {
    check(sqlite3_bind_text(s_, ++bound_, text.c_str(), static_cast<int>(text.size()),
                            SQLITE_TRANSIENT));
    return *this;
  }
  statement& bind(const std::optional<std::string>& text) {
    if (text) return bind(*text);
    check(sqlite3_bind_null(s_, ++bound_));
    return *this;
  }
  statement& bind(std::int64_t n) {
    check(sqlite3_bind_int64(s_, ++bound_, n));
    return *this;
  }

  /// The next row, or false when there is none.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail();
    return false;
  }
  /// The contact in the current row of a `select id, name, email, phone, notes, updated`.
  Contact contact() const {
    Contact c;
    c.id = sqlite3_column_int(s_, 0);
    c.name = text(1);
    c.email = text(2);
    c.phone = text(3);
    if (sqlite3_column_type(s_, 4) != SQLITE_NULL) c.notes = text(4);
    c.updated = std::chrono::system_clock::time_point(
        std::chrono::milliseconds(sqlite3_column_int64(s_, 5)));
    return c;
  }
  std::vector<Contact> all() {
    std::vector<Contact> out;
    while (step()) out.push_back(contact());
    return out;
  }
  std::int64_t integer(int column) const { return sqlite3_column_int64(s_, column); }

 private:
  std::string text(int column) const {
    const auto* p = sqlite3_column_text(s_, column);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<std::size_t>(sqlite3_column_bytes(s_, column)))
             : std::string();
  }
  void check(int rc) const {
    if (rc != SQLITE_OK) fail();
  }
  [[noreturn]] void fail() const {
    // The client gets the code; the database's message stays in the daemon's log.
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db_));
  }

  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  int bound_ = 0;
};

namespace {

constexpr const char* columns = "select id, name, email, phone, notes, updated from contacts ";

std::int64_t millis(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

fault not_found(std::int32_t id) {
  return fault("Contact.NotFound", "no contact with id " + std::to_string(id));
}

}  // namespace

ContactService::ContactService(const std::string& database, std::int64_t max_results)
    : max_results_(max_results) {
  if (sqlite3_open_v2(database.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open the database " + database + ": " + why);
  }
  sqlite3_busy_timeout(db_, 5000);
  char* error = nullptr;
  if (sqlite3_exec(db_,
                   "pragma journal_mode = wal;"
                   "create table if not exists contacts (id integer primary key, name text not "
                   "null, email text not null, phone text not null, notes text, updated integer "
                   "not null)",
                   nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string why = error ? error : "unknown error";
    sqlite3_free(error);
    sqlite3_close(db_);
    throw std::runtime_error("cannot create the contacts table in " + database + ": " + why);
  }
}

ContactService::~ContactService() {
  sqlite3_close(db_);
}

std::vector<Contact> ContactService::list() const {
  return statement(db_, (std::string(columns) + "order by name, id").c_str()).all();
}

Contact ContactService::get(std::int32_t id) const {
  statement s(db_, (std::string(columns) + "where id = ?").c_str());
  s.bind(std::int64_t{id});
  if (!s.step()) throw not_found(id);
  return s.contact();
}

Contact ContactService::save(Contact c) {
  if (c.name.empty()) throw fault("Contact.Invalid", "a contact needs a name");
  const auto now =
      std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  c.updated = now;
  if (c.id == 0) {
    statement s(db_,
                "insert into contacts (name, email, phone, notes, updated) values (?, ?, ?, ?, ?) "
                "returning id");
    s.bind(c.name).bind(c.email).bind(c.phone).bind(c.notes).bind(millis(now));
    // "returning": the connection is shared, so its last_insert_rowid may be another call's.
    s.step();
    c.id = static_cast<std::int32_t>(s.integer(0));
    return c;
  }
  statement s(db_,
              "update contacts set name = ?, email = ?, phone = ?, notes = ?, updated = ? "
              "where id = ? returning id");
  s.bind(c.name)
      .bind(c.email)
      .bind(c.phone)
      .bind(c.notes)
      .bind(millis(now))
      .bind(std::int64_t{c.id});
  if (!s.step()) throw not_found(c.id);
  return c;
}

void ContactService::remove(std::int32_t id) {
  statement s(db_, "delete from contacts where id = ? returning id");
  s.bind(std::int64_t{id});
  if (!s.step()) throw not_found(id);
}

std::vector<Contact> ContactService::search(const std::string& text) const {
  // LIKE with its wildcards escaped: a search for "50%" finds "50%", not "500".
  std::string pattern = "%";
  for (char ch : text) {
    if (ch == '%' || ch == '_' || ch == '\\') pattern += '\\';
    pattern += ch;
  }
  pattern += '%';
  statement s(db_, (std::string(columns) +
                    "where name like ?1 escape '\\' or email like ?1 escape '\\' or phone like "
                    "?1 escape '\\' order by name, id limit ?2")
                       .c_str());
  s.bind(pattern).bind(max_results_);
  return s.all();
}

void bind(amfgate::services::registry& r, std::shared_ptr<ContactService> service) {
  // The registry keeps the handlers, and through them the service, for the daemon's life.
  r.bind("ContactService", "list", [service] { return service->list(); });
  r.bind("ContactService", "get", [service](std::int32_t id) { return service->get(id); });
  r.bind("ContactService", "save", [service](Contact c) { return service->save(std::move(c)); });
  r.bind("ContactService", "remove", [service](std::int32_t id) { service->remove(id); });
  r.bind("ContactService", "search", [service](std::string text) { return service->search(text); });
}

}  // namespace contacts
