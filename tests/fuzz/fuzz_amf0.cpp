// libFuzzer target: amf0 decode, encode, decode gives the same value.
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  amf::fuzz::round_trip(data, size, amf::fuzz::format::amf0);
  return 0;
}
