//! [`Client::watch`]: the leadership as a [`Stream`] that survives sidecar
//! restarts and never lets a leader state outlive its guarantee.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokio::time::{sleep, sleep_until, Instant};
use tonic::{Status, Streaming};

use crate::client::Client;
use crate::clock::{boottime, CLOCK_RECHECK};
use crate::error::Error;
use crate::leadership::Leadership;
use crate::v1::{WatchLeadershipRequest, WatchLeadershipResponse};

/// A stream of this pod's leadership; see [`Client::watch`]. Dropping it
/// ends the watch and cancels its gRPC stream.
#[must_use = "a watch does nothing unless polled"]
pub struct Watch {
    inner: Pin<Box<dyn Stream<Item = Result<Leadership, Error>> + Send>>,
}

impl Watch {
    /// The next state or error; never `None` (a watch only ends when it is
    /// dropped). The same as `StreamExt::next` without needing the trait.
    pub async fn next(&mut self) -> Option<Result<Leadership, Error>> {
        std::future::poll_fn(|cx| self.inner.as_mut().poll_next(cx)).await
    }
}

impl Stream for Watch {
    type Item = Result<Leadership, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").finish_non_exhaustive()
    }
}

impl Client {
    /// Follows this pod's leadership, as long as the stream is polled and
    /// until it is dropped:
    ///
    /// ```no_run
    /// # async fn f(client: baton_client::Client) {
    /// let mut watch = client.watch();
    /// while let Some(state) = watch.next().await {
    ///     match state {
    ///         Ok(l) => println!("leader: {} (token {})", l.is_leader, l.fencing_token),
    ///         Err(e) => println!("acting as a follower: {e}"), // it reconnects by itself
    ///     }
    /// }
    /// # }
    /// ```
    ///
    /// It yields the current state first, then each change of `is_leader`,
    /// holder, fencing token, stepping-down, observed or Lease uid (not every
    /// renew). Between changes it watches the clock: when a leader's
    /// guarantee (`valid_until_boottime`) runs out before the sidecar
    /// confirms it again, it yields the same state with `is_leader` false,
    /// so a paused or wedged sidecar cannot leave the application believing
    /// it leads. It compares with `CLOCK_BOOTTIME` at least every 100 ms
    /// while a guarantee runs, so after a suspend a lapsed guarantee ends at
    /// once.
    ///
    /// When the stream breaks, goes silent (see
    /// [`ClientBuilder::heartbeat_interval`](crate::ClientBuilder::heartbeat_interval)),
    /// cannot be opened, or answers malformed or about another Lease, it
    /// yields the error ([`Error::Unavailable`] when no sidecar answers) and
    /// reconnects with exponential backoff; the first state after a reconnect
    /// is always yielded. Every leader message is a promise to this client's
    /// id.
    pub fn watch(&self) -> Watch {
        let state = WatchState::new(self.clone());
        let stream = futures_util::stream::unfold(state, |mut state| async move {
            let item = state.next_item().await;
            Some((item, state))
        });
        Watch {
            inner: Box::pin(stream),
        }
    }
}

/// One watch's connection, bookkeeping and backoff.
struct WatchState {
    client: Client,
    stream: Option<Streaming<WatchLeadershipResponse>>,
    /// The last state yielded on this stream; `None` right after connecting.
    last: Option<Leadership>,
    /// When the stream counts as stuck if nothing arrives.
    stall_at: Instant,
    backoff: Backoff,
    /// Whether the next connection attempt must wait for the backoff.
    failed: bool,
}

impl WatchState {
    fn new(client: Client) -> Self {
        let o = client.options();
        let backoff = Backoff::new(o.min_backoff, o.max_backoff);
        WatchState {
            client,
            stream: None,
            last: None,
            stall_at: Instant::now(),
            backoff,
            failed: false,
        }
    }

    fn stall_timeout(&self) -> Duration {
        2 * self.client.options().heartbeat_interval + Duration::from_secs(1)
    }

    /// Drops the stream after a failure; the next attempt backs off first.
    fn fail(&mut self, error: Error) -> Result<Leadership, Error> {
        self.stream = None;
        self.last = None;
        self.failed = true;
        Err(error)
    }

    fn unavailable(&self, status: Status) -> Error {
        Error::Unavailable {
            addr: self.client.addr().to_owned(),
            status,
        }
    }

    /// Runs the watch until it has something to yield.
    async fn next_item(&mut self) -> Result<Leadership, Error> {
        loop {
            if self.stream.is_none() {
                if std::mem::take(&mut self.failed) {
                    sleep(self.backoff.next_delay()).await;
                }
                if let Err(e) = self.connect().await {
                    return self.fail(e);
                }
            }
            let expiry = match &self.last {
                Some(l) if l.is_leader => l.remaining().min(CLOCK_RECHECK),
                _ => Duration::MAX,
            };
            let stream = self.stream.as_mut().expect("connected above");
            tokio::select! {
                message = stream.message() => match message {
                    Ok(Some(m)) => {
                        if let Some(l) = self.received(m)? {
                            return Ok(l);
                        }
                    }
                    Ok(None) => {
                        let e = self.unavailable(Status::unavailable("the sidecar ended the stream (shutting down)"));
                        return self.fail(e);
                    }
                    Err(status) => {
                        let e = Error::from_status(self.client.addr(), status);
                        return self.fail(e);
                    }
                },
                () = sleep_until(self.stall_at) => {
                    let e = self.unavailable(Status::deadline_exceeded(format!(
                        "no message from the sidecar for {:?}", self.stall_timeout())));
                    return self.fail(e);
                }
                () = sleep(expiry), if expiry != Duration::MAX => {
                    if let Some(l) = self.last.as_mut().filter(|l| l.remaining().is_zero()) {
                        *l = l.expired();
                        return Ok(l.clone());
                    }
                }
            }
        }
    }

    async fn connect(&mut self) -> Result<(), Error> {
        let client = self.client.clone();
        let o = client.options();
        let request = WatchLeadershipRequest {
            heartbeat_interval: Some(prost_types::Duration {
                seconds: o.heartbeat_interval.as_secs() as i64,
                nanos: o.heartbeat_interval.subsec_nanos() as i32,
            }),
            client_id: o.client_id.clone(),
            max_valid_for: None,
        };
        let mut api = client.api();
        self.stream = Some(client.call(api.watch_leadership(request)).await?);
        self.last = None;
        self.stall_at = Instant::now() + self.stall_timeout();
        Ok(())
    }

    /// Takes in one message: the state to yield if it is news, `None` if
    /// not; a malformed answer, or one about another Lease, fails the stream.
    fn received(&mut self, m: WatchLeadershipResponse) -> Result<Option<Leadership>, Error> {
        let checked = Leadership::from_proto(m.leadership.unwrap_or_default(), boottime())
            .and_then(|l| self.client.check_lease(&l).map(|()| l));
        let mut l = match checked {
            Ok(l) => l,
            Err(e) => return self.fail(e).map(Some),
        };
        self.client.note(&l);
        if l.is_leader && l.remaining().is_zero() {
            l = l.expired(); // it lapsed on the way: never yield it as leader
        }
        self.backoff.reset();
        self.stall_at = Instant::now() + self.stall_timeout();
        let news = self.last.as_ref().is_none_or(|last| !last.same_news(&l));
        self.last = Some(l.clone());
        Ok(news.then_some(l))
    }
}

/// Exponential backoff with ±20 % jitter between reconnection attempts.
#[derive(Debug)]
pub(crate) struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub(crate) fn new(min: Duration, max: Duration) -> Self {
        Backoff {
            min,
            max,
            next: min,
        }
    }

    /// The delay before the next attempt; each call doubles the one after,
    /// up to the maximum.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let base = self.next;
        self.next = (2 * self.next).min(self.max);
        let jitter = 0.8 + 0.4 * (crate::random_u64() as f64 / u64::MAX as f64);
        base.mul_f64(jitter)
    }

    /// Starts again from the shortest delay (after a successful connection).
    pub(crate) fn reset(&mut self) {
        self.next = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1;

    fn message(is_leader: bool, token: i32, valid_for: Duration) -> WatchLeadershipResponse {
        let deadline = boottime() + valid_for;
        WatchLeadershipResponse {
            event: 0,
            leadership: Some(v1::Leadership {
                is_leader,
                identity: "a".into(),
                holder_identity: "a".into(),
                fencing_token: token,
                lease_name: "l".into(),
                lease_namespace: "ns".into(),
                observed: true,
                valid_for: Some(prost_types::Duration {
                    seconds: valid_for.as_secs() as i64,
                    nanos: valid_for.subsec_nanos() as i32,
                }),
                valid_until_boottime: Some(prost_types::Duration {
                    seconds: deadline.as_secs() as i64,
                    nanos: deadline.subsec_nanos() as i32,
                }),
                ..Default::default()
            }),
        }
    }

    fn state(builder: crate::ClientBuilder) -> WatchState {
        WatchState::new(builder.addr("127.0.0.1:1").build().unwrap())
    }

    #[tokio::test]
    async fn notes_the_latest_deadline_received_for_acknowledgements() {
        let mut w = state(Client::builder());
        let later = message(true, 7, Duration::from_secs(6));
        let sent = later
            .leadership
            .as_ref()
            .unwrap()
            .valid_until_boottime
            .unwrap();
        let sent = Duration::new(sent.seconds as u64, sent.nanos as u32);
        w.received(message(true, 7, Duration::from_secs(5)))
            .unwrap();
        w.received(later).unwrap();
        // An earlier deadline after a later one (another process's) changes nothing.
        w.received(message(true, 7, Duration::from_secs(1)))
            .unwrap();
        assert_eq!(w.client.heard_up_to(7), sent);
        assert_eq!(
            w.client.heard_up_to(6),
            Duration::ZERO,
            "a term never answered in"
        );
    }

    #[tokio::test]
    async fn yields_news_only_and_never_a_lapsed_leader() {
        let mut w = state(Client::builder());
        let first = w
            .received(message(true, 7, Duration::ZERO))
            .unwrap()
            .expect("the first state");
        assert!(
            !first.is_leader,
            "a leader answer that lapsed on the way is a follower's"
        );
        let leader = w
            .received(message(true, 7, Duration::from_secs(5)))
            .unwrap()
            .expect("news");
        assert!(leader.is_leader && leader.remaining() > Duration::ZERO);
        assert!(
            w.received(message(true, 7, Duration::from_secs(5)))
                .unwrap()
                .is_none(),
            "a heartbeat"
        );
        let next = w
            .received(message(true, 8, Duration::from_secs(5)))
            .unwrap()
            .expect("a new token");
        assert_eq!(next.fencing_token, 8);
    }

    #[tokio::test]
    async fn refuses_another_lease_and_drops_the_stream() {
        let mut w = state(Client::builder().lease("other", ""));
        w.failed = false;
        let e = w
            .received(message(true, 7, Duration::from_secs(5)))
            .unwrap_err();
        assert!(matches!(e, Error::WrongLease { .. }), "{e}");
        assert!(w.failed && w.stream.is_none() && w.last.is_none());
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_maximum_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
        let within = |d: Duration, base: u64| {
            let ms = d.as_secs_f64() * 1000.0;
            ms >= 0.8 * base as f64 - 1e-6 && ms <= 1.2 * base as f64 + 1e-6
        };
        assert!(within(b.next_delay(), 100));
        assert!(within(b.next_delay(), 200));
        assert!(within(b.next_delay(), 350));
        assert!(within(b.next_delay(), 350));
        b.reset();
        assert!(within(b.next_delay(), 100));
    }
}
