#include "amfgate/services/builtin.hpp"

#include "amfgate/services/quote.hpp"

namespace amfgate::services {

std::vector<amf::op_spec> red5_externalizable_layout() {
  using k = amf::external_op;
  return {{k::boolean},
          {k::boolean},
          {k::byte},
          {k::byte},
          {k::byte},
          {k::byte},
          {k::byte},
          {k::double_},
          {k::float_},
          {k::int_},
          {k::int_},
          {k::int_},
          {k::multi_byte, 7, "iso-8859-1"},
          {k::multi_byte, 14, "utf-8"},
          {k::object},
          {k::short_},
          {k::short_},
          {k::short_},
          {k::unsigned_int},
          {k::unsigned_int},
          {k::utf},
          {k::utf_bytes, 12}};
}

void add_echo_service(registry& r) {
  auto echo = [](amf::value x) { return x; };
  r.bind("EchoService", "echo", echo, execution::inline_);
  r.bind("Red5Echo", "echo", echo, execution::inline_);
  const auto codec = amf::ops_codec(red5_externalizable_layout());
  r.classes().add("org.red5.demos.echo.ExternalizableClass", codec);
  r.classes().add("org.red5.server.webapp.echo.ExternalizableClass", codec);
}

void add_introspection_service(registry& r) {
  auto describe_one = [](amf::document& doc, const service_description& s) {
    auto* methods = doc.array();
    for (const auto& m : s.methods) {
      auto* o = doc.object();
      o->dynamic.push_back({"name", doc.string(m.name)});
      auto* params = doc.array();
      for (const auto& p : m.parameters) params->dense.push_back(doc.string(p));
      o->dynamic.push_back({"parameters", amf::value::of(params)});
      o->dynamic.push_back({"returns", doc.string(m.result)});
      methods->dense.push_back(amf::value::of(o));
    }
    auto* o = doc.object();
    o->dynamic.push_back({"name", doc.string(s.name)});
    o->dynamic.push_back({"methods", amf::value::of(methods)});
    return amf::value::of(o);
  };
  r.bind(
      "amfgate.Introspection", "listServices",
      [&r, describe_one](call_context& ctx) {
        auto* all = ctx.doc.array();
        for (const auto& s : r.describe()) all->dense.push_back(describe_one(ctx.doc, s));
        return amf::value::of(all);
      },
      execution::inline_);
  r.bind(
      "amfgate.Introspection", "describeService",
      [&r, describe_one](call_context& ctx, std::string name) {
        for (const auto& s : r.describe()) {
          if (s.name == name) return describe_one(ctx.doc, s);
        }
        throw fault("Server.ResourceNotFound", "no service named " + quoted(name));
      },
      execution::inline_);
}

}  // namespace amfgate::services
