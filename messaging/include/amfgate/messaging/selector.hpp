// Message selectors: the JMS 1.1 subset (section 3.8) that BlazeDS 4.7 evaluated with
// ActiveMQ's parser, over a message's headers. Parsed once, when a Consumer subscribes, and
// evaluated against each message it might receive.
//
//   operation IN ('Bid', 'Ask') AND price BETWEEN 10 AND 20.5 AND NOT (symbol LIKE 'X\_%'
//   ESCAPE '\') AND trader IS NOT NULL AND qty * price > 1000
//
// Identifiers name headers (case-sensitive); a header that is absent, or not a string, number
// or boolean, is NULL. Keywords are case-insensitive. Comparisons follow SQL's three-valued
// logic as JMS does: a comparison with NULL, or between a string and a number, is unknown,
// and a message is selected only when the whole expression is true.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

namespace amfgate::messaging {

/// A header value as a selector sees it.
using selector_value = std::variant<std::monostate, bool, double, std::string>;
/// The headers of one message, by name.
using selector_properties = std::map<std::string, selector_value, std::less<>>;

/// A selector that does not parse: the reason, and where in the text (0-based).
class selector_error : public std::runtime_error {
 public:
  selector_error(const std::string& reason, std::size_t position);
  std::size_t position() const noexcept { return position_; }

 private:
  std::size_t position_;
};

class selector {
 public:
  struct node;

  static constexpr std::size_t max_length = 4096;

  /// Parses `text`; an empty (or blank) text selects everything. Throws selector_error.
  explicit selector(std::string_view text);
  ~selector();
  selector(selector&&) noexcept;
  selector& operator=(selector&&) noexcept;

  /// Whether a message with these headers is selected.
  bool matches(const selector_properties& headers) const;
  const std::string& text() const noexcept { return text_; }

 private:
  std::string text_;
  std::unique_ptr<node> root_;  ///< null: everything
};

}  // namespace amfgate::messaging
