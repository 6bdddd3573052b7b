#include "baton/client/client.h"

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <random>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "baton/client/fence.h"
#include "baton/v1/leader_election.grpc.pb.h"
#include "baton/v1/leader_election.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "internal.h"

namespace baton::client {

namespace internal {
struct Connection {
  std::string addr;
  // Resolved: lease_name is empty when any Lease is accepted.
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::LeaderElection::Stub> stub;

  // The latest deadline among the leader answers received (by the Client
  // and its Watches) in the latest term heard of: what an acknowledgement
  // of that term names.
  struct Heard {
    std::string identity;
    int32_t fencing_token = 0;
    absl::Duration deadline = absl::ZeroDuration();
  };
  mutable absl::Mutex heard_mu;
  mutable Heard heard ABSL_GUARDED_BY(heard_mu);

  // Records `l`'s deadline if it is a leader answer with one.
  void Note(const Leadership& l) const {
    if (!l.is_leader || l.valid_until_boottime <= absl::ZeroDuration()) return;
    absl::MutexLock lock(&heard_mu);
    if (heard.identity != l.identity || heard.fencing_token != l.fencing_token) {
      heard = Heard{l.identity, l.fencing_token, l.valid_until_boottime};
      return;
    }
    heard.deadline = std::max(heard.deadline, l.valid_until_boottime);
  }

  // The latest deadline heard in term `fencing_token`; zero if none.
  absl::Duration HeardUpTo(int32_t fencing_token) const {
    absl::MutexLock lock(&heard_mu);
    return heard.fencing_token == fencing_token ? heard.deadline : absl::ZeroDuration();
  }
};
}  // namespace internal

namespace {

// Every deadline of this client is on the clock of the sidecar's deadlines.
using Clock = BootClock;

#ifdef CLOCK_BOOTTIME
constexpr clockid_t kBootClockId = CLOCK_BOOTTIME;
constexpr bool kSharesSidecarClock = true;
#else
constexpr clockid_t kBootClockId = CLOCK_MONOTONIC;
constexpr bool kSharesSidecarClock = false;
#endif

absl::Duration DurationFromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

absl::Time TimeFromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

// The error for an answer that is no baton Leadership.
absl::Status Malformed(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("not a baton Leadership: ", why));
}

// The fencing revision of an answer: fencing_revision_decimal unless it is
// empty, else the int64 fencing_revision (all that a sidecar of baton 0.2.0
// or earlier sends).
absl::StatusOr<absl::uint128> FencingRevision(const v1::Leadership& m) {
  if (m.fencing_revision_decimal().empty()) {
    if (m.fencing_revision() < 0) {
      return Malformed(absl::StrCat("fencing_revision ", m.fencing_revision(), " is negative"));
    }
    return absl::uint128(static_cast<uint64_t>(m.fencing_revision()));
  }
  absl::StatusOr<absl::uint128> revision = ParseRevision(m.fencing_revision_decimal());
  if (!revision.ok()) {
    return Malformed(absl::StrCat("fencing_revision_decimal \"", m.fencing_revision_decimal(),
                                  "\" is not a revision of up to 128 bits"));
  }
  return revision;
}

// What a watch compares to decide whether a state is news: everything but
// the times that move on every renew or answer.
auto Key(const Leadership& l) {
  return std::tie(l.is_leader, l.observed, l.stepping_down, l.identity, l.holder_identity,
                  l.lease_uid, l.fencing_token);
}

std::string NotLeaderReason(const Leadership& l, absl::Duration remaining,
                            absl::Duration min_validity) {
  if (l.is_leader) {
    return absl::StrCat("leader, but only ", absl::FormatDuration(remaining),
                        " of guaranteed leadership left (", absl::FormatDuration(min_validity),
                        " needed)");
  }
  if (!l.observed) return "not leader: the sidecar has not read the Lease yet";
  if (l.stepping_down) return "not leader: the sidecar is stepping down";
  if (l.holder_identity.empty()) return "not leader: the Lease has no holder";
  if (l.holder_identity == l.identity) return "not leader: the renew deadline passed";
  return absl::StrCat("not leader: the Lease is held by ", l.holder_identity);
}

constexpr absl::string_view kNotLeaderPayload = "baton.client/not-leader";
constexpr absl::string_view kWrongLeasePayload = "baton.client/wrong-lease";

std::string LeaseText(absl::string_view name, absl::string_view ns) {
  return absl::StrCat(ns, "/", name);
}

// OK if `l` comes from a sidecar serving the Lease the connection expects
// (or it expects none); the wrong-Lease error otherwise.
absl::Status CheckLease(const internal::Connection& connection, const Leadership& l) {
  const ClientOptions& want = connection.options;
  if (want.lease_name.empty() ||
      (l.lease_name == want.lease_name &&
       (want.lease_namespace.empty() || l.lease_namespace == want.lease_namespace))) {
    return absl::OkStatus();
  }
  const std::string served = LeaseText(l.lease_name, l.lease_namespace);
  absl::Status status = absl::FailedPreconditionError(
      absl::StrCat("the baton sidecar at ", connection.addr, " serves Lease ", served,
                   ", not the expected ", LeaseText(want.lease_name, want.lease_namespace)));
  status.SetPayload(kWrongLeasePayload, absl::Cord(served));
  return status;
}

// Fills in the expected Lease from the environment when the options name
// none; kInvalidArgument for a namespace without a name.
absl::Status ResolveExpectedLease(ClientOptions& options) {
  auto env = [](absl::string_view name) {
    const char* value = std::getenv(std::string(name).c_str());
    return std::string(value == nullptr ? "" : value);
  };
  if (options.lease_name.empty() && options.lease_namespace.empty()) {
    options.lease_name = env(kLeaseNameEnv);
    options.lease_namespace = env(kLeaseNamespaceEnv);
  }
  if (options.lease_name.empty() && !options.lease_namespace.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the expected Lease (lease_name or $", kLeaseNameEnv, ") needs a name"));
  }
  return absl::OkStatus();
}

constexpr size_t kMaxFieldManager = 128;  // the API server's limit

bool PrintableAscii(char c) { return c >= 0x20 && c <= 0x7e; }

bool ValidClientId(absl::string_view id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

std::string RandomClientId() {
  std::random_device random;
  const uint64_t bits = (uint64_t{random()} << 32) | random();
  return absl::StrCat(absl::Hex(bits, absl::kZeroPad16));
}

std::chrono::system_clock::time_point CallDeadline(absl::Duration timeout) {
  return std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout);
}

// A watch that hears nothing for this long reconnects.
absl::Duration StallTimeout(const ClientOptions& options) {
  return 2 * options.heartbeat_interval + absl::Seconds(1);
}

// A monotonic deadline `timeout` from now; InfiniteDuration never comes.
Clock::time_point After(absl::Duration timeout) {
  const Clock::time_point now = Clock::now();
  if (timeout >= absl::Hours(24 * 365)) return Clock::time_point::max();
  return now + absl::ToChronoNanoseconds(timeout);
}

// One GetLeadership from `connection`'s client, asking for a promise of at
// most `max_valid_for` (nullopt: the whole promise); the answer checked and
// noted.
absl::StatusOr<Leadership> AskLeadership(const internal::Connection& connection,
                                         std::optional<absl::Duration> max_valid_for) {
  grpc::ClientContext context;
  context.set_deadline(CallDeadline(connection.options.call_timeout));
  v1::GetLeadershipRequest request;
  request.set_client_id(connection.options.client_id);
  if (max_valid_for) {
    const int64_t ns = absl::ToInt64Nanoseconds(*max_valid_for);
    request.mutable_max_valid_for()->set_seconds(ns / 1000000000);
    request.mutable_max_valid_for()->set_nanos(static_cast<int32_t>(ns % 1000000000));
  }
  v1::Leadership response;
  const Clock::time_point sent = Clock::now();
  const grpc::Status status = connection.stub->GetLeadership(&context, request, &response);
  if (!status.ok()) return internal::Translate(connection.addr, status);
  absl::StatusOr<Leadership> l = internal::FromProto(response, sent);
  if (!l.ok()) return l;
  if (absl::Status lease = CheckLease(connection, *l); !lease.ok()) return lease;
  connection.Note(*l);
  return l;
}

}  // namespace

namespace internal {

absl::StatusOr<Leadership> FromProto(const v1::Leadership& m, Clock::time_point since) {
  absl::StatusOr<absl::uint128> revision = FencingRevision(m);
  if (!revision.ok()) return revision.status();
  Leadership l;
  l.is_leader = m.is_leader();
  l.identity = m.identity();
  l.holder_identity = m.holder_identity();
  l.fencing_token = m.fencing_token();
  l.fencing_revision = *revision;
  l.lease_name = m.lease_name();
  l.lease_namespace = m.lease_namespace();
  l.lease_uid = m.lease_uid();
  if (m.has_acquire_time()) l.acquire_time = TimeFromProto(m.acquire_time());
  if (m.has_renew_time()) l.renew_time = TimeFromProto(m.renew_time());
  if (m.has_lease_duration()) l.lease_duration = DurationFromProto(m.lease_duration());
  l.observed = m.observed();
  l.stepping_down = m.stepping_down();
  if (l.is_leader) {
    l.valid_for = DurationFromProto(m.valid_for());
    l.valid_until = since + absl::ToChronoNanoseconds(l.valid_for);
    const absl::Duration deadline = DurationFromProto(m.valid_until_boottime());
    if (deadline > absl::ZeroDuration() && kSharesSidecarClock) {
      l.valid_until = Clock::time_point(absl::ToChronoNanoseconds(deadline));
    }
    l.valid_until_boottime = std::max(deadline, absl::ZeroDuration());
  }
  return l;
}

absl::StatusOr<Leadership> ParseLeadershipJson(absl::string_view body, Clock::time_point since) {
  const std::string text(body);
  // protobuf's JSON parser also takes a string ("true") for a bool, which
  // proto3 JSON does not: the booleans are checked on the JSON itself.
  google::protobuf::Struct object;
  if (auto parsed = google::protobuf::util::JsonStringToMessage(text, &object); !parsed.ok()) {
    return Malformed(parsed.message().as_string());
  }
  for (const char* field : {"isLeader", "observed", "steppingDown"}) {
    const auto it = object.fields().find(field);
    if (it != object.fields().end() && !it->second.has_bool_value() &&
        !it->second.has_null_value()) {
      return Malformed(absl::StrCat(field, " is not a boolean"));
    }
  }
  v1::Leadership m;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (auto parsed = google::protobuf::util::JsonStringToMessage(text, &m, options); !parsed.ok()) {
    return Malformed(parsed.message().as_string());
  }
  return FromProto(m, since);
}

absl::Duration RemainingAt(const Leadership& l, Clock::time_point now) {
  if (!l.is_leader) return absl::ZeroDuration();
  return std::max(absl::FromChrono(l.valid_until - now), absl::ZeroDuration());
}

absl::StatusOr<int32_t> RequireLeaderAt(const Leadership& l, absl::Duration min_validity,
                                        Clock::time_point now) {
  const absl::Duration remaining = RemainingAt(l, now);
  if (!l.is_leader || remaining <= absl::ZeroDuration() || remaining < min_validity) {
    absl::Status status =
        absl::FailedPreconditionError(NotLeaderReason(l, remaining, min_validity));
    status.SetPayload(kNotLeaderPayload, absl::Cord(l.holder_identity));
    return status;
  }
  return l.fencing_token;
}

absl::Duration RequireLeaderBound(absl::Duration min_validity) {
  return std::max(min_validity, absl::ZeroDuration()) + kRequireLeaderSlack;
}

absl::Status Translate(const std::string& addr, const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return absl::OkStatus();
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::CANCELLED:
      return absl::UnavailableError(absl::StrCat(
          "no baton sidecar answering at ", addr, " (is the baton container running, and is $",
          kGrpcAddrEnv, " right?): ", status.error_message()));
    default:
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          absl::StrCat(addr, ": ", status.error_message()));
  }
}

}  // namespace internal

BootClock::time_point BootClock::now() noexcept {
  timespec ts{};
  // Cannot fail for a clock id the kernel has (CLOCK_BOOTTIME: Linux 2.6.39).
  clock_gettime(kBootClockId, &ts);
  return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

absl::Duration Leadership::Remaining() const { return internal::RemainingAt(*this, Clock::now()); }

absl::StatusOr<Leadership> ParseLeadershipJson(absl::string_view body) {
  return internal::ParseLeadershipJson(body, Clock::now());
}

std::string Leadership::FieldManager() const {
  if (identity.empty() || (identity.size() <= kMaxFieldManager &&
                           std::all_of(identity.begin(), identity.end(), PrintableAscii))) {
    return identity;
  }
  uint64_t fnv = 0xcbf29ce484222325;
  for (const char c : identity) {
    fnv = (fnv ^ static_cast<unsigned char>(c)) * 0x100000001b3;
  }
  std::string prefix = identity.substr(0, kMaxFieldManager - 17);
  std::replace_if(
      prefix.begin(), prefix.end(), [](char c) { return !PrintableAscii(c); }, '_');
  return absl::StrCat(prefix, "-", absl::Hex(fnv, absl::kZeroPad16));
}

absl::StatusOr<std::string> ResolveGrpcAddr(absl::string_view explicit_addr) {
  std::string addr(explicit_addr);
  std::string source = "address";
  if (addr.empty()) {
    const char* env = std::getenv(std::string(kGrpcAddrEnv).c_str());
    if (env == nullptr || *env == '\0') return std::string(kDefaultGrpcAddr);
    addr = env;
    source = absl::StrCat("$", kGrpcAddrEnv);
  }
  if (absl::StartsWith(addr, "unix:")) return addr;
  const size_t colon = addr.rfind(':');
  uint32_t port = 0;
  const std::string host = colon == std::string::npos ? "" : addr.substr(0, colon);
  if (colon == std::string::npos || !absl::SimpleAtoi(addr.substr(colon + 1), &port) || port == 0 ||
      port > 65535 || absl::StartsWith(host, "[") != absl::EndsWith(host, "]")) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, " \"", addr, "\" is not host:port, :port or unix:PATH"));
  }
  return absl::StrCat(host.empty() ? "127.0.0.1" : host, ":", port);
}

bool IsNotLeader(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         status.GetPayload(kNotLeaderPayload).has_value();
}

bool IsWrongLease(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         status.GetPayload(kWrongLeasePayload).has_value();
}

// --- Client ------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  absl::StatusOr<std::string> addr = ResolveGrpcAddr(options.grpc_addr);
  if (!addr.ok()) return addr.status();
  if (options.client_id.empty()) {
    options.client_id = RandomClientId();
  } else if (!ValidClientId(options.client_id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "client_id \"", options.client_id, "\" is not 1 to 64 characters from [A-Za-z0-9._-]"));
  }
  if (absl::Status lease = ResolveExpectedLease(options); !lease.ok()) return lease;
  grpc::ChannelArguments args;
  // gRPC's default reconnect backoff grows to two minutes, and its resolver
  // waits 30s between re-resolutions (even of an IP literal) after a
  // connection drops; a sidecar restart should be noticed within
  // max_backoff. (GRPC_ARG_MIN_RECONNECT_BACKOFF_MS also bounds each
  // connection handshake, so it keeps its default.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.min_backoff)));
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.min_backoff)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.max_backoff)));
  // Loopback only: the sidecar serves plaintext on 127.0.0.1.
  auto connection = std::make_shared<internal::Connection>();
  connection->channel = grpc::CreateCustomChannel(*addr, grpc::InsecureChannelCredentials(), args);
  connection->stub = v1::LeaderElection::NewStub(connection->channel);
  connection->addr = *std::move(addr);
  connection->options = std::move(options);
  return std::unique_ptr<Client>(new Client(std::move(connection)));
}

Client::Client(std::shared_ptr<const internal::Connection> connection)
    : connection_(std::move(connection)) {}

const std::string& Client::addr() const { return connection_->addr; }

const std::string& Client::client_id() const { return connection_->options.client_id; }

absl::StatusOr<Leadership> Client::GetLeadership() const {
  return AskLeadership(*connection_, std::nullopt);
}

absl::StatusOr<bool> Client::IsLeader() const {
  absl::StatusOr<Leadership> l = GetLeadership();
  if (!l.ok()) return l.status();
  return l->is_leader;
}

absl::StatusOr<int32_t> Client::RequireLeader(absl::Duration min_validity) const {
  absl::StatusOr<Leadership> l =
      AskLeadership(*connection_, internal::RequireLeaderBound(min_validity));
  if (!l.ok()) return l.status();
  return internal::RequireLeaderAt(*l, min_validity, Clock::now());
}

absl::StatusOr<bool> Client::Resign() const {
  grpc::ClientContext context;
  context.set_deadline(CallDeadline(connection_->options.call_timeout));
  v1::ResignResponse response;
  const grpc::Status status = connection_->stub->Resign(&context, v1::ResignRequest(), &response);
  if (!status.ok()) return internal::Translate(connection_->addr, status);
  return response.was_leader();
}

absl::StatusOr<bool> Client::AcknowledgeStepDown(int32_t fencing_token) const {
  return AcknowledgeStepDown(fencing_token, connection_->HeardUpTo(fencing_token));
}

absl::StatusOr<bool> Client::AcknowledgeStepDown(int32_t fencing_token,
                                                 absl::Duration valid_until_boottime) const {
  grpc::ClientContext context;
  context.set_deadline(CallDeadline(connection_->options.call_timeout));
  v1::AcknowledgeStepDownRequest request;
  request.set_client_id(connection_->options.client_id);
  request.set_fencing_token(fencing_token);
  const int64_t up_to_ns = absl::ToInt64Nanoseconds(valid_until_boottime);
  request.mutable_valid_until_boottime()->set_seconds(up_to_ns / 1000000000);
  request.mutable_valid_until_boottime()->set_nanos(static_cast<int32_t>(up_to_ns % 1000000000));
  v1::AcknowledgeStepDownResponse response;
  const grpc::Status status = connection_->stub->AcknowledgeStepDown(&context, request, &response);
  if (!status.ok()) return internal::Translate(connection_->addr, status);
  return response.acknowledged();
}

namespace {

// Whether a watched state lets leader work run.
bool Leading(const absl::StatusOr<Leadership>& l) {
  return l.ok() && l->is_leader && !l->stepping_down && l->Remaining() > absl::ZeroDuration();
}

bool SameTerm(const Leadership& a, const Leadership& b) {
  return a.identity == b.identity && a.fencing_token == b.fencing_token;
}

// One term's leader work on its thread.
class RunningTerm {
 public:
  RunningTerm(const LeaderWork& work, Leadership term) : term_(std::move(term)) {
    thread_ = std::thread([this, &work] {
      status_ = work(term_, cancelled_);
      returned_.Notify();
    });
  }
  ~RunningTerm() { CancelAndJoin().IgnoreError(); }
  RunningTerm(const RunningTerm&) = delete;
  RunningTerm& operator=(const RunningTerm&) = delete;

  const Leadership& term() const { return term_; }
  bool returned() const { return returned_.HasBeenNotified(); }

  // Tells the work to stop and waits until it has; returns its status.
  absl::Status CancelAndJoin() {
    if (!cancelled_.HasBeenNotified()) cancelled_.Notify();
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  const Leadership term_;
  absl::Notification cancelled_;
  absl::Notification returned_;
  absl::Status status_;  // written by the thread before returned_
  std::thread thread_;
};

}  // namespace

absl::Status Client::RunWhileLeader(const LeaderWork& work, const absl::Notification& stop) const {
  std::unique_ptr<class Watch> watch = Watch();
  std::unique_ptr<RunningTerm> running;
  std::optional<Leadership> finished;  // a term whose work returned by itself
  // Ends the running work (if it has not returned yet), then gives the term
  // back; returns the work's status.
  auto end = [&]() {
    absl::Status status = running->CancelAndJoin();
    // Without the acknowledgement the handover is only slower.
    AcknowledgeStepDown(running->term().fencing_token).IgnoreError();
    return status;
  };
  while (!stop.HasBeenNotified()) {
    if (running != nullptr && running->returned()) {
      if (absl::Status status = end(); !status.ok()) return status;
      finished = running->term();
      running.reset();
      continue;
    }
    // Wakes at least every kClockRecheck to look at `stop` and the work; the
    // watch ends a term by the clock itself.
    absl::StatusOr<Leadership> l = watch->Next(kClockRecheck);
    if (l.status().code() == absl::StatusCode::kDeadlineExceeded) continue;
    const bool leading = Leading(l);
    if (running != nullptr && (!leading || !SameTerm(*l, running->term()))) {
      end().IgnoreError();  // the work's status once cancelled is not news
      running.reset();
    }
    if (!leading) {
      if (l.ok() && finished.has_value() && SameTerm(*l, *finished)) {
        // The watch promised this client more since the work returned;
        // nothing acts on it.
        AcknowledgeStepDown(finished->fencing_token).IgnoreError();
      }
      finished.reset();
    } else if (running == nullptr && (!finished.has_value() || !SameTerm(*l, *finished))) {
      finished.reset();
      running = std::make_unique<RunningTerm>(work, *l);
    }
  }
  if (running != nullptr) end().IgnoreError();
  return absl::OkStatus();
}

absl::StatusOr<Leadership> Client::WaitUntilLeader(absl::Duration timeout) const {
  const Clock::time_point deadline = After(timeout);
  std::unique_ptr<class Watch> watch = Watch();
  absl::Status last_error;
  while (true) {
    const absl::Duration left = deadline == Clock::time_point::max()
                                    ? absl::InfiniteDuration()
                                    : absl::FromChrono(deadline - Clock::now());
    absl::StatusOr<Leadership> l = watch->Next(std::max(left, absl::ZeroDuration()));
    if (l.ok() && l->is_leader) return l;
    if (l.status().code() == absl::StatusCode::kDeadlineExceeded) {
      return absl::DeadlineExceededError(absl::StrCat(
          "not leader after ", absl::FormatDuration(timeout),
          last_error.ok() ? "" : absl::StrCat(" (last error: ", last_error.message(), ")")));
    }
    if (!l.ok()) last_error = l.status();
  }
}

std::unique_ptr<Watch> Client::Watch() const {
  return std::unique_ptr<class Watch>(new class Watch(connection_));
}

// --- Watch ---------------------------------------------------------------------

struct Watch::Item {
  absl::StatusOr<Leadership> value;
};

struct Watch::Stream {
  grpc::ClientContext context;
};

Watch::Watch(std::shared_ptr<const internal::Connection> connection)
    : connection_(std::move(connection)), backoff_(connection_->options.min_backoff) {}

Watch::~Watch() {
  Cancel();
  StopStream();
}

void Watch::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (stream_ != nullptr) stream_->context.TryCancel();
}

void Watch::StartStream() {
  auto stream = std::make_shared<Stream>();
  {
    absl::MutexLock lock(&mu_);
    item_.reset();
    stream_ = stream;
  }
  connected_ = false;
  stall_at_ = After(StallTimeout(connection_->options));
  // Opening the stream can block (a paused sidecar accepts the connection
  // but never answers), so it happens on the reader thread too; Next() only
  // ever waits on item_.
  reader_ = std::thread([this, stream] { ReadStream(stream); });
}

void Watch::ReadStream(const std::shared_ptr<Stream>& stream) {
  v1::WatchLeadershipRequest request;
  const int64_t hb_ns = absl::ToInt64Nanoseconds(connection_->options.heartbeat_interval);
  request.mutable_heartbeat_interval()->set_seconds(hb_ns / 1000000000);
  request.mutable_heartbeat_interval()->set_nanos(static_cast<int32_t>(hb_ns % 1000000000));
  request.set_client_id(connection_->options.client_id);
  std::unique_ptr<grpc::ClientReader<v1::WatchLeadershipResponse>> reader =
      connection_->stub->WatchLeadership(&stream->context, request);
  v1::WatchLeadershipResponse message;
  absl::Status refused;  // a malformed answer, or one about another Lease
  while (reader->Read(&message)) {
    absl::StatusOr<Leadership> l = internal::FromProto(message.leadership(), Clock::now());
    refused = l.ok() ? CheckLease(*connection_, *l) : l.status();
    if (!refused.ok()) {
      stream->context.TryCancel();
      break;
    }
    connection_->Note(*l);
    auto item = std::make_unique<Item>(Item{std::move(l)});
    absl::MutexLock lock(&mu_);
    item_ = std::move(item);
  }
  const grpc::Status status = reader->Finish();
  absl::Status ended =
      !refused.ok() ? refused
      : status.ok()
          ? absl::UnavailableError(absl::StrCat("the baton sidecar at ", connection_->addr,
                                                " ended the stream (shutting down)"))
          : internal::Translate(connection_->addr, status);
  absl::MutexLock lock(&mu_);
  item_ = std::make_unique<Item>(Item{std::move(ended)});
}

void Watch::StopStream() {
  {
    absl::MutexLock lock(&mu_);
    if (stream_ != nullptr) stream_->context.TryCancel();
    stream_.reset();
  }
  if (reader_.joinable()) reader_.join();
  // The reader's last word (kCancelled) is not news.
  absl::MutexLock lock(&mu_);
  item_.reset();
}

absl::Status Watch::Fail(absl::Status status) {
  StopStream();
  // The caller now acts as a follower; the next stream starts afresh.
  last_.reset();
  if (connected_) backoff_ = connection_->options.min_backoff;
  static thread_local std::minstd_rand random(std::random_device{}());
  const double jitter = std::uniform_real_distribution<double>(0.8, 1.2)(random);
  reconnect_at_ = After(backoff_ * jitter);
  backoff_ = std::min(2 * backoff_, connection_->options.max_backoff);
  return status;
}

absl::StatusOr<Leadership> Watch::Next(absl::Duration timeout) {
  const Clock::time_point deadline = After(timeout);
  while (true) {
    Clock::time_point wake = deadline;
    if (!reader_.joinable()) {
      wake = std::min(wake, reconnect_at_);
    } else {
      wake = std::min(wake, stall_at_);
      if (last_.has_value() && last_->is_leader) {
        wake = std::min({wake, last_->valid_until, After(kClockRecheck)});
      }
    }
    std::unique_ptr<Item> item;
    bool cancelled;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return cancelled_ || item_ != nullptr;
      };
      const Clock::time_point now = Clock::now();
      if (wake > now) {
        const absl::Duration wait = wake == Clock::time_point::max() ? absl::InfiniteDuration()
                                                                     : absl::FromChrono(wake - now);
        mu_.AwaitWithTimeout(absl::Condition(&ready), wait);
      }
      cancelled = cancelled_;
      item = std::move(item_);
    }
    if (cancelled) {
      StopStream();
      return absl::CancelledError("the watch was cancelled");
    }
    const Clock::time_point now = Clock::now();
    if (!reader_.joinable()) {
      if (now >= reconnect_at_) {
        StartStream();
        continue;
      }
      if (now >= deadline) return absl::DeadlineExceededError("no news from the sidecar");
      continue;
    }
    if (item != nullptr) {
      if (!item->value.ok()) return Fail(item->value.status());
      Leadership& l = *item->value;
      stall_at_ = After(StallTimeout(connection_->options));
      const bool news = !connected_ || !last_.has_value() || Key(l) != Key(*last_);
      connected_ = true;
      last_ = std::move(l);
      if (news) return *last_;
      continue;
    }
    if (last_.has_value() && last_->is_leader && now >= last_->valid_until) {
      last_->is_leader = false;
      last_->valid_for = absl::ZeroDuration();
      last_->valid_until = {};
      last_->valid_until_boottime = absl::ZeroDuration();
      return *last_;
    }
    if (now >= stall_at_) {
      return Fail(absl::UnavailableError(
          absl::StrCat("no message from the baton sidecar at ", connection_->addr, " for ",
                       absl::FormatDuration(StallTimeout(connection_->options)))));
    }
    if (now >= deadline) return absl::DeadlineExceededError("no news from the sidecar");
  }
}

}  // namespace baton::client
