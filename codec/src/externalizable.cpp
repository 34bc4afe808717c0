#include "amf/externalizable.hpp"

#include <bit>
#include <string>

#include "charset.hpp"
#include "reader.hpp"
#include "small_message.hpp"

namespace amf {

bool external_reader::bytes(std::size_t n, std::span<const std::byte>& out) {
  if (n > r_.remaining()) return r_.fail(errc::truncated);
  return r_.take(n, out);
}
bool external_reader::uint(std::size_t width, std::uint32_t& out) {
  std::uint8_t b8;
  std::uint16_t b16;
  switch (width) {
    case 1:
      if (!r_.u8(b8)) return false;
      out = b8;
      return true;
    case 2:
      if (!r_.u16(b16)) return false;
      out = b16;
      return true;
    default:
      return r_.u32(out);
  }
}
bool external_reader::object(value& out) {
  return r_.amf3(out);
}
bool external_reader::fail(errc e) {
  return r_.fail(e);
}
document& external_reader::doc() {
  return r_.doc();
}
bool external_reader::more() const {
  return r_.remaining() > 0;
}

namespace {

class single_value final : public class_codec {
 public:
  bool read(external_reader& in, external_node& out) const override {
    out.layout = external_node::form::single;
    return in.object(out.payload);
  }
};

class small_message final : public class_codec {
 public:
  explicit small_message(char third) : third_(third) {}

  bool read(external_reader& in, external_node& out) const override {
    out.layout = external_node::form::small_message;
    object_node* fields = in.doc().object();
    out.payload = value::of(fields);
    const int levels = third_ ? 3 : 2;
    for (int level = 0; level < levels; ++level) {
      auto& flags = out.flags[level];
      std::uint32_t b;
      do {
        if (!in.uint(1, b)) return false;
        flags.push_back(static_cast<std::uint8_t>(b));
      } while (b & 0x80);
      const auto names = small_message_fields(level, third_);
      for (std::size_t i = 0; i < flags.size(); ++i) {
        const std::size_t reserved = i < names.size() ? names[i].size() : 0;
        for (std::size_t bit = 0; bit < 7; ++bit) {
          if ((flags[i] & (1u << bit)) == 0) continue;
          // Forward compatibility as BlazeDS and Flex do it: one value is read and dropped
          // for each unassigned bit up to bit 5; bit 6 has no meaning there.
          if (bit >= reserved && bit == 6) return in.fail(errc::bad_external);
          value v;
          if (!in.object(v)) return false;
          if (bit < reserved) fields->dynamic.push_back({names[i][bit], v});
        }
      }
    }
    return true;
  }

 private:
  char third_;
};

class op_sequence final : public class_codec {
 public:
  explicit op_sequence(std::vector<op_spec> layout) : layout_(std::move(layout)) {}

  bool read(external_reader& in, external_node& out) const override {
    out.layout = external_node::form::ops;
    out.ops.reserve(layout_.size());
    for (const auto& spec : layout_) {
      external_op op{spec.kind, spec.length, {}, {}};
      if (!read_op(in, spec, op)) return false;
      out.ops.push_back(op);
    }
    return true;
  }

 private:
  static bool read_op(external_reader& in, const op_spec& spec, external_op& op) {
    std::uint32_t u;
    std::span<const std::byte> b;
    using k = external_op;
    switch (spec.kind) {
      case k::boolean:
        if (!in.uint(1, u)) return false;
        op.val = value::boolean(u != 0);
        return true;
      case k::byte:
        if (!in.uint(1, u)) return false;
        op.val = value::integer(static_cast<std::int8_t>(u));
        return true;
      case k::unsigned_byte:
        if (!in.uint(1, u)) return false;
        op.val = value::integer(static_cast<std::int32_t>(u));
        return true;
      case k::short_:
        if (!in.uint(2, u)) return false;
        op.val = value::integer(static_cast<std::int16_t>(u));
        return true;
      case k::unsigned_short:
        if (!in.uint(2, u)) return false;
        op.val = value::integer(static_cast<std::int32_t>(u));
        return true;
      case k::int_:
        if (!in.uint(4, u)) return false;
        op.val = value::integer(static_cast<std::int32_t>(u));
        return true;
      case k::unsigned_int:
        if (!in.uint(4, u)) return false;
        op.val = value::number(u);
        return true;
      case k::float_:
        if (!in.uint(4, u)) return false;
        op.val = value::number(std::bit_cast<float>(u));
        return true;
      case k::double_: {
        std::uint32_t lo;
        if (!in.uint(4, u) || !in.uint(4, lo)) return false;
        op.val = value::number(std::bit_cast<double>((std::uint64_t{u} << 32) | lo));
        return true;
      }
      case k::utf:
        if (!in.uint(2, u) || !in.bytes(u, b)) return false;
        op.val = value::string(text(b));
        return true;
      case k::utf_bytes:
        if (!in.bytes(spec.length, b)) return false;
        op.val = value::string(text(b));
        return true;
      case k::multi_byte: {
        if (!in.bytes(spec.length, b)) return false;
        op.charset = in.doc().copy(spec.charset);
        std::string utf8;
        if (!charset::to_utf8(spec.charset, text(b), utf8)) return in.fail(errc::bad_external);
        op.val = in.doc().string(utf8);
        return true;
      }
      case k::object:
        return in.object(op.val);
    }
    return in.fail(errc::bad_external);
  }
  static std::string_view text(std::span<const std::byte> b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }

  std::vector<op_spec> layout_;
};

}  // namespace

std::shared_ptr<const class_codec> single_value_codec() {
  static const auto c = std::make_shared<single_value>();
  return c;
}

std::shared_ptr<const class_codec> small_message_codec(char third) {
  return std::make_shared<small_message>(third);
}

std::shared_ptr<const class_codec> ops_codec(std::vector<op_spec> layout) {
  return std::make_shared<op_sequence>(std::move(layout));
}

const class_registry& class_registry::builtin() {
  static const class_registry r = [] {
    class_registry b;
    b.add(std::string(array_collection_alias), single_value_codec());
    b.add(std::string(array_list_alias), single_value_codec());
    b.add("flex.messaging.io.ObjectProxy", single_value_codec());
    b.add("DSK", small_message_codec('K'));
    b.add("DSA", small_message_codec(0));
    b.add("DSC", small_message_codec('C'));
    return b;
  }();
  return r;
}

class_registry& class_registry::add(std::string alias, std::shared_ptr<const class_codec> codec) {
  codecs_.insert_or_assign(std::move(alias), std::move(codec));
  return *this;
}

const class_codec* class_registry::find(std::string_view alias) const {
  auto it = codecs_.find(alias);
  return it == codecs_.end() ? nullptr : it->second.get();
}

}  // namespace amf
