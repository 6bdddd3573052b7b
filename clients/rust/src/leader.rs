//! [`Client::run_while_leader`]: the application's leader work, started
//! with each term and ended with it, and the step-down handshake.

use std::future::Future;
use std::pin::Pin;

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
        mut work: F,
    ) -> Result<(), Error>
    where
        F: FnMut(Leadership, CancellationToken) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut watch = self.watch();
        let mut running: Option<Term<Fut>> = None;
        // A term whose work returned on its own while the term went on.
        let mut finished: Option<Leadership> = None;
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => {
                    if let Some(term) = running.take() {
                        self.end(term).await;
                    }
                    return Ok(());
                }
                result = async { running.as_mut().expect("guarded").work.as_mut().await }, if running.is_some() => {
                    let term = running.take().expect("guarded");
                    self.acknowledge(&term.leadership).await;
                    result.map_err(|e| Error::Work(e.into()))?;
                    finished = Some(term.leadership);
                }
                state = watch.next() => {
                    let state = state.and_then(Result::ok);
                    let leading = state.as_ref().filter(|l| l.leads_at(boottime()));
                    let same_term = |t: &Leadership| leading.is_some_and(|l| l.same_term(t));
                    if let Some(term) = running.take_if(|term| !same_term(&term.leadership)) {
                        self.end(term).await;
                    }
                    if let Some(done) = finished.take_if(|done| !same_term(done)) {
                        // Answers after the work returned were promises too.
                        self.acknowledge(&done).await;
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
    async fn end<Fut, E>(&self, term: Term<Fut>)
    where
        Fut: Future<Output = Result<(), E>>,
    {
        term.cancel.cancel();
        // Its error is dropped: the work was told to stop.
        let _ = term.work.await;
        self.acknowledge(&term.leadership).await;
    }

    async fn acknowledge(&self, term: &Leadership) {
        // Without the acknowledgement the handover is only slower.
        let _ = self.acknowledge_step_down(term.fencing_token).await;
    }
}
