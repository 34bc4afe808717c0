// The contacts daemon as its clients see it: started on a loopback port with a database of
// its own, called with NetConnection (AMF0 and AMF3) and Flex RemotingMessages through
// amfgate's client library, and restarted to show that the contacts stay.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

#include "../contact_service.hpp"
#include "amf/adaptor.hpp"
#include "amf/flex.hpp"
#include "amf/packet.hpp"
#include "amfgate/server/client.hpp"

namespace {

namespace fs = std::filesystem;
using contacts::Contact;

// The password of "editor" in contacts.json, which the daemon is started on here.
constexpr const char* editor_password = "contacts-demo";

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A scratch folder with the example's settings, its database moved into the folder and the
// port left to the system.
class workspace {
 public:
  workspace() : dir_(fs::temp_directory_path() / ("contacts-test-" + std::to_string(getpid()))) {
    fs::create_directories(dir_);
    settings(R"({"database": ")" + (dir_ / "contacts.db").string() + R"(", "max_results": 3})");
  }
  ~workspace() { fs::remove_all(dir_); }

  /// contacts.json with the listening port 0 and this ContactService section.
  void settings(const std::string& service_section) const {
    std::string text = slurp(CONTACTS_SOURCE_DIR "/contacts.json");
    text = std::regex_replace(text, std::regex(R"("port": 8080)"), R"("port": 0)");
    text = std::regex_replace(text, std::regex(R"("ContactService": \{[^}]*\})"),
                              R"("ContactService": )" + service_section);
    std::ofstream(config()) << text;
  }
  fs::path config() const { return dir_ / "contacts.json"; }
  fs::path file(const char* name) const { return dir_ / name; }

 private:
  fs::path dir_;
};

// The daemon, its output in a log file; SIGTERM when it goes.
class daemon {
 public:
  explicit daemon(const workspace& w) : log_(w.file("daemon.log")) {
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    const std::string config = w.config().string();
    const char* argv[] = {CONTACTS_DAEMON, "--config", config.c_str(), nullptr};
    const int rc = posix_spawn(&pid_, CONTACTS_DAEMON, &files, nullptr,
                               const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&files);
    if (rc != 0) throw std::runtime_error("cannot start " CONTACTS_DAEMON);
    // "listening on 127.0.0.1:PORT with ..." (the log is flushed every second).
    const std::regex listening(R"(listening on [^ ]*:(\d+) )");
    for (int i = 0; i < 100 && port_.empty(); ++i) {
      std::smatch m;
      const std::string log = slurp(log_);
      if (std::regex_search(log, m, listening)) port_ = m[1];
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) throw std::runtime_error("exited:\n" + log);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (port_.empty()) throw std::runtime_error("not listening:\n" + slurp(log_));
  }
  ~daemon() { stop(); }

  /// SIGTERM; the exit status.
  int stop() {
    if (pid_ <= 0) return status_;
    kill(pid_, SIGTERM);
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = 0;
    return status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  amfgate::client::http_client client() const { return {"127.0.0.1", port_}; }

 private:
  fs::path log_;
  pid_t pid_ = 0;
  std::string port_;
  int status_ = -1;
};

// One NetConnection call; its answer stays readable while `doc` and `body` live.
struct answer {
  std::string body;
  amf::packet packet;
  bool ok() const { return packet.bodies.at(0).target == "/1/onResult"; }
  const amf::value& value() const { return packet.bodies.at(0).val; }
  std::string code() const {
    const auto* status = value().as_object();
    const auto* code = status ? status->find("code") : nullptr;
    return code ? std::string(code->as_string()) : "(no onStatus code)";
  }
};

answer call(amfgate::client::http_client& http, amf::document& doc, const char* method,
            std::vector<amf::value> args, bool amf3, bool as_editor = false) {
  const std::string target = std::string("ContactService.") + method;
  answer a;
  a.body = http.post("/gateway", amfgate::client::netconnection_request(
                                     target, args, amf3, as_editor ? "editor" : "",
                                     as_editor ? editor_password : ""))
               .body;
  a.packet = amf::decode_packet(std::as_bytes(std::span(a.body)), doc);
  return a;
}

template <class T>
T as(const amf::value& v) {
  T out{};
  EXPECT_TRUE(amf::adaptor<T>::from_value(v, out)) << "the answer is not a " << typeid(T).name();
  return out;
}

TEST(Contacts, ListSaveGetSearchRemoveOverNetConnectionAndFlex) {
  workspace w;
  daemon d(w);
  auto http = d.client();
  amf::document doc;
  for (bool amf3 : {false, true}) {
    EXPECT_TRUE(as<std::vector<Contact>>(call(http, doc, "list", {}, amf3).value()).empty());
  }

  // save needs the editor's login: anonymous, it is refused and nothing is stored.
  Contact ann{0, "Ann Lee", "ann@example.com", "+1 555 0100", "met at the 50% sale", {}};
  auto refused = call(http, doc, "save", {amf::adaptor<Contact>::to_value(doc, ann)}, true);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), "Client.Authentication");

  std::vector<Contact> saved;
  for (Contact c : {ann, Contact{0, "Bob Ray", "bob@example.org", "+1 555 0101", {}, {}},
                    Contact{0, "Cleo Ray", "cleo@example.org", "", {}, {}},
                    Contact{0, "Dan Ray", "dan@example.org", "", {}, {}}}) {
    auto a = call(http, doc, "save", {amf::adaptor<Contact>::to_value(doc, c)}, true, true);
    ASSERT_TRUE(a.ok()) << a.code();
    // A Flex client reads it as its com.example.contacts.Contact.
    ASSERT_NE(a.value().as_object(), nullptr);
    EXPECT_EQ(a.value().as_object()->cls->alias, "com.example.contacts.Contact");
    saved.push_back(as<Contact>(a.value()));
    EXPECT_GT(saved.back().id, 0);
    EXPECT_EQ(saved.back().name, c.name);
  }
  EXPECT_NE(saved[0].id, saved[1].id);

  auto got = as<Contact>(call(http, doc, "get", {amf::value::integer(saved[0].id)}, false).value());
  EXPECT_EQ(got.email, "ann@example.com");
  EXPECT_EQ(got.notes, "met at the 50% sale");
  EXPECT_EQ(got.updated, saved[0].updated);
  EXPECT_EQ(call(http, doc, "get", {amf::value::integer(9999)}, true).code(), "Contact.NotFound");

  // search: any case, wildcards taken literally, at most max_results (3) by name.
  auto found =
      as<std::vector<Contact>>(call(http, doc, "search", {doc.string("RAY")}, true).value());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].name, "Bob Ray");
  EXPECT_EQ(found[2].name, "Dan Ray");
  found = as<std::vector<Contact>>(call(http, doc, "search", {doc.string("50%")}, false).value());
  EXPECT_TRUE(found.empty());  // the "50%" is in notes, which search does not look at
  found = as<std::vector<Contact>>(call(http, doc, "search", {doc.string("0100")}, false).value());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, "Ann Lee");

  // Flex: a RemotingMessage to the ContactService destination.
  const amf::value args[] = {doc.string("example.org")};
  const amf::value msg = amfgate::client::flex_remoting(doc, "ContactService", "search", args, "");
  const std::string flex_body =
      http.post("/messagebroker/amf", amfgate::client::flex_request(std::vector{msg})).body;
  auto flex = amf::flex::read(
      amf::decode_packet(std::as_bytes(std::span(flex_body)), doc).bodies.at(0).val, doc);
  ASSERT_TRUE(flex);
  ASSERT_EQ(flex->kind, amf::flex::kind::acknowledge);
  EXPECT_EQ(as<std::vector<Contact>>(flex->body).size(), 3u);

  // save replaces; a contact without a name is refused; remove needs the login too.
  Contact changed = saved[1];
  changed.phone = "+1 555 0199";
  auto a = call(http, doc, "save", {amf::adaptor<Contact>::to_value(doc, changed)}, false, true);
  ASSERT_TRUE(a.ok()) << a.code();
  EXPECT_EQ(as<Contact>(a.value()).id, saved[1].id);
  Contact nameless;
  EXPECT_EQ(
      call(http, doc, "save", {amf::adaptor<Contact>::to_value(doc, nameless)}, true, true).code(),
      "Contact.Invalid");
  const amf::value bob[] = {amf::value::integer(saved[1].id)};
  auto stranger = d.client();  // no session cookie from the editor's logins
  EXPECT_EQ(call(stranger, doc, "remove", {bob[0]}, true).code(), "Client.Authentication");
  EXPECT_TRUE(call(http, doc, "remove", {bob[0]}, true, true).ok());
  EXPECT_EQ(call(http, doc, "remove", {bob[0]}, true, true).code(), "Contact.NotFound");
  EXPECT_EQ(d.stop(), 0);

  // The database outlives the daemon.
  daemon again(w);
  auto http2 = again.client();
  const auto all = as<std::vector<Contact>>(call(http2, doc, "list", {}, true).value());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].name, "Ann Lee");
  EXPECT_EQ(all[1].name, "Cleo Ray");
}

TEST(Contacts, BadServiceSettingsAreReportedWithTheirPath) {
  workspace w;
  w.settings(R"({"database": "", "max_results": 0, "cache": true})");
  const std::string command =
      std::string(CONTACTS_DAEMON) + " --config " + w.config().string() + " --check-config 2>&1";
  FILE* p = popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(out.find("/services/ContactService/max_results: expected an integer from 1 to 10000, "
                     "got 0"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("/services/ContactService/database: expected a file name"), std::string::npos)
      << out;
  EXPECT_NE(out.find("/services/ContactService/cache: unknown key"), std::string::npos) << out;
}

}  // namespace
