// amftargets FILE: the version, headers and body targets of an AMF packet, or the reason and
// byte offset where it does not decode (exit status 1).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "amf/packet.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: amftargets FILE\n");
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "amftargets: cannot read %s\n", argv[1]);
    return 2;
  }
  const std::string bytes(std::istreambuf_iterator<char>(f), {});
  amf::document doc;
  amf::decode_error error;
  const amf::packet p = amf::decode_packet(std::as_bytes(std::span(bytes)), doc, error);
  if (error) {
    std::fprintf(stderr, "amftargets: %s\n", error.message().c_str());
    return 1;
  }
  std::printf("version %u\n", p.version);
  for (const auto& h : p.headers) std::printf("header %.*s\n", int(h.name.size()), h.name.data());
  for (const auto& b : p.bodies) {
    std::printf("body %.*s -> %.*s\n", int(b.target.size()), b.target.data(),
                int(b.response.size()), b.response.data());
  }
}
