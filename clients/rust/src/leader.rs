//! [`Client::run_while_leader`]: the application's leader work, started
//! with each term and ended with it, and the step-down handshake.

use std::future::Future;
use std::pin::Pin;

use futures_core::Stream;
use futures_util::StreamExt as _;
use tokio_util::sync::CancellationToken;

use crate::client::Client;
use crate::clock::boottime;
use crate::error::Error;
use crate::leadership::Leadership;

/// The leader work of one term while it runs.
struct Term<Fut> {
    /// The state the term began with.
    leadership: Leadership,
    /// Fires when the term ends.
    cancel: CancellationToken,
    work: Pin<Box<Fut>>,
}

impl Client {
    /// Runs `work` whenever this pod leads, and gives the sidecar its
    /// acknowledgement when the work has ended, so a graceful handover
    /// (sidecar shutdown or resign) takes milliseconds instead of a renew
    /// deadline:
    ///
    /// ```no_run
    /// # async fn f(client: baton_client::Client, shutdown: tokio_util::sync::CancellationToken) {
    /// let result = client
    ///     .run_while_leader(shutdown, |leadership, term| async move {
    ///         while !term.is_cancelled() {
    ///             // write with leadership.fencing_token ...
    ///             tokio::select! {
    ///                 () = term.cancelled() => {}
    ///                 () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    ///             }
    ///         }
    ///         Ok::<(), std::io::Error>(())
    ///     })
    ///     .await;
    /// # }
    /// ```
    ///
    /// It [watches](Self::watch) the sidecar. When a state says this pod
    /// leads, it calls `work` with that state and a token that is cancelled
    /// as soon as the term ends: a state says not leader or stepping down,
    /// the fencing token or the sidecar changes, the guarantee runs out
    /// without news, or the sidecar cannot be reached. It then goes on
    /// polling the work's future until it returns, and only then calls
    /// [`acknowledge_step_down`](Self::acknowledge_step_down) for the term.
    /// Errors of that acknowledgement are dropped: without it the handover is
    /// only slower.
    ///
    /// `work` must stop acting as leader when its token fires, and return;
    /// an error it returns then is dropped. If it returns while the term
    /// goes on, the term is acknowledged as well: with `Ok`, work runs again
    /// at the next term; with an error, `run_while_leader` returns it as
    /// [`Error::Work`]. When `shutdown` is cancelled, running work is
    /// cancelled, awaited and acknowledged, and `run_while_leader` returns
    /// `Ok(())`. Dropping the future drops the work with it, unacknowledged.
    ///
    /// The work runs inside this future (it is not spawned), so it need be
    /// neither `Send` nor `'static`. The acknowledgement speaks for this
    /// client's id: while this runs, do not act as leader on answers of this
    /// client (or its clones) outside `work`.
    pub async fn run_while_leader<F, Fut, E>(
        &self,
        shutdown: CancellationToken,
        work: F,
    ) -> Result<(), Error>
    where
        F: FnMut(Leadership, CancellationToken) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let acknowledge = |token| async move {
            // Without the acknowledgement the handover is only slower.
            let _ = self.acknowledge_step_down(token).await;
        };
        run_terms(self.watch(), acknowledge, shutdown, work).await
    }
}

/// The loop of [`Client::run_while_leader`] over any stream of states, with
/// the acknowledgement of a term (by its fencing token) as a function, so
/// that tests can feed it states and record what it acknowledges. It
/// returns `Ok(())` if `states` ends, which a watch never does.
async fn run_terms<S, A, AFut, F, Fut, E>(
    mut states: S,
    mut acknowledge: A,
    shutdown: CancellationToken,
    mut work: F,
) -> Result<(), Error>
where
    S: Stream<Item = Result<Leadership, Error>> + Unpin,
    A: FnMut(i32) -> AFut,
    AFut: Future<Output = ()>,
    F: FnMut(Leadership, CancellationToken) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut running: Option<Term<Fut>> = None;
    // A term whose work returned on its own while the term went on.
    let mut finished: Option<Leadership> = None;
    loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => {
                if let Some(term) = running.take() {
                    end(term, &mut acknowledge).await;
                }
                return Ok(());
            }
            result = async { running.as_mut().expect("guarded").work.as_mut().await }, if running.is_some() => {
                let term = running.take().expect("guarded");
                acknowledge(term.leadership.fencing_token).await;
                result.map_err(|e| Error::Work(e.into()))?;
                finished = Some(term.leadership);
            }
            state = states.next() => {
                let Some(state) = state else {
                    if let Some(term) = running.take() {
                        end(term, &mut acknowledge).await;
                    }
                    return Ok(());
                };
                let state = state.ok();
                let leading = state.as_ref().filter(|l| l.leads_at(boottime()));
                let same_term = |t: &Leadership| leading.is_some_and(|l| l.same_term(t));
                if let Some(term) = running.take_if(|term| !same_term(&term.leadership)) {
                    end(term, &mut acknowledge).await;
                }
                if let Some(done) = finished.take_if(|done| !same_term(done)) {
                    // Answers after the work returned were promises too.
                    acknowledge(done.fencing_token).await;
                }
                if let (Some(l), None, None) = (leading, &running, &finished) {
                    let cancel = CancellationToken::new();
                    running = Some(Term {
                        leadership: l.clone(),
                        work: Box::pin(work(l.clone(), cancel.clone())),
                        cancel,
                    });
                }
            }
        }
    }
}

/// Cancels a term's work, waits for it and acknowledges the term.
async fn end<Fut, E, A, AFut>(term: Term<Fut>, acknowledge: &mut A)
where
    Fut: Future<Output = Result<(), E>>,
    A: FnMut(i32) -> AFut,
    AFut: Future<Output = ()>,
{
    term.cancel.cancel();
    // Its error is dropped: the work was told to stop.
    let _ = term.work.await;
    acknowledge(term.leadership.fencing_token).await;
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::time::Duration;

    use tokio::sync::mpsc;
    use tonic::Status;

    use super::*;

    fn leader(token: i32) -> Result<Leadership, Error> {
        Ok(Leadership {
            is_leader: true,
            identity: "a".into(),
            fencing_token: token,
            valid_until_boottime: boottime() + Duration::from_secs(60),
            ..Default::default()
        })
    }

    fn follower() -> Result<Leadership, Error> {
        Ok(Leadership {
            identity: "a".into(),
            ..Default::default()
        })
    }

    fn unavailable() -> Result<Leadership, Error> {
        Err(Error::Unavailable {
            addr: "test".into(),
            status: Status::unavailable("gone"),
        })
    }

    /// What happened, in order: "start N", "returned N" (work of token N)
    /// and "ack N".
    #[derive(Default)]
    struct Log(RefCell<Vec<String>>);

    impl Log {
        fn push(&self, event: String) {
            self.0.borrow_mut().push(event);
        }

        /// Waits (up to 5 s) until the log holds exactly `events`.
        async fn is(&self, events: &[&str]) {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            while *self.0.borrow() != events && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert_eq!(*self.0.borrow(), events);
        }
    }

    /// How the work of the test behaves.
    #[derive(Clone, Copy)]
    enum Work {
        /// Runs until its term ends.
        UntilCancelled,
        /// Returns at once with Ok.
        ReturnsOk,
        /// Returns at once with an error.
        Fails,
    }

    /// Runs `run_terms` with the states `script` sends, recording into
    /// `log`, until the script is done (then it shuts down) or `run_terms`
    /// returns by itself; returns what `run_terms` returned.
    async fn run<D>(
        log: &Log,
        behaviour: Work,
        script: impl FnOnce(mpsc::UnboundedSender<Result<Leadership, Error>>, CancellationToken) -> D,
    ) -> Result<(), Error>
    where
        D: Future<Output = ()>,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        let states = Box::pin(futures_util::stream::unfold(rx, |mut rx| async {
            rx.recv().await.map(|s| (s, rx))
        }));
        let shutdown = CancellationToken::new();
        let acknowledge = |token| async move { log.push(format!("ack {token}")) };
        let work = |l: Leadership, term: CancellationToken| async move {
            log.push(format!("start {}", l.fencing_token));
            let result = match behaviour {
                Work::UntilCancelled => {
                    term.cancelled().await;
                    Ok(())
                }
                Work::ReturnsOk => Ok(()),
                Work::Fails => Err(std::io::Error::other("work failed")),
            };
            log.push(format!("returned {}", l.fencing_token));
            result
        };
        let terms = run_terms(states, acknowledge, shutdown.clone(), work);
        tokio::pin!(terms);
        // Until the script is done, unless run_terms returns first; then
        // shut down.
        tokio::select! {
            result = &mut terms => return result,
            () = script(tx, shutdown.clone()) => {}
        }
        shutdown.cancel();
        terms.await
    }

    #[tokio::test]
    async fn the_end_of_a_term_cancels_the_work_waits_for_it_then_acknowledges() {
        let log = &Log::default();
        let result = run(log, Work::UntilCancelled, |tx, _| async move {
            tx.send(leader(7)).unwrap();
            log.is(&["start 7"]).await;
            tx.send(leader(7)).unwrap(); // a heartbeat of the same term
            tx.send(follower()).unwrap();
            log.is(&["start 7", "returned 7", "ack 7"]).await;
        })
        .await;
        assert!(result.is_ok());
    }

    #[tokio::test]
    async fn a_new_token_ends_the_term_and_starts_the_next() {
        let log = &Log::default();
        run(log, Work::UntilCancelled, |tx, _| async move {
            tx.send(leader(7)).unwrap();
            tx.send(leader(8)).unwrap();
            log.is(&["start 7", "returned 7", "ack 7", "start 8"]).await;
        })
        .await
        .unwrap();
        log.is(&[
            "start 7",
            "returned 7",
            "ack 7",
            "start 8",
            "returned 8",
            "ack 8",
        ])
        .await;
    }

    #[tokio::test]
    async fn an_unreachable_sidecar_or_a_lapsed_guarantee_ends_the_term() {
        let log = &Log::default();
        run(log, Work::UntilCancelled, |tx, _| async move {
            tx.send(leader(7)).unwrap();
            tx.send(unavailable()).unwrap();
            log.is(&["start 7", "returned 7", "ack 7"]).await;
            let mut lapsed = leader(8).unwrap();
            lapsed.valid_until_boottime = boottime() - Duration::from_millis(1);
            tx.send(Ok(lapsed)).unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            log.is(&["start 7", "returned 7", "ack 7"]).await;
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn work_that_returns_during_its_term_is_acknowledged_and_not_rerun_until_the_next() {
        let log = &Log::default();
        run(log, Work::ReturnsOk, |tx, _| async move {
            tx.send(leader(7)).unwrap();
            log.is(&["start 7", "returned 7", "ack 7"]).await;
            tx.send(leader(7)).unwrap();
            tx.send(follower()).unwrap(); // the promises given since
            log.is(&["start 7", "returned 7", "ack 7", "ack 7"]).await;
            tx.send(leader(8)).unwrap();
            log.is(&[
                "start 7",
                "returned 7",
                "ack 7",
                "ack 7",
                "start 8",
                "returned 8",
                "ack 8",
            ])
            .await;
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn work_that_fails_during_its_term_ends_run_while_leader_with_its_error() {
        let log = &Log::default();
        let result = run(log, Work::Fails, |tx, _| async move {
            tx.send(leader(7)).unwrap();
            // run_terms returns by itself; the states stay open meanwhile.
            std::future::pending::<()>().await;
        });
        let result = tokio::time::timeout(Duration::from_secs(5), result)
            .await
            .expect("it returns");
        assert!(matches!(result, Err(Error::Work(_))), "{result:?}");
        log.is(&["start 7", "returned 7", "ack 7"]).await;
    }

    #[tokio::test]
    async fn shutdown_cancels_the_work_waits_for_it_and_acknowledges() {
        let log = &Log::default();
        let result = run(log, Work::UntilCancelled, |tx, shutdown| async move {
            tx.send(leader(7)).unwrap();
            log.is(&["start 7"]).await;
            shutdown.cancel();
            std::future::pending::<()>().await; // the states stay open
        });
        let result = tokio::time::timeout(Duration::from_secs(5), result)
            .await
            .expect("it returns");
        assert!(result.is_ok());
        log.is(&["start 7", "returned 7", "ack 7"]).await;
    }
}
