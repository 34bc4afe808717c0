// The services that come with the gateway.
#pragma once

#include <vector>

#include "amf/externalizable.hpp"
#include "amfgate/services/registry.hpp"

namespace amfgate::services {

/// The EchoTest echo service: `echo(x) -> x`, unchanged (types, aliases, traits, sharing),
/// as the service EchoService and the Flex destination Red5Echo, with the codec of the Red5
/// echo client's ExternalizableClass (under both of its aliases).
void add_echo_service(registry& r);

/// writeExternal of the Red5 echo client's ExternalizableClass, in order (EchoTest case 13).
std::vector<amf::op_spec> red5_externalizable_layout();

/// `amfgate.Introspection`: listServices() and describeService(name), what AMFPHP's
/// discovery service and FluorineFx's DescribeService gave their users.
void add_introspection_service(registry& r);

}  // namespace amfgate::services
