//! Fenced writes end to end: a toy key-value store that refuses stale
//! fencing tokens, and a writer that writes only while its baton sidecar
//! says this pod leads, tagging every write with the token.
//!
//! ```text
//! fenced_writes store  [--listen 127.0.0.1:7070]
//! fenced_writes writer [--store 127.0.0.1:7070] [--key counter] [--every-ms 1000] [--min-validity-ms 500]
//! ```
//!
//! Run one store and one writer beside each sidecar (`BATON_GRPC_ADDR`
//! selects the sidecar). Only the leader's writer writes: it writes inside
//! `run_while_leader`, which stops the writes when the term ends and then
//! acknowledges the step-down, so a graceful handover takes milliseconds.
//! After a handover the new leader's writes carry a higher token, and a late
//! write from the old leader is answered 409 Conflict.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_client::{CancellationToken, Client, Fence, Leadership};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

type Failure = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    match args.first().map(String::as_str) {
        Some("store") => store(flag(&args, "--listen", "127.0.0.1:7070"), shutdown).await,
        Some("writer") => writer(&args, shutdown).await,
        _ => Err("usage: fenced_writes store|writer [flags]".into()),
    }
}

/// The value of `--name VALUE` in `args`, or `default`.
fn flag(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or_else(|| default.to_owned(), String::clone)
}

fn millis_flag(args: &[String], name: &str, default: u64) -> Result<Duration, Failure> {
    Ok(Duration::from_millis(
        flag(args, name, &default.to_string()).parse()?,
    ))
}

/// Cancels `shutdown` on SIGINT or SIGTERM.
async fn cancel_on_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    shutdown.cancel();
}

/// The toy store. Its lock covers the fence check and the write together,
/// so no stale write can slip in between.
#[derive(Default)]
struct Store {
    data: Mutex<HashMap<String, String>>,
    fence: Fence,
}

async fn store(listen: String, shutdown: CancellationToken) -> Result<(), Failure> {
    let listener = TcpListener::bind(&listen).await?;
    eprintln!("toy store on {listen}");
    let store = Arc::new(Store::default());
    loop {
        let (conn, _) = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            accepted = listener.accept() => accepted?,
        };
        let store = store.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let store = store.clone();
                async move { Ok::<_, Infallible>(store.serve(req).await) }
            });
            // A client that hangs up early is none of the store's business.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(conn), service)
                .await;
        });
    }
}

impl Store {
    async fn serve(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let Some(key) = req
            .uri()
            .path()
            .strip_prefix("/kv/")
            .filter(|k| !k.is_empty())
        else {
            return answer(StatusCode::NOT_FOUND, "use /kv/KEY".into());
        };
        let key = key.to_owned();
        match *req.method() {
            Method::GET => match self.data.lock().unwrap().get(&key) {
                Some(v) => answer(StatusCode::OK, format!("{v}\n")),
                None => answer(StatusCode::NOT_FOUND, "no such key".into()),
            },
            Method::PUT => {
                let token = match baton_client::token_from_headers(req.headers()) {
                    Ok(token) => token,
                    Err(e) => return answer(StatusCode::BAD_REQUEST, e.to_string()),
                };
                let body = match Limited::new(req.into_body(), 1 << 16).collect().await {
                    Ok(body) => String::from_utf8_lossy(&body.to_bytes()).into_owned(),
                    Err(e) => return answer(StatusCode::BAD_REQUEST, e.to_string()),
                };
                let mut data = self.data.lock().unwrap();
                if let Err(e) = self.fence.admit(token) {
                    eprintln!("refused {key}={body:?}: {e}");
                    return answer(StatusCode::CONFLICT, e.to_string());
                }
                eprintln!("wrote {key}={body:?} with token {token}");
                data.insert(key, body);
                answer(StatusCode::OK, String::new())
            }
            _ => answer(StatusCode::METHOD_NOT_ALLOWED, "GET or PUT".into()),
        }
    }
}

fn answer(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
}

async fn writer(args: &[String], shutdown: CancellationToken) -> Result<(), Failure> {
    let store = flag(args, "--store", "127.0.0.1:7070");
    let key = flag(args, "--key", "counter");
    let every = millis_flag(args, "--every-ms", 1000)?;
    let min_validity = millis_flag(args, "--min-validity-ms", 500)?;
    let client = Client::new()?; // $BATON_GRPC_ADDR or 127.0.0.1:4041
    let me = client.client_id().to_owned();
    let writes = std::cell::Cell::new(0u64);
    eprintln!("writer {me}: waiting for leadership");
    // Returns on SIGTERM once the writes have stopped and the step-down is
    // acknowledged.
    let work = |l: Leadership, term: CancellationToken| {
        let (client, store, key, me, writes) = (&client, &store, &key, &me, &writes);
        async move {
            eprintln!(
                "leading with token {} (revision {})",
                l.fencing_token, l.fencing_revision
            );
            while !term.is_cancelled() {
                match client.require_leader(min_validity).await {
                    Ok(fencing) => {
                        let n = writes.get() + 1;
                        writes.set(n);
                        let value = format!("{me} #{n}");
                        // Bounded by the guarantee: a write that cannot
                        // finish within it is abandoned (the store's fence
                        // still protects the data if it lands late).
                        match tokio::time::timeout(
                            fencing.remaining(),
                            put(store, key, &value, fencing.token),
                        )
                        .await
                        {
                            Ok(Ok(())) => eprintln!("write {n} done with token {}", fencing.token),
                            Ok(Err(e)) => eprintln!("write {n} failed: {e}"),
                            Err(_) => eprintln!("write {n} abandoned: the guarantee ran out"),
                        }
                    }
                    Err(e) => eprintln!("not writing: {e}"),
                }
                tokio::select! {
                    () = term.cancelled() => {}
                    () = tokio::time::sleep(every) => {}
                }
            }
            eprintln!("term with token {} ended: stopped writing", l.fencing_token);
            Ok::<(), Failure>(())
        }
    };
    client.run_while_leader(shutdown, work).await?;
    Ok(())
}

/// One fenced write: the token travels in the Baton-Fencing-Token header.
async fn put(store: &str, key: &str, value: &str, token: i32) -> Result<(), Failure> {
    let conn = TcpStream::connect(store).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(conn)).await?;
    tokio::spawn(connection);
    let mut req = Request::put(format!("/kv/{key}"))
        .header(http::header::HOST, store)
        .body(Full::new(Bytes::from(value.to_owned())))?;
    baton_client::set_token(req.headers_mut(), token);
    let response = sender.send_request(req).await?;
    let status = response.status();
    if status != StatusCode::OK {
        let body = response.into_body().collect().await?.to_bytes();
        return Err(format!("store: {status}: {}", String::from_utf8_lossy(&body).trim()).into());
    }
    Ok(())
}
