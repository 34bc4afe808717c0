// Client text on its way into a fault or a log line: bounded and escaped, so that a request
// cannot make an answer or a log grow with what it sends, nor forge a log line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace amfgate::services {

/// `text` with control characters, DEL, `"` and `\` escaped (`\n`, `\x1b`, ...), cut after
/// `max` bytes of input, then "...(N bytes)" giving the full length.
std::string escaped(std::string_view text, std::size_t max = 64);

/// `escaped` in double quotes: `"name"`.
std::string quoted(std::string_view text, std::size_t max = 64);

}  // namespace amfgate::services
