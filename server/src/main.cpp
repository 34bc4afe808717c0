// amfgate: the AMF remoting gateway daemon with the built-in services only.
#include "amfgate/run.hpp"

int main(int argc, char** argv) {
  return amfgate::run(argc, argv, {});
}
