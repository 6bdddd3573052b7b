//! The vector scenarios of the client conformance suite
//! (`clients/conformance`): each test loads one vector file, checks every
//! case, and only then reports the scenario to `$BATON_CONFORMANCE_REPORT`.
//! The conversions and decisions take the suite's clock readings instead of
//! the real clock (`since`, `now`).

// baton_client::Error is 128 bytes, clippy's bound for a large error: its
// WrongLease variant holds 120, and the u128 revisions of StaleRevision
// align it to 16.
#![allow(clippy::result_large_err)]

mod common;

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use baton_client::{v1, Error, Fence, Leadership, RevisionFence};
use prost::Message as _;
use serde_json::Value;

/// A vector file.
fn load(file: &str) -> Value {
    let path = common::conformance_dir().join("vectors").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cases(v: &Value) -> &Vec<Value> {
    v["cases"].as_array().expect("a cases list")
}

fn name(case: &Value) -> &str {
    case["name"].as_str().expect("a case name")
}

fn ms(v: &Value) -> Duration {
    Duration::from_millis(
        v.as_u64()
            .unwrap_or_else(|| panic!("{v} is not whole milliseconds")),
    )
}

/// Fails the test naming every failed case, or appends the scenario's id to
/// `$BATON_CONFORMANCE_REPORT` when there is none.
fn conclude(id: &str, failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{id}: {} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    common::report_conformance(id);
}

/// `l` in the shape of the suite's expected Leadership.
fn as_expected(l: &Leadership) -> Value {
    let unix_ms = |t: Option<SystemTime>| {
        t.map(|t| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .expect("after 1970")
                .as_millis() as u64
        })
    };
    serde_json::json!({
        "isLeader": l.is_leader,
        "observed": l.observed,
        "steppingDown": l.stepping_down,
        "identity": l.identity,
        "holderIdentity": l.holder_identity,
        "leaseName": l.lease_name,
        "leaseNamespace": l.lease_namespace,
        "leaseUid": l.lease_uid,
        "fencingToken": l.fencing_token,
        "fencingRevision": l.fencing_revision.to_string(),
        "acquireTimeUnixMs": unix_ms(l.acquire_time),
        "renewTimeUnixMs": unix_ms(l.renew_time),
        "validForMs": l.valid_for.as_millis() as u64,
        "validUntilBoottimeMs": l.valid_until_boottime.as_millis() as u64,
        "leaseDurationMs": l.lease_duration.unwrap_or_default().as_millis() as u64,
    })
}

/// Compares a conversion's outcome with a case's `expect`.
fn check_conversion(case: &Value, got: Result<Leadership, Error>) -> Option<String> {
    let expect = &case["expect"];
    match got {
        Err(Error::Malformed(_)) if expect["error"] == true => None,
        Err(e) => Some(format!("{}: refused ({e}), expected {expect}", name(case))),
        Ok(_) if expect["error"] == true => {
            Some(format!("{}: accepted a malformed answer", name(case)))
        }
        Ok(l) if as_expected(&l) != *expect => Some(format!(
            "{}: got {}, expected {expect}",
            name(case),
            as_expected(&l)
        )),
        Ok(_) => None,
    }
}

fn from_json_case(case: &Value) -> Result<Leadership, Error> {
    Leadership::from_json(case["text"].as_str().expect("text"), ms(&case["sinceMs"]))
}

#[test]
fn leadership_json() {
    let v = load("leadership_json.json");
    let failures = cases(&v)
        .iter()
        .filter_map(|c| check_conversion(c, from_json_case(c)))
        .collect();
    conclude("leadership-json", failures);
}

#[test]
fn leadership_proto() {
    let v = load("leadership_proto.json");
    let failures = cases(&v)
        .iter()
        .filter_map(|c| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(c["base64"].as_str().expect("base64"))
                .expect("valid base64");
            let got = v1::Leadership::decode(bytes.as_slice())
                .map_err(|e| Error::Malformed(e.to_string()))
                .and_then(|m| Leadership::from_proto(m, ms(&c["sinceMs"])));
            check_conversion(c, got)
        })
        .collect();
    conclude("leadership-proto", failures);
}

#[test]
fn validity() {
    let v = load("validity.json");
    let mut failures = Vec::new();
    for c in cases(&v) {
        let l = from_json_case(c).unwrap_or_else(|e| panic!("{}: {e}", name(c)));
        for check in c["checks"].as_array().expect("checks") {
            let now = ms(&check["nowMs"]);
            let got = l.remaining_at(now).as_millis() as u64;
            if got != check["remainingMs"].as_u64().expect("remainingMs") {
                failures.push(format!(
                    "{} at {now:?}: remaining {got} ms, expected {}",
                    name(c),
                    check["remainingMs"]
                ));
            }
        }
    }
    conclude("validity", failures);
}

#[test]
fn require_leader() {
    let v = load("require_leader.json");
    let failures = cases(&v)
        .iter()
        .filter_map(|c| {
            let bound = baton_client::require_leader_bound(ms(&c["minValidityMs"]));
            if bound != ms(&c["requestMaxValidForMs"]) {
                return Some(format!(
                    "{}: asks for max_valid_for {bound:?}, expected {}ms",
                    name(c),
                    c["requestMaxValidForMs"]
                ));
            }
            let l = from_json_case(c).unwrap_or_else(|e| panic!("{}: {e}", name(c)));
            let got = l.require_at(ms(&c["minValidityMs"]), ms(&c["nowMs"]));
            let expect = &c["expect"];
            match got {
                Ok(f)
                    if expect["token"] == f.token
                        && expect["revision"].as_str() == Some(&f.revision.to_string()) =>
                {
                    None
                }
                Err(Error::NotLeader(_)) if expect["notLeader"] == true => None,
                other => Some(format!("{}: got {other:?}, expected {expect}", name(c))),
            }
        })
        .collect();
    conclude("require-leader", failures);
}

#[test]
fn fence() {
    let v = load("fence.json");
    let mut failures = Vec::new();
    for c in cases(&v) {
        let (tokens, revisions) = (Fence::new(), RevisionFence::new());
        for (i, step) in c["steps"].as_array().expect("steps").iter().enumerate() {
            let (admitted, highest) = if c["kind"] == "token" {
                let token =
                    i32::try_from(step["admit"].as_i64().expect("a token")).expect("an int32");
                let admitted = tokens.admit(token);
                let highest = tokens.highest().map(Value::from);
                (
                    admitted.map_err(|e| matches!(e, Error::StaleToken { .. })),
                    highest,
                )
            } else {
                let revision: u128 = step["admit"]
                    .as_str()
                    .expect("a revision")
                    .parse()
                    .expect("a u128");
                let admitted = revisions.admit(revision);
                let highest = revisions.highest().map(|h| Value::from(h.to_string()));
                (
                    admitted.map_err(|e| matches!(e, Error::StaleRevision { .. })),
                    highest,
                )
            };
            // Ok, or the fence's own stale error; never another one.
            let ok = match admitted {
                Ok(()) => Some(true),
                Err(true) => Some(false),
                Err(false) => None,
            };
            if ok.map(Value::from) != Some(step["ok"].clone())
                || highest.as_ref() != Some(&step["highest"])
            {
                failures.push(format!(
                    "{} step {i}: admitted {ok:?}, highest {highest:?}; expected {step}",
                    name(c)
                ));
            }
        }
    }
    conclude("fence", failures);
}

#[test]
fn fence_headers() {
    let v = load("fence_headers.json");
    assert_eq!(v["tokenHeader"], baton_client::TOKEN_HEADER);
    assert_eq!(v["revisionHeader"], baton_client::REVISION_HEADER);
    let failures = cases(&v)
        .iter()
        .filter_map(|c| {
            let token = c["kind"] == "token";
            let expect = &c["expect"];
            let got = if let Some(value) = c.get("format") {
                // What the client puts in the header, through the http crate
                // as an application would.
                let mut headers = http::HeaderMap::new();
                let name = if token {
                    baton_client::set_token(&mut headers, value.as_i64().expect("a token") as i32);
                    baton_client::TOKEN_HEADER
                } else {
                    baton_client::set_revision(
                        &mut headers,
                        value.as_str().expect("a revision").parse().expect("a u128"),
                    );
                    baton_client::REVISION_HEADER
                };
                Value::from(headers[name].to_str().expect("ASCII"))
            } else {
                let header = c["header"].as_str();
                let parsed = if token {
                    baton_client::parse_token(header).map(Value::from)
                } else {
                    baton_client::parse_revision(header).map(|r| Value::from(r.to_string()))
                };
                match parsed {
                    Ok(v) => v,
                    Err(Error::InvalidHeader { .. }) => Value::from("error"),
                    Err(e) => Value::from(format!("unexpected error {e}")),
                }
            };
            (got != *expect).then(|| format!("{}: got {got}, expected {expect}", name(c)))
        })
        .collect();
    conclude("fence-headers", failures);
}

/// The gRPC status of a code's name in errors.json.
fn code(name: &str) -> tonic::Code {
    use tonic::Code::*;
    let all = [
        Ok,
        Cancelled,
        Unknown,
        InvalidArgument,
        DeadlineExceeded,
        NotFound,
        AlreadyExists,
        PermissionDenied,
        ResourceExhausted,
        FailedPrecondition,
        Aborted,
        OutOfRange,
        Unimplemented,
        Internal,
        Unavailable,
        DataLoss,
        Unauthenticated,
    ];
    let spelled = |c: &tonic::Code| {
        format!("{c:?}").chars().fold(String::new(), |mut s, ch| {
            if ch.is_uppercase() && !s.is_empty() {
                s.push('_');
            }
            s.push(ch.to_ascii_uppercase());
            s
        })
    };
    all.into_iter()
        .find(|c| spelled(c) == name)
        .unwrap_or_else(|| panic!("unknown gRPC code {name}"))
}

fn kind(e: &Error) -> &'static str {
    match e {
        Error::Unavailable { .. } => "unavailable",
        Error::Status { .. } => "other",
        _ => "neither",
    }
}

/// The errors scenario: every gRPC row through the client's mapping of a
/// status, and the transport outcomes of the HTTP rows ("refused",
/// "timeout") through real calls to loopback sockets. This client speaks
/// gRPC only, so the rows of HTTP status codes have no call to map.
#[tokio::test]
async fn errors() {
    let v = load("errors.json");
    let mut failures = Vec::new();
    for row in v["grpc"].as_array().expect("grpc rows") {
        let name = row["code"].as_str().expect("code");
        let status = tonic::Status::new(code(name), "from the vector");
        let got = kind(&Error::from_status("127.0.0.1:1", status));
        if got != row["error"] {
            failures.push(format!("grpc {name}: {got}, expected {}", row["error"]));
        }
    }
    for row in v["http"].as_array().expect("http rows") {
        let got = match row["outcome"].as_str() {
            Some("refused") => kind(&refused_call().await),
            Some("timeout") => kind(&timed_out_call().await),
            Some(other) => panic!("unknown outcome {other}"),
            None => continue, // an HTTP status: no such call over gRPC
        };
        if got != row["error"] {
            failures.push(format!("{}: {got}, expected {}", name(row), row["error"]));
        }
    }
    conclude("errors", failures);
}

/// A call to a loopback port nobody listens on.
async fn refused_call() -> Error {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = baton_client::Client::builder()
        .addr(format!("127.0.0.1:{port}"))
        .build()
        .unwrap();
    client.leadership().await.expect_err("nobody listens")
}

/// A call to a server that accepts the connection and never answers.
async fn timed_out_call() -> Error {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    let client = baton_client::Client::builder()
        .addr(addr.to_string())
        .call_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let e = client.leadership().await.expect_err("nobody answers");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the call timeout bounds the call"
    );
    silent.abort();
    e
}
