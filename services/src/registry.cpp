#include "amfgate/services/registry.hpp"

#include "amfgate/services/quote.hpp"

namespace amfgate::services {

amf::value call_context::header(std::string_view name) const {
  if (request) {
    for (const auto& h : request->headers) {
      if (h.name == name) return h.val;
    }
  }
  return amf::value::undefined();
}

namespace detail {

namespace {
std::string describe(const amf::value& v) {
  std::string s(amf::type_name(v.kind()));
  if (auto* o = v.as_object(); o && !o->cls->alias.empty()) s += " " + quoted(o->cls->alias);
  return s;
}
}  // namespace

void argument_mismatch(const call_context& ctx, std::size_t index, std::string_view expected,
                       const amf::value& got) {
  std::string what = std::string(ctx.service) + "." + std::string(ctx.method) + ": argument " +
                     std::to_string(index + 1) + ": ";
  // The innermost member that did not fit, when the argument is a container or a class.
  if (const auto& f = amf::conversion_failure::last(); f.set) {
    what += f.where() + ": expected " + f.expected + ", got " + describe(f.got);
  } else {
    what += "expected " + std::string(expected) + ", got " + describe(got);
  }
  throw fault("Server.ResourceUnavailable", what);
}

void argument_count(const call_context& ctx, std::size_t expected, std::size_t got) {
  throw fault("Server.ResourceUnavailable",
              std::string(ctx.service) + "." + std::string(ctx.method) + ": expected " +
                  std::to_string(expected) + " argument" + (expected == 1 ? "" : "s") + ", got " +
                  std::to_string(got));
}

}  // namespace detail

namespace {
constexpr std::string_view any_method = "*";
}

registry::registry() : classes_(amf::class_registry::builtin()) {}

services::publisher& registry::publisher() const {
  if (!publisher_) {
    throw std::logic_error("this registry has no publisher: the daemon gives its broker");
  }
  return *publisher_;
}

void registry::publish_through(services::publisher& p) {
  if (frozen_) throw std::logic_error("cannot set the publisher: the registry is in use");
  publisher_ = &p;
}

void registry::add(std::string_view service, std::string_view method_name, method m) {
  const std::string name = std::string(service) + "." + std::string(method_name);
  if (frozen_) throw std::logic_error("cannot bind " + name + ": the registry is in use");
  if (service.empty() || method_name.empty()) {
    throw std::invalid_argument("cannot bind \"" + name + "\": empty service or method name");
  }
  auto& methods = services_[std::string(service)];
  if (!methods.emplace(std::string(method_name), std::move(m)).second) {
    throw std::logic_error(name + " is bound already");
  }
}

void registry::add_any(std::string_view service, method m) {
  add(service, any_method, std::move(m));
}

const method* registry::find(std::string_view service, std::string_view method_name) const {
  auto s = services_.find(service);
  if (s == services_.end()) return nullptr;
  auto m = s->second.find(method_name);
  if (m == s->second.end()) m = s->second.find(any_method);
  return m == s->second.end() ? nullptr : &m->second;
}

bool registry::has_service(std::string_view service) const {
  return services_.find(service) != services_.end();
}

std::vector<service_description> registry::describe() const {
  std::vector<service_description> out;
  for (const auto& [name, methods] : services_) {
    service_description d{name, {}};
    for (const auto& [m, info] : methods)
      d.methods.push_back({m, info.parameters, info.result, info.how});
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace amfgate::services
