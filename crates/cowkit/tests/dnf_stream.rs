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
use cowkit_testutil::repo::{build_repo, installed, rpm_in, TestRepo, MAIN};
use cowkit_testutil::rpm::{
    edit_header, header_range, pgp_fingerprint, pgp_fixtures, replace_once,
};
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
    /// The repository's key file: its repo file then says `gpgcheck=1`
    /// and `gpgkey=file://` it (else `gpgcheck=0`), and dnf gets no
    /// `--nogpgcheck`.
    gpgkey: Option<PathBuf>,
}

impl World {
    fn new() -> Option<World> {
        let dir = scratch(Fs::Xfs)?;
        Some(World {
            repo: build_repo(tmp()),
            dir,
            gpgkey: None,
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The repository served: the signed copy of a [`World::signed`],
    /// else the version-1 repository.
    fn served(&self) -> PathBuf {
        match self.gpgkey {
            Some(_) => self.path("signed-repo"),
            None => self.repo.dir.clone(),
        }
    }

    /// A server for the version-1 repository (or its signed copy).
    fn serve(&self, mode: &str, matching: &str, log: &str) -> Server {
        Server::start(
            &self.served(),
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
        self.command_in("ck-cache", root, urls, extra, own)
    }

    /// The directory of repo files for `root`: one, `local.repo`, whose
    /// mirrors are `urls`.
    fn repos_dir(&self, root: &Path, urls: &[&str]) -> PathBuf {
        let repos = mkdir(&self.path(&format!(
            "repos-{}",
            root.file_name().unwrap().to_string_lossy()
        )));
        let gpg = match &self.gpgkey {
            Some(k) => format!("gpgcheck=1\ngpgkey=file://{}\n", k.display()),
            None => "gpgcheck=0\n".to_string(),
        };
        std::fs::write(
            repos.join("local.repo"),
            format!(
                "[local]\nname=local\nbaseurl={}\n{gpg}",
                urls.join("\n        ")
            ),
        )
        .unwrap();
        repos
    }

    /// The test repository's dnf arguments for `root` (as plain dnf gets
    /// them, without its repository and reposdir, and without
    /// `--nogpgcheck` when the repository has a key).
    fn dnf_args(&self, root: &Path, dnf_cache: &Path) -> Vec<std::ffi::OsString> {
        common::dnf_args(&self.repo.dir, root, dnf_cache)
            .into_iter()
            .filter(|a| {
                let a = a.to_string_lossy();
                !a.starts_with("--repofrompath=")
                    && !a.starts_with("--setopt=reposdir=")
                    && (self.gpgkey.is_none() || a != "--nogpgcheck")
            })
            .collect()
    }

    /// [`World::command`] with the cache `cache`.
    fn command_in(
        &self,
        cache: &str,
        root: &str,
        urls: &[&str],
        extra: &[&str],
        own: &[&str],
    ) -> Command {
        let root = self.path(root);
        let dnf_cache = self.path(&format!(
            "dnf-cache-{}",
            root.file_name().unwrap().to_string_lossy()
        ));
        let repos = self.repos_dir(&root, urls);
        let args = self.dnf_args(&root, &dnf_cache);
        let mut c = cowkit();
        c.args(["dnf", "--json", "--root"])
            .arg(&root)
            .arg("--cache")
            .arg(self.path(cache))
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
fn streamed_entries_equal_transcodes_and_a_second_build_downloads_nothing() {
    if !as_root("streamed_entries", "chrooted scriptlets") {
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
    if !as_root("broken_mirror", "chrooted scriptlets") {
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
fn a_wrong_checksum_leaves_nothing() {
    let Some((w, r)) = broken_build("corrupt") else {
        return;
    };
    assert_failed_with(&r, &["wrong checksum"]);
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn a_truncated_body_leaves_nothing() {
    let Some((w, r)) = broken_build("truncate") else {
        return;
    };
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn a_longer_body_leaves_nothing() {
    let Some((w, r)) = broken_build("longer") else {
        return;
    };
    assert_failed_with(&r, &["bytes, the repository's metadata says"]);
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn a_changed_header_leaves_nothing() {
    let Some((w, r)) = broken_build("header") else {
        return;
    };
    assert_failed_with(&r, &["holds ck-vi-", "header changed"]);
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn a_stalled_connection_times_out_and_leaves_nothing() {
    let Some((w, r)) = broken_build("stall") else {
        return;
    };
    assert_failed_with(&r, &["time"]);
    assert_nothing_of_broken(&w, &r);
}

#[test]
fn a_broken_mirror_falls_back_to_the_next() {
    if !as_root("mirror_fallback", "chrooted scriptlets") {
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
fn an_interrupted_build_leaves_nothing_the_next_trusts() {
    if !as_root("interrupted", "chrooted scriptlets") {
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
fn dnf_downloads_where_cowkit_cannot_and_says_why() {
    if !as_root("fallback", "chrooted scriptlets") {
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

// ---------------------------------------------------------------------------
// Repositories that require signatures (`gpgcheck=1`).

/// How a signed repository serves [`BROKEN`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Signed {
    /// Signed by the repository's key, like every other package.
    ByRepoKey,
    /// Not signed.
    Unsigned,
    /// Signed by a key the repository does not list.
    ByOtherKey,
    /// Signed by the repository's key, then a byte of its header changed
    /// (the header's SHA-256 written over the old one, as a forger would)
    /// and its payload replaced by bytes no decompressor takes.
    HeaderChanged,
}

/// rpmsign `rpms` with the key `fpr` of the GnuPG home `gnupg`.
fn rpmsign(gnupg: &Path, fpr: &str, rpms: &[PathBuf]) {
    run_ok(
        Command::new("rpmsign")
            .env("GNUPGHOME", gnupg)
            .args(["--define", "__gpg /usr/bin/gpg"])
            .arg("--define")
            .arg(format!("_gpg_path {}", gnupg.display()))
            .arg("--define")
            .arg(format!("_gpg_name {fpr}"))
            .arg("--addsign")
            .args(rpms),
        "rpmsign --addsign",
    );
}

/// SHA-1 (hex) of `bytes`, by `sha1sum`.
fn sha1_hex(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bytes");
    std::fs::write(&f, bytes).unwrap();
    let out = run_ok(Command::new("sha1sum").arg(&f), "sha1sum");
    String::from_utf8(out.stdout).unwrap()[..40].to_string()
}

impl World {
    /// A world whose repository requires signatures: a copy of the test
    /// repository in `signed-repo`, indexed again by `createrepo_c`, every
    /// package signed by a throw-away RSA key (the `rsa` key of
    /// [`pgp_fixtures`]; its public key copied to `keys/repo.asc`, the
    /// repo file's `gpgkey`) but [`BROKEN`], which is as `broken` says
    /// (`ByOtherKey`: signed by the fixtures' `ed` key).
    fn signed(broken: Signed) -> Option<World> {
        let mut w = World::new()?;
        let fixtures = pgp_fixtures(tmp());
        let dir = mkdir(&w.path("signed-repo"));
        let mut ours = Vec::new();
        let mut other = Vec::new();
        for rpm in &w.repo.v1 {
            let copy = dir.join(rpm.file_name().unwrap());
            std::fs::copy(rpm, &copy).unwrap();
            let name = copy.file_name().unwrap().to_string_lossy().to_string();
            match broken {
                _ if !name.starts_with(&format!("{BROKEN}-")) => ours.push(copy),
                Signed::ByRepoKey | Signed::HeaderChanged => ours.push(copy),
                Signed::ByOtherKey => other.push(copy),
                Signed::Unsigned => {}
            }
        }
        // The fixtures' GnuPG home copied to a short private path (the
        // agent's socket lives there); its agent stopped afterwards.
        let gnupg = tempfile::Builder::new()
            .prefix("ck-gnupg.")
            .tempdir_in("/tmp")
            .unwrap();
        run_ok(
            Command::new("cp")
                .arg("-a")
                .arg(fixtures.join("gnupg/."))
                .arg(gnupg.path()),
            "cp -a gnupg",
        );
        rpmsign(gnupg.path(), &pgp_fingerprint(&fixtures, "rsa"), &ours);
        if !other.is_empty() {
            rpmsign(gnupg.path(), &pgp_fingerprint(&fixtures, "ed"), &other);
        }
        let _ = Command::new("gpgconf")
            .arg("--homedir")
            .arg(gnupg.path())
            .args(["--kill", "gpg-agent"])
            .status();
        if broken == Signed::HeaderChanged {
            let p = dir.join(w.repo.rpm(BROKEN).file_name().unwrap());
            let mut b = std::fs::read(&p).unwrap();
            let (start, end) = header_range(&b);
            let old_sha1 = sha1_hex(&b[start..end]);
            edit_header(&mut b, |h| replace_once(h, b"blob.txt", b"blob.txu"));
            // rpm 4.18 also records the header's SHA-1: the forger
            // rewrites it too, so that only the signature tells.
            let new_sha1 = sha1_hex(&b[start..end]);
            replace_once(&mut b[..start], old_sha1.as_bytes(), new_sha1.as_bytes());
            b[end..].fill(0xa5);
            std::fs::write(&p, b).unwrap();
        }
        run_ok(
            Command::new("createrepo_c").arg("--quiet").arg(&dir),
            "createrepo_c",
        );
        let key = mkdir(&w.path("keys")).join("repo.asc");
        std::fs::copy(fixtures.join("rsa.asc"), &key).unwrap();
        w.gpgkey = Some(key);
        Some(w)
    }

    /// The served copy of the package `name`.
    fn served_rpm(&self, name: &str) -> PathBuf {
        self.served().join(self.repo.rpm(name).file_name().unwrap())
    }

    /// Plain `dnf --installroot` installing `ck-suite` into `root` from
    /// the mirror `url`, with the repo file and dnf options of
    /// [`World::build`] and `extra`.
    fn plain_dnf(&self, root: &str, url: &str, extra: &[&str]) -> Run {
        let root = self.path(root);
        let dnf_cache = self.path(&format!(
            "dnf-cache-{}",
            root.file_name().unwrap().to_string_lossy()
        ));
        let repos = self.repos_dir(&root, &[url]);
        run(Command::new("dnf")
            .env("HOME", cowkit_testutil::repo::HOME)
            .env("LC_ALL", "C.UTF-8")
            .arg(format!("--installroot={}", root.display()))
            .args(self.dnf_args(&root, &dnf_cache))
            .arg(format!("--setopt=reposdir={}", repos.display()))
            .args(extra)
            .args(["install", self.repo.top]))
    }

    /// Nothing is installed in `root`, and the cache `cache` holds no
    /// entry and no checksum record for the served [`BROKEN`].
    fn assert_nothing_of_broken_in(&self, root: &str, cache: &str) {
        let root = self.path(root);
        assert!(
            !root.join("usr/bin/busybox").exists(),
            "installed in {}",
            root.display()
        );
        assert!(!root.join("usr/share/ck-data").exists());
        let cache = self.path(cache);
        let rpm = self.served_rpm(BROKEN);
        assert!(!entry(&cache, &rpm).exists(), "{:?}", cache_files(&cache));
        let sum = cowkit_testutil::sha256_hex(&std::fs::read(&rpm).unwrap());
        assert!(
            !cache_files(&cache).iter().any(|p| p.ends_with(&sum)),
            "a checksum record for {BROKEN}: {:?}",
            cache_files(&cache)
        );
    }
}

#[test]
fn gpgcheck_signed_packages_install_and_equal_the_downloadonly_entries() {
    if !as_root("gpgcheck_signed", "chrooted scriptlets") {
        return;
    }
    let Some(w) = World::signed(Signed::ByRepoKey) else {
        return;
    };
    let server = w.serve("ok", "", "log");
    let r = w.build("root", &[&server.url], &[]);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["downloaded_by"], "cowkit", "{j}");
    assert_eq!(j["cache_misses"], MAIN.len(), "{j}");
    assert!(w.path("root/usr/share/ck-data/blob.txt").exists());

    // dnf downloads (and checks the signatures itself), cowkit transcodes.
    let r = run(&mut w.command_in(
        "ck-cache-dnf",
        "root2",
        &[&server.url],
        &[],
        &["--downloader", "dnf"],
    ));
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.json()["downloaded_by"], "dnf");
    for name in MAIN {
        let rpm = w.served_rpm(name);
        let streamed = entry(&w.path("ck-cache"), &rpm);
        let downloaded = entry(&w.path("ck-cache-dnf"), &rpm);
        assert!(
            std::fs::read(&streamed).unwrap() == std::fs::read(&downloaded).unwrap(),
            "{} differs from {}",
            streamed.display(),
            downloaded.display()
        );
    }

    // Again: every package found by its checksum, checked with this key.
    let r = w.build("root3", &[&server.url], &[]);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.json()["not_downloaded"], MAIN.len(), "{}", r.json());

    // Plain dnf imports the repository's key into the root's database
    // (`gpg-pubkey`) as it checks the first package: so does cowkit.
    let d = w.plain_dnf("root-dnf", &server.url, &[]);
    assert!(d.ok, "plain dnf: {}", d.stderr);
    let want = installed(&w.path("root-dnf"));
    assert!(want.contains_key("gpg-pubkey"), "{want:?}");
    assert_eq!(installed(&w.path("root")), want);
    assert_eq!(installed(&w.path("root3")), want);
    // dnf downloaded into a new root, checking against a scratch database:
    // the key it imported there is kept too.
    assert_eq!(installed(&w.path("root2")), want);
}

/// A build of a repository whose [`BROKEN`] is as `how` says, by cowkit
/// and by plain dnf: both refused, nothing installed, nothing cached.
fn refused_as_dnf_refuses(test: &str, how: Signed, ours: &[&str], dnfs: &[&str]) -> Option<World> {
    if !as_root(test, "chrooted scriptlets") {
        return None;
    }
    let w = World::signed(how)?;
    let server = w.serve("ok", "", "log");
    let r = w.build("root", &[&server.url], &[]);
    // The package, the repository and why; what dnf would do about it.
    let why = format!("{BROKEN}-1-1.noarch: the repository `local` requires signatures (gpgcheck)");
    assert_failed_with(&r, &[&why, "--nogpgcheck"]);
    assert_failed_with(&r, ours);
    w.assert_nothing_of_broken_in("root", "ck-cache");
    let d = w.plain_dnf("root-dnf", &server.url, &[]);
    assert_failed_with(&d, dnfs);
    assert!(!w.path("root-dnf/usr/bin/busybox").exists());
    Some(w)
}

#[test]
fn gpgcheck_refuses_an_unsigned_package_as_dnf_does() {
    refused_as_dnf_refuses(
        "gpgcheck_unsigned",
        Signed::Unsigned,
        &["not signed"],
        &["is not signed", "GPG check FAILED"],
    );
}

#[test]
fn gpgcheck_refuses_a_package_signed_by_another_key_as_dnf_does() {
    refused_as_dnf_refuses(
        "gpgcheck_other_key",
        Signed::ByOtherKey,
        &["not in the keyring"],
        &["is not installed", "GPG check FAILED"],
    );
}

#[test]
fn gpgcheck_refuses_a_changed_header_before_decoding_its_payload() {
    let Some(w) = refused_as_dnf_refuses(
        "gpgcheck_changed_header",
        Signed::HeaderChanged,
        &["does not verify"],
        &["GPG check FAILED"],
    ) else {
        return;
    };
    // Its payload is garbage: a decoder that sees a byte of it fails
    // (`cowkit transcode` without a key), and the signature check (with
    // the key) stopped the package before that.
    let rpm = w.served_rpm(BROKEN);
    let unchecked = run(cowkit()
        .arg("transcode")
        .arg(&rpm)
        .arg("-o")
        .arg(w.path("x.rpme")));
    assert!(
        !unchecked.ok && !unchecked.stderr.contains("signature"),
        "{}",
        unchecked.stderr
    );
    let checked = run(cowkit()
        .arg("transcode")
        .arg("--key")
        .arg(w.gpgkey.as_ref().unwrap())
        .arg(&rpm)
        .arg("-o")
        .arg(w.path("x.rpme")));
    assert_failed_with(&checked, &["does not verify"]);
    assert!(
        !checked.stderr.contains(&unchecked.stderr),
        "{}",
        checked.stderr
    );
}

#[test]
fn nogpgcheck_is_honoured_as_dnf_honours_it() {
    if !as_root("nogpgcheck", "chrooted scriptlets") {
        return;
    }
    let Some(w) = World::signed(Signed::Unsigned) else {
        return;
    };
    let server = w.serve("ok", "", "log");
    for (i, opt) in [
        "--setopt=gpgcheck=0",
        "--nogpgcheck",
        "--setopt=local.gpgcheck=0",
    ]
    .iter()
    .enumerate()
    {
        let r = w.build(&format!("root{i}"), &[&server.url], &[opt]);
        let d = w.plain_dnf(&format!("root{i}-dnf"), &server.url, &[opt]);
        assert_eq!(
            r.ok, d.ok,
            "{opt}: cowkit:\n{}\ndnf:\n{}",
            r.stderr, d.stderr
        );
    }
}

#[test]
fn a_changed_key_file_is_not_trusted_from_the_cache() {
    if !as_root("changed_key", "chrooted scriptlets") {
        return;
    }
    let Some(w) = World::signed(Signed::ByRepoKey) else {
        return;
    };
    let server = w.serve("ok", "", "log");
    let r = w.build("root", &[&server.url], &[]);
    assert!(r.ok, "{}", r.stderr);
    // The repository's key file now holds another key.
    std::fs::copy(
        pgp_fixtures(tmp()).join("ed.asc"),
        w.gpgkey.as_ref().unwrap(),
    )
    .unwrap();
    let r = w.build("root2", &[&server.url], &[]);
    assert_failed_with(&r, &["not in the keyring"]);
    assert!(!w.path("root2/usr/bin/busybox").exists());
    let d = w.plain_dnf("root2-dnf", &server.url, &[]);
    assert!(!d.ok, "{}", d.stderr);
}

#[test]
fn a_root_trusting_other_keys_is_left_to_dnf() {
    if !as_root("root_keys", "chrooted scriptlets") {
        return;
    }
    let Some(w) = World::signed(Signed::ByRepoKey) else {
        return;
    };
    let server = w.serve("ok", "", "log");
    // The root's database already trusts a key the repository does not
    // list: dnf accepts packages signed by it, cowkit's check would not.
    let root = mkdir(&w.path("root"));
    let other = pgp_fixtures(tmp()).join("ed.asc");
    run_ok(rpm_in(&root).arg("--initdb"), "rpm --initdb");
    run_ok(rpm_in(&root).arg("--import").arg(&other), "rpm --import");
    let r = run(&mut w.command("root", &[&server.url], &[], &["--downloader", "cowkit"]));
    assert_failed_with(
        &r,
        &[
            "cowkit cannot fetch",
            "the root's rpm database holds key(s)",
        ],
    );
    let r = w.build("root", &[&server.url], &[]);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["downloaded_by"], "dnf", "{j}");
    assert!(
        j["fallback_reasons"].to_string().contains("holds key(s)"),
        "{j}"
    );
}
