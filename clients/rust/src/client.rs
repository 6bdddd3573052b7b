//! [`Client`] and its [`ClientBuilder`]: the unary questions to the sidecar.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};
use tonic::Status;

use crate::clock::boottime;
use crate::error::Error;
use crate::leadership::{Fencing, Leadership};
use crate::v1::leader_election_client::LeaderElectionClient;
use crate::v1::{AcknowledgeStepDownRequest, GetLeadershipRequest, ResignRequest};

/// Where the sidecar serves gRPC by default (`baton --grpc-addr`).
pub const DEFAULT_GRPC_ADDR: &str = "127.0.0.1:4041";

/// The environment variable that overrides [`DEFAULT_GRPC_ADDR`]:
/// `host:port`, or `:port` for 127.0.0.1.
pub const ENV_GRPC_ADDR: &str = "BATON_GRPC_ADDR";

/// The environment variable naming the Lease a client expects when
/// [`ClientBuilder::lease`] is not used.
pub const ENV_LEASE_NAME: &str = "BATON_LEASE_NAME";
/// The environment variable naming the namespace of that Lease.
pub const ENV_LEASE_NAMESPACE: &str = "BATON_LEASE_NAMESPACE";

/// Default of [`ClientBuilder::call_timeout`].
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// Default of [`ClientBuilder::heartbeat_interval`].
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);
/// Default of the shortest delay of [`ClientBuilder::reconnect_backoff`].
pub const DEFAULT_MIN_BACKOFF: Duration = Duration::from_millis(100);
/// Default of the longest delay of [`ClientBuilder::reconnect_backoff`].
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(2);

/// What [`Client::require_leader`] asks the sidecar for beyond
/// `min_validity`: a promise of at most `min_validity +
/// REQUIRE_LEADER_SLACK` (`max_valid_for`). The slack covers the round trip,
/// so that what is left when the client checks is still at least
/// `min_validity`. The caller learns only "at least `min_validity` left" and
/// the fencing values, so a longer promise is of no use to it and would only
/// delay a handover when the application does not acknowledge.
pub const REQUIRE_LEADER_SLACK: Duration = Duration::from_secs(1);

/// The promise [`Client::require_leader`]`(min_validity)` asks the sidecar
/// for: `min_validity` plus [`REQUIRE_LEADER_SLACK`].
pub fn require_leader_bound(min_validity: Duration) -> Duration {
    min_validity.saturating_add(REQUIRE_LEADER_SLACK)
}

/// Names a Lease: the one a client expects its sidecar to serve, or the one
/// a sidecar serves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseRef {
    /// The Lease's name.
    pub name: String,
    /// Its namespace; in an expected Lease, empty means any.
    pub namespace: String,
}

impl std::fmt::Display for LeaseRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A client of one baton sidecar.
///
/// It connects lazily and reconnects by itself when the sidecar restarts;
/// every call fails fast with [`Error::Unavailable`] while no sidecar
/// answers. Cloning is cheap and clones share the connection and the
/// [client id](Self::client_id): make one per process.
#[derive(Clone, Debug)]
pub struct Client {
    api: LeaderElectionClient<Channel>,
    opts: Arc<Options>,
}

#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) addr: String,
    pub(crate) client_id: String,
    pub(crate) call_timeout: Duration,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) min_backoff: Duration,
    pub(crate) max_backoff: Duration,
    lease: Option<LeaseRef>,
    /// The latest deadline among the leader answers this client (and its
    /// clones) received in the latest term it heard of: what an
    /// acknowledgement of that term names.
    heard: Mutex<Heard>,
}

#[derive(Debug, Default)]
struct Heard {
    identity: String,
    fencing_token: i32,
    deadline: Duration,
}

/// Configures a [`Client`]; every setting has a default.
#[derive(Clone, Debug)]
#[must_use]
pub struct ClientBuilder {
    addr: Option<String>,
    client_id: Option<String>,
    call_timeout: Duration,
    heartbeat_interval: Duration,
    min_backoff: Duration,
    max_backoff: Duration,
    lease: Option<LeaseRef>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            addr: None,
            client_id: None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            min_backoff: DEFAULT_MIN_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
            lease: None,
        }
    }
}

impl ClientBuilder {
    /// The sidecar's gRPC address (`host:port`, or `:port` for 127.0.0.1),
    /// overriding `$BATON_GRPC_ADDR` and [`DEFAULT_GRPC_ADDR`].
    pub fn addr(mut self, addr: impl Into<String>) -> Self {
        self.addr = Some(addr.into());
        self
    }

    /// The name this client gives the sidecar with every question: 1 to 64
    /// characters from `[A-Za-z0-9._-]`. The sidecar records the leader
    /// answers it gives under this name as promises that
    /// [`Client::acknowledge_step_down`] gives back. Default: 16 random hex
    /// digits per client, which is what a client should normally use.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// Bounds each unary call (and the opening of a watch stream), so a
    /// paused sidecar cannot block the caller (default
    /// [`DEFAULT_CALL_TIMEOUT`]). A call that runs out fails with
    /// [`Error::Unavailable`].
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// How often a watch asks the sidecar to repeat the current state when
    /// nothing changes (default [`DEFAULT_HEARTBEAT_INTERVAL`]). A stream
    /// silent for twice that plus a second is taken as stuck and reconnected.
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = interval;
        self
    }

    /// The exponential backoff between a watch's reconnection attempts
    /// (defaults [`DEFAULT_MIN_BACKOFF`], [`DEFAULT_MAX_BACKOFF`]).
    pub fn reconnect_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.min_backoff = min;
        self.max_backoff = max.max(min);
        self
    }

    /// The Lease this client expects the sidecar to serve, overriding
    /// `$BATON_LEASE_NAME` and `$BATON_LEASE_NAMESPACE`. Every answer from a
    /// sidecar serving another Lease then fails with [`Error::WrongLease`]:
    /// with two sidecars on one network namespace (`hostNetwork`), an
    /// address mix-up would otherwise let this application act on another
    /// workload's leadership. An empty namespace checks the name only.
    /// Without this or `$BATON_LEASE_NAME`, any Lease is accepted.
    pub fn lease(mut self, name: impl Into<String>, namespace: impl Into<String>) -> Self {
        self.lease = Some(LeaseRef {
            name: name.into(),
            namespace: namespace.into(),
        });
        self
    }

    /// Makes the client. It does not connect yet: a missing sidecar shows as
    /// [`Error::Unavailable`] on the first call. Fails with
    /// [`Error::Config`] for a malformed address (from here or
    /// `$BATON_GRPC_ADDR`), client id or expected Lease (one without a
    /// name).
    ///
    /// Must be called within a Tokio runtime (the connection's background
    /// task is spawned on it).
    pub fn build(self) -> Result<Client, Error> {
        let addr = match self.addr {
            Some(addr) => normalize_addr(&addr)?,
            None => resolve_addr()?,
        };
        let client_id = match self.client_id {
            Some(id) if valid_client_id(&id) => id,
            Some(id) => {
                return Err(Error::Config(format!(
                    "client id {id:?} is not 1 to 64 characters from [A-Za-z0-9._-]"
                )))
            }
            None => random_client_id(),
        };
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| Error::Config(format!("address {addr:?}: {e}")))?
            .connect_timeout(self.call_timeout)
            .tcp_nodelay(true);
        Ok(Client {
            api: LeaderElectionClient::new(endpoint.connect_lazy()),
            opts: Arc::new(Options {
                addr,
                client_id,
                call_timeout: self.call_timeout,
                heartbeat_interval: self.heartbeat_interval,
                min_backoff: self.min_backoff,
                max_backoff: self.max_backoff,
                lease: expected_lease(self.lease)?,
                heard: Mutex::default(),
            }),
        })
    }
}

impl Client {
    /// A builder with every default.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// A client of the sidecar at `$BATON_GRPC_ADDR` or
    /// [`DEFAULT_GRPC_ADDR`], with every other default; see
    /// [`ClientBuilder::build`].
    pub fn new() -> Result<Client, Error> {
        Self::builder().build()
    }

    /// The sidecar address this client uses.
    pub fn addr(&self) -> &str {
        &self.opts.addr
    }

    /// The name this client gives the sidecar (see
    /// [`ClientBuilder::client_id`]).
    pub fn client_id(&self) -> &str {
        &self.opts.client_id
    }

    pub(crate) fn options(&self) -> &Options {
        &self.opts
    }

    pub(crate) fn api(&self) -> LeaderElectionClient<Channel> {
        self.api.clone()
    }

    /// The current state. Fails fast with [`Error::Unavailable`] when no
    /// sidecar answers (it never waits on the Kubernetes API), with
    /// [`Error::WrongLease`] when the sidecar serves another Lease than the
    /// expected one, and with [`Error::Malformed`] for an answer whose
    /// fencing revision is not one.
    pub async fn leadership(&self) -> Result<Leadership, Error> {
        // The whole promise: this client names itself and acknowledges.
        self.ask(None).await
    }

    /// [`leadership`](Self::leadership), asking for a promise of at most
    /// `max_valid_for` (`None`: the whole promise).
    async fn ask(&self, max_valid_for: Option<Duration>) -> Result<Leadership, Error> {
        let since = boottime();
        let mut api = self.api();
        let request = GetLeadershipRequest {
            client_id: self.opts.client_id.clone(),
            // An out-of-range bound (centuries) asks for none: no answer could
            // pass such a minimum anyway.
            max_valid_for: max_valid_for.and_then(|d| prost_types::Duration::try_from(d).ok()),
        };
        let m = self.call(api.get_leadership(request)).await?;
        let l = Leadership::from_proto(m, since)?;
        self.check_lease(&l)?;
        self.note(&l);
        Ok(l)
    }

    /// Whether this pod leads right now. On an error (no sidecar), act as a
    /// follower: `client.is_leader().await.unwrap_or(false)`.
    pub async fn is_leader(&self) -> Result<bool, Error> {
        Ok(self.leadership().await?.is_leader)
    }

    /// The fencing values to tag a write with, if this pod leads with more
    /// than `min_validity` of guaranteed leadership left (counted on
    /// `CLOCK_BOOTTIME` to the sidecar's deadline). Otherwise
    /// [`Error::NotLeader`], or any error of [`leadership`](Self::leadership)
    /// ([`Error::Unavailable`] when no sidecar answers).
    ///
    /// Ask for as much validity as the write needs, and have the store check
    /// the token (see [`Fence`](crate::Fence)): a write already on its way
    /// when leadership ends can only be stopped there.
    ///
    /// It asks the sidecar for a promise of at most `min_validity +`
    /// [`REQUIRE_LEADER_SLACK`], so an application that never acknowledges
    /// holds up a handover by at most that much.
    pub async fn require_leader(&self, min_validity: Duration) -> Result<Fencing, Error> {
        self.ask(Some(require_leader_bound(min_validity)))
            .await?
            .require(min_validity)
    }

    /// Blocks until this pod leads and returns that state, through sidecar
    /// restarts and outages. Drop the future (or wrap it in
    /// `tokio::time::timeout`) to stop waiting.
    pub async fn wait_until_leader(&self) -> Leadership {
        let mut watch = self.watch();
        loop {
            if let Some(Ok(l)) = watch.next().await {
                if l.leads_at(boottime()) {
                    return l;
                }
            }
        }
    }

    /// Asks the sidecar to step down now and release the Lease so another
    /// pod takes over at once; returns whether it led when asked. When it
    /// returns `Ok` this sidecar already answers not-leader. The sidecar
    /// goes on campaigning and may lead again later.
    pub async fn resign(&self) -> Result<bool, Error> {
        let mut api = self.api();
        let r = self.call(api.resign(ResignRequest {})).await?;
        Ok(r.was_leader)
    }

    /// Tells the sidecar that this application has stopped acting on the
    /// leadership of the term with fencing token `token` (its leader work
    /// was cancelled and has ended), up to the latest deadline
    /// ([`Leadership::sidecar_deadline`]) among the leader answers of that
    /// term this client and its clones have received so far (zero, naming
    /// nothing, if none). The promises the sidecar gave this client id up to
    /// that deadline are void from then on, so a sidecar that is stepping
    /// down (shutdown or resign) releases the Lease without waiting for them
    /// to run out. A promise given later (the sidecar renewed in between)
    /// stays outstanding however late the acknowledgement arrives, and so
    /// does one given to another process using the same client id. Returns
    /// whether that settled this client id's promises of the term.
    ///
    /// Call it only once nothing in this process acts on this client's
    /// answers for that term any more;
    /// [`run_while_leader`](Self::run_while_leader) calls it for you. An
    /// application that never acknowledges still gets a safe handover, only
    /// a slower one: the sidecar then waits until its last promise lapses.
    pub async fn acknowledge_step_down(&self, token: i32) -> Result<bool, Error> {
        let deadline = self.heard_up_to(token);
        self.acknowledge_step_down_up_to(token, deadline).await
    }

    /// [`acknowledge_step_down`](Self::acknowledge_step_down) naming the
    /// deadline `deadline` (that of the last answer acted on:
    /// [`Leadership::sidecar_deadline`]).
    pub async fn acknowledge_step_down_up_to(
        &self,
        token: i32,
        deadline: Duration,
    ) -> Result<bool, Error> {
        let mut api = self.api();
        let request = AcknowledgeStepDownRequest {
            client_id: self.opts.client_id.clone(),
            fencing_token: token,
            valid_until_boottime: Some(prost_types::Duration {
                seconds: i64::try_from(deadline.as_secs()).unwrap_or(i64::MAX),
                nanos: i32::try_from(deadline.subsec_nanos()).unwrap_or_default(),
            }),
        };
        let r = self.call(api.acknowledge_step_down(request)).await?;
        Ok(r.acknowledged)
    }

    /// Runs one call within the call timeout and maps its failure.
    pub(crate) async fn call<T>(
        &self,
        call: impl Future<Output = Result<tonic::Response<T>, Status>>,
    ) -> Result<T, Error> {
        match tokio::time::timeout(self.opts.call_timeout, call).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(Error::from_status(&self.opts.addr, status)),
            Err(_) => Err(Error::Unavailable {
                addr: self.opts.addr.clone(),
                status: Status::deadline_exceeded(format!(
                    "no answer within {:?}",
                    self.opts.call_timeout
                )),
            }),
        }
    }

    /// The Lease this client expects the sidecar to serve, if any (see
    /// [`ClientBuilder::lease`]).
    pub fn expected_lease(&self) -> Option<&LeaseRef> {
        self.opts.lease.as_ref()
    }

    /// Records the deadline of `l` if it is a leader answer with one.
    pub(crate) fn note(&self, l: &Leadership) {
        if !l.is_leader || l.sidecar_deadline.is_zero() {
            return;
        }
        let mut heard = self.opts.heard.lock().unwrap_or_else(|e| e.into_inner());
        if heard.identity != l.identity || heard.fencing_token != l.fencing_token {
            *heard = Heard {
                identity: l.identity.clone(),
                fencing_token: l.fencing_token,
                deadline: l.sidecar_deadline,
            };
            return;
        }
        heard.deadline = heard.deadline.max(l.sidecar_deadline);
    }

    /// The latest deadline heard in term `token`; zero if none.
    pub(crate) fn heard_up_to(&self, token: i32) -> Duration {
        let heard = self.opts.heard.lock().unwrap_or_else(|e| e.into_inner());
        if heard.fencing_token == token {
            heard.deadline
        } else {
            Duration::ZERO
        }
    }

    /// Refuses an answer about another Lease than the expected one.
    pub(crate) fn check_lease(&self, l: &Leadership) -> Result<(), Error> {
        let Some(expected) = &self.opts.lease else {
            return Ok(());
        };
        let served = LeaseRef {
            name: l.lease_name.clone(),
            namespace: l.lease_namespace.clone(),
        };
        if expected.name == served.name
            && (expected.namespace.is_empty() || expected.namespace == served.namespace)
        {
            return Ok(());
        }
        Err(Error::WrongLease {
            addr: self.opts.addr.clone(),
            expected: expected.clone(),
            served,
        })
    }
}

/// The address a client without [`ClientBuilder::addr`] uses:
/// `$BATON_GRPC_ADDR` if set, else [`DEFAULT_GRPC_ADDR`].
pub fn resolve_addr() -> Result<String, Error> {
    match std::env::var(ENV_GRPC_ADDR) {
        Ok(v) if !v.is_empty() => {
            normalize_addr(&v).map_err(|e| Error::Config(format!("${ENV_GRPC_ADDR}: {e}")))
        }
        _ => Ok(DEFAULT_GRPC_ADDR.to_owned()),
    }
}

/// The Lease of [`ClientBuilder::lease`], else of `$BATON_LEASE_NAME` and
/// `$BATON_LEASE_NAMESPACE`; `None` when none is set.
fn expected_lease(lease: Option<LeaseRef>) -> Result<Option<LeaseRef>, Error> {
    let env = |name| std::env::var(name).unwrap_or_default();
    let lease = lease.unwrap_or_else(|| LeaseRef {
        name: env(ENV_LEASE_NAME),
        namespace: env(ENV_LEASE_NAMESPACE),
    });
    if lease.name.is_empty() && lease.namespace.is_empty() {
        return Ok(None);
    }
    if lease.name.is_empty() {
        return Err(Error::Config(format!(
            "the expected Lease (ClientBuilder::lease or ${ENV_LEASE_NAME}) needs a name"
        )));
    }
    Ok(Some(lease))
}

/// `host:port` as given, `:port` as 127.0.0.1:port; anything else is
/// refused.
fn normalize_addr(addr: &str) -> Result<String, Error> {
    let bad = || Error::Config(format!("{addr:?} is not host:port or :port"));
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    if port.is_empty() || port.parse::<u16>().is_err() || host.contains('/') {
        return Err(bad());
    }
    if host.is_empty() {
        return Ok(format!("127.0.0.1:{port}"));
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(bad()); // an IPv6 address needs brackets
    }
    Ok(addr.to_owned())
}

fn valid_client_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// 16 random hex digits.
fn random_client_id() -> String {
    format!("{:016x}", crate::random_u64())
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;

    use futures_core::Stream;
    use tonic::{Request, Response};

    use super::*;
    use crate::v1::leader_election_server::{LeaderElection, LeaderElectionServer};
    use crate::v1::{
        AcknowledgeStepDownResponse, ResignResponse, WatchLeadershipRequest,
        WatchLeadershipResponse,
    };

    /// A sidecar that leads for ten seconds in every answer and records the
    /// `max_valid_for` each question asked for.
    #[derive(Clone, Default)]
    struct FakeSidecar {
        asked: Arc<Mutex<Vec<Option<Duration>>>>,
    }

    impl FakeSidecar {
        fn record(&self, bound: Option<prost_types::Duration>) {
            let bound = bound.map(|d| Duration::try_from(d).expect("a positive bound"));
            self.asked.lock().unwrap().push(bound);
        }

        fn asked(&self) -> Vec<Option<Duration>> {
            self.asked.lock().unwrap().clone()
        }

        fn leader() -> crate::v1::Leadership {
            let valid_for = Duration::from_secs(10);
            crate::v1::Leadership {
                is_leader: true,
                identity: "me".into(),
                holder_identity: "me".into(),
                fencing_token: 5,
                observed: true,
                valid_for: prost_types::Duration::try_from(valid_for).ok(),
                valid_until_boottime: prost_types::Duration::try_from(boottime() + valid_for).ok(),
                ..Default::default()
            }
        }
    }

    type Messages = Pin<Box<dyn Stream<Item = Result<WatchLeadershipResponse, Status>> + Send>>;

    #[tonic::async_trait]
    impl LeaderElection for FakeSidecar {
        async fn get_leadership(
            &self,
            request: Request<GetLeadershipRequest>,
        ) -> Result<Response<crate::v1::Leadership>, Status> {
            self.record(request.into_inner().max_valid_for);
            Ok(Response::new(Self::leader()))
        }

        type WatchLeadershipStream = Messages;

        async fn watch_leadership(
            &self,
            request: Request<WatchLeadershipRequest>,
        ) -> Result<Response<Messages>, Status> {
            self.record(request.into_inner().max_valid_for);
            let first = WatchLeadershipResponse {
                leadership: Some(Self::leader()),
                ..Default::default()
            };
            let stream = futures_util::stream::once(async { Ok(first) });
            Ok(Response::new(Box::pin(futures_util::StreamExt::chain(
                stream,
                futures_util::stream::pending(),
            ))))
        }

        async fn resign(
            &self,
            _: Request<ResignRequest>,
        ) -> Result<Response<ResignResponse>, Status> {
            Err(Status::unimplemented("not in this fake"))
        }

        async fn acknowledge_step_down(
            &self,
            _: Request<AcknowledgeStepDownRequest>,
        ) -> Result<Response<AcknowledgeStepDownResponse>, Status> {
            Err(Status::unimplemented("not in this fake"))
        }
    }

    /// Serves `fake` on a free loopback port; returns its address.
    async fn serve(fake: FakeSidecar) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        tokio::spawn(
            tonic::transport::Server::builder()
                .serve_with_incoming(LeaderElectionServer::new(fake), incoming),
        );
        addr
    }

    #[tokio::test]
    async fn require_leader_asks_for_min_validity_plus_the_slack_and_nothing_else_does() {
        let fake = FakeSidecar::default();
        let client = Client::builder()
            .addr(serve(fake.clone()).await)
            .build()
            .unwrap();
        let token = |f: Fencing| f.token;
        assert_eq!(
            client
                .require_leader(Duration::from_millis(2500))
                .await
                .map(token)
                .unwrap(),
            5
        );
        assert_eq!(
            client
                .require_leader(Duration::ZERO)
                .await
                .map(token)
                .unwrap(),
            5
        );
        assert!(client.leadership().await.unwrap().is_leader);
        assert!(client.is_leader().await.unwrap());
        let mut watch = client.watch();
        assert!(watch.next().await.unwrap().unwrap().is_leader);
        assert_eq!(REQUIRE_LEADER_SLACK, Duration::from_secs(1));
        assert_eq!(
            fake.asked(),
            [
                Some(Duration::from_millis(3500)),
                Some(Duration::from_secs(1)),
                None,
                None,
                None
            ],
            "require_leader(2.5 s), require_leader(0), leadership, is_leader, watch"
        );
    }

    #[test]
    fn normalizes_addresses() {
        assert_eq!(normalize_addr(":4041").unwrap(), "127.0.0.1:4041");
        assert_eq!(normalize_addr("localhost:1").unwrap(), "localhost:1");
        assert_eq!(normalize_addr("[::1]:4041").unwrap(), "[::1]:4041");
        for bad in [
            "4041",
            "host:",
            "host:x",
            "::1:4041",
            "unix:/run/baton.sock",
            "http://h:1",
        ] {
            assert!(
                matches!(normalize_addr(bad), Err(Error::Config(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn client_ids_are_checked_or_random() {
        assert!(valid_client_id("app-1.worker_2"));
        assert!(!valid_client_id(""));
        assert!(!valid_client_id("a b"));
        assert!(!valid_client_id(&"x".repeat(65)));
        let id = random_client_id();
        assert!(id.len() == 16 && valid_client_id(&id));
        assert_ne!(id, random_client_id());
    }
}
