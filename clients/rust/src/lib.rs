//! The Rust client of the baton leader-election sidecar: it asks the sidecar
//! beside the application, over gRPC on localhost, whether this pod leads,
//! for how long that is guaranteed, and which fencing token to tag writes
//! with.
//!
//! ```no_run
//! # async fn f() -> Result<(), baton_client::Error> {
//! use std::time::Duration;
//! let client = baton_client::Client::new()?; // 127.0.0.1:4041, or $BATON_GRPC_ADDR
//! match client.require_leader(Duration::from_secs(1)).await {
//!     Ok(fencing) => { /* write, tagged with fencing.token */ }
//!     Err(e) => { /* not leader, or no sidecar: act as a follower */ }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! A [`Client`] connects lazily and reconnects by itself when the sidecar
//! restarts; every call fails fast with [`Error::Unavailable`] while no
//! sidecar answers. Any error means "act as a follower".
//!
//! # Fencing
//!
//! Leadership can end at any moment (a pause, a partition), and a deposed
//! leader may not know yet. The fencing token protects the data anyway: it
//! is the Lease's leaseTransitions at this holder's acquisition, so every
//! new leader's token is higher than every earlier leader's.
//!
//! 1. The writer gets the token with [`Client::require_leader`] right before
//!    each write, asking for as much remaining validity as the write needs.
//! 2. It sends the token with the write (a field of the request, or the
//!    [`TOKEN_HEADER`] HTTP header, see [`set_token`]).
//! 3. The store keeps the highest token it has accepted (a [`Fence`]) and
//!    refuses a write that carries a lower one, atomically with the write.
//!
//! Step 3 is what makes it safe: step 1 alone cannot stop a write that was
//! already on its way when leadership ended.
//! [`Leadership::fencing_revision`] is a second token that survives Lease
//! deletion on Kubernetes 1.35 or later (see [`RevisionFence`]): a
//! resourceVersion, an integer of up to 128 bits (KEP-5504), held as a
//! `u128`.
//!
//! # Validity
//!
//! Remaining validity counts from when the sidecar produced an answer: to
//! its `validUntilBoottime`, a deadline on the node's `CLOCK_BOOTTIME`
//! ([`boottime`]), shared by every container of the Pod and counting
//! through a suspend. An answer that sat in a queue never over-promises.
//!
//! # Leader work and the step-down handshake
//!
//! [`Client::run_while_leader`] runs the application's leader work while
//! the pod leads, cancels it when the term ends, waits for it and then
//! acknowledges the step-down ([`Client::acknowledge_step_down`]), so a
//! sidecar that shuts down or resigns hands over at once instead of waiting
//! for its last promise to this client to lapse.

mod client;
mod clock;
mod error;
mod fence;
mod leader;
mod leadership;
mod watch;

/// The generated gRPC stubs of `baton.v1` (`proto/baton/v1`).
pub mod v1 {
    #![allow(missing_docs, clippy::all)]
    tonic::include_proto!("baton.v1");
}

pub use client::{
    require_leader_bound, resolve_addr, Client, ClientBuilder, LeaseRef, DEFAULT_CALL_TIMEOUT,
    DEFAULT_GRPC_ADDR, DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_MAX_BACKOFF, DEFAULT_MIN_BACKOFF,
    ENV_GRPC_ADDR, ENV_LEASE_NAME, ENV_LEASE_NAMESPACE, REQUIRE_LEADER_SLACK,
};
pub use clock::boottime;
pub use error::{Error, NotLeader};
pub use fence::{
    parse_revision, parse_token, revision_from_headers, set_revision, set_token,
    token_from_headers, Fence, RevisionFence, REVISION_HEADER, TOKEN_HEADER,
};
pub use leadership::{Fencing, Leadership};
pub use tokio_util::sync::CancellationToken;
pub use watch::Watch;

/// 64 random bits from the kernel (client ids, backoff jitter).
fn random_u64() -> u64 {
    let mut buf = [0u8; 8];
    // SAFETY: buf is valid and writable for its length.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    // getrandom(2) with flags 0 waits until the pool is ready and fills a
    // request of up to 256 bytes in full; anything else is a broken
    // invariant.
    assert_eq!(n, 8, "getrandom: {}", std::io::Error::last_os_error());
    u64::from_ne_bytes(buf)
}
