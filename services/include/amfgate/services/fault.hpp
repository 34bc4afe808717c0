// The error a handler throws for its client.
#pragma once

#include <stdexcept>
#include <string>

namespace amfgate::services {

/// An error for the client: an AMF0 onStatus object or a Flex ErrorMessage.
class fault : public std::runtime_error {
 public:
  fault(std::string code, const std::string& message, std::string detail = {})
      : std::runtime_error(message), code_(std::move(code)), detail_(std::move(detail)) {}
  const std::string& code() const noexcept { return code_; }
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string code_;
  std::string detail_;
};

}  // namespace amfgate::services
