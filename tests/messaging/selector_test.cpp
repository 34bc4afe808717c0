#include "amfgate/messaging/selector.hpp"

#include <gtest/gtest.h>

namespace amfgate::messaging {
namespace {

const selector_properties headers{
    {"operation", std::string("Bid")}, {"price", 12.5},  {"qty", 100.0},
    {"symbol", std::string("X_AB")},   {"urgent", true}, {"trader", std::string("O'Neil")},
    {"nothing", std::monostate{}},
};

bool selects(std::string_view text) {
  return selector(text).matches(headers);
}

TEST(Selector, ComparesHeadersAsJmsDoes) {
  EXPECT_TRUE(selects(""));
  EXPECT_TRUE(selects("   "));
  EXPECT_TRUE(selects("operation IN ('Bid','Ask')"));  // the Flex SDK's own example
  EXPECT_FALSE(selects("operation NOT IN ('Bid','Ask')"));
  EXPECT_TRUE(selects("operation = 'Bid' AND price > 10"));
  EXPECT_TRUE(selects("price BETWEEN 10 AND 20.5 and qty >= 100"));
  EXPECT_FALSE(selects("price NOT BETWEEN 10 AND 20.5"));
  EXPECT_TRUE(selects("qty * price > 1000 AND qty / 4 = 25 AND -price < 0 AND qty - 1 = 99"));
  EXPECT_TRUE(selects("qty + 1.5e1 = 115"));
  EXPECT_TRUE(selects("price <> 13 OR nonsense = 1"));
  EXPECT_TRUE(selects("urgent"));
  EXPECT_TRUE(selects("urgent = TRUE AND NOT (urgent = false)"));
  EXPECT_TRUE(selects("trader = 'O''Neil'"));
  EXPECT_TRUE(selects("Operation IS NULL AND operation IS NOT NULL AND nothing IS NULL"));
  EXPECT_TRUE(selects("(price < 5 OR price > 10) AND (qty = 100)"));
  EXPECT_FALSE(selects("price < 5 OR price > 10 AND qty = 1"));  // AND binds tighter
}

TEST(Selector, LikeHasWildcardsAndAnEscape) {
  EXPECT_TRUE(selects("symbol LIKE 'X%'"));
  EXPECT_TRUE(selects("symbol LIKE 'X_AB'"));
  EXPECT_TRUE(selects("symbol LIKE '_\\_%' ESCAPE '\\'"));
  EXPECT_FALSE(selects("symbol LIKE 'XY\\_%' ESCAPE '\\'"));
  EXPECT_TRUE(selects("symbol LIKE '%B'"));
  EXPECT_TRUE(selects("symbol LIKE '%%_A%'"));
  EXPECT_FALSE(selects("symbol LIKE 'X'"));
  EXPECT_FALSE(selects("symbol NOT LIKE 'X%'"));
}

TEST(Selector, UnknownIsNeitherTrueNorFalse) {
  // A missing header, a NULL one, or a string compared with a number: unknown, so neither the
  // comparison nor its negation selects, but OR with something true does.
  for (const char* unknown :
       {"missing = 1", "nothing = 1", "operation > 1", "operation < 'C'", "price = 'x'",
        "missing LIKE 'a'", "missing IN ('a')", "missing BETWEEN 1 AND 2", "price + missing > 0",
        "urgent > 1", "operation"}) {
    SCOPED_TRACE(unknown);
    EXPECT_FALSE(selects(unknown));
    EXPECT_FALSE(selects(std::string("NOT (") + unknown + ")"));
    EXPECT_TRUE(selects(std::string("(") + unknown + ") OR price = 12.5"));
    EXPECT_FALSE(selects(std::string("(") + unknown + ") AND price = 12.5"));
  }
  EXPECT_FALSE(selects("(missing = 1) OR price = 1"));
}

TEST(Selector, ABadSelectorSaysWhyAndWhere) {
  struct bad {
    const char* text;
    std::size_t position;
    const char* reason;
  };
  for (const bad& b : {bad{"price >", 7, "unexpected end"}, bad{"price > 'x", 8, "unterminated"},
                       bad{"price ! 3", 6, "unexpected character '!'"},
                       bad{"operation IN (1, 2)", 14, "a string in the IN list"},
                       bad{"a NOT = 1", 6, "expected BETWEEN, IN or LIKE"},
                       bad{"a LIKE 'x' ESCAPE 'ab'", 18, "ESCAPE takes one character"},
                       bad{"a IS 3", 5, "expected NULL"}, bad{"(a = 1", 6, "expected ')'"},
                       bad{"a = 1 b", 6, "unexpected 'b'"}, bad{"AND = 1", 0, "unexpected AND"},
                       bad{"a BETWEEN 1 OR 2", 12, "expected AND"}}) {
    SCOPED_TRACE(b.text);
    try {
      selector s(b.text);
      ADD_FAILURE() << "parsed";
    } catch (const selector_error& e) {
      EXPECT_EQ(e.position(), b.position);
      EXPECT_NE(std::string(e.what()).find(b.reason), std::string::npos) << e.what();
    }
  }
}

TEST(Selector, HostileTextIsBounded) {
  // Deep nesting stops at the limit instead of the stack.
  EXPECT_THROW(selector(std::string(100'000, '(') + "a = 1"), selector_error);
  EXPECT_THROW(selector(std::string(100, '(') + "a = 1" + std::string(100, ')')), selector_error);
  std::string not_chain;
  for (int i = 0; i < 100; ++i) not_chain += "NOT ";
  EXPECT_THROW(selector(not_chain + "urgent"), selector_error);
  EXPECT_THROW(selector(std::string(100'000, '-') + "1 = 1"), selector_error);
  // A long flat chain is refused by length; one within it evaluates.
  std::string chain = "price = 1";
  while (chain.size() < 5000) chain += " OR price = 1";
  EXPECT_THROW(selector{chain}, selector_error);
  chain = "price = 1";
  while (chain.size() < 4000) chain += " OR price = 1";
  chain += " OR price = 12.5";
  EXPECT_TRUE(selector(chain).matches(headers));
}

}  // namespace
}  // namespace amfgate::messaging
