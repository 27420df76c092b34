//! `cowkit dnf` fetching the packages itself (issue 29): a real HTTP
//! server on 127.0.0.1 (Python's `http.server`, started by each test)
//! serves the test repository built by `createrepo_c`, and misbehaves on
//! purpose for one package: a wrong byte, a truncated body, a body that
//! is longer, another package's bytes (the header changed), a stall. The
//! streamed cache entries must be byte-equal to `cowkit transcode` of the
//! downloaded files; a broken mirror must leave nothing in the cache; an
//! interrupted build nothing the next build trusts. Needs root
//! (chrooted scriptlets) and the rig's XFS.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{as_root, cowkit, run, tmp, Run};
use cowkit_testutil::repo::{build_repo, TestRepo, MAIN};
use cowkit_testutil::tree::mkdir;
use cowkit_testutil::{run_ok, scratch, Fs};

/// The server: serves `DIR`; for the `.rpm` files whose name contains
/// `MATCH` it does `MODE` (`ok`, `corrupt`: one payload byte flipped,
/// `truncate`: half the body then the connection closed, `longer`: ten
/// bytes more, `header`: the bytes of `OTHER` without a length, `stall`: half the body,
/// then nothing for ten minutes). Every request's path is appended to
/// `LOG`; a stall first creates `LOG.stalled`.
const SERVER: &str = r#"
import http.server, os, sys, time
d, mode, match, log, other = sys.argv[1:6]
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def __init__(s, *a, **k):
        super().__init__(*a, directory=d, **k)
    def log_message(s, *a):
        pass
    def do_GET(s):
        with open(log, "a") as f:
            f.write(s.path + "\n")
        name = os.path.basename(s.path)
        if mode == "ok" or not name.endswith(".rpm") or match not in name:
            return super().do_GET()
        with open(os.path.join(d, s.path.lstrip("/")), "rb") as f:
            data = f.read()
        if mode == "corrupt":
            data = data[:-100] + bytes([data[-100] ^ 1]) + data[-99:]
        elif mode == "longer":
            data = data + b"0123456789"
        elif mode == "header":
            with open(other, "rb") as f:
                data = f.read()
        s.send_response(200)
        s.send_header("Content-Type", "application/x-rpm")
        if mode == "header":
            # No length: the body ends when the connection closes, and
            # only the header tells that it is another package.
            s.send_header("Connection", "close")
            s.close_connection = True
        else:
            s.send_header("Content-Length", str(len(data)))
        s.end_headers()
        if mode in ("truncate", "stall"):
            s.wfile.write(data[: len(data) // 2])
            s.wfile.flush()
            if mode == "stall":
                open(log + ".stalled", "w").close()
                time.sleep(600)
            s.close_connection = True
            return
        s.wfile.write(data)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

/// A running server (killed on drop).
struct Server {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Serve `dir`, misbehaving with `mode` on the packages whose file
    /// name contains `matching` (`other`: the file `header` serves).
    fn start(dir: &Path, mode: &str, matching: &str, other: &Path, log: &Path) -> Server {
        let mut child = Command::new("python3")
            .args(["-c", SERVER])
            .arg(dir)
            .args([mode, matching])
            .arg(log)
            .arg(other)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line.trim().parse().expect("the server's port");
        Server {
            child,
            url: format!("http://127.0.0.1:{port}/"),
            log: log.to_path_buf(),
        }
    }

    /// The `.rpm` paths requested so far.
    fn rpm_requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.ends_with(".rpm"))
            .map(str::to_string)
            .collect()
    }
}

/// One test's world: the repository, a root, the caches.
struct World {
    repo: TestRepo,
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> Option<World> {
        let dir = scratch(Fs::Xfs)?;
        Some(World {
            repo: build_repo(tmp()),
            dir,
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A server for the version-1 repository.
    fn serve(&self, mode: &str, matching: &str, log: &str) -> Server {
        Server::start(
            &self.repo.dir,
            mode,
            matching,
            self.repo.rpm("ck-vi"),
            &self.path(log),
        )
    }

    /// `cowkit dnf --json` installing `ck-suite` into `root` from the
    /// repository at `urls` (its mirrors), with `extra` dnf options and a
    /// fresh dnf cache.
    fn build(&self, root: &str, urls: &[&str], extra: &[&str]) -> Run {
        run(&mut self.command(root, urls, extra, &[]))
    }

    /// The command of [`World::build`], with cowkit's options `own`.
    fn command(&self, root: &str, urls: &[&str], extra: &[&str], own: &[&str]) -> Command {
        let root = self.path(root);
        let dnf_cache = self.path(&format!(
            "dnf-cache-{}",
            root.file_name().unwrap().to_string_lossy()
        ));
        let repos = mkdir(&self.path(&format!(
            "repos-{}",
            root.file_name().unwrap().to_string_lossy()
        )));
        std::fs::write(
            repos.join("local.repo"),
            format!(
                "[local]\nname=local\nbaseurl={}\ngpgcheck=0\n",
                urls.join("\n        ")
            ),
        )
        .unwrap();
        let args: Vec<std::ffi::OsString> = common::dnf_args(&self.repo.dir, &root, &dnf_cache)
            .into_iter()
            .filter(|a| {
                let a = a.to_string_lossy();
                !a.starts_with("--repofrompath=") && !a.starts_with("--setopt=reposdir=")
            })
            .collect();
        let mut c = cowkit();
        c.args(["dnf", "--json", "--root"])
            .arg(&root)
            .arg("--cache")
            .arg(self.path("ck-cache"))
            .arg("--dbpath")
            .arg(cowkit_testutil::repo::dbpath())
            .args(own)
            .arg("--")
            .args(args)
            .arg(format!("--setopt=reposdir={}", repos.display()))
            .args(extra)
            .args(["install", self.repo.top]);
        c
    }
}

/// The header digest (`%{SHA256HEADER}`) of a package file.
fn header_digest(rpm: &Path) -> String {
    let out = run_ok(
        Command::new("rpm")
            .args(["-qp", "--nosignature", "--qf", "%{SHA256HEADER}"])
            .arg(rpm),
        "rpm -qp",
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Where the cache keeps the entry of `rpm`.
fn entry(cache: &Path, rpm: &Path) -> PathBuf {
    let d = header_digest(rpm);
    cache.join("rpme").join(&d[..2]).join(format!("{d}.rpme"))
}

/// The `.rpme` files and checksum records under `cache`.
fn cache_files(cache: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for top in ["rpme", "by-checksum"] {
        let mut stack = vec![cache.join(top)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

fn assert_failed_with(r: &Run, words: &[&str]) {
    assert!(!r.ok, "the build succeeded:\n{}", r.stderr);
    for w in words {
        assert!(r.stderr.contains(w), "no `{w}` in:\n{}", r.stderr);
    }
}

/// The broken package of the broken-mirror tests.
const BROKEN: &str = "ck-data";

/// The build failed on `BROKEN`, and the cache holds no entry and no
/// record for it (the others may be there: they were verified); the root
/// has no package.
fn assert_nothing_of_broken(w: &World, r: &Run) {
    // cowkit's own fetch failed (not dnf's download).
    assert_failed_with(r, &[BROKEN, "cannot fetch", "no mirror served the package"]);
    let cache = w.path("ck-cache");
    assert!(
        !entry(&cache, w.repo.rpm(BROKEN)).exists(),
        "{:?}",
        cache_files(&cache)
    );
    let records = cache_files(&cache)
        .into_iter()
        .filter(|p| p.starts_with(cache.join("by-checksum")))
        .count();
    let entries = cache_files(&cache)
        .into_iter()
        .filter(|p| p.starts_with(cache.join("rpme")))
        .count();
    assert_eq!(records, entries, "a record without its verified entry");
    assert!(!w.path("root").join("usr/share/ck-data").exists());
}

#[test]
fn issue_29_streamed_entries_equal_transcodes_and_a_second_build_downloads_nothing() {
    if !as_root("issue_29_streamed_entries", "chrooted scriptlets") {
        return;
    }
    let Some(w) = World::new() else { return };
    let server = w.serve("ok", "", "log");
    let r = w.build("root", &[&server.url], &[]);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["downloaded_by"], "cowkit", "{j}");
    assert_eq!(j["cache_misses"], MAIN.len(), "{j}");
    assert_eq!(server.rpm_requests().len(), MAIN.len());
    for name in MAIN {
        let rpm = w.repo.rpm(name);
        let want = w.path(&format!("{name}.rpme"));
        run_ok(
            cowkit().arg("transcode").arg(rpm).arg("-o").arg(&want),
            "cowkit transcode",
        );
        let got = entry(&w.path("ck-cache"), rpm);
        assert!(
            std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(),
            "{} differs from `cowkit transcode` of the download",
            got.display()
        );
    }
    assert!(w.path("root/usr/share/ck-data/blob.txt").exists());

    // Again, into another root: every package found by its checksum.
    let r = w.build("root2", &[&server.url], &[]);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["not_downloaded"], MAIN.len(), "{j}");
    assert_eq!(server.rpm_requests().len(), MAIN.len(), "downloaded again");
    assert!(w.path("root2/usr/share/ck-data/blob.txt").exists());
}

/// A build from a server that misbehaves with `mode` on [`BROKEN`],
/// with one attempt allowed and short timeouts.
fn broken_build(mode: &str) -> Option<(World, Run)> {
    if !as_root("issue_29_broken_mirror", "chrooted scriptlets") {
        return None;
    }
    let w = World::new()?;
    let server = w.serve(mode, BROKEN, "log");
    let r = w.build(
        "root",
        &[&server.url],
        &["--setopt=retries=1", "--setopt=timeout=3"],
    );
    drop(server);
    Some((w, r))
}

#[test]
fn issue_29_a_wrong_checksum_leaves_nothing() {
    let Some((w, r)) = broken_build("corrupt") else {
        return;
    };
    assert_failed_with(&r, &["wrong checksum"]);
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn issue_29_a_truncated_body_leaves_nothing() {
    let Some((w, r)) = broken_build("truncate") else {
        return;
    };
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn issue_29_a_longer_body_leaves_nothing() {
    let Some((w, r)) = broken_build("longer") else {
        return;
    };
    assert_failed_with(&r, &["bytes, the repository's metadata says"]);
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn issue_29_a_changed_header_leaves_nothing() {
    let Some((w, r)) = broken_build("header") else {
        return;
    };
    assert_failed_with(&r, &["holds ck-vi-", "header changed"]);
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn issue_29_a_stalled_connection_times_out_and_leaves_nothing() {
    let Some((w, r)) = broken_build("stall") else {
        return;
    };
    assert_failed_with(&r, &["time"]);
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn issue_29_a_broken_mirror_falls_back_to_the_next() {
    if !as_root("issue_29_mirror_fallback", "chrooted scriptlets") {
        return;
    }
    let Some(w) = World::new() else { return };
    let bad = w.serve("corrupt", "", "bad.log");
    let good = w.serve("ok", "", "good.log");
    let r = w.build("root", &[&bad.url, &good.url], &[]);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["downloaded_by"], "cowkit", "{j}");
    // Every package failed once on the bad mirror (dnf's `--quiet` keeps
    // the `[MIRROR]` lines off stderr; the summary lists them): a wrong
    // checksum, or, where the flipped byte is in the header of a small
    // package, a wrong header digest.
    let failed: Vec<&str> = j["failed_attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(failed.len(), MAIN.len(), "{j}");
    assert!(
        failed
            .iter()
            .all(|f| f.starts_with("[MIRROR] ") && f.contains(&bad.url)),
        "{j}"
    );
    assert!(failed.iter().any(|f| f.contains("wrong checksum")), "{j}");
    assert!(!good.rpm_requests().is_empty());
    for name in MAIN {
        assert!(
            entry(&w.path("ck-cache"), w.repo.rpm(name)).exists(),
            "{name}"
        );
    }
}

#[test]
fn issue_29_an_interrupted_build_leaves_nothing_the_next_trusts() {
    if !as_root("issue_29_interrupted", "chrooted scriptlets") {
        return;
    }
    let Some(w) = World::new() else { return };
    let stalling = w.serve("stall", BROKEN, "stall.log");
    let mut child = w
        .command("root", &[&stalling.url], &[], &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let marker = w.path("stall.log.stalled");
    let t = Instant::now();
    while !marker.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(300),
            "the download never stalled"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "cowkit ended before the stall"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Half of ck-data has gone to the transcoder by now.
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    let cache = w.path("ck-cache");
    assert!(!entry(&cache, w.repo.rpm(BROKEN)).exists());

    let good = w.serve("ok", "", "good.log");
    let r = w.build("root", &[&good.url], &[]);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.json()["downloaded_by"], "cowkit");
    let rpm = w.repo.rpm(BROKEN);
    let want = w.path("want.rpme");
    run_ok(
        cowkit().arg("transcode").arg(rpm).arg("-o").arg(&want),
        "cowkit transcode",
    );
    assert!(std::fs::read(entry(&cache, rpm)).unwrap() == std::fs::read(&want).unwrap());
    assert!(good.rpm_requests().iter().any(|p| p.contains(BROKEN)));
}

#[test]
fn issue_29_dnf_downloads_where_cowkit_cannot_and_says_why() {
    if !as_root("issue_29_fallback", "chrooted scriptlets") {
        return;
    }
    let Some(w) = World::new() else { return };
    let server = w.serve("ok", "", "log");
    let r = w.build("root", &[&server.url], &["--setopt=keepcache=True"]);
    assert!(r.ok, "{}\n{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    // dnf's `--quiet` keeps the note off stderr; the summary says why.
    let j = r.json();
    assert_eq!(j["downloaded_by"], "dnf", "{j}");
    assert!(
        j["fallback_reasons"][0]
            .as_str()
            .unwrap()
            .contains("keepcache"),
        "{j}"
    );

    let r = run(&mut w.command("root2", &[&server.url], &[], &["--downloader", "dnf"]));
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["downloaded_by"], "dnf", "{j}");
    assert!(
        j["fallback_reasons"][0]
            .as_str()
            .unwrap()
            .contains("--downloader dnf"),
        "{j}"
    );
}
