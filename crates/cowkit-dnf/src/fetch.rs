//! Fetching a package's bytes for `cowkit dnf`: over HTTP(S) with the
//! timeouts dnf has (`timeout` to connect and for any read, `minrate`
//! over `timeout` seconds), or from a local file (`file://`
//! repositories, packages named on the command line). The caller reads
//! the body as a stream; nothing here trusts it.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ureq::tls::{RootCerts, TlsConfig};

use crate::plan::Repo;

/// Where one attempt reads the package from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A URL (`http://`, `https://`, `file://`).
    Url(String),
    /// A local file.
    Local(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Url(u) => write!(f, "{u}"),
            Source::Local(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Why an attempt failed: the mirror's fault (another may do), said in
/// one sentence.
#[derive(Debug)]
pub struct MirrorError(pub String);

/// One HTTP agent for every download of a run (connections are reused).
pub struct Fetcher {
    agent: ureq::Agent,
}

impl Default for Fetcher {
    fn default() -> Self {
        Fetcher::new()
    }
}

impl Fetcher {
    /// An agent that verifies TLS against the system's certificates,
    /// follows redirects, and takes a status other than 2xx as an error.
    pub fn new() -> Fetcher {
        let tls = TlsConfig::builder()
            .root_certs(RootCerts::PlatformVerifier)
            .build();
        let agent = ureq::Agent::config_builder()
            .tls_config(tls)
            .http_status_as_error(true)
            .user_agent(format!("cowkit/{}", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Fetcher { agent }
    }

    /// The body of `source`, its length as the server announced it (if
    /// it did), read through dnf's `timeout` and `minrate` of `repo`.
    pub fn open(
        &self,
        source: &Source,
        repo: &Repo,
    ) -> Result<(Box<dyn Read + Send>, Option<u64>), MirrorError> {
        let path = match source {
            Source::Local(p) => Some(p.clone()),
            Source::Url(u) => u.strip_prefix("file://").map(PathBuf::from),
        };
        if let Some(path) = path {
            return open_local(&path);
        }
        let Source::Url(url) = source else {
            unreachable!("local sources returned above")
        };
        let timeout = Duration::from_secs(repo.timeout.max(1));
        let response = self
            .agent
            .get(url)
            .config()
            .timeout_connect(Some(timeout))
            .timeout_recv_response(Some(timeout))
            .timeout_per_read(Some(timeout))
            .build()
            .call()
            .map_err(|e| MirrorError(format!("cannot get `{url}`: {e}")))?;
        let announced = response.body().content_length();
        let body = response.into_body().into_reader();
        Ok((Box::new(Paced::new(body, timeout, repo.minrate)), announced))
    }
}

/// A local file, and its size.
fn open_local(path: &Path) -> Result<(Box<dyn Read + Send>, Option<u64>), MirrorError> {
    let f = File::open(path)
        .map_err(|e| MirrorError(format!("cannot open `{}`: {e}", path.display())))?;
    let len = f.metadata().ok().map(|m| m.len());
    Ok((Box::new(f), len))
}

/// A body read under dnf's `minrate`: a transfer that stays below
/// `minrate` bytes a second for `timeout` is aborted (a read that gets
/// nothing at all for `timeout` is ended by the agent's read timeout).
struct Paced<R> {
    inner: R,
    timeout: Duration,
    minrate: u64,
    since: Instant,
    bytes: u64,
}

impl<R> Paced<R> {
    fn new(inner: R, timeout: Duration, minrate: u64) -> Self {
        Paced {
            inner,
            timeout,
            minrate,
            since: Instant::now(),
            bytes: 0,
        }
    }
}

impl<R: Read> Read for Paced<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        let spent = self.since.elapsed();
        if spent >= self.timeout {
            let rate = self.bytes as f64 / spent.as_secs_f64();
            if self.minrate > 0 && rate < self.minrate as f64 {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the transfer stayed below minrate ({} bytes/s) for {} s: {rate:.0} bytes/s",
                        self.minrate,
                        spent.as_secs()
                    ),
                ));
            }
            self.since = Instant::now();
            self.bytes = 0;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that yields one byte per call after sleeping `gap`.
    struct Slow(Duration);

    impl Read for Slow {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            std::thread::sleep(self.0);
            buf[0] = 0;
            Ok(1)
        }
    }

    #[test]
    fn a_trickle_below_minrate_is_aborted() {
        let mut r = Paced::new(
            Slow(Duration::from_millis(20)),
            Duration::from_millis(100),
            1000,
        );
        let mut buf = [0u8; 16];
        let e = (0..1000)
            .find_map(|_| r.read(&mut buf).err())
            .expect("aborted");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("minrate"), "{e}");
    }
}
