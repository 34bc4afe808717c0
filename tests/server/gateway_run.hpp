// Runs the gateway's coroutine to its end on an I/O context of the test's own.
#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <string>

#include "amfgate/server/gateway.hpp"

namespace amfgate::server {

inline void run(gateway& gw, std::string body, exchange& ex) {
  boost::asio::io_context io;
  std::exception_ptr error;
  boost::asio::co_spawn(io, gw.handle(std::move(body), ex),
                        [&](std::exception_ptr e) { error = e; });
  io.run();
  if (error) std::rethrow_exception(error);
}

}  // namespace amfgate::server
