//! Entry points of the fuzz targets (`fuzz/`), here so that the stable
//! test `tests/fuzz_corpus.rs` replays the committed corpus through the
//! same code.
//!
//! - [`request`] (`s3_request`): one HTTP request, written as text, through
//!   the gateway's whole request path ([`Handler`]: prechecks, s3s's
//!   parsing of headers, query and XML bodies — CompleteMultipartUpload,
//!   DeleteObjects —, key validation, the store) on a store in `/dev/shm`.
//!   Input: `METHOD TARGET\n`, `Name: value` lines, an empty line, the
//!   body. `@UPLOAD@` in the target becomes the id of an upload in
//!   progress (key `big`, parts 1 and 2), so completes, part uploads and
//!   aborts reach the store. Access is anonymous: signatures are checked
//!   by the prechecks and s3s, tested elsewhere. Checked after every
//!   request: no panic, and nothing written beside the store's directory.
//! - [`names`] (`s3_names`): an accepted key is a relative path of plain
//!   components (it becomes `DIR/<bucket>/<key>`); an accepted bucket
//!   follows the S3 rules.
//! - [`chunked`] (`s3_chunked`): an aws-chunked body through the framing
//!   watch ([`crate::chunked::Watch`]), whole and cut into frames at
//!   places the input chooses: the verdict does not depend on the cuts,
//!   and the watch never holds more than one header's worth of bytes.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};

use crate::config::Config;
use crate::handler::Handler;

struct Rig {
    rt: tokio::runtime::Runtime,
    base: PathBuf,
    root: PathBuf,
    handler: Handler,
    upload: String,
    runs: u32,
}

const PEER: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 1);

fn simple(method: &str, target: &str, body: &[u8]) -> s3s::HttpRequest {
    http::Request::builder()
        .method(method)
        .uri(target)
        .header("host", "localhost")
        .body(s3s::Body::from(body.to_vec()))
        .unwrap()
}

/// Send `req`; the answer's status and (up to 16 MiB of) its body.
async fn send(h: &Handler, req: s3s::HttpRequest) -> Option<(u16, Vec<u8>)> {
    let res = h.handle(req, PEER).await.ok()?;
    let status = res.status().as_u16();
    let mut body = res.into_body();
    let mut out = Vec::new();
    while let Some(chunk) = futures_util::StreamExt::next(&mut body).await {
        let Ok(chunk) = chunk else { break };
        if out.len() + chunk.len() > 16 << 20 {
            break;
        }
        out.extend_from_slice(&chunk);
    }
    Some((status, out))
}

impl Rig {
    fn new() -> Rig {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = PathBuf::from(format!(
            "/dev/shm/cowkit-fuzz-s3-{}.{n}",
            std::process::id()
        ));
        let root = base.join("root");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (handler, upload) = Rig::fresh(&rt, &base, &root);
        Rig {
            rt,
            base,
            root,
            handler,
            upload,
            runs: 0,
        }
    }

    /// An empty store with a bucket, two objects and an upload of two parts.
    fn fresh(rt: &tokio::runtime::Runtime, base: &PathBuf, root: &PathBuf) -> (Handler, String) {
        let _ = std::fs::remove_dir_all(base);
        std::fs::create_dir_all(root).unwrap();
        let cfg = Config {
            root: root.clone(),
            listen: PEER,
            credentials: None,
            anonymous: true,
            accounts_dir: None,
            region: "us-east-1".into(),
            sendfile: false,
            limits: Default::default(),
            store: crate::store::Options {
                min_part_size: 1,
                ..Default::default()
            },
        };
        let h = Handler::new(&cfg).unwrap();
        let upload = rt.block_on(async {
            for (m, t, b) in [
                ("PUT", "/fuzz", &b""[..]),
                ("PUT", "/fuzz/obj", b"hello, world\n"),
                ("PUT", "/fuzz/dir/", b""),
            ] {
                let (s, _) = send(&h, simple(m, t, b)).await.unwrap();
                assert!(s < 300, "setup {m} {t}: {s}");
            }
            Rig::new_upload(&h).await
        });
        (h, upload)
    }

    async fn new_upload(h: &Handler) -> String {
        let (s, body) = send(h, simple("POST", "/fuzz/big?uploads", b""))
            .await
            .unwrap();
        assert_eq!(s, 200);
        let text = String::from_utf8(body).unwrap();
        let id = text
            .split("<UploadId>")
            .nth(1)
            .unwrap()
            .split('<')
            .next()
            .unwrap()
            .to_string();
        for n in 1..=2 {
            let t = format!("/fuzz/big?partNumber={n}&uploadId={id}");
            let (s, _) = send(h, simple("PUT", &t, b"part bytes")).await.unwrap();
            assert_eq!(s, 200);
        }
        id
    }

    fn run(&mut self, data: &[u8]) -> Option<u16> {
        self.runs += 1;
        if self.runs.is_multiple_of(2048) {
            (self.handler, self.upload) = Rig::fresh(&self.rt, &self.base, &self.root);
        } else if !self
            .root
            .join(format!(".cowkit-s3/uploads/{}/upload.json", self.upload))
            .exists()
        {
            self.upload = self.rt.block_on(Rig::new_upload(&self.handler));
        }
        let status = parse(data, &self.upload).and_then(|req| {
            let h = self.handler.clone();
            self.rt.block_on(send(&h, req)).map(|(s, _)| s)
        });
        let beside: Vec<_> = std::fs::read_dir(&self.base)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, ["root"], "something was written beside the store");
        status
    }
}

/// The request `data` describes, if it is one `http` accepts.
fn parse(data: &[u8], upload: &str) -> Option<s3s::HttpRequest> {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&data[..i], &data[i + 2..]),
        None => (data, &[][..]),
    };
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.lines();
    let (method, target) = lines.next()?.split_once(' ')?;
    let target = target.replace("@UPLOAD@", upload);
    let mut b = http::Request::builder().method(method).uri(target.as_str());
    let mut host = false;
    for l in lines {
        let (n, v) = l.split_once(':')?;
        host |= n.eq_ignore_ascii_case("host");
        b = b.header(n.trim(), v.trim());
    }
    if !host {
        b = b.header("host", "localhost");
    }
    b.body(s3s::Body::from(body.to_vec())).ok()
}

thread_local! {
    static RIG: RefCell<Option<Rig>> = const { RefCell::new(None) };
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Remove this thread's store (the fuzzers never do: a process ends).
pub fn finish() {
    RIG.with(|r| r.borrow_mut().take());
}

/// The `s3_request` target: `data` as one request (see the module
/// documentation), on this thread's store; the answer's status, if the
/// request was one.
pub fn request(data: &[u8]) -> Option<u16> {
    RIG.with(|r| r.borrow_mut().get_or_insert_with(Rig::new).run(data))
}

/// The `s3_names` target: bucket, key and upload id checks of `data`.
pub fn names(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if crate::names::check_key(s).is_ok() {
        assert!(!s.is_empty() && s.len() <= crate::names::MAX_KEY_LEN);
        assert!(!s.contains('\0'));
        let p = s.strip_suffix('/').unwrap_or(s);
        assert!(!p.is_empty());
        assert!(!p.ends_with('/') && !p.contains("//"), "{s:?}");
        for c in Path::new(p).components() {
            match c {
                Component::Normal(n) => assert!(n.len() <= 255),
                other => panic!("key {s:?} has the component {other:?}"),
            }
        }
        assert_eq!(crate::names::is_dir_key(s), s.ends_with('/'));
    }
    if crate::names::check_bucket(s).is_ok() {
        assert!((3..=63).contains(&s.len()));
        assert!(s
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-'));
        assert!(!s.contains("..") && !s.starts_with('.') && !s.starts_with('-'));
    }
    if crate::names::is_upload_id(s) {
        assert!(!s.contains('/') && !s.contains('.'));
    }
}

/// The `s3_chunked` target. `data`: a flags byte (bit 0: the request
/// declared a trailer), a byte `k`, `k % 8` bytes of frame lengths (each
/// plus one), then the body. The body is fed whole, in frames whose
/// lengths cycle through those, and a byte at a time.
pub fn chunked(data: &[u8]) {
    use crate::chunked::{ChunkError, Watch};
    let [flags, k, rest @ ..] = data else { return };
    let declared = flags & 1 == 1;
    let (cuts, body) = rest.split_at(usize::from(*k % 8).min(rest.len()));
    let cuts: Vec<usize> = cuts.iter().map(|&c| usize::from(c) + 1).collect();
    let run = |cuts: &[usize]| -> Result<(), ChunkError> {
        let mut w = Watch::new(declared);
        let mut at = 0;
        let mut i = 0;
        while at < body.len() {
            let n = if cuts.is_empty() {
                body.len()
            } else {
                cuts[i % cuts.len()]
            };
            let end = (at + n).min(body.len());
            let r = w.feed(&body[at..end]);
            assert!(w.held() <= 4096, "the watch holds {} bytes", w.held());
            r?;
            at = end;
            i += 1;
        }
        w.end()
    };
    let whole = run(&[]);
    assert_eq!(run(&cuts), whole, "the verdict depends on the frames");
    assert_eq!(run(&[1]), whole, "the verdict depends on the frames");
}
