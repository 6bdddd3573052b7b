//! [`Leadership`], the state a sidecar reports, its conversion from the wire
//! (protobuf and the proto3 JSON of `GET /leader`) and the require-leader
//! decision.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::clock::{self, SHARES_SIDECAR_CLOCK};
use crate::error::{Error, NotLeader};
use crate::fence::decimal_revision;
use crate::v1;

/// What the sidecar reported at one moment.
///
/// `Leadership::default()` means "not leader, nothing known", which is also
/// what an application must assume while the sidecar cannot be reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leadership {
    /// This pod held the Lease, within its renew deadline, when the sidecar
    /// produced this answer.
    pub is_leader: bool,
    /// This sidecar's holder identity (new for every sidecar process).
    pub identity: String,
    /// The Lease's holder as last observed; empty when nobody holds it.
    pub holder_identity: String,
    /// The token to tag writes with while `is_leader` (the Lease's
    /// leaseTransitions at this holder's acquisition); otherwise the last
    /// observed leaseTransitions. See [`Fence`](crate::Fence).
    pub fencing_token: i32,
    /// The second fencing token: the Lease's resourceVersion as written by
    /// the write that won this term while `is_leader`, otherwise that of the
    /// last observed Lease. It keeps growing across Lease deletion and a
    /// restart of every sidecar, but is comparable only on Kubernetes 1.35 or
    /// later (see [`RevisionFence`](crate::RevisionFence)). An integer of up
    /// to 128 bits (KEP-5504), so a `u128`. Zero when unknown.
    pub fencing_revision: u128,
    /// The Lease this sidecar campaigns for.
    pub lease_name: String,
    /// The namespace of that Lease.
    pub lease_namespace: String,
    /// metadata.uid of the Lease; it changes when the Lease is deleted and
    /// recreated. Empty before the first read or while no Lease exists.
    pub lease_uid: String,
    /// The Lease's acquireTime (the holder's wall clock), if known. For
    /// information only.
    pub acquire_time: Option<SystemTime>,
    /// The Lease's renewTime (the holder's wall clock), if known. For
    /// information only.
    pub renew_time: Option<SystemTime>,
    /// How much longer leadership was guaranteed when the sidecar produced
    /// the answer; zero when not leader.
    pub valid_for: Duration,
    /// When that guarantee ends, as a reading of [`boottime`](crate::boottime)
    /// (`CLOCK_BOOTTIME`, which keeps counting through a suspend): the
    /// sidecar's own deadline, exact however long the answer took to arrive.
    /// From an older sidecar that sends none, counted from when the request
    /// was sent (unary calls) or the message arrived (watch). Zero when not
    /// leader. See [`remaining`](Self::remaining).
    pub valid_until_boottime: Duration,
    /// The `validUntilBoottime` of a leader answer exactly as the sidecar
    /// sent it (zero if it sent none): the deadline an acknowledgement of
    /// this answer names (see
    /// [`Client::acknowledge_step_down`](crate::Client::acknowledge_step_down)),
    /// never a local estimate.
    pub sidecar_deadline: Duration,
    /// The Lease's leaseDurationSeconds, if known.
    pub lease_duration: Option<Duration>,
    /// The sidecar has read the Lease (or its absence) at least once.
    pub observed: bool,
    /// The sidecar is shutting down or resigning; it never leads again in
    /// this term.
    pub stepping_down: bool,
}

impl Leadership {
    /// How much guaranteed leadership is left now, on `CLOCK_BOOTTIME`: zero
    /// when not leader or when the guarantee has run out.
    pub fn remaining(&self) -> Duration {
        self.remaining_at(clock::boottime())
    }

    /// How much guaranteed leadership is left at the `CLOCK_BOOTTIME`
    /// reading `now`.
    pub fn remaining_at(&self, now: Duration) -> Duration {
        if !self.is_leader {
            return Duration::ZERO;
        }
        self.valid_until_boottime.saturating_sub(now)
    }

    /// The require-leader decision on this state, now: its fencing values if
    /// it leads with some validity left and at least `min_validity`,
    /// [`Error::NotLeader`] otherwise. This is what
    /// [`Client::require_leader`](crate::Client::require_leader) decides on
    /// a fresh answer; on a state a watch yielded it saves the round trip.
    pub fn require(&self, min_validity: Duration) -> Result<Fencing, Error> {
        self.require_at(min_validity, clock::boottime())
    }

    /// [`require`](Self::require) at the `CLOCK_BOOTTIME` reading `now`.
    pub fn require_at(&self, min_validity: Duration, now: Duration) -> Result<Fencing, Error> {
        let remaining = self.remaining_at(now);
        if !self.is_leader || remaining.is_zero() || remaining < min_validity {
            return Err(Error::NotLeader(Box::new(NotLeader {
                leadership: self.clone(),
                min_validity,
                remaining,
            })));
        }
        Ok(Fencing {
            token: self.fencing_token,
            revision: self.fencing_revision,
            valid_until_boottime: self.valid_until_boottime,
        })
    }

    /// The server-side-apply field manager for Kubernetes writes made under
    /// this answer's leadership: the sidecar's holder identity, or `""` for a
    /// state without one. Every sidecar process has an identity of its own,
    /// so every term has a manager of its own. Leader work that writes
    /// Kubernetes objects takes its fields over once at the start of the
    /// term (`force: true`) and applies every later write without force;
    /// then if two pods believe they lead at once, the one whose fields were
    /// taken over gets 409 Conflict naming the other's manager instead of
    /// silently overwriting its writes.
    ///
    /// The API server takes at most 128 printable characters: an identity
    /// that is longer, or has anything but printable ASCII, becomes its first
    /// 111 bytes (others replaced by `_`), `-` and the 16 hex digits of its
    /// 64-bit FNV-1a hash, the same in every baton client.
    pub fn field_manager(&self) -> String {
        const MAX: usize = 128;
        let id = self.identity.as_bytes();
        let printable = |b: &u8| (0x20..=0x7e).contains(b);
        if id.len() <= MAX && id.iter().all(printable) {
            return self.identity.clone();
        }
        let hash = id.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let prefix: String = id[..id.len().min(MAX - 17)]
            .iter()
            .map(|b| if printable(b) { char::from(*b) } else { '_' })
            .collect();
        format!("{prefix}-{hash:016x}")
    }

    /// Whether this state leads at `now`: leader with a guarantee left.
    pub(crate) fn leads_at(&self, now: Duration) -> bool {
        self.is_leader && !self.stepping_down && self.remaining_at(now) > Duration::ZERO
    }

    /// Converts the proto3 JSON of a Leadership, as `GET /leader` answers
    /// it. `since` (a [`boottime`](crate::boottime) reading, normally taken
    /// when the request was sent) is when its validity starts counting if the
    /// sidecar sent no `validUntilBoottime`. Fails with
    /// [`Error::Malformed`] for anything that is not such a message.
    pub fn from_json(text: &str, since: Duration) -> Result<Self, Error> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| Error::Malformed(format!("not JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(Error::Malformed("not a JSON object".into()));
        };
        let f = JsonFields(&obj);
        let is_leader = f.bool("isLeader", "is_leader")?;
        let fencing_revision = fencing_revision(
            &f.string("fencingRevisionDecimal", "fencing_revision_decimal")?,
            f.int("fencingRevision", "fencing_revision")?,
        )?;
        let valid_for = f.duration("validFor", "valid_for")?.unwrap_or_default();
        let deadline = f
            .duration("validUntilBoottime", "valid_until_boottime")?
            .unwrap_or_default();
        Ok(Leadership {
            is_leader,
            identity: f.string("identity", "identity")?,
            holder_identity: f.string("holderIdentity", "holder_identity")?,
            fencing_token: f.int("fencingToken", "fencing_token")?,
            fencing_revision,
            lease_name: f.string("leaseName", "lease_name")?,
            lease_namespace: f.string("leaseNamespace", "lease_namespace")?,
            lease_uid: f.string("leaseUid", "lease_uid")?,
            acquire_time: f.timestamp("acquireTime", "acquire_time")?,
            renew_time: f.timestamp("renewTime", "renew_time")?,
            lease_duration: f.duration("leaseDuration", "lease_duration")?,
            observed: f.bool("observed", "observed")?,
            stepping_down: f.bool("steppingDown", "stepping_down")?,
            ..Leadership::default()
        }
        .with_validity(is_leader, valid_for, deadline, since))
    }

    /// Converts a `baton.v1.Leadership` message; `since` as in
    /// [`from_json`](Self::from_json). Fails with [`Error::Malformed`] for a
    /// `fencing_revision_decimal` that is not decimal digits of at most
    /// 2^128-1, or a negative `fencing_revision`.
    pub fn from_proto(m: v1::Leadership, since: Duration) -> Result<Self, Error> {
        let fencing_revision = fencing_revision(&m.fencing_revision_decimal, m.fencing_revision)?;
        let valid_for = m.valid_for.map(proto_duration).unwrap_or_default();
        let deadline = m
            .valid_until_boottime
            .map(proto_duration)
            .unwrap_or_default();
        Ok(Leadership {
            is_leader: m.is_leader,
            identity: m.identity,
            holder_identity: m.holder_identity,
            fencing_token: m.fencing_token,
            fencing_revision,
            lease_name: m.lease_name,
            lease_namespace: m.lease_namespace,
            lease_uid: m.lease_uid,
            acquire_time: m.acquire_time.and_then(|t| SystemTime::try_from(t).ok()),
            renew_time: m.renew_time.and_then(|t| SystemTime::try_from(t).ok()),
            lease_duration: m.lease_duration.map(proto_duration),
            observed: m.observed,
            stepping_down: m.stepping_down,
            ..Leadership::default()
        }
        .with_validity(m.is_leader, valid_for, deadline, since))
    }

    /// Sets the validity fields: the sidecar's deadline when it sent one,
    /// else `since + valid_for`; both zero for a non-leader.
    fn with_validity(
        mut self,
        is_leader: bool,
        valid_for: Duration,
        deadline: Duration,
        since: Duration,
    ) -> Self {
        if is_leader {
            self.valid_for = valid_for;
            self.sidecar_deadline = deadline;
            self.valid_until_boottime = if deadline > Duration::ZERO && SHARES_SIDECAR_CLOCK {
                deadline
            } else {
                since + valid_for
            };
        }
        self
    }

    /// The same state after its guarantee ran out without news from the
    /// sidecar.
    pub(crate) fn expired(&self) -> Self {
        Leadership {
            is_leader: false,
            valid_for: Duration::ZERO,
            valid_until_boottime: Duration::ZERO,
            sidecar_deadline: Duration::ZERO,
            ..self.clone()
        }
    }

    /// Whether `other` differs in what a watch reports as news: everything
    /// but the times that move with every renew or answer.
    pub(crate) fn same_news(&self, other: &Leadership) -> bool {
        self.is_leader == other.is_leader
            && self.observed == other.observed
            && self.stepping_down == other.stepping_down
            && self.identity == other.identity
            && self.holder_identity == other.holder_identity
            && self.lease_uid == other.lease_uid
            && self.fencing_token == other.fencing_token
    }

    /// Whether `other` is a state of the same term: the same sidecar with the
    /// same fencing token.
    pub(crate) fn same_term(&self, other: &Leadership) -> bool {
        self.identity == other.identity && self.fencing_token == other.fencing_token
    }
}

/// What [`Client::require_leader`](crate::Client::require_leader) returns: the
/// values to tag a write with, and until when the leadership they come from
/// is guaranteed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fencing {
    /// The fencing token ([`Leadership::fencing_token`]).
    pub token: i32,
    /// The fencing revision ([`Leadership::fencing_revision`]), up to 128
    /// bits; zero when the sidecar knows none.
    pub revision: u128,
    /// When the guarantee ends, on [`boottime`](crate::boottime).
    pub valid_until_boottime: Duration,
}

impl Fencing {
    /// How much of the guarantee is left now.
    pub fn remaining(&self) -> Duration {
        self.valid_until_boottime.saturating_sub(clock::boottime())
    }
}

/// The fencing revision of an answer: `decimal` (`fencingRevisionDecimal`)
/// unless it is empty, else `int64` (`fencingRevision`, all that a sidecar of
/// baton 0.2.0 or earlier sends).
fn fencing_revision(decimal: &str, int64: i64) -> Result<u128, Error> {
    if decimal.is_empty() {
        return u128::try_from(int64).map_err(|_| {
            Error::Malformed(format!("field fencingRevision: negative value {int64}"))
        });
    }
    decimal_revision(decimal).ok_or_else(|| {
        Error::Malformed(format!(
            "field fencingRevisionDecimal: {decimal:?} is not a revision of up to 128 bits"
        ))
    })
}

/// A proto Duration as a std Duration; negative values count as zero.
fn proto_duration(d: prost_types::Duration) -> Duration {
    Duration::try_from(d).unwrap_or_default()
}

/// Field access on a proto3 JSON object: each field under its JSON name or
/// its proto name, `null` or absent meaning the default.
struct JsonFields<'a>(&'a Map<String, Value>);

impl JsonFields<'_> {
    fn get(&self, json: &str, proto: &str) -> Option<&Value> {
        self.0
            .get(json)
            .or_else(|| self.0.get(proto))
            .filter(|v| !v.is_null())
    }

    fn bool(&self, json: &str, proto: &str) -> Result<bool, Error> {
        match self.get(json, proto) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(malformed(json, v)),
        }
    }

    fn string(&self, json: &str, proto: &str) -> Result<String, Error> {
        match self.get(json, proto) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(malformed(json, v)),
        }
    }

    /// An integer field: a JSON number or a decimal string (proto3 JSON
    /// prints int64 as a string and accepts either form).
    fn int<T: TryFrom<i64>>(&self, json: &str, proto: &str) -> Result<T, Error> {
        let Some(v) = self.get(json, proto) else {
            return T::try_from(0).map_err(|_| Error::Malformed(json.into()));
        };
        let n = match v {
            Value::Number(n) => n.as_i64(),
            Value::String(s) if !s.is_empty() && !s.starts_with('+') => s.parse::<i64>().ok(),
            _ => None,
        };
        n.and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| malformed(json, v))
    }

    /// A Duration field: decimal seconds with an `s` suffix ("1.5s").
    /// Negative values count as zero.
    fn duration(&self, json: &str, proto: &str) -> Result<Option<Duration>, Error> {
        match self.get(json, proto) {
            None => Ok(None),
            Some(Value::String(s)) => parse_duration(s)
                .map(Some)
                .ok_or_else(|| malformed(json, &Value::String(s.clone()))),
            Some(v) => Err(malformed(json, v)),
        }
    }

    /// A Timestamp field: an RFC 3339 string.
    fn timestamp(&self, json: &str, proto: &str) -> Result<Option<SystemTime>, Error> {
        match self.get(json, proto) {
            None => Ok(None),
            Some(Value::String(s)) => parse_rfc3339(s)
                .map(Some)
                .ok_or_else(|| malformed(json, &Value::String(s.clone()))),
            Some(v) => Err(malformed(json, v)),
        }
    }
}

fn malformed(field: &str, v: &Value) -> Error {
    Error::Malformed(format!("field {field}: unexpected value {v}"))
}

/// Parses a proto3 JSON Duration ("-1.5s", "3s", "0.000000001s"); negative
/// values give zero.
fn parse_duration(s: &str) -> Option<Duration> {
    let body = s.strip_suffix('s')?;
    let (negative, body) = match body.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, body),
    };
    let (secs, frac) = body.split_once('.').unwrap_or((body, ""));
    if secs.is_empty() || !secs.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos = parse_fraction(frac)?;
    let secs: u64 = secs.parse().ok()?;
    if negative {
        return Some(Duration::ZERO);
    }
    Some(Duration::new(secs, nanos))
}

/// Parses up to nine digits after a decimal point into nanoseconds.
fn parse_fraction(frac: &str) -> Option<u32> {
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if frac.is_empty() {
        return Some(0);
    }
    let digits: u32 = frac.parse().ok()?;
    Some(digits * 10u32.pow(9 - frac.len() as u32))
}

/// Parses an RFC 3339 timestamp ("2026-01-02T03:04:05.5Z", offsets allowed).
fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &s[19..];
    let mut nanos = 0;
    if let Some(after_dot) = rest.strip_prefix('.') {
        let end = after_dot
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after_dot.len());
        if end == 0 {
            return None;
        }
        nanos = parse_fraction(&after_dot[..end])?;
        rest = &after_dot[end..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = rest[1..].split_once(':')?;
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60)
        }
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    let since_epoch = Duration::new(secs.unsigned_abs(), nanos);
    if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(since_epoch)
    } else {
        SystemTime::UNIX_EPOCH
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(Duration::from_nanos(nanos.into()))
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manager(identity: &str) -> String {
        Leadership {
            identity: identity.into(),
            ..Default::default()
        }
        .field_manager()
    }

    #[test]
    fn field_manager_is_the_identity_when_the_api_server_takes_it() {
        for id in ["web-0_3f9a1c", &"a".repeat(128), "pod name with spaces"] {
            assert_eq!(manager(id), id);
        }
        assert_eq!(manager(""), "");
    }

    /// The same identities and managers as the other clients' tests.
    #[test]
    fn field_manager_is_the_same_in_every_client() {
        let long = format!("{}_1", "x".repeat(200));
        assert_eq!(
            manager(&long),
            format!("{}-090fac22cfc2b4ad", "x".repeat(111))
        );
        assert_eq!(manager("tab\there"), "tab_here-778309ed1f28b0f9");
        assert_eq!(manager("ünïcode"), "__n__code-b1b0d40350a25beb");
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("3s"), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_duration("0.000000001s"),
            Some(Duration::from_nanos(1))
        );
        assert_eq!(parse_duration("-2s"), Some(Duration::ZERO));
        for bad in ["", "s", "1", "1.s5", "1.0000000001s", "x1s", "1e3s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn parses_rfc3339() {
        let t = |s| parse_rfc3339(s).map(|t| t.duration_since(SystemTime::UNIX_EPOCH).unwrap());
        assert_eq!(t("1970-01-01T00:00:00Z"), Some(Duration::ZERO));
        assert_eq!(
            t("2026-12-01T11:32:50.25Z"),
            Some(Duration::from_millis(1_796_124_770_250))
        );
        assert_eq!(
            t("2026-12-01T12:32:50.25+01:00"),
            t("2026-12-01T11:32:50.25Z")
        );
        for bad in [
            "2026-12-01",
            "2026-13-01T00:00:00Z",
            "2026-12-01T00:00:00",
            "2026-12-01T00:00:00.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    /// A revision beyond 64 bits comes in fencing_revision_decimal; without
    /// it (an older sidecar) a negative int64 is no revision.
    #[test]
    fn reads_the_decimal_revision_and_refuses_a_negative_int64() {
        let decimal = v1::Leadership {
            fencing_revision_decimal: u128::MAX.to_string(),
            ..Default::default()
        };
        let l = Leadership::from_proto(decimal, Duration::ZERO).unwrap();
        assert_eq!(l.fencing_revision, u128::MAX);
        let negative = v1::Leadership {
            fencing_revision: -1,
            ..Default::default()
        };
        assert!(matches!(
            Leadership::from_proto(negative, Duration::ZERO),
            Err(Error::Malformed(_))
        ));
    }

    #[test]
    fn validity_is_zero_for_a_follower_and_counts_to_the_deadline() {
        let leader = Leadership {
            is_leader: true,
            valid_until_boottime: Duration::from_secs(10),
            ..Default::default()
        };
        assert_eq!(
            leader.remaining_at(Duration::from_secs(4)),
            Duration::from_secs(6)
        );
        assert_eq!(leader.remaining_at(Duration::from_secs(11)), Duration::ZERO);
        assert_eq!(
            leader.expired().remaining_at(Duration::ZERO),
            Duration::ZERO
        );
    }
}
