// libFuzzer target: the message selector parser (messaging/selector.hpp). Any text either
// parses and evaluates against a message's headers, or is refused with a position inside it.
#include <cstdio>
#include <cstdlib>

#include "amfgate/messaging/selector.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace amfgate::messaging;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const selector_properties headers{{"operation", std::string("Bid")},
                                           {"price", 12.5},
                                           {"urgent", true},
                                           {"symbol", std::string("X_AB")},
                                           {"nothing", std::monostate{}}};
  try {
    const selector s(text);
    s.matches(headers);
    s.matches({});
  } catch (const selector_error& e) {
    if (e.position() > size) {
      std::fprintf(stderr, "fuzz check failed: error position %zu past the text (%zu)\n",
                   e.position(), size);
      std::abort();
    }
  }
  return 0;
}
