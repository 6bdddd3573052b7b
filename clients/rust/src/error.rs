//! The crate's [`Error`]: what can go wrong talking to the sidecar, in the
//! require-leader decision and in a store's fence.

use std::time::Duration;

use tonic::{Code, Status};

use crate::client::LeaseRef;
use crate::leadership::Leadership;

/// Everything this crate can fail with.
///
/// Any error from a question to the sidecar means "act as a follower".
/// [`Error::Unavailable`] is the one to retry: no sidecar answered (not
/// running yet, restarting, paused, or at another address).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No sidecar answered at `addr`: the connection was refused, no answer
    /// came within the call timeout, or the stream broke or went silent.
    /// `status` is the transport's status.
    #[error("no baton sidecar answering at {addr} (is the baton container running, and is $BATON_GRPC_ADDR right?): {status}")]
    Unavailable {
        /// The sidecar address this client uses.
        addr: String,
        /// What the transport reported.
        #[source]
        status: Status,
    },

    /// This pod does not lead, or not with enough guaranteed leadership
    /// left ([`Client::require_leader`](crate::Client::require_leader)).
    #[error("{0}")]
    NotLeader(Box<NotLeader>),

    /// The sidecar that answered serves another Lease than the one this
    /// client was told to expect (two sidecars on one network namespace,
    /// or a wrong address). Its answers are not about this application.
    #[error("the baton sidecar at {addr} serves Lease {served}, not the expected {expected} (is $BATON_GRPC_ADDR right?)")]
    WrongLease {
        /// The sidecar address this client uses.
        addr: String,
        /// The Lease the client expects ([`ClientBuilder::lease`](crate::ClientBuilder::lease)).
        expected: LeaseRef,
        /// The Lease the sidecar serves.
        served: LeaseRef,
    },

    /// The sidecar answered with an error other than unavailability (for
    /// example `INVALID_ARGUMENT` or `RESOURCE_EXHAUSTED`).
    #[error("baton sidecar at {addr}: {status}")]
    Status {
        /// The sidecar address this client uses.
        addr: String,
        /// The status the sidecar answered with.
        #[source]
        status: Status,
    },

    /// An answer that is not a Leadership message.
    #[error("malformed answer from the baton sidecar: {0}")]
    Malformed(String),

    /// [`Fence::admit`](crate::Fence::admit) refused a deposed leader's
    /// write.
    #[error("stale fencing token {token}: a write with token {highest} was already accepted")]
    StaleToken {
        /// The token of the refused write.
        token: i32,
        /// The highest token admitted so far.
        highest: i32,
    },

    /// [`RevisionFence::admit`](crate::RevisionFence::admit) refused a
    /// deposed leader's write.
    #[error(
        "stale fencing revision {revision}: a write with revision {highest} was already accepted"
    )]
    StaleRevision {
        /// The revision of the refused write.
        revision: u128,
        /// The highest revision admitted so far.
        highest: u128,
    },

    /// A fencing header that is missing or not a non-negative integer of
    /// its kind.
    #[error("{header} header {value:?} is not a fencing value")]
    InvalidHeader {
        /// The header's name.
        header: &'static str,
        /// Its value; `None` when missing.
        value: Option<String>,
    },

    /// A client configuration that cannot work (a malformed address or
    /// client id).
    #[error("invalid baton client configuration: {0}")]
    Config(String),

    /// The leader work of
    /// [`Client::run_while_leader`](crate::Client::run_while_leader) failed
    /// while its term went on.
    #[error("leader work failed: {0}")]
    Work(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// Whether this is [`Error::Unavailable`]: no sidecar answered; act as a
    /// follower and retry.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable { .. })
    }

    /// Whether this is [`Error::NotLeader`].
    pub fn is_not_leader(&self) -> bool {
        matches!(self, Error::NotLeader(_))
    }

    /// Maps the status of a failed call to the sidecar at `addr`: the codes
    /// a missing, restarting or paused sidecar produces (`UNAVAILABLE`,
    /// `DEADLINE_EXCEEDED`, `UNIMPLEMENTED`, `CANCELLED`) become
    /// [`Error::Unavailable`], and so does any status the transport made
    /// of a local failure (one with a [source](std::error::Error::source),
    /// such as a connection broken mid-stream, which tonic reports as
    /// `UNKNOWN`); every other status the sidecar answered with becomes
    /// [`Error::Status`]. The client's own calls use it; it is public for
    /// calls made with the [`v1`](crate::v1) stubs directly.
    pub fn from_status(addr: &str, status: Status) -> Error {
        let addr = addr.to_owned();
        let unavailable = matches!(
            status.code(),
            Code::Unavailable | Code::DeadlineExceeded | Code::Unimplemented | Code::Cancelled
        );
        if unavailable || std::error::Error::source(&status).is_some() {
            Error::Unavailable { addr, status }
        } else {
            Error::Status { addr, status }
        }
    }
}

/// Why [`Client::require_leader`](crate::Client::require_leader) refused.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NotLeader {
    /// The state the decision was made on.
    pub leadership: Leadership,
    /// The remaining validity that was asked for.
    pub min_validity: Duration,
    /// The validity that was left (zero when not leader).
    pub remaining: Duration,
}

impl std::fmt::Display for NotLeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.leadership;
        if l.is_leader {
            write!(
                f,
                "leader, but only {:?} of guaranteed leadership left (more than {:?} needed)",
                self.remaining, self.min_validity
            )
        } else if !l.observed {
            f.write_str("not leader: the sidecar has not read the Lease yet")
        } else if l.stepping_down {
            f.write_str("not leader: the sidecar is stepping down")
        } else if l.holder_identity.is_empty() {
            f.write_str("not leader: the Lease has no holder")
        } else if l.holder_identity == l.identity {
            f.write_str("not leader: the renew deadline passed")
        } else {
            write!(f, "not leader: the Lease is held by {}", l.holder_identity)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transport_failure_is_unavailable_whatever_its_code() {
        let broken = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stream closed");
        let status = Status::from_error(Box::new(broken));
        assert_eq!(status.code(), Code::Unknown);
        assert!(Error::from_status("a", status).is_unavailable());
        let answered = Status::new(Code::Unknown, "from the sidecar");
        assert!(matches!(
            Error::from_status("a", answered),
            Error::Status { .. }
        ));
    }
}
