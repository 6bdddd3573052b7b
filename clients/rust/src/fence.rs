//! The store side of fencing: [`Fence`] and [`RevisionFence`], and the HTTP
//! headers that carry the values with a write.

use std::sync::Mutex;

use http::{HeaderMap, HeaderValue};

use crate::error::Error;

/// The HTTP header that carries a fencing token with a write.
pub const TOKEN_HEADER: &str = "Baton-Fencing-Token";

/// The HTTP header that carries a fencing revision with a write.
pub const REVISION_HEADER: &str = "Baton-Fencing-Revision";

/// Tags an outgoing HTTP write with a fencing token ([`TOKEN_HEADER`]).
pub fn set_token(headers: &mut HeaderMap, token: i32) {
    headers.insert(TOKEN_HEADER, HeaderValue::from(token));
}

/// Tags an outgoing HTTP write with a fencing revision ([`REVISION_HEADER`]):
/// its decimal digits.
pub fn set_revision(headers: &mut HeaderMap, revision: u128) {
    let digits = HeaderValue::try_from(revision.to_string());
    headers.insert(
        REVISION_HEADER,
        digits.expect("decimal digits are a header value"),
    );
}

/// Reads the fencing token [`set_token`] wrote. Fails with
/// [`Error::InvalidHeader`] when the header is missing or not a non-negative
/// 32-bit decimal integer.
pub fn token_from_headers(headers: &HeaderMap) -> Result<i32, Error> {
    parse_token(header_text(headers, TOKEN_HEADER)?)
}

/// Reads the fencing revision [`set_revision`] wrote. Fails with
/// [`Error::InvalidHeader`] when the header is missing or not a revision
/// (see [`parse_revision`]).
pub fn revision_from_headers(headers: &HeaderMap) -> Result<u128, Error> {
    parse_revision(header_text(headers, REVISION_HEADER)?)
}

/// Parses a [`TOKEN_HEADER`] value (`None`: the header is missing), for
/// HTTP libraries other than the `http` crate's.
pub fn parse_token(value: Option<&str>) -> Result<i32, Error> {
    parse_header(TOKEN_HEADER, value)
}

/// Parses a [`REVISION_HEADER`] value (`None`: the header is missing):
/// decimal digits of an integer up to 2^128-1, with no sign and no leading
/// zero.
pub fn parse_revision(value: Option<&str>) -> Result<u128, Error> {
    value
        .and_then(decimal_revision)
        .ok_or_else(|| Error::InvalidHeader {
            header: REVISION_HEADER,
            value: value.map(str::to_owned),
        })
}

/// A fencing revision written the one way both the revision header and the
/// sidecar's `fencingRevisionDecimal` write it: decimal digits only, no
/// sign, no leading zero ("0" itself aside), at most 2^128-1. `None`
/// otherwise.
pub(crate) fn decimal_revision(text: &str) -> Option<u128> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    if !digits || (text.len() > 1 && text.starts_with('0')) {
        return None;
    }
    text.parse().ok()
}

fn header_text<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<Option<&'a str>, Error> {
    headers
        .get(name)
        .map(|v| {
            v.to_str().map_err(|_| Error::InvalidHeader {
                header: name,
                value: Some(String::from_utf8_lossy(v.as_bytes()).into_owned()),
            })
        })
        .transpose()
}

/// A non-negative decimal integer of type T: digits only, no sign, no
/// spaces, within T's range.
fn parse_header<T: std::str::FromStr + Default + PartialOrd>(
    header: &'static str,
    value: Option<&str>,
) -> Result<T, Error> {
    let invalid = || Error::InvalidHeader {
        header,
        value: value.map(str::to_owned),
    };
    let text = value.ok_or_else(invalid)?;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    text.parse::<T>().map_err(|_| invalid())
}

/// The highest value admitted so far; what both fences are.
#[derive(Debug, Default)]
struct HighWater<T> {
    highest: Mutex<Option<T>>,
}

impl<T: Copy + Ord> HighWater<T> {
    /// Records `v` unless a higher value was admitted; returns that higher
    /// value if so.
    fn admit(&self, v: T) -> Result<(), T> {
        let mut highest = self.highest.lock().unwrap_or_else(|e| e.into_inner());
        match *highest {
            Some(h) if v < h => Err(h),
            _ => {
                *highest = Some(v);
                Ok(())
            }
        }
    }

    fn get(&self) -> Option<T> {
        *self.highest.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The store side of fencing for one Lease: it remembers the highest token
/// it has admitted and refuses lower ones. Equal tokens are admitted (the
/// same leader writing again). Safe to share between threads.
///
/// [`admit`](Self::admit) must be atomic with the write it guards: hold the
/// store's own lock (or transaction) across `admit` and the write, or a
/// stale write can slip in between. A store that persists its data should
/// persist [`highest`](Self::highest) with it and admit it once after a
/// restart.
///
/// The token ([`Leadership::fencing_token`](crate::Leadership::fencing_token),
/// the Lease's leaseTransitions) grows across leaders as far as any running
/// sidecar has seen. If the Lease is deleted while every sidecar is
/// restarted, it starts again from 0 and this fence refuses the new leader;
/// use a [`RevisionFence`] where that matters.
#[derive(Debug, Default)]
pub struct Fence(HighWater<i32>);

impl Fence {
    /// A fence that has admitted nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token` if no higher one was admitted before, and records it;
    /// otherwise fails with [`Error::StaleToken`] and records nothing.
    pub fn admit(&self, token: i32) -> Result<(), Error> {
        self.0
            .admit(token)
            .map_err(|highest| Error::StaleToken { token, highest })
    }

    /// The highest admitted token; `None` before the first.
    pub fn highest(&self) -> Option<i32> {
        self.0.get()
    }
}

/// [`Fence`] for fencing revisions
/// ([`Leadership::fencing_revision`](crate::Leadership::fencing_revision),
/// the resourceVersion of the write that won the term, an integer of up to
/// 128 bits held as a `u128`), compared as integers. Use one kind per store,
/// never both in one fence; `admit` must be atomic with the write, as for
/// [`Fence`].
///
/// Revisions keep growing even after the Lease is deleted and every sidecar
/// restarted, because they come from the API server's own counter; that is
/// guaranteed only on Kubernetes 1.35 or later (KEP-5504). On older servers
/// use [`Fence`]. A revision of 0 means the sidecar knew none: it is refused
/// once any revision was admitted.
#[derive(Debug, Default)]
pub struct RevisionFence(HighWater<u128>);

impl RevisionFence {
    /// A fence that has admitted nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `revision` if no higher one was admitted before, and records
    /// it; otherwise fails with [`Error::StaleRevision`] and records nothing.
    pub fn admit(&self, revision: u128) -> Result<(), Error> {
        self.0
            .admit(revision)
            .map_err(|highest| Error::StaleRevision { revision, highest })
    }

    /// The highest admitted revision; `None` before the first.
    pub fn highest(&self) -> Option<u128> {
        self.0.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let mut h = HeaderMap::new();
        set_token(&mut h, 7);
        set_revision(&mut h, u128::MAX);
        assert_eq!(token_from_headers(&h).unwrap(), 7);
        assert_eq!(revision_from_headers(&h).unwrap(), u128::MAX);
        assert!(matches!(
            token_from_headers(&HeaderMap::new()),
            Err(Error::InvalidHeader { value: None, .. })
        ));
    }
}
