#include "amfgate/messaging/selector.hpp"

#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <vector>

namespace amfgate::messaging {

selector_error::selector_error(const std::string& reason, std::size_t position)
    : std::runtime_error(reason + " at position " + std::to_string(position)),
      position_(position) {}

namespace {

enum class op {
  literal,
  identifier,
  logical_or,
  logical_and,
  logical_not,
  eq,
  ne,
  lt,
  gt,
  le,
  ge,
  add,
  sub,
  mul,
  div,
  negate,
  between,
  in,
  like,
  is_null,
};

struct token {
  enum kind { end, word, string, number, symbol } k = end;
  std::string text;  ///< a word upper-cased for keywords is compared separately
  double num = 0;
  std::size_t at = 0;
};

bool keyword(const token& t, std::string_view kw) {
  if (t.k != token::word || t.text.size() != kw.size()) return false;
  for (std::size_t i = 0; i < kw.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(t.text[i])) != kw[i]) return false;
  }
  return true;
}

bool reserved(const token& t) {
  for (std::string_view kw :
       {"AND", "OR", "NOT", "BETWEEN", "IN", "LIKE", "ESCAPE", "IS", "NULL", "TRUE", "FALSE"}) {
    if (keyword(t, kw)) return true;
  }
  return false;
}

class lexer {
 public:
  explicit lexer(std::string_view s) : s_(s) {}

  token next() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    token t;
    t.at = i_;
    if (i_ == s_.size()) return t;
    const char c = s_[i_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$') {
      t.k = token::word;
      while (i_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '$')) {
        t.text += s_[i_++];
      }
      return t;
    }
    if (c == '\'') {
      t.k = token::string;
      for (++i_;; ++i_) {
        if (i_ == s_.size()) throw selector_error("unterminated string literal", t.at);
        if (s_[i_] == '\'') {
          if (i_ + 1 < s_.size() && s_[i_ + 1] == '\'') {
            t.text += '\'';
            ++i_;
            continue;
          }
          ++i_;
          return t;
        }
        t.text += s_[i_];
      }
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
      t.k = token::number;
      std::size_t end = i_;
      while (end < s_.size() &&
             (std::isdigit(static_cast<unsigned char>(s_[end])) || s_[end] == '.')) {
        ++end;
      }
      if (end < s_.size() && (s_[end] == 'e' || s_[end] == 'E')) {
        std::size_t e = end + 1;
        if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
        if (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) {
          end = e;
          while (end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end]))) ++end;
        }
      }
      const auto r = std::from_chars(s_.data() + i_, s_.data() + end, t.num);
      if (r.ec != std::errc() || r.ptr != s_.data() + end) {
        throw selector_error("malformed number", t.at);
      }
      // A Java long or float suffix, as ActiveMQ accepts.
      if (end < s_.size() && std::string_view("lLfFdD").find(s_[end]) != std::string_view::npos) {
        ++end;
      }
      t.text = std::string(s_.substr(i_, end - i_));
      i_ = end;
      return t;
    }
    t.k = token::symbol;
    for (std::string_view two : {"<>", "<=", ">="}) {
      if (s_.substr(i_, 2) == two) {
        t.text = two;
        i_ += 2;
        return t;
      }
    }
    if (std::string_view("=<>+-*/(),").find(c) == std::string_view::npos) {
      throw selector_error(std::string("unexpected character '") + c + "'", t.at);
    }
    t.text = std::string(1, c);
    ++i_;
    return t;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

// A SQL LIKE pattern (% any run, _ one character, `escape` makes the next one literal),
// compiled to the runs between its %s. The first run must match at the start, the last at
// the end, and the others in order, each at its leftmost place: that is a match whenever one
// exists. Each run is found by a shift-and automaton, one step per character of the text,
// so a match costs the text's length times the run's length in 64-bit words, never the
// product of the two lengths that backtracking costs.
class like_pattern {
 public:
  static constexpr std::size_t max_length = 256;

  like_pattern() = default;
  like_pattern(std::string_view p, char escape) {
    runs_.emplace_back();
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (escape && p[i] == escape && i + 1 < p.size()) {
        runs_.back().chars.push_back(static_cast<unsigned char>(p[++i]));
      } else if (p[i] == '%') {
        runs_.emplace_back();
      } else {
        runs_.back().chars.push_back(p[i] == '_' ? any : static_cast<unsigned char>(p[i]));
      }
    }
    for (auto& r : runs_) r.compile();
  }

  bool matches(std::string_view s) const {
    const run& first = runs_.front();
    if (runs_.size() == 1) return s.size() == first.chars.size() && first.at(s, 0);
    const run& last = runs_.back();
    if (s.size() < first.chars.size() + last.chars.size()) return false;
    if (!first.at(s, 0) || !last.at(s, s.size() - last.chars.size())) return false;
    std::size_t from = first.chars.size();
    const std::size_t to = s.size() - last.chars.size();
    for (std::size_t r = 1; r + 1 < runs_.size(); ++r) {
      const auto at = runs_[r].find(s, from, to);
      if (at == std::string_view::npos) return false;
      from = at + runs_[r].chars.size();
    }
    return true;
  }

 private:
  static constexpr int any = -1;

  struct run {
    std::vector<int> chars;  ///< a byte, or `any`
    std::size_t words = 0;
    std::array<std::uint64_t, 4> present{};  ///< the bytes that occur in `chars`
    /// Per byte that occurs (in order of value), then one for any other: `words` words each,
    /// bit i set where position i accepts that byte.
    std::vector<std::uint64_t> masks;

    void compile() {
      words = (chars.size() + 63) / 64;
      for (int c : chars) {
        if (c != any) present[c / 64] |= std::uint64_t{1} << (c % 64);
      }
      std::size_t kinds = 1;
      for (auto w : present) kinds += static_cast<std::size_t>(std::popcount(w));
      masks.assign(kinds * words, 0);
      for (std::size_t i = 0; i < chars.size(); ++i) {
        for (std::size_t k = 0; k < kinds; ++k) {
          const bool other = k + 1 == kinds;
          if (chars[i] == any || (!other && rank(static_cast<unsigned char>(chars[i])) == k)) {
            masks[k * words + i / 64] |= std::uint64_t{1} << (i % 64);
          }
        }
      }
    }
    // Which mask a present byte has: how many present bytes are smaller.
    std::size_t rank(unsigned char c) const {
      std::size_t n = 0;
      for (unsigned w = 0; w < c / 64; ++w)
        n += static_cast<std::size_t>(std::popcount(present[w]));
      const std::uint64_t below = (std::uint64_t{1} << (c % 64)) - 1;
      return n + static_cast<std::size_t>(std::popcount(present[c / 64] & below));
    }
    const std::uint64_t* mask(unsigned char c) const {
      const bool is = (present[c / 64] >> (c % 64)) & 1;
      return masks.data() + (is ? rank(c) : masks.size() / words - 1) * words;
    }
    bool at(std::string_view s, std::size_t pos) const {
      for (std::size_t i = 0; i < chars.size(); ++i) {
        if (chars[i] != any && chars[i] != static_cast<unsigned char>(s[pos + i])) return false;
      }
      return true;
    }
    // The leftmost place in [from, to) where the run matches whole; npos if none.
    std::size_t find(std::string_view s, std::size_t from, std::size_t to) const {
      if (chars.empty()) return from;
      std::array<std::uint64_t, (max_length + 63) / 64> state{};
      const std::uint64_t top = std::uint64_t{1} << ((chars.size() - 1) % 64);
      for (std::size_t j = from; j < to; ++j) {
        const std::uint64_t* m = mask(static_cast<unsigned char>(s[j]));
        std::uint64_t carry = 1;  // a match may start here
        for (std::size_t w = 0; w < words; ++w) {
          const std::uint64_t next = state[w] >> 63;
          state[w] = ((state[w] << 1) | carry) & m[w];
          carry = next;
        }
        if (state[words - 1] & top) return j + 1 - chars.size();
      }
      return std::string_view::npos;
    }
  };

  std::vector<run> runs_;  ///< at least one; one more than the pattern has %s
};

}  // namespace

struct selector::node {
  op kind;
  selector_value value;                     ///< literal
  std::string name;                         ///< identifier; like: the pattern
  char escape = 0;                          ///< like: the ESCAPE character, 0 if none
  like_pattern pattern;                     ///< like: compiled
  bool negated = false;                     ///< NOT BETWEEN, NOT IN, NOT LIKE, IS NOT NULL
  std::vector<std::unique_ptr<node>> args;  ///< operands
  std::vector<std::string> set;             ///< in: the strings
};

namespace {

using node_ptr = std::unique_ptr<selector::node>;

node_ptr make(op kind) {
  auto n = std::make_unique<selector::node>();
  n->kind = kind;
  return n;
}

node_ptr make(op kind, node_ptr a, node_ptr b = nullptr) {
  auto n = make(kind);
  n->args.push_back(std::move(a));
  if (b) n->args.push_back(std::move(b));
  return n;
}

class parser {
 public:
  explicit parser(std::string_view text) : lex_(text) { advance(); }

  node_ptr parse() {
    node_ptr n = disjunction();
    if (tok_.k != token::end) fail("unexpected '" + tok_.text + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw selector_error(what, tok_.at); }
  void advance() { tok_ = lex_.next(); }
  bool accept_keyword(std::string_view kw) {
    if (!keyword(tok_, kw)) return false;
    advance();
    return true;
  }
  bool accept_symbol(std::string_view s) {
    if (tok_.k != token::symbol || tok_.text != s) return false;
    advance();
    return true;
  }
  void expect_symbol(std::string_view s) {
    if (!accept_symbol(s)) fail("expected '" + std::string(s) + "'");
  }
  std::string string_literal(const char* what) {
    if (tok_.k != token::string) fail(std::string("expected ") + what + " (a quoted string)");
    std::string s = tok_.text;
    advance();
    return s;
  }

  // Each nesting (parentheses, NOT, a sign) recurses: bounded, so that hostile text cannot
  // exhaust the stack.
  struct nesting {
    explicit nesting(parser& p) : p_(p) {
      if (++p_.depth_ > max_depth) p_.fail("nested deeper than " + std::to_string(max_depth));
    }
    ~nesting() { --p_.depth_; }
    parser& p_;
  };
  static constexpr int max_depth = 64;

  node_ptr disjunction() {
    const nesting guard(*this);
    node_ptr n = conjunction();
    while (accept_keyword("OR")) n = make(op::logical_or, std::move(n), conjunction());
    return n;
  }
  node_ptr conjunction() {
    node_ptr n = negation();
    while (accept_keyword("AND")) n = make(op::logical_and, std::move(n), negation());
    return n;
  }
  node_ptr negation() {
    const nesting guard(*this);
    if (accept_keyword("NOT")) return make(op::logical_not, negation());
    return comparison();
  }
  node_ptr comparison() {
    node_ptr left = sum();
    static constexpr std::pair<std::string_view, op> ops[] = {{"=", op::eq},  {"<>", op::ne},
                                                              {"<=", op::le}, {">=", op::ge},
                                                              {"<", op::lt},  {">", op::gt}};
    for (const auto& [sym, kind] : ops) {
      if (accept_symbol(sym)) return make(kind, std::move(left), sum());
    }
    if (accept_keyword("IS")) {
      auto n = make(op::is_null, std::move(left));
      n->negated = accept_keyword("NOT");
      if (!accept_keyword("NULL")) fail("expected NULL");
      return n;
    }
    const bool negated = accept_keyword("NOT");
    node_ptr n;
    if (accept_keyword("BETWEEN")) {
      n = make(op::between, std::move(left), sum());
      if (!accept_keyword("AND")) fail("expected AND");
      n->args.push_back(sum());
    } else if (accept_keyword("IN")) {
      n = make(op::in, std::move(left));
      expect_symbol("(");
      do {
        n->set.push_back(string_literal("a string in the IN list"));
      } while (accept_symbol(","));
      expect_symbol(")");
    } else if (accept_keyword("LIKE")) {
      n = make(op::like, std::move(left));
      const std::size_t pattern_at = tok_.at;
      n->name = string_literal("a LIKE pattern");
      if (n->name.size() > like_pattern::max_length) {
        throw selector_error(
            "a LIKE pattern is at most " + std::to_string(like_pattern::max_length) + " characters",
            pattern_at);
      }
      if (accept_keyword("ESCAPE")) {
        const std::size_t at = tok_.at;
        const std::string e = string_literal("an ESCAPE character");
        if (e.size() != 1) throw selector_error("ESCAPE takes one character", at);
        n->escape = e[0];
      }
      n->pattern = like_pattern(n->name, n->escape);
    } else if (negated) {
      fail("expected BETWEEN, IN or LIKE after NOT");
    } else {
      return left;
    }
    n->negated = negated;
    return n;
  }
  // Left-associative operators of one precedence over `operand`.
  node_ptr chain(node_ptr (parser::*operand)(), std::string_view a, op a_op, std::string_view b,
                 op b_op) {
    node_ptr n = (this->*operand)();
    for (;;) {
      if (accept_symbol(a)) {
        n = make(a_op, std::move(n), (this->*operand)());
      } else if (accept_symbol(b)) {
        n = make(b_op, std::move(n), (this->*operand)());
      } else {
        return n;
      }
    }
  }
  node_ptr sum() { return chain(&parser::product, "+", op::add, "-", op::sub); }
  node_ptr product() { return chain(&parser::unary, "*", op::mul, "/", op::div); }
  node_ptr unary() {
    const nesting guard(*this);
    if (accept_symbol("-")) return make(op::negate, unary());
    if (accept_symbol("+")) return unary();
    return primary();
  }
  node_ptr primary() {
    if (accept_symbol("(")) {
      node_ptr n = disjunction();
      expect_symbol(")");
      return n;
    }
    auto n = make(op::literal);
    switch (tok_.k) {
      case token::string:
        n->value = tok_.text;
        break;
      case token::number:
        n->value = tok_.num;
        break;
      case token::word:
        if (keyword(tok_, "TRUE") || keyword(tok_, "FALSE")) {
          n->value = keyword(tok_, "TRUE");
        } else if (keyword(tok_, "NULL")) {
          n->value = std::monostate{};
        } else if (reserved(tok_)) {
          fail("unexpected " + tok_.text);
        } else {
          n->kind = op::identifier;
          n->name = tok_.text;
        }
        break;
      case token::end:
        fail("unexpected end of the selector");
      case token::symbol:
        fail("unexpected '" + tok_.text + "'");
    }
    advance();
    return n;
  }

  lexer lex_;
  token tok_;
  int depth_ = 0;
};

using value = selector_value;
const value unknown{};

bool is_null(const value& v) {
  return std::holds_alternative<std::monostate>(v);
}
const double* number(const value& v) {
  return std::get_if<double>(&v);
}
const std::string* text(const value& v) {
  return std::get_if<std::string>(&v);
}
const bool* truth(const value& v) {
  return std::get_if<bool>(&v);
}

value compare(op kind, const value& a, const value& b) {
  if (const double* x = number(a), *y = number(b); x && y) {
    switch (kind) {
      case op::eq:
        return *x == *y;
      case op::ne:
        return *x != *y;
      case op::lt:
        return *x < *y;
      case op::gt:
        return *x > *y;
      case op::le:
        return *x <= *y;
      default:
        return *x >= *y;
    }
  }
  // Strings and booleans compare for (in)equality only (JMS 1.1 3.8.1.2).
  if (kind != op::eq && kind != op::ne) return unknown;
  if ((text(a) && text(b)) || (truth(a) && truth(b))) return (a == b) == (kind == op::eq);
  return unknown;
}

value arithmetic(op kind, const value& a, const value& b) {
  const double *x = number(a), *y = number(b);
  if (!x || !y) return unknown;
  switch (kind) {
    case op::add:
      return *x + *y;
    case op::sub:
      return *x - *y;
    case op::mul:
      return *x * *y;
    default:
      return *x / *y;
  }
}

value negated(bool negate, const value& v) {
  const bool* b = truth(v);
  if (!negate || !b) return v;
  return !*b;
}

value eval(const selector::node& n, const selector_properties& headers) {
  auto arg = [&](std::size_t i) { return eval(*n.args[i], headers); };
  switch (n.kind) {
    case op::literal:
      return n.value;
    case op::identifier: {
      const auto it = headers.find(n.name);
      return it == headers.end() ? unknown : it->second;
    }
    case op::logical_or: {
      const value a = arg(0), b = arg(1);
      if ((truth(a) && *truth(a)) || (truth(b) && *truth(b))) return true;
      if (truth(a) && truth(b)) return false;
      return unknown;
    }
    case op::logical_and: {
      const value a = arg(0), b = arg(1);
      if ((truth(a) && !*truth(a)) || (truth(b) && !*truth(b))) return false;
      if (truth(a) && truth(b)) return true;
      return unknown;
    }
    case op::logical_not:
      return negated(true, arg(0));
    case op::eq:
    case op::ne:
    case op::lt:
    case op::gt:
    case op::le:
    case op::ge:
      return compare(n.kind, arg(0), arg(1));
    case op::add:
    case op::sub:
    case op::mul:
    case op::div:
      return arithmetic(n.kind, arg(0), arg(1));
    case op::negate: {
      const value a = arg(0);
      return number(a) ? value(-*number(a)) : unknown;
    }
    case op::between: {
      const value x = arg(0), lo = arg(1), hi = arg(2);
      if (!number(x) || !number(lo) || !number(hi)) return unknown;
      return negated(n.negated, *number(lo) <= *number(x) && *number(x) <= *number(hi));
    }
    case op::in: {
      const value x = arg(0);
      if (!text(x)) return unknown;
      bool found = false;
      for (const auto& s : n.set) found |= s == *text(x);
      return negated(n.negated, found);
    }
    case op::like: {
      const value x = arg(0);
      if (!text(x)) return unknown;
      return negated(n.negated, n.pattern.matches(*text(x)));
    }
    case op::is_null:
      return is_null(arg(0)) != n.negated;
  }
  return unknown;
}

}  // namespace

selector::selector(std::string_view text) : text_(text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return;
  // Bounds the tree a left-deep chain (a OR b OR ...) builds, and the evaluation's recursion.
  if (text.size() > max_length) {
    throw selector_error("longer than " + std::to_string(max_length) + " characters", max_length);
  }
  root_ = parser(text).parse();
}

selector::~selector() = default;
selector::selector(selector&&) noexcept = default;
selector& selector::operator=(selector&&) noexcept = default;

bool selector::matches(const selector_properties& headers) const {
  if (!root_) return true;
  const value v = eval(*root_, headers);
  return truth(v) && *truth(v);
}

}  // namespace amfgate::messaging
