//! `cowkit s3 serve` processes on one root, on the rig's loop-mounted XFS
//! and ext4:
//!
//! - crash safety: a gateway killed with `SIGKILL` (the
//!   `COWKIT_S3_CRASH_AT` hook) at every step of an abort and of a complete,
//!   then restarted: nothing left that the gateway cannot see, the object
//!   either the old one or the new one (bytes and ETag), and the client's
//!   retries succeed;
//! - a fleet: three gateways, clients racing completes of one upload
//!   through all three (and aborts against completes), while other clients
//!   put, read, delete and list through all three: no spurious error, every
//!   object byte-correct, nothing left in `uploads/` or `tmp/`.
//!
//! Plain HTTP/1.1 over `TcpStream` (unsigned requests to `--anonymous`
//! servers), one connection per request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use cowkit_testutil::{pattern, scratch, Fs};
use md5::Digest;

// ---- a gateway process ------------------------------------------------------

struct Gw {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Gw {
    fn start(root: &Path, crash_at: Option<&str>) -> Gw {
        Gw::start_with(root, crash_at, &[])
    }

    fn start_with(root: &Path, crash_at: Option<&str>, extra: &[&str]) -> Gw {
        Gw::start_env(root, crash_at, extra, None)
    }

    /// A gateway; `stale_at` is its `COWKIT_S3_STALE_AT`.
    fn start_env(
        root: &Path,
        crash_at: Option<&str>,
        extra: &[&str],
        stale_at: Option<&str>,
    ) -> Gw {
        static N: AtomicUsize = AtomicUsize::new(0);
        let log = std::env::temp_dir().join(format!(
            "cowkit-s3-fleet-{}-{}.log",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cowkit"));
        cmd.args([
            "s3",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--json",
            "--anonymous",
        ])
        .args(["--min-part-size", "1", "--keepalive-after-ms", "600000"])
        .args(extra)
        .arg("--root")
        .arg(root)
        .env_remove(cowkit_s3::fault::CRASH_ENV)
        .env_remove(cowkit_s3::fault::STALE_ENV)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
        if let Some(s) = crash_at {
            cmd.env(cowkit_s3::fault::CRASH_ENV, s);
        }
        if let Some(s) = stale_at {
            cmd.env(cowkit_s3::fault::STALE_ENV, s);
        }
        let mut child = cmd.spawn().expect("start cowkit s3 serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "no listening line ({e}): {line:?}; log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        });
        let addr = v["listen"].as_str().unwrap().to_string();
        Gw { child, addr, log }
    }

    /// SIGTERM, and the exit status must be 0.
    fn stop(mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let st = self.child.wait().unwrap();
        assert!(
            st.success(),
            "gateway exit: {st}; log:\n{}",
            self.log_text()
        );
        let _ = std::fs::remove_file(&self.log);
    }

    /// Wait for the process to end; it must have been killed by SIGKILL.
    fn wait_killed(mut self, step: &str) {
        use std::os::unix::process::ExitStatusExt;
        let st = self.child.wait().unwrap();
        assert_eq!(
            st.signal(),
            Some(9),
            "step {step}: the gateway was to kill itself ({st}); log:\n{}",
            self.log_text()
        );
        let _ = std::fs::remove_file(&self.log);
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Gw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- HTTP -------------------------------------------------------------------

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The text of the first `<tag>` element.
    fn xml(&self, tag: &str) -> Option<String> {
        let t = self.text();
        let open = format!("<{tag}>");
        let s = t.find(&open)? + open.len();
        let e = s + t[s..].find(&format!("</{tag}>"))?;
        Some(t[s..e].to_string())
    }

    fn code(&self) -> String {
        self.xml("Code").unwrap_or_default()
    }

    fn show(&self) -> String {
        format!("{} {}", self.status, self.text())
    }
}

fn unquote(s: &str) -> String {
    s.replace("&quot;", "")
        .replace("&#34;", "")
        .replace('"', "")
}

/// One request on its own connection; `Err` when the connection fails
/// (the server died).
fn http(addr: &str, method: &str, target: &str, body: &[u8]) -> std::io::Result<Resp> {
    let mut s = TcpStream::connect(addr)?;
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no complete response head"))?;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("bad status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let nl = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or_else(|| std::io::Error::other("truncated chunked body"))?;
            let n = usize::from_str_radix(String::from_utf8_lossy(&rest[..nl]).trim(), 16)
                .map_err(std::io::Error::other)?;
            rest = &rest[nl + 2..];
            if n == 0 {
                break;
            }
            if rest.len() < n + 2 {
                return Err(std::io::Error::other("truncated chunk"));
            }
            out.extend_from_slice(&rest[..n]);
            rest = &rest[n + 2..];
        }
        body = out;
    } else if let Some(len) = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
    {
        if body.len() < len && method != "HEAD" {
            return Err(std::io::Error::other("truncated body"));
        }
    }
    Ok(Resp {
        status,
        headers,
        body,
    })
}

fn md5_hex(b: &[u8]) -> String {
    cowkit_testutil::hex(&md5::Md5::digest(b))
}

fn multipart_etag(parts: &[Vec<u8>]) -> String {
    let mut h = md5::Md5::new();
    for p in parts {
        h.update(md5::Md5::digest(p));
    }
    format!("{}-{}", cowkit_testutil::hex(&h.finalize()), parts.len())
}

fn complete_body(etags: &[String]) -> Vec<u8> {
    let mut x = String::from("<CompleteMultipartUpload>");
    for (i, e) in etags.iter().enumerate() {
        x.push_str(&format!(
            "<Part><PartNumber>{}</PartNumber><ETag>\"{e}\"</ETag></Part>",
            i + 1
        ));
    }
    x.push_str("</CompleteMultipartUpload>");
    x.into_bytes()
}

fn create_upload(addr: &str, key: &str) -> std::io::Result<Resp> {
    http(addr, "POST", &format!("/bkt/{key}?uploads"), b"")
}

fn upload_part(addr: &str, key: &str, id: &str, n: usize, data: &[u8]) -> std::io::Result<Resp> {
    http(
        addr,
        "PUT",
        &format!("/bkt/{key}?partNumber={n}&uploadId={id}"),
        data,
    )
}

fn complete(addr: &str, key: &str, id: &str, etags: &[String]) -> std::io::Result<Resp> {
    http(
        addr,
        "POST",
        &format!("/bkt/{key}?uploadId={id}"),
        &complete_body(etags),
    )
}

fn abort(addr: &str, key: &str, id: &str) -> std::io::Result<Resp> {
    http(addr, "DELETE", &format!("/bkt/{key}?uploadId={id}"), b"")
}

fn ok(r: std::io::Result<Resp>, what: &str, want: u16) -> Resp {
    let r = r.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(r.status, want, "{what}: {}", r.show());
    r
}

// ---- what is on disk ----------------------------------------------------------

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    v.sort();
    v
}

/// Every file (not directory) under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for n in names(&d) {
            let p = d.join(n);
            if p.symlink_metadata().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The upload directories: each has its upload.json; a completed one
/// holds only upload.json and completed.json, one in progress only parts
/// and their records. No temporary names anywhere in the gateway's
/// records. Returns (in progress, completed) ids.
fn check_uploads(root: &Path, what: &str) -> (Vec<String>, Vec<String>) {
    let sys = root.join(".cowkit-s3");
    let (mut open, mut done) = (Vec::new(), Vec::new());
    for id in names(&sys.join("uploads")) {
        let n = names(&sys.join("uploads").join(&id));
        assert!(
            n.contains(&"upload.json".to_string()),
            "{what}: upload {id} without upload.json: {n:?}"
        );
        if n.contains(&"completed.json".to_string()) {
            assert_eq!(
                n,
                ["completed.json", "upload.json"],
                "{what}: completed upload {id} keeps more than its records"
            );
            done.push(id);
        } else {
            for f in &n {
                let part = f.len() == 6 || (f.len() == 11 && f.ends_with(".json"));
                assert!(
                    f == "upload.json" || (f.starts_with('p') && part),
                    "{what}: upload {id} holds {f}: {n:?}"
                );
            }
            open.push(id);
        }
    }
    let temps: Vec<PathBuf> = files_under(&sys.join("meta"))
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".ck"))
        .collect();
    assert!(
        temps.is_empty(),
        "{what}: temporary records left: {temps:?}"
    );
    (open, done)
}

/// `tmp/` holds no file at all, and at most `live` (empty) directories.
fn check_tmp(root: &Path, live: usize, what: &str) {
    let tmp = root.join(".cowkit-s3/tmp");
    let files = files_under(&tmp);
    assert!(files.is_empty(), "{what}: files left in tmp/: {files:?}");
    let dirs = names(&tmp);
    assert!(
        dirs.len() <= live,
        "{what}: {} directories in tmp/ for {live} live gateways: {dirs:?}",
        dirs.len()
    );
}

// ---- crash safety -----------------------------------------------------------

/// What the client got through before the gateway died.
#[derive(Default, Debug)]
struct Progress {
    aborted_id: Option<String>,
    abort_answered: bool,
    id: Option<String>,
    parts_done: Vec<bool>,
    etags: Vec<String>,
}

fn crash_at_every_step(fs: Fs) {
    let Some(scratch) = scratch(fs) else { return };
    let old = pattern(70_000, 1);
    // 64 KiB (block-aligned: cloned on XFS) and a tail.
    let parts = vec![pattern(65_536, 2), pattern(10_000, 3)];
    let new: Vec<u8> = parts.concat();
    let new_etag = multipart_etag(&parts);
    let t0 = Instant::now();
    for step in cowkit_s3::fault::STEPS {
        let root = scratch.path().join(step);
        std::fs::create_dir(&root).unwrap();
        // The old object, written by a gateway without the hook.
        let gw = Gw::start(&root, None);
        ok(http(&gw.addr, "PUT", "/bkt", b""), "create bucket", 200);
        ok(http(&gw.addr, "PUT", "/bkt/obj", &old), "put old", 200);
        gw.stop();

        let gw = Gw::start(&root, Some(step));
        let mut p = Progress {
            parts_done: vec![false; parts.len()],
            etags: parts.iter().map(|d| md5_hex(d)).collect(),
            ..Progress::default()
        };
        let run = |p: &mut Progress| -> std::io::Result<()> {
            // An upload that is aborted, then the one that is completed.
            let r = create_upload(&gw.addr, "gone")?;
            let id2 = r.xml("UploadId").expect("an upload id");
            p.aborted_id = Some(id2.clone());
            upload_part(&gw.addr, "gone", &id2, 1, b"bytes of an upload to abort")?;
            abort(&gw.addr, "gone", &id2)?;
            p.abort_answered = true;
            let r = create_upload(&gw.addr, "obj")?;
            let id = r.xml("UploadId").expect("an upload id");
            p.id = Some(id.clone());
            for (i, d) in parts.iter().enumerate() {
                let r = upload_part(&gw.addr, "obj", &id, i + 1, d)?;
                assert_eq!(r.status, 200, "{step}: part {}: {}", i + 1, r.show());
                p.parts_done[i] = true;
            }
            complete(&gw.addr, "obj", &id, &p.etags)?;
            Ok(())
        };
        let res = run(&mut p);
        // The part files go after the answer: a crash there may follow a
        // complete the client saw succeed (wait_killed shows the step ran).
        let after_answer = matches!(step, "complete-cleaning" | "complete-cleaned");
        assert!(
            res.is_err() || after_answer,
            "{step}: the whole flow succeeded: the step was never reached"
        );
        gw.wait_killed(step);

        // Restart on what the crash left.
        let gw = Gw::start(&root, None);
        let what = format!("{fs:?} after a crash at {step}");
        check_tmp(&root, 1, &what);
        let (open, done) = check_uploads(&root, &what);
        let listed = ok(
            http(&gw.addr, "GET", "/bkt?uploads", b""),
            "list uploads",
            200,
        )
        .text();
        for id in &open {
            assert!(listed.contains(id.as_str()), "{what}: {id} is not listed");
        }
        for id in &done {
            assert!(
                !listed.contains(id.as_str()),
                "{what}: completed {id} listed"
            );
        }
        // The object: the old one or the new one, never anything else.
        let r = ok(http(&gw.addr, "GET", "/bkt/obj", b""), &what, 200);
        let etag = unquote(r.header("etag").unwrap_or(""));
        if r.body == old {
            assert_eq!(etag, md5_hex(&old), "{what}: the old object's ETag");
        } else {
            assert!(r.body == new, "{what}: the object is neither old nor new");
            assert_eq!(etag, new_etag, "{what}: the new object's ETag");
        }
        // The client's retries.
        if let Some(id2) = &p.aborted_id {
            if !p.abort_answered {
                let r = abort(&gw.addr, "gone", id2).unwrap();
                assert!(
                    r.status == 204 || (r.status == 404 && r.code() == "NoSuchUpload"),
                    "{what}: retried abort: {}",
                    r.show()
                );
            }
            assert!(
                !names(&root.join(".cowkit-s3/uploads")).contains(id2),
                "{what}: the aborted upload is still there"
            );
        }
        if let Some(id) = &p.id {
            for (i, d) in parts.iter().enumerate() {
                if !p.parts_done[i] {
                    ok(upload_part(&gw.addr, "obj", id, i + 1, d), &what, 200);
                }
            }
            let r = ok(complete(&gw.addr, "obj", id, &p.etags), &what, 200);
            assert_eq!(unquote(&r.xml("ETag").unwrap_or_default()), new_etag);
            let r = ok(http(&gw.addr, "GET", "/bkt/obj", b""), &what, 200);
            assert!(r.body == new, "{what}: retried complete: object bytes");
            assert_eq!(unquote(r.header("etag").unwrap_or("")), new_etag);
            // A second retry gets the recorded answer.
            let r = ok(complete(&gw.addr, "obj", id, &p.etags), &what, 200);
            assert_eq!(unquote(&r.xml("ETag").unwrap_or_default()), new_etag);
            let (open, done) = check_uploads(&root, &what);
            assert!(open.is_empty(), "{what}: uploads still open: {open:?}");
            assert_eq!(done, std::slice::from_ref(id), "{what}: completed uploads");
        }
        gw.stop();
        check_tmp(&root, 0, &format!("{what}, stopped"));
    }
    eprintln!(
        "{fs:?}: {} crash steps in {:.1} s",
        cowkit_s3::fault::STEPS.len(),
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn s3_crash_at_every_step_xfs() {
    crash_at_every_step(Fs::Xfs);
}

#[test]
fn s3_crash_at_every_step_ext4() {
    crash_at_every_step(Fs::Ext4);
}

/// A gateway that dies in the middle of a complete (its object in place,
/// its part files half removed, its temporary directory left) on a root
/// that another gateway keeps serving: the survivor's periodic sweep
/// removes what the dead one left, with no restart. With the periodic
/// sweep off, the same leftovers stay (the check can fail).
fn survivor_sweeps(fs: Fs) {
    let Some(scratch) = scratch(fs) else { return };
    let parts = [pattern(65_536, 5), pattern(10_000, 6)];
    let etags: Vec<String> = parts.iter().map(|d| md5_hex(d)).collect();
    for every in ["0", "1"] {
        let root = scratch.path().join(format!("every-{every}"));
        std::fs::create_dir(&root).unwrap();
        let survivor = Gw::start_with(&root, None, &["--sweep-every", every]);
        ok(
            http(&survivor.addr, "PUT", "/bkt", b""),
            "create bucket",
            200,
        );
        let dying = Gw::start(&root, Some("complete-cleaning"));
        let id = ok(create_upload(&dying.addr, "obj"), "create upload", 200)
            .xml("UploadId")
            .expect("an upload id");
        for (i, d) in parts.iter().enumerate() {
            ok(upload_part(&dying.addr, "obj", &id, i + 1, d), "part", 200);
        }
        // Answered or not (the part files go after the answer), the
        // gateway dies while it removes them.
        let _ = complete(&dying.addr, "obj", &id, &etags);
        dying.wait_killed("complete-cleaning");
        let upload = root.join(".cowkit-s3/uploads").join(&id);
        let tmp = root.join(".cowkit-s3/tmp");
        let clean = || names(&tmp).len() == 1 && names(&upload).len() == 2;
        assert!(
            !clean(),
            "the crash left nothing to sweep: the test tests nothing"
        );
        let t0 = Instant::now();
        let wait = std::time::Duration::from_secs(if every == "0" { 3 } else { 15 });
        while !clean() && t0.elapsed() < wait {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        if every == "0" {
            assert!(!clean(), "swept with the periodic sweep off");
        } else {
            let what = format!("{fs:?}: swept by the survivor");
            check_tmp(&root, 1, &what);
            let (open, done) = check_uploads(&root, &what);
            assert!(open.is_empty(), "{what}: {open:?}");
            assert_eq!(done, std::slice::from_ref(&id), "{what}");
            eprintln!("{fs:?}: swept after {:.1} s", t0.elapsed().as_secs_f64());
        }
        let r = ok(http(&survivor.addr, "GET", "/bkt/obj", b""), "get", 200);
        assert!(r.body == parts.concat(), "the completed object's bytes");
        survivor.stop();
    }
}

#[test]
fn s3_survivor_sweeps_what_a_dead_gateway_left_xfs() {
    survivor_sweeps(Fs::Xfs);
}

#[test]
fn s3_survivor_sweeps_what_a_dead_gateway_left_ext4() {
    survivor_sweeps(Fs::Ext4);
}

// ---- stale handles --------------------------------------------------------------

/// A GET on its own connection, read to its end as it came: the status,
/// the `Content-Length` and the body bytes received (fewer when the
/// gateway ended the connection mid-body).
fn get_raw(addr: &str, target: &str) -> (u16, usize, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    // A reset connection is an end too: what arrived before it counts.
    let _ = s.read_to_end(&mut raw);
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let len = head
        .split("\r\n")
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.trim().parse().unwrap())
        .unwrap();
    (status, len, raw[end + 4..].to_vec())
}

/// Gateways that get `ESTALE` (the `COWKIT_S3_STALE_AT` hook, as NFS or
/// GlusterFS answer when another host replaced the file) from the open of
/// an object's file or record, or from the read of a body read whole,
/// answer with the object, whole: they open it again by name. An `ESTALE`
/// that lasts stays an error (500), after a bounded number of opens. One
/// while a streamed body is being sent ends the connection: a short body
/// of the one version opened, never another's bytes.
fn stale_handles(fs: Fs) {
    let Some(scratch) = scratch(fs) else { return };
    let root = scratch.path();
    let writer = Gw::start(root, None);
    let small = pattern(10_000, 41);
    let big = pattern(3 << 20, 42);
    ok(http(&writer.addr, "PUT", "/bkt", b""), "create bucket", 200);
    ok(http(&writer.addr, "PUT", "/bkt/small", &small), "put", 200);
    ok(http(&writer.addr, "PUT", "/bkt/big", &big), "put", 200);
    ok(
        http(&writer.addr, "PUT", "/vbkt", b""),
        "create bucket",
        200,
    );
    let versioning = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
    ok(
        http(&writer.addr, "PUT", "/vbkt?versioning", versioning),
        "versioning",
        200,
    );
    let v1 = ok(http(&writer.addr, "PUT", "/vbkt/k", &small), "put v1", 200)
        .header("x-amz-version-id")
        .expect("a version id")
        .to_string();
    ok(http(&writer.addr, "PUT", "/vbkt/k", &big), "put v2", 200);

    let cases: [(&str, &str, &str, &[u8]); 8] = [
        ("open-object:3", "GET", "/bkt/small", &small),
        ("open-object:3", "HEAD", "/bkt/small", b""),
        ("open-object:3", "GET", "/bkt/big", &big),
        ("open-record:3", "GET", "/bkt/small", &small),
        ("open-record:3", "HEAD", "/bkt/big", b""),
        ("read-object:2", "GET", "/bkt/small", &small),
        (
            "open-object:3",
            "GET",
            &format!("/vbkt/k?versionId={v1}"),
            &small,
        ),
        ("open-object:3,open-record:3", "GET", "/vbkt/k", &big),
    ];
    for (hook, method, target, want) in cases {
        let what = format!("{fs:?}: {method} {target} with {hook}");
        let gw = Gw::start_env(root, None, &[], Some(hook));
        let r = http(&gw.addr, method, target, b"")
            .unwrap_or_else(|e| panic!("{what}: {e}; log:\n{}", gw.log_text()));
        assert_eq!(
            r.status,
            200,
            "{what}: {}; log:\n{}",
            r.show(),
            gw.log_text()
        );
        assert!(r.body == want, "{what}: not the object's bytes");
        // The record was read (the ETag is the MD5, not one made from the
        // file's inode and times).
        let whole = if target.contains("big") || target == "/vbkt/k" {
            &big
        } else {
            &small
        };
        assert_eq!(
            r.header("etag").map(unquote).as_deref(),
            Some(md5_hex(whole).as_str()),
            "{what}"
        );
        assert!(
            gw.log_text().contains("answering ESTALE"),
            "{what}: the hook did not fire; the case tests nothing"
        );
        gw.stop();
    }

    // A stale handle that lasts: a 500 after a bounded number of opens.
    let gw = Gw::start_env(root, None, &[], Some("open-object:1000000"));
    ok(
        http(&gw.addr, "GET", "/bkt/small", b""),
        "lasting ESTALE",
        500,
    );
    let log = gw.log_text();
    assert!(log.contains("Stale file handle (os error 116)"), "{log}");
    let fired = log.matches("answering ESTALE").count();
    assert_eq!(fired, 8, "opens by name before the 500; log:\n{log}");
    gw.stop();

    // ESTALE while a streamed body is on its way: the head (200, the whole
    // length) is out, the connection ends short, and what came is the
    // start of the one version opened.
    let gw = Gw::start_env(root, None, &[], Some("read-object:2"));
    let (status, len, got) = get_raw(&gw.addr, "/bkt/big");
    assert_eq!((status, len), (200, big.len()), "{fs:?}: streamed GET head");
    assert!(
        got.len() < big.len(),
        "{fs:?}: the connection was to end short"
    );
    assert!(
        got == big[..got.len()],
        "{fs:?}: the short body is not the start of the object"
    );
    gw.stop();
    writer.stop();
}

#[test]
fn s3_stale_handles_are_opened_again_by_name_xfs() {
    stale_handles(Fs::Xfs);
}

// ---- a fleet ------------------------------------------------------------------

const GATEWAYS: usize = 3;
// The issue asks for at least 1,000 races on each filesystem.
const RACES: usize = 1020;

/// One race: an upload made through one gateway, its parts through the
/// others, then one complete per gateway at once (every fifth race, one
/// of them is an abort). Returns the errors seen.
fn race(gws: &[String], w: usize, n: usize) -> Vec<String> {
    let mut errors = Vec::new();
    let key = format!("race/w{w}/r{n}");
    let g = |i: usize| gws[(n + i) % gws.len()].as_str();
    let what = format!("race {key}");
    let fail = |e: std::io::Error| vec![format!("{what}: {e}")];
    let r = match create_upload(g(0), &key) {
        Ok(r) if r.status == 200 => r,
        Ok(r) => return vec![format!("{what}: create: {}", r.show())],
        Err(e) => return fail(e),
    };
    let id = r.xml("UploadId").unwrap_or_default();
    let parts: Vec<Vec<u8>> = (0..1 + n % 2)
        .map(|i| {
            pattern(
                100 + (n * 7 + i * 13) % 3000,
                (w * 100_000 + n * 10 + i) as u64,
            )
        })
        .collect();
    let mut etags = Vec::new();
    for (i, d) in parts.iter().enumerate() {
        match upload_part(g(i + 1), &key, &id, i + 1, d) {
            Ok(r) if r.status == 200 => etags.push(unquote(r.header("etag").unwrap_or(""))),
            Ok(r) => return vec![format!("{what}: part {}: {}", i + 1, r.show())],
            Err(e) => return fail(e),
        }
    }
    let want = multipart_etag(&parts);
    let with_abort = n % 5 == 4;
    let barrier = Barrier::new(gws.len());
    let answers: Vec<(bool, std::io::Result<Resp>)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..gws.len())
            .map(|i| {
                let (barrier, key, id, etags) = (&barrier, &key, &id, &etags);
                let is_abort = with_abort && i == 0;
                s.spawn(move || {
                    barrier.wait();
                    let addr = gws[i].as_str();
                    if is_abort {
                        (true, abort(addr, key, id))
                    } else {
                        (false, complete(addr, key, id, etags))
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut completed = 0;
    let mut aborted = false;
    for (is_abort, a) in &answers {
        let r = match a {
            Ok(r) => r,
            Err(e) => {
                errors.push(format!("{what}: {e}"));
                continue;
            }
        };
        match (is_abort, r.status) {
            (true, 204) => aborted = true,
            (false, 200) if unquote(&r.xml("ETag").unwrap_or_default()) == want => completed += 1,
            (_, 404) if r.code() == "NoSuchUpload" => {}
            _ => errors.push(format!(
                "{what}: {} answered {}",
                if *is_abort { "abort" } else { "complete" },
                r.show()
            )),
        }
    }
    let gets = http(g(2), "GET", &format!("/bkt/{key}"), b"");
    match (aborted, completed, gets) {
        // The abort won: every complete found no upload, no object.
        (true, 0, Ok(r)) if r.status == 404 => {}
        // A complete won: every complete got its answer, the abort none.
        (false, c, Ok(r))
            if c == answers.iter().filter(|a| !a.0).count()
                && r.status == 200
                && r.body == parts.concat()
                && unquote(r.header("etag").unwrap_or("")) == want => {}
        (a, c, r) => errors.push(format!(
            "{what}: aborted {a}, {c} completes answered 200, then GET: {}",
            match r {
                Ok(r) => format!("{} ({} bytes)", r.status, r.body.len()),
                Err(e) => e.to_string(),
            }
        )),
    }
    errors
}

fn fleet(fs: Fs) {
    let Some(scratch) = scratch(fs) else { return };
    let root = scratch.path();
    let t0 = Instant::now();
    let gws: Vec<Gw> = (0..GATEWAYS).map(|_| Gw::start(root, None)).collect();
    let addrs: Vec<String> = gws.iter().map(|g| g.addr.clone()).collect();
    ok(http(&addrs[0], "PUT", "/bkt", b""), "create bucket", 200);
    let errors = Mutex::new(Vec::<String>::new());
    let stop = AtomicBool::new(false);
    let races = AtomicUsize::new(0);
    let bg_ops = AtomicUsize::new(0);
    let workers = 3;
    std::thread::scope(|s| {
        // Background: puts (nested keys whose directories deletes empty
        // and remove), puts and reads of one key from every gateway,
        // deletes, listings.
        for t in 0..3 {
            let (addrs, errors, stop, bg_ops) = (&addrs, &errors, &stop, &bg_ops);
            s.spawn(move || {
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let a = addrs[(i + t) % addrs.len()].as_str();
                    let res: Result<(), String> = (|| {
                        let show = |e: std::io::Error| e.to_string();
                        match (t, i % 4) {
                            (0, _) | (1, 0 | 1) => {
                                let key = format!("bg/d{}/e{}/k{}", i % 3, i % 5, i % 7);
                                let data = pattern(50 + i % 2000, i as u64);
                                let r =
                                    http(a, "PUT", &format!("/bkt/{key}"), &data).map_err(show)?;
                                if r.status != 200 {
                                    return Err(format!("put {key}: {}", r.show()));
                                }
                            }
                            (1, _) => {
                                let data = pattern(10 + i % 900, (t * 1_000_000 + i) as u64);
                                let r = http(a, "PUT", "/bkt/same", &data).map_err(show)?;
                                if r.status != 200 {
                                    return Err(format!("put same: {}", r.show()));
                                }
                                let b = addrs[(i + 1) % addrs.len()].as_str();
                                let r = http(b, "GET", "/bkt/same", b"").map_err(show)?;
                                let etag = unquote(r.header("etag").unwrap_or(""));
                                if r.status != 200 || etag != md5_hex(&r.body) {
                                    return Err(format!(
                                        "get same: {} etag {etag}, body md5 {}",
                                        r.status,
                                        md5_hex(&r.body)
                                    ));
                                }
                            }
                            (2, 0 | 1) => {
                                let key = format!("bg/d{}/e{}/k{}", i % 3, i % 5, i % 7);
                                let r =
                                    http(a, "DELETE", &format!("/bkt/{key}"), b"").map_err(show)?;
                                if r.status != 204 {
                                    return Err(format!("delete {key}: {}", r.show()));
                                }
                            }
                            _ => {
                                let q = if i.is_multiple_of(2) {
                                    "/bkt?list-type=2&prefix=bg/"
                                } else {
                                    "/bkt?uploads"
                                };
                                let r = http(a, "GET", q, b"").map_err(show)?;
                                if r.status != 200 {
                                    return Err(format!("list {q}: {}", r.show()));
                                }
                            }
                        }
                        Ok(())
                    })();
                    bg_ops.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = res {
                        errors.lock().unwrap().push(format!("background: {e}"));
                    }
                }
            });
        }
        let hs: Vec<_> = (0..workers)
            .map(|w| {
                let (addrs, errors, races) = (&addrs, &errors, &races);
                s.spawn(move || {
                    for n in (w..RACES).step_by(workers) {
                        let e = race(addrs, w, n);
                        races.fetch_add(1, Ordering::Relaxed);
                        errors.lock().unwrap().extend(e);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = t0.elapsed();
    let errors = errors.into_inner().unwrap();
    let logs: Vec<String> = gws.iter().map(Gw::log_text).collect();
    assert!(
        errors.is_empty(),
        "{fs:?}: {} errors in {} races, e.g.:\n{}\ngateway logs:\n{}",
        errors.len(),
        races.load(Ordering::Relaxed),
        errors[..errors.len().min(20)].join("\n"),
        logs.join("\n---\n")
    );
    for g in gws {
        g.stop();
    }
    let what = format!("{fs:?} fleet");
    let (open, done) = check_uploads(root, &what);
    assert!(open.is_empty(), "{what}: uploads left open: {open:?}");
    check_tmp(root, 0, &what);
    eprintln!(
        "{fs:?}: {} races ({} completed uploads kept for retries), {} background requests, \
         {GATEWAYS} gateways, 0 errors, {:.1} s",
        races.load(Ordering::Relaxed),
        done.len(),
        bg_ops.load(Ordering::Relaxed),
        elapsed.as_secs_f64()
    );
    assert_eq!(races.load(Ordering::Relaxed), RACES);
}

#[test]
fn s3_fleet_of_three_xfs() {
    fleet(Fs::Xfs);
}

#[test]
fn s3_fleet_of_three_ext4() {
    fleet(Fs::Ext4);
}
