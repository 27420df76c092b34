//! The package part of `cowkit demo`: the repository of [`super::repo`]
//! installed into empty roots side by side on one filesystem, by plain
//! `dnf --installroot` and by `cowkit dnf` with a cold and then a warm
//! transcode cache; each timed, with the disk space it took and the
//! blocks its files share; then the roots compared ([`super::compare`]).
//!
//! The comparison is fair: every install gets the same dnf options (no
//! host repositories, configuration or plugins, no weak dependencies),
//! dnf's metadata cache is made before the first one (untimed), the
//! filesystem is synced before each command and after it (untimed), and
//! the rpm database is `/var/lib/rpm` in every root.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

use serde::Serialize;

use super::compare::{differences, list, shared, Listing};
use super::repo::{self, check, mkdir, spawn_error, TOP};
use crate::output::CliError;

/// The rpm database in every root.
const DBPATH: &str = "/var/lib/rpm";

/// What the comparison of the roots leaves out, relative to a root, and
/// why; `{cache}` is dnf's cache directory.
pub const EXCLUDED: [(&str, &str); 6] = [
    (
        "var/lib/rpm",
        "the rpm database (its pages differ with timing): compared by `rpm -qa` and `rpm -Va`",
    ),
    ("var/lib/dnf", "dnf's history: transaction ids and times"),
    ("var/log", "dnf's logs, with times"),
    ("var/cache", "dnf's cache"),
    (
        "etc/dnf",
        "dnf's module state, made by dnf, owned by no package",
    ),
    (
        "{cache}",
        "the empty copy of its cache directory's path that dnf makes in a root",
    ),
];

/// One install.
#[derive(Serialize)]
pub struct Install {
    /// `dnf`, `cowkit dnf (cold cache)` or `cowkit dnf (warm cache)`.
    pub method: &'static str,
    /// The root.
    pub root: PathBuf,
    /// Wall time of the command.
    pub seconds: f64,
    /// The part of it that is dnf resolving (and, for cowkit, handing over
    /// the package files): for cowkit from its `--json`, for dnf the time
    /// of `dnf --assumeno install` on another empty root, run just before.
    pub resolve_seconds: f64,
    /// Disk space the command took on the filesystem (`statvfs`, after a
    /// `syncfs`), the cache's included.
    pub disk_used_bytes: u64,
    /// Bytes of the root's regular files (each inode once; the excluded
    /// paths not counted).
    pub file_bytes: u64,
    /// How many of them sit in extents shared with other files (FIEMAP).
    pub shared_bytes: u64,
}

/// The package part's report.
#[derive(Serialize)]
pub struct Packages {
    /// `rpm -qa` of the dnf root, sorted NEVRAs.
    pub installed: Vec<String>,
    /// The installs, dnf's first.
    pub installs: Vec<Install>,
    /// `rpm -Va` of the dnf root (empty: every file as its package says).
    pub rpm_va: Vec<String>,
    /// Entries compared in each root.
    pub entries: usize,
    /// Every root equal to dnf's: `rpm -qa`, `rpm -Va` and the trees.
    pub equal: bool,
    /// What differs from dnf's root, one line each.
    pub differences: Vec<String>,
    /// The work directory, when kept (`--keep`).
    pub kept: Option<PathBuf>,
}

/// The work directory, removed on every exit path unless kept.
struct Work {
    dir: PathBuf,
    keep: bool,
}

impl Drop for Work {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The paths of one demo run.
struct Paths {
    repo: PathBuf,
    home: PathBuf,
    dnf_cache: PathBuf,
    ck_cache: PathBuf,
}

/// Build the repository in `dir` and install it three times side by side.
pub fn run(dir: &Path, keep: bool) -> Result<Packages, CliError> {
    let since = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let dir = std::path::absolute(dir)
        .map_err(|e| CliError::new(format!("cannot resolve `{}`", dir.display()), e))?;
    let work = Work {
        dir: dir.join(format!(".cowkit-demo-{}-packages", std::process::id())),
        keep,
    };
    std::fs::create_dir(&work.dir)
        .map_err(|e| CliError::new(format!("cannot create `{}`", work.dir.display()), e))?;
    let home = work.dir.join("home");
    mkdir(&home)?;
    std::fs::write(home.join(".rpmmacros"), format!("%_dbpath {DBPATH}\n"))
        .map_err(|e| CliError::new("cannot write the demo's .rpmmacros", e))?;
    let p = Paths {
        repo: repo::build(&work.dir, &home)?,
        home,
        dnf_cache: work.dir.join("dnf-cache"),
        ck_cache: work.dir.join("cowkit-cache"),
    };
    let out = dnf(&p, None)
        .arg("makecache")
        .output()
        .map_err(|e| spawn_error("dnf", e))?;
    check(&out, "dnf makecache")?;
    let mut installs = Vec::new();
    for method in ["dnf", "cowkit dnf (cold cache)", "cowkit dnf (warm cache)"] {
        let slug = method.replace(['(', ')'], "").replace(' ', "-");
        installs.push(install(&p, method, &work.dir.join("roots").join(slug))?);
    }
    let mut report = compare(&p, installs, since)?;
    report.kept = keep.then(|| work.dir.clone());
    Ok(report)
}

/// `dnf` with the demo's options, on `root` if given.
fn dnf(p: &Paths, root: Option<&Path>) -> Command {
    let mut c = Command::new("dnf");
    c.env("HOME", &p.home)
        .env("LC_ALL", "C.UTF-8")
        .args(dnf_args(p));
    if let Some(root) = root {
        c.arg(format!("--installroot={}", root.display()));
    }
    c
}

/// dnf's options: the demo repository alone, nothing from the host.
fn dnf_args(p: &Paths) -> Vec<OsString> {
    let conf = p.home.join("dnf.conf");
    let _ = std::fs::write(&conf, "[main]\n");
    [
        "-y".to_string(),
        "--quiet".into(),
        "--noplugins".into(),
        "--nogpgcheck".into(),
        format!("--config={}", conf.display()),
        "--releasever=1".into(),
        "--setopt=reposdir=/dev/null".into(),
        format!("--setopt=cachedir={}", p.dnf_cache.display()),
        "--setopt=skip_if_unavailable=False".into(),
        "--setopt=install_weak_deps=False".into(),
        format!("--repofrompath=demo,file://{}", p.repo.display()),
        "--repo".into(),
        "demo".into(),
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

/// Install [`TOP`] into the new root `root` by `method`.
fn install(p: &Paths, method: &'static str, root: &Path) -> Result<Install, CliError> {
    mkdir(root)?;
    let mut cmd = if method == "dnf" {
        let mut c = dnf(p, Some(root));
        c.args(["install", TOP]);
        c
    } else {
        let exe = std::env::current_exe()
            .map_err(|e| CliError::new("cannot find the cowkit binary", e))?;
        let mut c = Command::new(exe);
        c.env("LC_ALL", "C.UTF-8")
            .arg("dnf")
            .arg("--root")
            .arg(root)
            .arg("--cache")
            .arg(&p.ck_cache)
            .args(["--json", "--dbpath", DBPATH, "--"])
            .args(dnf_args(p))
            .args(["install", TOP]);
        c
    };
    let dnf_resolve = if method == "dnf" {
        Some(resolve(p, &root.with_extension("resolve"))?)
    } else {
        None
    };
    syncfs(root)?;
    let before = used(root)?;
    let t = Instant::now();
    let out = cmd.output().map_err(|e| spawn_error("dnf", e))?;
    let seconds = t.elapsed().as_secs_f64();
    check(&out, &format!("{method} install {TOP}"))?;
    let resolve_seconds = match dnf_resolve {
        Some(s) => s,
        None => serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .and_then(|v| v["resolve_seconds"].as_f64())
            .ok_or_else(|| CliError::msg("`cowkit dnf --json` printed no resolve_seconds"))?,
    };
    syncfs(root)?;
    let disk_used_bytes = used(root)?.saturating_sub(before);
    let (shared_bytes, file_bytes) = shared(root, &list(root, &excluded(p))?)?;
    Ok(Install {
        method,
        root: root.to_path_buf(),
        seconds,
        resolve_seconds,
        disk_used_bytes,
        file_bytes,
        shared_bytes,
    })
}

/// Seconds of `dnf --assumeno install` [`TOP`] on the new empty root
/// `root` (removed afterwards): dnf's resolve without its transaction.
fn resolve(p: &Paths, root: &Path) -> Result<f64, CliError> {
    mkdir(root)?;
    let t = Instant::now();
    let out = dnf(p, Some(root))
        .args(["--assumeno", "install", TOP])
        .output()
        .map_err(|e| spawn_error("dnf", e))?;
    let seconds = t.elapsed().as_secs_f64();
    // dnf exits 1 after "Operation aborted"; anything else said on stderr
    // is a failure.
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr
        .lines()
        .all(|l| l.trim().is_empty() || l.contains("Operation aborted"))
    {
        check(&out, &format!("dnf --assumeno install {TOP}"))?;
    }
    let _ = std::fs::remove_dir_all(root);
    Ok(seconds)
}

/// [`EXCLUDED`] for this run.
fn excluded(p: &Paths) -> Vec<String> {
    let cache = p.dnf_cache.to_string_lossy();
    EXCLUDED
        .iter()
        .map(|(x, _)| x.replace("{cache}", cache.trim_start_matches('/')))
        .collect()
}

/// Compare every root with dnf's.
fn compare(p: &Paths, installs: Vec<Install>, since: i64) -> Result<Packages, CliError> {
    let excluded = excluded(p);
    let a = &installs[0].root;
    let la: Listing = list(a, &excluded)?;
    let installed = rpm(p, a, &["-qa", "--qf", "%{NEVRA}\\n"])?;
    let rpm_va = rpm(p, a, &["-Va"])?;
    let mut diffs = Vec::new();
    for other in &installs[1..] {
        let b = &other.root;
        let lb = list(b, &excluded)?;
        let more = differences((a, &la), (b, &lb), &excluded, since)?;
        diffs.extend(more.into_iter().map(|d| format!("{}: {d}", other.method)));
        if rpm(p, b, &["-qa", "--qf", "%{NEVRA}\\n"])? != installed {
            diffs.push(format!("{}: `rpm -qa` differs", other.method));
        }
        if rpm(p, b, &["-Va"])? != rpm_va {
            diffs.push(format!("{}: `rpm -Va` differs", other.method));
        }
    }
    Ok(Packages {
        installed,
        installs,
        rpm_va,
        entries: la.len(),
        equal: diffs.is_empty(),
        differences: diffs,
        kept: None,
    })
}

/// The sorted lines `rpm --root ROOT --dbpath` [`DBPATH`] `ARGS` prints
/// (`rpm -Va` exits 1 when it prints something).
fn rpm(p: &Paths, root: &Path, args: &[&str]) -> Result<Vec<String>, CliError> {
    let out = Command::new("rpm")
        .env("HOME", &p.home)
        .env("LC_ALL", "C.UTF-8")
        .arg(format!("--root={}", root.display()))
        .arg(format!("--dbpath={DBPATH}"))
        .args(args)
        .output()
        .map_err(|e| spawn_error("rpm", e))?;
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    if !out.status.success() && (lines.is_empty() || !out.stderr.is_empty()) {
        check(&out, &format!("rpm {}", args.join(" ")))?;
    }
    lines.sort();
    Ok(lines)
}

/// `syncfs` of the filesystem of `dir`.
fn syncfs(dir: &Path) -> Result<(), CliError> {
    let err = |e| {
        CliError::new(
            format!("cannot sync the filesystem of `{}`", dir.display()),
            e,
        )
    };
    let f = std::fs::File::open(dir).map_err(err)?;
    rustix::fs::syncfs(&f).map_err(|e| err(e.into()))
}

/// Bytes in use on the filesystem of `dir`.
fn used(dir: &Path) -> Result<u64, CliError> {
    let s = rustix::fs::statvfs(dir).map_err(|e| {
        CliError::new(
            format!("cannot statvfs `{}`", dir.display()),
            std::io::Error::from(e),
        )
    })?;
    Ok((s.f_blocks - s.f_bfree) * s.f_frsize)
}
