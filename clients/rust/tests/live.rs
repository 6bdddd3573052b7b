//! The live scenarios of the client conformance suite, against the real
//! sidecars of `clients/testing/sidecars` (`$BATON_SIDECARS`; skipped
//! without it, except `absent-sidecar`, which needs none). The sidecars use
//! lease 3 s, renew deadline 1.5 s, retry 250 ms. Each test starts from a
//! settled election and runs alone: they signal shared sidecars.

mod common;

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use baton_client::{boottime, CancellationToken, Client, Error, Leadership};
use common::{eventually, report_conformance, Fixture};
use tokio::sync::mpsc;

/// Serializes the tests of this file: they stop, pause and kill sidecars.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `test` on a fresh runtime, alone, against the settled fixture, and
/// reports scenario `id` once it has passed; does nothing without
/// `$BATON_SIDECARS`.
fn live<F, Fut>(id: &str, test: F)
where
    F: FnOnce(Fixture) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(fixture) = Fixture::from_env() else {
        eprintln!("skipped: $BATON_SIDECARS is not set");
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    fixture.wait_settled();
    runtime().block_on(test(fixture));
    report_conformance(id);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn client(addr: &str) -> Client {
    Client::builder().addr(addr).build().unwrap()
}

/// The index and a fresh leader answer of the sidecar that leads now.
async fn leader(fixture: &Fixture) -> (u64, Leadership) {
    eventually(Duration::from_secs(10), || async {
        for s in fixture.sidecars() {
            if let Ok(l) = client(&s.grpc).leadership().await {
                if l.is_leader {
                    return Some((s.index, l));
                }
            }
        }
        None
    })
    .await
    .expect("a leader within 10 s")
}

/// Sends SIGCONT when dropped, so a failing test leaves no paused sidecar.
struct Resume<'a>(&'a Fixture, u64);

impl Drop for Resume<'_> {
    fn drop(&mut self) {
        self.0.signal(self.1, libc::SIGCONT);
    }
}

#[test]
fn absent_sidecar() {
    runtime().block_on(async {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = client(&format!("127.0.0.1:{port}"));
        let started = tokio::time::Instant::now();
        let e = c.leadership().await.expect_err("nobody listens");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "took {:?}",
            started.elapsed()
        );
        assert!(e.is_unavailable(), "leadership: {e}");
        let e = c
            .is_leader()
            .await
            .expect_err("is_leader reports the error");
        assert!(e.is_unavailable(), "is_leader: {e}");
        let e = c
            .require_leader(Duration::ZERO)
            .await
            .expect_err("no token");
        assert!(
            e.is_unavailable() && !e.is_not_leader(),
            "require_leader: {e}"
        );
    });
    report_conformance("absent-sidecar");
}

#[test]
fn restarting_sidecar() {
    live("restarting-sidecar", |fixture| async move {
        let before = fixture.sidecar(0);
        let c = client(&before.grpc);
        let mut watch = c.watch();
        let first = watch.next().await.unwrap().expect("the current state");
        assert_eq!(first.identity, before.identity);

        fixture.signal(0, libc::SIGKILL);
        let mut outage = false;
        let restarted = tokio::time::timeout(Duration::from_secs(15), async {
            loop {
                match watch.next().await.unwrap() {
                    Err(e) => {
                        assert!(e.is_unavailable(), "{e}");
                        outage = true;
                    }
                    Ok(l) if l.identity != before.identity => return l,
                    Ok(l) => outage |= !l.is_leader,
                }
            }
        })
        .await
        .expect("the restarted sidecar within 15 s");
        assert!(outage, "the watch reported no outage");
        assert_eq!(
            restarted.identity,
            fixture.sidecar(0).identity,
            "the restarted sidecar's new identity"
        );
    });
}

/// What a watch delivered, stamped with when it arrived.
struct Event {
    index: u64,
    at: Duration,
    state: Result<Leadership, Error>,
}

/// Watches every sidecar until `stop` fires.
fn watch_all(fixture: &Fixture, stop: &CancellationToken) -> mpsc::UnboundedReceiver<Event> {
    let (tx, rx) = mpsc::unbounded_channel();
    for s in fixture.sidecars() {
        let (tx, stop) = (tx.clone(), stop.clone());
        tokio::spawn(async move {
            let c = client(&s.grpc);
            let mut watch = c.watch();
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    state = watch.next() => {
                        let event = Event { index: s.index, at: boottime(), state: state.unwrap() };
                        if tx.send(event).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
    rx
}

#[test]
fn watch_through_handover() {
    live("watch-through-handover", |fixture| async move {
        let stop = CancellationToken::new();
        let _stop = stop.clone().drop_guard();
        let mut events = watch_all(&fixture, &stop);
        let n = fixture.sidecars().len();
        // The current state of every watch, and the leader among them.
        let mut old = None;
        let mut last_promise = Duration::ZERO;
        for _ in 0..n {
            let e = events.recv().await.unwrap();
            let l = e.state.expect("the current state");
            if l.is_leader {
                old = Some((e.index, l.fencing_token));
                last_promise = l.valid_until_boottime;
            }
        }
        let (old, old_token) = old.expect("one watch reports the leader");

        fixture.signal(old, libc::SIGTERM);
        let (mut stepped_down, mut successor) = (false, None);
        tokio::time::timeout(Duration::from_secs(20), async {
            while !stepped_down || successor.is_none() {
                let e = events.recv().await.unwrap();
                match &e.state {
                    Ok(l) if e.index == old && l.is_leader => {
                        last_promise = last_promise.max(l.valid_until_boottime)
                    }
                    Ok(l) if e.index == old => stepped_down |= l.stepping_down || !l.is_leader,
                    Ok(l) if l.is_leader && successor.is_none() => {
                        successor = Some((e.at, l.clone()))
                    }
                    _ => {}
                }
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!("no handover seen (stepped down: {stepped_down}, successor: {successor:?})")
        });
        let (at, next) = successor.unwrap();
        assert!(
            next.fencing_token > old_token,
            "new token {} after {old_token}",
            next.fencing_token
        );
        assert!(
            at >= last_promise,
            "the new leader was reported at {at:?}, before the old leader's promise ran out at {last_promise:?}"
        );
    });
}

#[test]
fn require_leader_after_pause() {
    live("require-leader-after-pause", |fixture| async move {
        let (index, l) = leader(&fixture).await;
        let addr = fixture.sidecar(index).grpc;
        let c = Client::builder()
            .addr(&addr)
            .call_timeout(Duration::from_millis(500))
            .build()
            .unwrap();
        let mut watch = c.watch();
        assert!(
            watch
                .next()
                .await
                .unwrap()
                .expect("the current state")
                .is_leader
        );

        fixture.signal(index, libc::SIGSTOP);
        let resume = Resume(&fixture, index);
        let paused_at = tokio::time::Instant::now();
        let pause = Duration::from_millis(4500);
        // The watch turns follower when the guarantee runs out, then takes
        // the silent stream for broken.
        let lapsed = watch.next().await.unwrap().expect("a lapsed state");
        assert!(
            !lapsed.is_leader && boottime() >= l.valid_until_boottime,
            "{lapsed:?}"
        );
        let e = watch.next().await.unwrap().expect_err("a stalled stream");
        assert!(e.is_unavailable(), "{e}");
        while paused_at.elapsed() < pause {
            match c.require_leader(Duration::ZERO).await {
                Ok(f) => panic!("a token from a paused sidecar: {f:?}"),
                Err(e) => assert!(e.is_unavailable(), "{e}"),
            }
        }
        assert_eq!(
            l.remaining(),
            Duration::ZERO,
            "the answer from before the pause lapsed"
        );
        drop(resume);

        let after = eventually(Duration::from_secs(5), || async {
            c.leadership()
                .await
                .ok()
                .filter(|a| !a.is_leader || a.fencing_token > l.fencing_token)
        })
        .await;
        assert!(
            after.is_some(),
            "the resumed sidecar answers not-leader or a new term"
        );
        let successor = eventually(Duration::from_secs(5), || async {
            for s in fixture.sidecars() {
                if let Ok(a) = client(&s.grpc).leadership().await {
                    if a.is_leader && a.fencing_token > l.fencing_token {
                        return Some(a);
                    }
                }
            }
            None
        })
        .await;
        assert!(
            successor.is_some(),
            "some sidecar leads with a token above {}",
            l.fencing_token
        );
        // The watch reconnects and follows the resumed sidecar again.
        let resumed = tokio::time::timeout(Duration::from_secs(5), async {
            while watch.next().await.unwrap().is_err() {}
        });
        assert!(
            resumed.await.is_ok(),
            "the watch follows the resumed sidecar"
        );
    });
}

#[test]
fn step_down_ack() {
    live("step-down-ack", |fixture| async move {
        // Let the fixture's own anonymous answers lapse, so only this test's
        // promises can hold the Lease back.
        tokio::time::sleep(Duration::from_millis(1600)).await;
        let shutdown = CancellationToken::new();
        let (started_tx, mut started) = mpsc::unbounded_channel();
        let (ended_tx, mut ended) = mpsc::unbounded_channel();
        let mut runs = Vec::new();
        for s in fixture.sidecars() {
            let c = client(&s.grpc);
            let (shutdown, started_tx, ended_tx) =
                (shutdown.clone(), started_tx.clone(), ended_tx.clone());
            runs.push(tokio::spawn(async move {
                let work = |l: Leadership, term: CancellationToken| {
                    let (c, started_tx, ended_tx) =
                        (c.clone(), started_tx.clone(), ended_tx.clone());
                    async move {
                        started_tx.send((s.index, c.clone(), l)).unwrap();
                        term.cancelled().await;
                        ended_tx.send(s.index).unwrap();
                        Ok::<(), Error>(())
                    }
                };
                c.run_while_leader(shutdown, work).await
            }));
        }
        let (index, c, term) = started.recv().await.unwrap();
        let a = c.leadership().await.expect("a fresh answer");
        assert!(
            a.is_leader && a.fencing_token == term.fencing_token,
            "{a:?}"
        );

        fixture.signal(index, libc::SIGTERM);
        let others: Vec<_> = fixture
            .sidecars()
            .into_iter()
            .filter(|s| s.index != index)
            .collect();
        let successor = eventually(Duration::from_secs(10), || async {
            for s in &others {
                if let Ok(l) = client(&s.grpc).leadership().await {
                    if l.is_leader {
                        return Some(boottime());
                    }
                }
            }
            None
        })
        .await
        .expect("another sidecar leads");
        assert_eq!(
            ended.recv().await,
            Some(index),
            "the old leader's work was cancelled and returned"
        );
        assert!(
            successor < a.valid_until_boottime,
            "the next leader led at {successor:?}, not before the acknowledged promise's end {:?}",
            a.valid_until_boottime
        );
        shutdown.cancel();
        for run in runs {
            assert!(run.await.unwrap().is_ok());
        }
    });
}

#[test]
fn lease_identity() {
    live("lease-identity", |fixture| async move {
        let s = fixture.sidecar(0);
        let wrong = Client::builder()
            .addr(&s.grpc)
            .lease("not-this-lease", fixture.namespace())
            .build()
            .unwrap();
        let e = wrong.leadership().await.expect_err("another Lease");
        let text = e.to_string();
        assert!(matches!(e, Error::WrongLease { .. }), "{e}");
        assert!(
            text.contains("not-this-lease") && text.contains(&fixture.lease_name()),
            "{text}"
        );
        assert!(
            wrong.is_leader().await.is_err(),
            "is_leader is not true for another Lease"
        );
        let mut watch = wrong.watch();
        assert!(matches!(
            watch.next().await.unwrap(),
            Err(Error::WrongLease { .. })
        ));

        let right = Client::builder()
            .addr(&s.grpc)
            .lease(fixture.lease_name(), fixture.namespace())
            .build()
            .unwrap();
        let l = right.leadership().await.expect("the expected Lease");
        assert_eq!(
            (l.lease_name, l.lease_namespace),
            (fixture.lease_name(), fixture.namespace())
        );
    });
}
