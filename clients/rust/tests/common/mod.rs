//! What the integration tests share: the conformance report and the
//! sidecars of `clients/testing/sidecars` (`$BATON_SIDECARS`).

#![allow(dead_code)] // each test crate uses its own part of this module

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// Appends scenario `id` to `$BATON_CONFORMANCE_REPORT`, if set. Call it
/// after the scenario's last assertion.
pub fn report_conformance(id: &str) {
    let Some(path) = std::env::var_os("BATON_CONFORMANCE_REPORT") else {
        return;
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", PathBuf::from(&path).display()));
    writeln!(f, "{id}").expect("append to the conformance report");
}

/// The suite's directory, `clients/conformance`.
pub fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance")
}

/// One sidecar of the fixture, as `sidecars.json` describes it now.
#[derive(Clone, Debug)]
pub struct Sidecar {
    pub index: u64,
    pub identity: String,
    pub grpc: String,
    pub pid: Option<i32>,
}

/// The fixture: `$BATON_SIDECARS`, re-read on every question because the
/// supervisor rewrites it whenever a sidecar restarts.
#[derive(Clone, Debug)]
pub struct Fixture {
    path: PathBuf,
}

impl Fixture {
    /// The fixture, or `None` (the test is skipped) without
    /// `$BATON_SIDECARS`.
    pub fn from_env() -> Option<Fixture> {
        let path = std::env::var_os("BATON_SIDECARS")?;
        Some(Fixture { path: path.into() })
    }

    fn read(&self) -> Value {
        let text = std::fs::read_to_string(&self.path).expect("read $BATON_SIDECARS");
        serde_json::from_str(&text).expect("parse $BATON_SIDECARS")
    }

    pub fn namespace(&self) -> String {
        self.read()["namespace"]
            .as_str()
            .expect("namespace")
            .to_owned()
    }

    pub fn lease_name(&self) -> String {
        self.read()["leaseName"]
            .as_str()
            .expect("leaseName")
            .to_owned()
    }

    pub fn sidecars(&self) -> Vec<Sidecar> {
        self.read()["sidecars"]
            .as_array()
            .expect("sidecars")
            .iter()
            .map(|s| Sidecar {
                index: s["index"].as_u64().expect("index"),
                identity: s["identity"].as_str().unwrap_or_default().to_owned(),
                grpc: s["grpc"].as_str().expect("grpc").to_owned(),
                pid: s["pid"].as_i64().map(|p| p as i32),
            })
            .collect()
    }

    pub fn sidecar(&self, index: u64) -> Sidecar {
        self.sidecars()
            .into_iter()
            .find(|s| s.index == index)
            .expect("a sidecar of that index")
    }

    /// Sends `signal` to the sidecar of `index`.
    pub fn signal(&self, index: u64, signal: i32) {
        let pid = self.sidecar(index).pid.expect("a running sidecar");
        // SAFETY: kill(2) has no memory-safety preconditions.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill {pid}: {}", std::io::Error::last_os_error());
    }

    /// Waits until every sidecar runs again and exactly one leads
    /// (`clients/testing/sidecars wait`), so each test starts from a
    /// settled election.
    pub fn wait_settled(&self) {
        let dir = self.path.parent().expect("the fixture directory");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testing/sidecars");
        let status = std::process::Command::new(script)
            .arg("wait")
            .arg(dir)
            .status()
            .expect("run the fixture");
        assert!(status.success(), "the fixture did not settle");
    }
}

/// Polls `f` every 50 ms until it returns `Some`, for at most `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, mut f: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
