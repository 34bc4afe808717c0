// Services: C++ callables bound by name and signature, called with AMF arguments.
//
//   registry r;
//   r.bind("UserService", "getUser", [](std::int32_t id) -> User { ... });   // worker pool
//   r.bind("Math", "add", [](double a, double b) { return a + b; }, execution::inline_);
//   r.bind("Quotes", "get", [](std::string s) -> net::awaitable<double> { ... });  // coroutine
//   r.bind("UserService", "rename", &Users::rename, &users);          // a member function
//   r.bind("Audit", "log", [](call_context& ctx, std::string what) { ... });
//
// How a handler runs is chosen when it is bound (`execution`): a plain function runs on the
// server's bounded worker pool, so it may block (a database call); `execution::inline_` runs
// it on the I/O thread that read the request, for cheap code that never waits; a function
// that returns `boost::asio::awaitable<T>` runs on the connection's executor and may
// `co_await` timers, sockets or other services without holding a thread.
//
// Arguments convert through amf::adaptor<T> (amf/adaptor.hpp); a mismatch is a fault that
// names the service, method, argument, the path to the member that did not fit, and the
// expected and actual type: "UserService.save: argument 1: roles[3]: expected string, got int". A
// handler may throw `fault`; any other exception becomes Server.Processing. Names are unique and
// binding after `freeze()` (the server calls it at start) is an error.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "amf/adaptor.hpp"
#include "amf/externalizable.hpp"
#include "amf/packet.hpp"
#include "amf/value.hpp"
#include "amfgate/services/auth.hpp"
#include "amfgate/services/fault.hpp"
#include "amfgate/services/publisher.hpp"
#include "amfgate/services/session.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::services {

/// How a bound handler runs.
enum class execution {
  pool,      ///< the default for plain functions: on the bounded worker pool; may block
  inline_,   ///< on the I/O thread: cheap code that never blocks (echo, introspection)
  coroutine  ///< returns boost::asio::awaitable<T>: on the connection's executor, awaits I/O
};

/// What a handler may know about its call. It lives until the handler returns (a coroutine:
/// until it completes), not longer: copy what a detached task needs.
struct call_context {
  call_context(std::string_view s, std::string_view m, amf::document& d)
      : service(s), method(m), doc(d) {}

  std::string_view service, method;
  amf::document& doc;                    ///< where results are built
  const amf::packet* request = nullptr;  ///< the whole packet (headers); null in tests
  std::string client_address;
  std::optional<session> user_session;  ///< the caller's session, if it has one
  const principal* user = nullptr;      ///< the authenticated caller, or null
  spdlog::logger* logger = nullptr;
  /// The connection's executor (a strand): where a coroutine handler runs. Its cancellation
  /// (`co_await boost::asio::this_coro::cancellation_state`) fires at the call's deadline or
  /// when the client goes away.
  boost::asio::any_io_executor executor;
  /// When the client stops waiting (limits.call_timeout_ms or a per-method override).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// Set when a pool handler's caller has gone (deadline passed, client disconnected): a long
  /// handler may poll `abandoned()` and stop early; its result is dropped either way.
  const std::atomic<bool>* abandon_flag = nullptr;
  /// Where the handler publishes messages to Flex consumers (never null in the daemon).
  services::publisher* publisher = nullptr;

  /// The packet header `name`, or undefined.
  amf::value header(std::string_view name) const;
  bool abandoned() const noexcept { return abandon_flag && abandon_flag->load(); }
};

/// A bound method: converts arguments, calls, converts the result.
struct method {
  execution how = execution::pool;
  /// For `pool` and `inline_` handlers.
  std::function<amf::value(call_context&, std::span<const amf::value>)> invoke;
  /// For `coroutine` handlers.
  std::function<boost::asio::awaitable<amf::value>(call_context&, std::span<const amf::value>)>
      invoke_async;
  std::vector<std::string> parameters;  ///< expected type of each argument
  std::string result;
};

namespace detail {

template <class F>
struct signature : signature<decltype(&F::operator())> {};
template <class R, class... A>
struct signature<R (*)(A...)> {
  using result = R;
  using args = std::tuple<A...>;
};
template <class R, class C, class... A>
struct signature<R (C::*)(A...)> : signature<R (*)(A...)> {};
template <class R, class C, class... A>
struct signature<R (C::*)(A...) const> : signature<R (*)(A...)> {};
template <class R, class C, class... A>
struct signature<R (C::*)(A...) noexcept> : signature<R (*)(A...)> {};
template <class R, class C, class... A>
struct signature<R (C::*)(A...) const noexcept> : signature<R (*)(A...)> {};

template <class T>
using plain = std::remove_cvref_t<T>;

[[noreturn]] void argument_mismatch(const call_context& ctx, std::size_t index,
                                    std::string_view expected, const amf::value& got);
[[noreturn]] void argument_count(const call_context& ctx, std::size_t expected, std::size_t got);

template <class T>
plain<T> convert(const call_context& ctx, std::span<const amf::value> args, std::size_t i) {
  plain<T> out{};
  const amf::value v = i < args.size() ? args[i] : amf::value::undefined();
  amf::conversion_failure::clear();
  if (!amf::adaptor<plain<T>>::from_value(v, out)) {
    argument_mismatch(ctx, i, amf::adaptor<plain<T>>::expected(), v);
  }
  return out;
}

template <class R, bool WithContext, class F, class... A, std::size_t... I>
amf::value call(F& f, call_context& ctx, std::span<const amf::value> args,
                std::index_sequence<I...>) {
  // A call may leave out trailing arguments that accept undefined (std::optional).
  if (args.size() > sizeof...(A)) argument_count(ctx, sizeof...(A), args.size());
  std::tuple<plain<A>...> converted{convert<A>(ctx, args, I)...};  // in order, left to right
  auto run = [&]() -> decltype(auto) {
    if constexpr (WithContext) {
      return f(ctx, std::move(std::get<I>(converted))...);
    } else {
      return f(std::move(std::get<I>(converted))...);
    }
  };
  if constexpr (std::is_void_v<R>) {
    run();
    return amf::value::null();
  } else {
    return amf::adaptor<plain<R>>::to_value(ctx.doc, run());
  }
}

template <class T>
struct awaited {
  static constexpr bool value = false;
  using type = T;
};
template <class T, class E>
struct awaited<boost::asio::awaitable<T, E>> {
  static constexpr bool value = true;
  using type = T;
};

// The coroutine form of `call`: the arguments convert before the handler starts.
template <class R, bool WithContext, class F, class... A, std::size_t... I>
boost::asio::awaitable<amf::value> call_async(F& f, call_context& ctx,
                                              std::span<const amf::value> args,
                                              std::index_sequence<I...>) {
  if (args.size() > sizeof...(A)) argument_count(ctx, sizeof...(A), args.size());
  std::tuple<plain<A>...> converted{convert<A>(ctx, args, I)...};
  auto start = [&] {
    if constexpr (WithContext) {
      return f(ctx, std::move(std::get<I>(converted))...);
    } else {
      return f(std::move(std::get<I>(converted))...);
    }
  };
  if constexpr (std::is_void_v<R>) {
    co_await start();
    co_return amf::value::null();
  } else {
    co_return amf::adaptor<plain<R>>::to_value(ctx.doc, co_await start());
  }
}

template <class... A>
struct first_is_context : std::false_type {};
template <class First, class... Rest>
struct first_is_context<First, Rest...> : std::is_same<First, call_context&> {};

template <class R, class Tuple>
struct binder;
template <class R, class... A>
struct binder<R, std::tuple<A...>> {
  static constexpr bool with_context = first_is_context<A...>::value;

  static constexpr bool is_coroutine = awaited<R>::value;
  using result_type = typename awaited<R>::type;

  template <class F>
  static method make(F f, execution how) {
    if constexpr (with_context) {
      return without_context_parameter(std::move(f), how, static_cast<std::tuple<A...>*>(nullptr));
    } else {
      return build<false, F, A...>(std::move(f), how);
    }
  }

 private:
  // The AMF arguments are the parameters after a leading call_context&.
  template <class F, class First, class... Rest>
  static method without_context_parameter(F f, execution how, std::tuple<First, Rest...>*) {
    return build<true, F, Rest...>(std::move(f), how);
  }

  template <bool WithContext, class F, class... P>
  static method build(F f, execution how) {
    method m;
    m.how = how;
    m.parameters = {std::string(amf::adaptor<plain<P>>::expected())...};
    m.result = result_name();
    if constexpr (is_coroutine) {
      m.how = execution::coroutine;
      m.invoke_async = [f = std::move(f)](call_context& ctx,
                                          std::span<const amf::value> args) mutable {
        return call_async<result_type, WithContext, F, P...>(f, ctx, args,
                                                             std::index_sequence_for<P...>{});
      };
    } else {
      m.invoke = [f = std::move(f)](call_context& ctx, std::span<const amf::value> args) mutable {
        return call<R, WithContext, F, P...>(f, ctx, args, std::index_sequence_for<P...>{});
      };
    }
    return m;
  }

  static std::string result_name() {
    if constexpr (std::is_void_v<result_type>) {
      return "void";
    } else {
      return std::string(amf::adaptor<plain<result_type>>::expected());
    }
  }
};

}  // namespace detail

/// Description of a bound service, for introspection.
struct service_description {
  std::string name;
  struct method_info {
    std::string name;
    std::vector<std::string> parameters;
    std::string result;
    execution how = execution::pool;
  };
  std::vector<method_info> methods;
};

class registry {
 public:
  registry();

  /// Binds `f`. A plain function runs on the worker pool unless `how` is
  /// `execution::inline_`; a function returning `awaitable<T>` is a coroutine whatever `how`
  /// says but `inline_`, which is an error for it (std::logic_error).
  template <class F>
  registry& bind(std::string_view service, std::string_view method_name, F f,
                 execution how = execution::pool) {
    using sig = detail::signature<std::decay_t<F>>;
    using binder = detail::binder<typename sig::result, typename sig::args>;
    if (binder::is_coroutine && how == execution::inline_) {
      throw std::logic_error("cannot bind " + std::string(service) + "." +
                             std::string(method_name) +
                             " inline: it is a coroutine (it returns an awaitable)");
    }
    add(service, method_name, binder::make(std::move(f), how));
    return *this;
  }

  /// A member function called on `object`, which must outlive the registry.
  template <class C, class M>
  requires std::is_member_function_pointer_v<M> registry& bind(std::string_view service,
                                                               std::string_view method_name, M pm,
                                                               C* object,
                                                               execution how = execution::pool) {
    using sig = detail::signature<M>;
    return bind_member(service, method_name, pm, object, how,
                       static_cast<typename sig::args*>(nullptr),
                       static_cast<typename sig::result*>(nullptr));
  }

  /// Adds a prepared method (for handlers that take the arguments as they come).
  void add(std::string_view service, std::string_view method_name, method m);
  /// Adds a method that answers every method of `service` that is not bound by name (the
  /// bridge's "Service": upstream); `call_context::method` tells which was called. It is
  /// described as the method "*".
  void add_any(std::string_view service, method m);

  const method* find(std::string_view service, std::string_view method_name) const;
  bool has_service(std::string_view service) const;
  std::vector<service_description> describe() const;

  /// After this, binding throws. The server freezes its registry when it starts.
  void freeze() { frozen_ = true; }

  /// Codecs for the externalizable classes that the services exchange (built-ins included).
  amf::class_registry& classes() { return classes_; }
  const amf::class_registry& classes() const { return classes_; }

  /// Where services publish to Flex consumers: the daemon's broker, given before the
  /// services bind (the one handlers also find in call_context). Throws std::logic_error
  /// when none was given (a registry of a test's own).
  services::publisher& publisher() const;
  void publish_through(services::publisher& p);

 private:
  template <class C, class M, class R, class... A>
  registry& bind_member(std::string_view service, std::string_view method_name, M pm, C* object,
                        execution how, std::tuple<A...>*, R*) {
    return bind(
        service, method_name,
        [pm, object](A... a) -> R { return (object->*pm)(std::forward<A>(a)...); }, how);
  }

  std::map<std::string, std::map<std::string, method, std::less<>>, std::less<>> services_;
  amf::class_registry classes_;
  services::publisher* publisher_ = nullptr;
  bool frozen_ = false;
};

}  // namespace amfgate::services
