// baton::client: the C++ client of the baton leader-election sidecar. It asks
// the sidecar beside the application, over gRPC on localhost, whether this pod
// leads, for how long that is guaranteed, and which fencing token to tag
// writes with.
//
//   auto client = baton::client::Client::Create();  // $BATON_GRPC_ADDR or 127.0.0.1:4041
//   if (!client.ok()) return client.status();
//   absl::StatusOr<int32_t> token = (*client)->RequireLeader(absl::Milliseconds(500));
//   if (token.ok()) store.Put(key, value, *token);  // the store refuses stale tokens
//
// Errors are absl::Status codes: kUnavailable when no sidecar answers (act as
// a follower; the client reconnects with backoff by itself), and
// kFailedPrecondition from RequireLeader when this pod must not write
// (IsNotLeader()).
//
// For work that runs as long as this pod leads, RunWhileLeader starts it when
// the pod leads, tells it to stop when the term ends and acknowledges the
// step-down once it has returned, so a graceful handover is fast.
#ifndef BATON_CLIENT_CLIENT_H_
#define BATON_CLIENT_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace baton::client {
namespace internal {
struct Connection;  // the gRPC channel and stub, shared by a Client and its Watches
}  // namespace internal

// Where the sidecar serves gRPC by default, and the variable that overrides it.
inline constexpr absl::string_view kDefaultGrpcAddr = "127.0.0.1:4041";
inline constexpr absl::string_view kGrpcAddrEnv = "BATON_GRPC_ADDR";
// The variables that give the Lease a client expects when ClientOptions do
// not (see ClientOptions::lease_name).
inline constexpr absl::string_view kLeaseNameEnv = "BATON_LEASE_NAME";
inline constexpr absl::string_view kLeaseNamespaceEnv = "BATON_LEASE_NAMESPACE";

// The node's CLOCK_BOOTTIME as a std::chrono clock: time since boot,
// including time spent suspended. The sidecar's validity deadlines are on
// this clock; sidecar and application share the node's kernel, so such a
// deadline means the same instant in every container of the Pod. (Where
// there is no CLOCK_BOOTTIME, CLOCK_MONOTONIC, and the sidecar's deadlines
// are not used.)
struct BootClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};

// What the sidecar reported at one moment. A default-constructed Leadership
// means "not leader, nothing known", which is also what an application must
// assume while the sidecar cannot be reached.
struct Leadership {
  // This pod held the Lease, within its renew deadline, when the sidecar
  // answered.
  bool is_leader = false;
  // This sidecar's holder identity (new for every sidecar process), and the
  // Lease's holder as last observed ("" when nobody holds it).
  std::string identity;
  std::string holder_identity;
  // The token to tag writes with while is_leader; otherwise the last observed
  // leaseTransitions.
  int32_t fencing_token = 0;
  // The second fencing token: the Lease's resourceVersion as written by the
  // write that won this term while is_leader; otherwise that of the last
  // observed Lease. Unlike fencing_token it keeps growing across Lease
  // deletion and a restart of every sidecar, but it is comparable only on
  // Kubernetes >= 1.35 (see fence.h). An integer of up to 128 bits
  // (KEP-5504); FormatRevision writes its digits. 0 when unknown.
  absl::uint128 fencing_revision = 0;
  std::string lease_name;
  std::string lease_namespace;
  // metadata.uid of the Lease; changes when it is deleted and recreated.
  std::string lease_uid;
  // The Lease's acquireTime and renewTime (the holder's wall clock), if known.
  std::optional<absl::Time> acquire_time;
  std::optional<absl::Time> renew_time;
  // Guaranteed leadership left when the sidecar produced the answer; zero if
  // not leader.
  absl::Duration valid_for = absl::ZeroDuration();
  // When that guarantee ends, on BootClock: the sidecar's own deadline, exact
  // however long the answer took to arrive. From an older sidecar that sends
  // none, counted from when the request was sent (unary calls) or the message
  // arrived (Watch). The epoch when not leader.
  BootClock::time_point valid_until{};
  // The valid_until_boottime of a leader answer exactly as the sidecar sent
  // it (zero if it sent none): the deadline an acknowledgement of this
  // answer names (Client::AcknowledgeStepDown), never a local estimate.
  absl::Duration valid_until_boottime = absl::ZeroDuration();
  // The Lease's leaseDurationSeconds, if known.
  std::optional<absl::Duration> lease_duration;
  // The sidecar has read the Lease (or its absence) at least once.
  bool observed = false;
  // The sidecar is shutting down or resigning.
  bool stepping_down = false;

  // Guaranteed leadership left now: zero if not leader or already past.
  absl::Duration Remaining() const;

  // The server-side-apply field manager for Kubernetes writes made under
  // this leadership: the sidecar's holder identity ("" without one). Every
  // sidecar process has an identity of its own, so every term has a manager
  // of its own: take the fields over once at the start of the term
  // (force=true), then apply every write without force, and if two pods
  // believe they lead at once the one whose fields were taken over gets 409
  // Conflict naming the other's manager instead of silently overwriting its
  // writes. The API server takes at most 128 printable characters: an
  // identity that is longer, or has anything but printable ASCII, becomes its
  // first 111 bytes (others replaced by '_'), '-' and 16 hex digits of its
  // 64-bit FNV-1a hash, so identities that differ only near the end still get
  // different managers.
  std::string FieldManager() const;
};

struct ClientOptions {
  // host:port, :port (on 127.0.0.1) or unix:PATH. Empty: $BATON_GRPC_ADDR,
  // else kDefaultGrpcAddr.
  std::string grpc_addr;
  // Bounds every unary call, so a paused sidecar cannot block the caller.
  absl::Duration call_timeout = absl::Seconds(2);
  // How often a Watch asks the sidecar to repeat the state when nothing
  // changes. A stream silent for twice that plus a second is taken as stuck
  // and reconnected.
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // Exponential backoff between reconnection attempts.
  absl::Duration min_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
  // The name the client gives the sidecar with every question: 1 to 64
  // characters from [A-Za-z0-9._-]. The sidecar records its leader answers
  // under it as promises that AcknowledgeStepDown gives back. Empty: 16
  // random hex digits per Client, which is what it should normally be.
  std::string client_id;
  // The Lease the sidecar must serve. Every answer from a sidecar serving
  // another Lease is refused with a wrong-Lease error (IsWrongLease) naming
  // both: with two sidecars on one network namespace (hostNetwork), an
  // address mix-up would otherwise let this application act on another
  // workload's leadership. An empty namespace checks the name only. Both
  // empty: $BATON_LEASE_NAME and $BATON_LEASE_NAMESPACE, and if those are
  // unset too, any Lease is accepted.
  std::string lease_name;
  std::string lease_namespace;
};

// The application's leader work for Client::RunWhileLeader. It runs on a
// thread of its own, with the leader state that began the term; `cancelled`
// is notified as soon as the term ends, and the work must then stop acting as
// leader and return (poll cancelled.HasBeenNotified(), or wait on it).
using LeaderWork =
    std::function<absl::Status(const Leadership& term, const absl::Notification& cancelled)>;

// The address a client with `explicit_addr` uses: it if non-empty, else
// $BATON_GRPC_ADDR, else kDefaultGrpcAddr; ":4041" means 127.0.0.1:4041.
// kInvalidArgument (naming the variable) for anything but host:port, :port or
// unix:PATH.
absl::StatusOr<std::string> ResolveGrpcAddr(absl::string_view explicit_addr);

// How long a Watch or RunWhileLeader waits on the process's timers (which,
// like CLOCK_MONOTONIC, stop during a suspend) before it compares a guarantee
// with BootClock again.
inline constexpr absl::Duration kClockRecheck = absl::Milliseconds(100);

// What RequireLeader asks the sidecar for beyond `min_validity`: a promise of
// at most min_validity + kRequireLeaderSlack (max_valid_for). The slack covers
// the round trip, so that what is left when the client checks is still at
// least min_validity. The caller learns only "at least min_validity left" and
// the token, so a longer promise is of no use to it and would only delay a
// handover when the application does not acknowledge.
inline constexpr absl::Duration kRequireLeaderSlack = absl::Seconds(1);

// Converts a GET /leader body (the proto3 JSON of baton.v1.Leadership), for
// applications that read the sidecar's HTTP API themselves. Its validity
// counts from now if the sidecar sent no deadline of its own. Unknown fields
// are ignored; kInvalidArgument for anything but a JSON object with fields of
// the right types and a fencing revision (fencingRevisionDecimal: decimal
// digits of at most 2^128-1 without leading zeros, or from a sidecar of baton
// 0.2.0 or earlier, which sends only the int64 fencingRevision, one that is
// not negative).
absl::StatusOr<Leadership> ParseLeadershipJson(absl::string_view body);

// True for RequireLeader's "this pod must not write" answer.
bool IsNotLeader(const absl::Status& status);

// True for the answer of a sidecar serving another Lease than the one the
// client expects (ClientOptions::lease_name): kFailedPrecondition, naming
// both Leases. Act as a follower, and fix the address or the expected Lease.
bool IsWrongLease(const absl::Status& status);

// A blocking reader of one sidecar's leadership changes, from
// Client::Watch(). Next() is for one thread at a time; Cancel() may be called
// from any thread. Destroying it cancels and joins its stream.
class Watch {
 public:
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // Blocks until there is news and returns it: the current state first, then
  // each change of leader, holder, token, stepping-down, observed or Lease uid
  // (not every renew); after a reconnect, the first state again. When a
  // leader's guarantee runs out before the sidecar confirms it again (a paused
  // sidecar), returns that state with is_leader false.
  //
  // kUnavailable when the stream broke, went silent or could not be opened,
  // IsWrongLease when the sidecar serves another Lease than the expected one,
  // kInvalidArgument for a malformed answer (as ParseLeadershipJson): act as
  // a follower; the next call reconnects after a backoff delay.
  // kDeadlineExceeded after `timeout` without news; kCancelled once Cancel()
  // was called.
  absl::StatusOr<Leadership> Next(absl::Duration timeout = absl::InfiniteDuration());

  // Makes a blocked or later Next() return kCancelled. Thread-safe.
  void Cancel();

 private:
  friend class Client;
  struct Item;
  struct Stream;
  explicit Watch(std::shared_ptr<const internal::Connection> connection);

  using TimePoint = BootClock::time_point;

  void StartStream();
  void StopStream();
  // Ends the current stream after `status` and schedules the reconnection.
  absl::Status Fail(absl::Status status);
  // Reads the stream on reader_ until it ends, posting into item_.
  void ReadStream(const std::shared_ptr<Stream>& stream);

  const std::shared_ptr<const internal::Connection> connection_;

  absl::Mutex mu_;
  // The latest message or final status of the current stream; only the
  // latest state matters.
  std::unique_ptr<Item> item_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<Stream> stream_ ABSL_GUARDED_BY(mu_);

  // Used by Next() (one thread at a time) only.
  std::thread reader_;      // joinable while a stream is open
  bool connected_ = false;  // a message arrived on the current stream
  absl::Duration backoff_;
  TimePoint reconnect_at_{};
  TimePoint stall_at_{};
  std::optional<Leadership> last_;
};

// A client of one sidecar. Thread-safe; make one per process. It connects
// lazily and reconnects with backoff whenever the sidecar restarts.
class Client {
 public:
  // kInvalidArgument for a bad address (see ResolveGrpcAddr). Never fails
  // because the sidecar is absent: that shows on the first call.
  static absl::StatusOr<std::unique_ptr<Client>> Create(ClientOptions options = {});

  // The address in use.
  const std::string& addr() const;

  // The name this client gives the sidecar (see ClientOptions::client_id).
  const std::string& client_id() const;

  // The current state. kUnavailable (fast) when no sidecar answers;
  // IsWrongLease when it serves another Lease than the expected one;
  // kInvalidArgument for a malformed answer (as ParseLeadershipJson).
  absl::StatusOr<Leadership> GetLeadership() const;

  // Whether this pod leads right now; an error means "treat as follower".
  absl::StatusOr<bool> IsLeader() const;

  // The fencing token to tag a write with, if this pod leads with at least
  // `min_validity` of guaranteed leadership left (counted from when the
  // sidecar answered). kFailedPrecondition (IsNotLeader) otherwise, with the
  // reason; kUnavailable when no sidecar answers. It asks the sidecar for a
  // promise of at most min_validity + kRequireLeaderSlack, so an application
  // that never acknowledges holds up a handover by at most that much.
  absl::StatusOr<int32_t> RequireLeader(absl::Duration min_validity) const;

  // Steps down now and releases the Lease so another pod takes over at once.
  // On return this sidecar already answers not-leader; it keeps campaigning.
  // Returns whether this pod was leader.
  absl::StatusOr<bool> Resign() const;

  // Tells the sidecar that this application has stopped acting on the
  // leadership of the term `fencing_token` (its leader work was cancelled and
  // has ended), up to the latest deadline (valid_until_boottime) among the
  // leader answers of that term this Client has received so far (zero,
  // naming nothing, if none). The promises the sidecar gave this client up
  // to that deadline are void from then on, so a sidecar that steps down
  // (shutdown or Resign) releases the Lease without waiting for them to
  // lapse. A promise given later (the sidecar renewed in between) stays
  // outstanding however late the acknowledgement arrives, and so does one
  // given to another process using the same client_id. Returns whether that
  // settled this client_id's promises of the term. Call it only once nothing
  // in this process acts on this client's answers for that term;
  // RunWhileLeader calls it for you. Without it the handover is still safe,
  // only slower: the sidecar waits until its last promise lapses (up to its
  // --renew-deadline).
  absl::StatusOr<bool> AcknowledgeStepDown(int32_t fencing_token) const;
  // The same, naming the deadline `valid_until_boottime` (that of the last
  // answer acted on: Leadership::valid_until_boottime) instead.
  absl::StatusOr<bool> AcknowledgeStepDown(int32_t fencing_token,
                                           absl::Duration valid_until_boottime) const;

  // Runs `work` whenever this pod leads, until `stop` is notified. It follows
  // a Watch; when a state says this pod leads, it starts `work` on a thread
  // of its own, and notifies the work's `cancelled` as soon as the term
  // ends: a state says not leader or stepping down, the token or the sidecar
  // changes, the guarantee runs out without news, the sidecar cannot be
  // reached, or `stop` is notified. It then joins the work's thread and only
  // then calls AcknowledgeStepDown for the term (its errors are ignored:
  // without it the handover is only slower). A term whose work returned by
  // itself is acknowledged again when it ends, covering the answers received
  // meanwhile.
  //
  // A status the work returns after `cancelled` was notified is dropped. If
  // the work returns while the term goes on, the term is acknowledged: OK
  // means the work runs again at the next term; an error is returned. Else it
  // returns OK once `stop` is notified and any running work has returned and
  // been acknowledged (within kClockRecheck plus the work's own time).
  //
  // The acknowledgement speaks for this Client (its client_id): while this
  // runs, do not act as leader on this Client's other answers outside work.
  absl::Status RunWhileLeader(const LeaderWork& work, const absl::Notification& stop) const;

  // Blocks until this pod leads, through sidecar restarts, and returns that
  // state; kDeadlineExceeded (with the last error, if any) after `timeout`.
  absl::StatusOr<Leadership> WaitUntilLeader(
      absl::Duration timeout = absl::InfiniteDuration()) const;

  // A new watch of this sidecar (see Watch). It opens its stream on the first
  // Next().
  std::unique_ptr<class Watch> Watch() const;

 private:
  explicit Client(std::shared_ptr<const internal::Connection> connection);

  const std::shared_ptr<const internal::Connection> connection_;
};

}  // namespace baton::client

#endif  // BATON_CLIENT_CLIENT_H_
