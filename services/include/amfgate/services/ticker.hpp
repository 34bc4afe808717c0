// The example publisher: a service that pushes to Flex consumers from C++.
//
//   "services": {"Ticker": {"destination": "ticks", "interval_ms": 1000}}
//
// publishes {sequence, time} to the messaging destination every interval, from a timer on the
// daemon's I/O executor (messaging::on_start); `Ticker.published()` answers how many so far.
#pragma once

#include "amfgate/config.hpp"
#include "amfgate/services/registry.hpp"

namespace amfgate::services {

/// Binds the Ticker when the settings have a "Ticker" section; throws config::error for a
/// destination that messaging does not have.
void add_ticker(registry& r, const config::gateway_config& c);

}  // namespace amfgate::services
