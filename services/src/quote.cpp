#include "amfgate/services/quote.hpp"

#include <algorithm>
#include <iterator>

namespace amfgate::services {

std::string escaped(std::string_view text, std::size_t max) {
  std::string out;
  out.reserve(std::min(text.size(), max) + 16);
  escape_to(std::back_inserter(out), text, max);
  return out;
}

std::string quoted(std::string_view text, std::size_t max) {
  return "\"" + escaped(text, max) + "\"";
}

}  // namespace amfgate::services
