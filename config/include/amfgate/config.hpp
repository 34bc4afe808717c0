// The daemon's settings: defaults in code, so amfgate runs with no file at all; a JSON file
// overrides any part. Unknown keys are rejected, and every error names its JSON path and the
// expected form; all errors are reported together, in the order --print-config prints the
// keys. Each struct's keys, forms and bounds are described once, in config.cpp (`describe`).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace amfgate::config {

using milliseconds = std::chrono::milliseconds;

struct listen_settings {
  std::string address = "0.0.0.0";
  std::uint16_t port = 8080;  ///< 0 picks a free port (logged at start)
};

struct limit_settings {
  std::size_t max_body_bytes = std::size_t{16} << 20;
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_connections = 1024;
  /// Connections from one client address; past it (or `max_connections`) new ones get 503
  /// "too many connections" and are closed. Loopback may still open a few for /healthz.
  /// 0 = no limit per address (behind a proxy every client has the proxy's address).
  std::size_t max_connections_per_client = 128;
  /// Requests of one client address being handled at once (over all its connections);
  /// past it 503 with Retry-After. 0 = no limit.
  std::size_t max_requests_per_client = 64;
  /// Bytes held by all requests in flight: bodies, their decoded values, and replies. A
  /// request that would pass it gets 503 with Retry-After.
  std::size_t max_inflight_bytes = std::size_t{512} << 20;
  /// The encoded size of one reply; past it the call is answered with Server.ResponseTooLarge.
  std::size_t max_response_bytes = std::size_t{64} << 20;
  /// What one request's packet may decode to (its values, not its bytes: 16 MiB of AMF3
  /// nulls are 368 MiB of values). Past it: 413.
  std::size_t max_decoded_bytes = std::size_t{128} << 20;
  /// User names and passwords longer than this are refused before they are hashed, logged
  /// or quoted.
  std::size_t max_credential_bytes = 256;
  milliseconds header_timeout{10'000};  ///< to receive a request's headers
  milliseconds read_timeout{30'000};    ///< to receive its body
  milliseconds idle_timeout{60'000};    ///< keep-alive connection with no request
  std::size_t max_depth = 128;          ///< AMF nesting
  /// How long a client waits for one call (a message of a packet); past it the call is
  /// answered with the fault Server.Timeout. 0 = no deadline.
  milliseconds call_timeout{30'000};
  /// Per "Service" or "Service.method" (the more precise wins): overrides `call_timeout`.
  std::map<std::string, milliseconds> call_timeouts;
};

/// The worker pool where plain (blocking) handlers, password checks and a blocking session
/// store run.
struct worker_settings {
  unsigned threads = 0;       ///< 0 = four per usable CPU (handlers mostly wait on I/O)
  std::size_t max_queue = 0;  ///< calls waiting for a worker; past it 503. 0 = 64 per worker
};

/// Failed logins, limited per client address and per user name.
struct login_settings {
  std::size_t max_failures = 5;  ///< within the window, before attempts are refused
  milliseconds window{60'000};
  milliseconds backoff{30'000};  ///< doubled for each further failure, at most 64 times
};

struct log_sink {
  std::string type = "stdout";  ///< "stdout", "stderr" or "file"
  std::string path;             ///< for "file"
};

struct log_settings {
  std::string level = "info";  ///< trace, debug, info, warn, error, critical, off
  bool access = true;          ///< one line per request
  std::vector<log_sink> sinks{log_sink{}};
};

/// /crossdomain.xml over HTTP. (No `to-ports`: it belongs to socket policy files, which an
/// HTTP gateway does not serve.)
struct crossdomain_settings {
  std::vector<std::string> allow_domains;  ///< e.g. "*.example.com"
  bool secure = true;
};

/// Cross-origin calls from browser-hosted clients (Apache Royale, Ruffle) served from another
/// origin than the gateway's: the preflight (OPTIONS) and the Access-Control-* headers.
/// Browsers enforce CORS, not crossdomain.xml.
struct cors_settings {
  /// Exact origins ("https://app.example.com", scheme://host[:port]), or "*" for any origin
  /// (not with credentials). Empty: CORS off, OPTIONS answers 405 as before.
  std::vector<std::string> allow_origins;
  /// Lets the session cookie cross origins: answers say Access-Control-Allow-Credentials, and
  /// the cookie becomes SameSite=None; Secure (browsers then send it over HTTPS only).
  bool allow_credentials = false;
  unsigned max_age_s = 600;  ///< how long a browser may cache a preflight's answer
  std::vector<std::string> allow_headers{"Content-Type"};  ///< request headers a page may send

  bool enabled() const { return !allow_origins.empty(); }
};

/// POST /json/<Service>/<method>: the bound methods with JSON arguments and answers (typed
/// JSON), under the same access rules, logins and limits as AMF calls.
struct json_endpoint_settings {
  bool enabled = false;
};

/// GET /console: a page that lists the services, calls them and decodes AMF packets.
struct console_settings {
  std::optional<bool> enabled;  ///< unset = on in debug mode only
  /// Who may use it when users are configured: a login, with one of these roles if any.
  /// With no users configured the console is open (a development setup).
  std::vector<std::string> roles;
};

/// The shared session store of several instances (sessions.store = "redis").
struct redis_settings {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::string password;  ///< AUTH when not empty
  unsigned db = 0;       ///< SELECT
  std::string key_prefix = "amfgate:session:";
  milliseconds connect_timeout{500};
  milliseconds command_timeout{500};
};

struct session_settings {
  std::string store = "memory";       ///< "memory" (this process) or "redis" (shared)
  std::size_t max_sessions = 10'000;  ///< memory store only
  milliseconds idle_timeout{30 * 60'000};
  std::string cookie = "AMFGATESESSIONID";
  bool cookie_secure = false;            ///< the cookie's Secure attribute (HTTPS only)
  std::string cookie_same_site = "Lax";  ///< Strict, Lax or None (None requires Secure)
  redis_settings redis;
};

struct user {
  std::string name;
  std::string password;  ///< a crypt(3) hash ($y$ yescrypt or $6$ SHA-512), never plain text
  std::vector<std::string> roles;
};

/// Who may call a service ("Service") or a method ("Service.method").
struct access_rule {
  bool authenticated = true;       ///< a principal is required
  std::vector<std::string> roles;  ///< and, if not empty, one of these roles
};

/// A messaging destination (`messaging.destinations.<name>`): what BlazeDS configured as a
/// <destination> of its MessageService with the ActionScriptAdapter.
struct destination_settings {
  bool allow_subtopics = false;
  std::string subtopic_separator = ".";
  bool disallow_wildcard_subtopics = false;
  std::optional<access_rule> send;       ///< who may publish; none: anyone
  std::optional<access_rule> subscribe;  ///< who may subscribe; none: anyone
  /// Overrides each message's timeToLive when set (0: never expires).
  std::optional<milliseconds> message_ttl;
  /// What the destination keeps for consumers that have not polled yet: the oldest messages
  /// go first past either bound (consumers behind are told how many they lost).
  std::size_t max_messages = 1000;
  std::size_t max_bytes = std::size_t{1} << 20;
  /// An upstream (`upstreams.<name>`) that gets what Flex Producers send here, after it is
  /// published: POST <url>_messages/<destination>, at most once (README, "The bridge").
  std::string forward;
  /// BlazeDS's throttle-inbound: how many messages a second Producers may send here (0: no
  /// bound), all of them together and each FlexClient (DSId). Past either, `policy`:
  /// "error" answers the Producer a fault, "ignore" drops the message and acknowledges it.
  struct throttle {
    std::uint32_t max_frequency = 0;
    std::uint32_t max_client_frequency = 0;
    std::string policy = "error";
  } throttle_inbound;
  /// What Consumers receive (BlazeDS's throttle-outbound, LCDS's policies): at most
  /// `max_client_frequency` messages a second to each subscription (0: no bound), and less
  /// when the Consumer asks for less (its maxFrequency). Past it, `policy`: "buffer" keeps
  /// the rest in the destination's log for the next second (past its retention they are
  /// lost, and the Consumer is told); "conflate" delivers, of what waits, only the newest
  /// message of each subtopic; "ignore" passes them.
  struct outbound_throttle {
    std::uint32_t max_client_frequency = 0;
    std::string policy = "buffer";
  } throttle_outbound;
  /// A subscription that nothing was delivered to, and that was not subscribed again, for
  /// this long ends (BlazeDS's subscription-timeout-minutes): its Consumer is told with a
  /// SUBSCRIPTION_INVALIDATE command (operation 10) on its next poll or its stream (0: never).
  milliseconds subscription_timeout{0};
  /// An upstream (`upstreams.<name>`) asked before each subscribe and each Producer's send
  /// whether the user may, for that subtopic: POST <url>_authorize/<destination> (README,
  /// "The bridge"). C++ services register such a hook with publisher::authorize.
  std::string authorize;
};

/// Flex messaging (Producer/Consumer) over the gateway paths.
struct messaging_settings {
  /// How long a poll with nothing to deliver parks for a message (long-polling); 0 answers
  /// at once (plain polling, BlazeDS's default).
  milliseconds poll_wait{0};
  /// DSPollWait on the reply to a poll that could park: when the client polls next.
  milliseconds client_wait{0};
  /// DSPollWait on the reply to a poll that could not park (limits reached, batched).
  milliseconds busy_wait{3'000};
  std::size_t max_parked = 10'000;   ///< parked polls in the daemon
  std::size_t max_streams = 10'000;  ///< open streams (StreamingAMFChannel) in the daemon
  /// Parked polls and open streams per HTTP session, or per FlexClient without a session:
  /// browsers keep about 6 connections per host, and these hold theirs (BlazeDS's
  /// max-persistent-connections-per-session).
  std::size_t max_held_per_session = 4;
  /// Silence on a stream before a heartbeat byte: how soon a dead client is found.
  milliseconds stream_heartbeat{5'000};
  std::size_t max_messages_per_poll = 1000;  ///< the rest waits for the next poll
  std::size_t max_subscriptions = 100'000;
  std::size_t max_subscriptions_per_client = 100;  ///< per FlexClient (DSId)
  /// Per caller: the HTTP session, or the client address of a request without one (0: none).
  std::size_t max_clients_per_caller = 500;          ///< FlexClients
  std::size_t max_subscriptions_per_caller = 2'000;  ///< subscriptions
  /// (subtopic, selector) pairs per subscription (MULTI_SUBSCRIBE adds several).
  std::size_t max_filters_per_subscription = 64;
  /// What a message's headers keep: their names and string values, each counted in full
  /// however often the request referenced it. Selectors read these.
  std::size_t max_header_bytes = 65'536;
  std::size_t max_id_bytes = 128;  ///< a DSId or a subscription's clientId (a UUID is 36)
  /// A FlexClient that does not poll for this long loses its subscriptions.
  milliseconds client_idle_timeout{30 * 60'000};
  /// How long a subscription that ended without an unsubscribe (its FlexClient timed out or
  /// disconnected, or it unsubscribed with DSPreserveDurable) is kept as a cursor: a
  /// resubscribe with its clientId by the same FlexClient continues where it stopped, and
  /// gets what was published in between, within the destination's retention (0: never).
  milliseconds resume_window{0};
  /// Where the destinations' logs and the subscriptions live: "memory" (this process) or
  /// "redis" (the Redis of sessions.redis, shared by every instance); unset: as
  /// sessions.store.
  std::optional<std::string> store;
  /// With the store "redis", the keys' prefix.
  std::string redis_key_prefix = "amfgate:messaging:";
  std::map<std::string, destination_settings> destinations;
};

/// An HTTP/JSON service that AMF calls are bridged to (`upstreams.<name>`): each call is a
/// POST of JSON to `url` + "Service/method" on a pooled keep-alive connection.
struct upstream_settings {
  /// "http://host[:port]/path/", "https://host[:port]/path/" (verified against the system's
  /// CAs, or `ca_file`), or a Unix socket: "unix:/run/app.sock" or
  /// "http://unix:/run/app.sock:/path/" (nginx's form).
  std::string url;
  /// "plain": the JSON a backend's developers write (_explicitType, ISO dates, _bytes);
  /// "typed": the lossless typed JSON of the JSON endpoint (docs/typed-json.md).
  std::string mapping = "plain";
  std::size_t max_connections = 16;  ///< open to it, busy and idle
  /// Calls at once; past max_connections they wait for a connection; past this, Server.Busy.
  std::size_t max_inflight = 64;
  milliseconds connect_timeout{2'000};
  milliseconds read_timeout{30'000};  ///< for its answer (the call's deadline cuts it shorter)
  /// A pooled connection idle this long is closed (keep it under the backend's keep-alive).
  milliseconds idle_timeout{30'000};
  /// Consecutive failures (no connection, timeout, a broken answer, 502/503/504) after which
  /// calls fail fast with Server.Upstream.Unavailable for `down_ms`; then one call tries again.
  std::size_t failure_threshold = 5;
  milliseconds down{5'000};
  std::string ca_file;  ///< https: a PEM file of CAs to trust instead of the system's
  /// The AMF packet headers passed on in the call's "headers" (none by default).
  std::vector<std::string> forward_headers;
  /// A call's JSON body past this is refused (Client.Upstream.TooLarge) before it is sent.
  std::size_t max_request_bytes = std::size_t{16} << 20;
};

/// POST /publish/<destination>: a backend publishes to Flex consumers (README, "Publishing
/// from a backend"). Off unless enabled; refuses anyone without a token or role below.
struct publish_settings {
  bool enabled = false;
  std::string path = "/publish/";
  /// "Authorization: Bearer <token>" with one of these.
  std::vector<std::string> tokens;
  /// Or a session logged in with one of these roles.
  std::vector<std::string> roles;
  /// An address of its own (say the backends' network): the endpoint is served there alone,
  /// and not on `listen`. None: on `listen`.
  std::optional<listen_settings> listen;
};

struct gateway_config {
  listen_settings listen;
  unsigned threads = 0;  ///< I/O threads; 0 = one per CPU of the daemon's affinity mask
  std::vector<std::string> gateway_paths{"/gateway", "/messagebroker/amf"};
  std::string default_service = "EchoService";
  bool debug = false;                 ///< fault details and introspection for clients
  std::optional<bool> introspection;  ///< unset = on in debug mode only
  milliseconds shutdown_grace{10'000};
  /// At shutdown, idle keep-alive connections stay open this long for the client to close
  /// them (a balancer does so without racing a request against the close); 0 = close at once.
  milliseconds shutdown_idle_wait{0};
  limit_settings limits;
  worker_settings workers;
  login_settings logins;
  log_settings log;
  std::optional<crossdomain_settings> crossdomain;  ///< none: /crossdomain.xml is 404
  cors_settings cors;
  json_endpoint_settings json_endpoint;
  console_settings console;
  session_settings sessions;
  bool small_messages = false;  ///< answer with DSK when a client negotiates it
  /// Answer ArrayCollection and ArrayList as arrays to a request with Ruffle's shape (an
  /// anonymous Flex message in AMF0): Ruffle drops a reply that holds one.
  bool ruffle_collections_as_arrays = true;
  messaging_settings messaging;
  std::vector<user> users;
  std::map<std::string, access_rule, std::less<>> access;  ///< looked up by string_view
  std::map<std::string, upstream_settings> upstreams;
  /// "Service" or "Service.method": the upstream (by name) that answers its calls.
  std::map<std::string, std::string> bridge;
  publish_settings publish;
  /// Each application service's own settings, "services": {"<Name>": {...}}, kept as JSON
  /// text for the service's setup to read (amfgate/service_settings.hpp).
  std::map<std::string, std::string> services;

  bool introspection_enabled() const { return introspection.value_or(debug); }
  /// messaging.store, or sessions.store where it is unset.
  const std::string& messaging_store() const {
    return messaging.store ? *messaging.store : sessions.store;
  }
  bool console_enabled() const { return console.enabled.value_or(debug); }
  /// The deadline of `service`.`method` (zero: none).
  milliseconds call_timeout(std::string_view service, std::string_view method) const;
};

/// Every error found, one per line, each starting with its JSON path.
class error : public std::runtime_error {
 public:
  explicit error(const std::vector<std::string>& errors);
  const std::vector<std::string>& errors() const noexcept { return errors_; }

 private:
  std::vector<std::string> errors_;
};

/// Applies a JSON document to the defaults. Throws `error` listing every problem.
gateway_config parse(const std::string& json_text);
/// Reads and parses a file; a missing file is an error too.
gateway_config load(const std::string& path);
/// Settings as JSON, every key present (what config/amfgate.json holds for the defaults).
std::string to_json_text(const gateway_config& c);
/// The defaults as JSON.
std::string defaults_json();

}  // namespace amfgate::config
