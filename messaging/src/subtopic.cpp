#include "amfgate/messaging/subtopic.hpp"

#include <vector>

#include "amfgate/services/fault.hpp"
#include "amfgate/services/quote.hpp"

namespace amfgate::messaging {

using services::fault;
using services::quoted;

namespace {

std::vector<std::string_view> tokens(std::string_view s, std::string_view separator) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = s.find(separator);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + separator.size());
  }
}

}  // namespace

void check_subtopic(const config::destination_settings& d, std::string_view subtopic,
                    bool sending) {
  if (!d.allow_subtopics) {
    throw fault("Server.Processing",
                "this destination does not allow subtopics (10553): " + quoted(subtopic));
  }
  bool wildcard = false;
  for (const auto t : tokens(subtopic, d.subtopic_separator)) {
    if (t.empty() || (t != "*" && t.find('*') != std::string_view::npos)) {
      throw fault("Server.Processing",
                  "invalid subtopic " + quoted(subtopic) +
                      " (10554): tokens must not be empty, and * must be a whole token");
    }
    wildcard |= t == "*";
  }
  if (wildcard && sending) {
    throw fault("Server.Processing",
                "a message cannot be sent to a wildcard subtopic (10556): " + quoted(subtopic));
  }
  if (wildcard && d.disallow_wildcard_subtopics) {
    throw fault("Server.Processing",
                "this destination does not allow wildcard subtopics (10560): " + quoted(subtopic));
  }
}

bool subtopic_matches(std::string_view pattern, std::string_view subtopic,
                      std::string_view separator) {
  if (pattern.find('*') == std::string_view::npos) return pattern == subtopic;
  if (pattern == "*") return true;
  const auto p = tokens(pattern, separator), s = tokens(subtopic, separator);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (i == s.size()) return false;  // `a.*` does not select `a`
    if (p[i] == "*") {
      if (i + 1 == p.size()) return true;  // a trailing * selects deeper levels too
      continue;
    }
    if (p[i] != s[i]) return false;
  }
  return p.size() == s.size();
}

}  // namespace amfgate::messaging
