//! dnf5 resolving for cowkit through cowkit's libdnf5 plugin
//! (`cowkit_dnf::dnf5`, source in `crates/cowkit-dnf/dnf5-plugin/`), on
//! the Fedora-shaped repository (`cowkit_testutil::fedora`), with dnf5
//! 5.4 and rpm 4.20 from `COWKIT_FEDORA_TOOLS`:
//!
//! - [`dnf5_through_the_plugin_stops_before_downloading_and_plans_what_dnf5_installs`]:
//!   plain `dnf5 --installroot A install …` installs; the same command on
//!   the twin root B through the plugin stops with the plugin's status,
//!   having downloaded and installed nothing, and writes the order and the
//!   plan. The plan's packages are exactly the repository's `primary.xml`
//!   entries (checksum, size, location, NEVRA) of what dnf5 installed in A;
//!   rpm 4.20 installing them in the plugin's order into B gives A's
//!   `rpm -qa` (in the database's order: the order rpm installed them)
//!   and A's scriptlet log, byte for byte. With `SOURCE_DATE_EPOCH` the
//!   order is sorted by NEVRA, as dnf5 then hands rpm its packages;
//!   `reinstall` writes `r` lines. Then `upgrade` (v2 over HTTP)
//!   through the plugin on B stops having downloaded nothing, and its
//!   order's installs and erasures are what plain `dnf5 upgrade` changes
//!   in A (the plan's checksums v2's `primary.xml`'s); B follows A by plain
//!   dnf5 and the twins agree again; `remove` through the plugin stops
//!   with an empty plan, its erasures what plain `dnf5 remove` removes.
//! - [`what_cowkit_cannot_fetch_goes_on_in_dnf5_and_a_failure_stays_one`]:
//!   a repository with a proxy set: the plan names why, and dnf5 goes on
//!   (exit 0), or, with `COWKIT_DNF_PLAN_STRICT`, fails saying why; a
//!   package that does not exist: dnf5's own failure, no plan;
//!   a package file on the command line: planned from where it was given.
//! - [`the_plan_carries_the_repositorys_keys_and_refuses_keys_only_the_root_trusts`]:
//!   with `pkg_gpgcheck` and the repository's `gpgkey`, a root trusting
//!   only that key: the plugin stops, the plan names the key file; a root
//!   whose database trusts another key: the plan's `why` names that key
//!   (dnf5 would accept packages signed by it) and dnf5 goes on.
//!
//! - [`cowkit_dnf_over_dnf5_installs_upgrades_and_removes_as_dnf5_does`]:
//!   `cowkit dnf` with dnf5 as the real dnf, on twin roots with plain
//!   `dnf5 --installroot`, rpm 4.20 registering: install, reinstall,
//!   upgrade, downgrade and remove leave equal roots (the file triggers'
//!   `$1`/`$2` in the scriptlet logs included), the upgrade's rename of
//!   procps by procps-ng's `Obsoletes` (an erasure dnf5 hands rpm on its
//!   own) too, and the rename alone on twin roots holding only procps.
//! - [`renames_by_obsoletes_run_as_dnf5_hands_them_to_rpm`]: two renames
//!   by `Obsoletes` in one `upgrade`, the obsoleted packages with rpm
//!   4.20's `%preuntrans`/`%postuntrans`, one obsoleting package's `%pre`
//!   failing: the erasures dnf5 hands rpm on their own run with rpm's `$1`
//!   (also the one whose obsoleting package failed), and the twin roots
//!   agree.
//! - [`cowkit_dnf_over_dnf5_installs_what_dnf5_downloaded_where_it_cannot_fetch`]:
//!   the plan's `why` makes dnf5 download; cowkit installs that, or with
//!   `--downloader cowkit` fails naming why.
//! - [`the_shim_as_dnf5_builds_what_plain_dnf5_builds_from_mkosis_command_line`]:
//!   cowkit as `dnf5` (the `--shim-dir` link first on `PATH`) with
//!   mkosi's dnf5 command line builds the root plain dnf5 builds (dnf5's
//!   cache keeping the packages, as mkosi's `keepcache=1` asks), and
//!   honours the root's own drop-in's `tsflags=nodocs` as dnf5 does.
//! - [`the_shim_as_dnf5_refuses_by_name_what_it_cannot_honour`] refuses
//!   by name dnf5's flags and options cowkit cannot carry out.
//!
//! The tools come from `COWKIT_FEDORA_TOOLS` (the prefix
//! `scripts/fedora-tools.sh all` prints) and the plugin from
//! `COWKIT_DNF5_PLUGIN` (`scripts/test-dnf5.sh` builds it); without them
//! the test fails and says so. Ignored unless run by `scripts/test-dnf5.sh`.
//!
//! Needs root (scriptlets run chrooted), `rpmbuild`, `createrepo_c`,
//! `busybox-static`, `gzip`.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::{as_root, tmp, Run};
use cowkit_dnf::dnf5::{self as d5, Outcome, PluginDirs};
use cowkit_testutil::fedora::{build, INSTALL, LOG, REMOVE};
use cowkit_testutil::run_ok;

/// The prefix of the Fedora tools, checked: dnf5 and rpm 4.20 in `bin`.
fn fedora_tools() -> PathBuf {
    let Some(prefix) = std::env::var_os("COWKIT_FEDORA_TOOLS") else {
        panic!(
            "COWKIT_FEDORA_TOOLS is not set: this tier runs dnf5; build or find it with \
             `bash scripts/fedora-tools.sh all` and set COWKIT_FEDORA_TOOLS to the prefix it prints \
             (scripts/test-dnf5.sh does)"
        );
    };
    let prefix = PathBuf::from(prefix);
    let out = run_ok(
        Command::new(prefix.join("bin/rpm")).arg("--version"),
        "the prefix's rpm",
    );
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(v.starts_with("RPM version 4.20."), "not rpm 4.20: {v}");
    assert!(
        prefix.join("bin/dnf5").is_file(),
        "COWKIT_FEDORA_TOOLS: no {}/bin/dnf5",
        prefix.display()
    );
    prefix
}

/// The plugin library, which must be there.
fn plugin() -> PathBuf {
    let p = std::env::var_os("COWKIT_DNF5_PLUGIN").unwrap_or_else(|| {
        panic!(
            "COWKIT_DNF5_PLUGIN is not set: build the plugin with \
             `make -C crates/cowkit-dnf/dnf5-plugin` (scripts/test-dnf5.sh does)"
        )
    });
    let p = PathBuf::from(p);
    assert!(p.is_file(), "COWKIT_DNF5_PLUGIN: no {}", p.display());
    p
}

/// dnf5's options for `root` with only the repository at URL `repo` (id `local`), no host
/// repositories, `cache` as its cache directory; then the command.
fn dnf5_args(repo: &str, cache: &Path, rest: &[&str]) -> Vec<OsString> {
    let mut v: Vec<OsString> = [
        "-y",
        "--releasever=40",
        "--setopt=reposdir=/dev/null",
        "--setopt=install_weak_deps=False",
        "--setopt=clean_requirements_on_remove=False",
        "--setopt=skip_if_unavailable=False",
        "--nogpgcheck",
        "--repo=local",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    v.push(format!("--setopt=cachedir={}", cache.display()).into());
    v.push(format!("--repofrompath=local,{repo}").into());
    v.extend(rest.iter().map(OsString::from));
    v
}

fn env<'a>(c: &'a mut Command, prefix: &Path) -> &'a mut Command {
    let path = format!(
        "{}:{}",
        prefix.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.env("LC_ALL", "C.UTF-8")
        .env("HOME", "/root")
        .env("PATH", path)
        .env_remove("SOURCE_DATE_EPOCH")
}

/// `rpm -qa` in the database's order (the order rpm installed them);
/// none in a root without a database.
fn qa(prefix: &Path, root: &Path) -> Vec<String> {
    if !root.join("usr/lib/sysimage/rpm").exists() {
        return Vec::new();
    }
    let out = run_ok(
        env(&mut Command::new(prefix.join("bin/rpm")), prefix)
            .arg(format!("--root={}", root.display()))
            .args(["-qa", "--qf", "%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}\\n"]),
        "rpm -qa",
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn log(root: &Path) -> String {
    std::fs::read_to_string(root.join(LOG.trim_start_matches('/'))).unwrap_or_default()
}

/// An HTTP server on 127.0.0.1 serving a directory and logging each
/// request's path (killed on drop).
struct Server {
    child: Child,
    url: String,
    log: PathBuf,
}

const SERVER: &str = r#"
import http.server, sys
root, log = sys.argv[1:3]
class H(http.server.SimpleHTTPRequestHandler):
    def __init__(s, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(s, *a):
        pass
    def do_GET(s):
        with open(log, "a") as f:
            f.write(s.path + "\n")
        return super().do_GET()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

impl Server {
    fn start(dir: &Path, log: &Path) -> Server {
        let mut child = Command::new("python3")
            .args(["-c", SERVER])
            .arg(dir)
            .arg(log)
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
            url: format!("http://127.0.0.1:{port}"),
            log: log.to_path_buf(),
        }
    }

    /// The paths requested so far.
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `.rpm` files under `dir`.
fn rpms_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(rpms_under(&p));
        } else if p.extension().is_some_and(|x| x == "rpm") {
            out.push(p);
        }
    }
    out
}

/// One `<package>` of `primary.xml`.
#[derive(Debug, PartialEq)]
struct Primary {
    epoch: u32,
    ver: String,
    rel: String,
    arch: String,
    checksum: (String, String),
    size: u64,
    href: String,
}

/// `NAME-VERSION-RELEASE.ARCH` → its entry, from `repo`'s gzipped
/// `primary.xml` (createrepo_c's layout: one element per line).
fn primary(repo: &Path) -> BTreeMap<String, Primary> {
    let dir = repo.join("repodata");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with("-primary.xml.gz"))
        .expect("primary.xml.gz");
    let out = run_ok(Command::new("gzip").arg("-dc").arg(&file), "gzip -dc");
    let text = String::from_utf8(out.stdout).unwrap();
    let attr = |line: &str, name: &str| -> String {
        let key = format!("{name}=\"");
        let start = line
            .find(&key)
            .unwrap_or_else(|| panic!("{name} in {line}"))
            + key.len();
        line[start..][..line[start..].find('"').unwrap()].to_string()
    };
    let mut all = BTreeMap::new();
    for pkg in text.split("<package ").skip(1) {
        let line = |tag: &str| {
            pkg.lines()
                .map(str::trim)
                .find(|l| l.starts_with(tag))
                .unwrap_or_else(|| panic!("{tag} in {pkg}"))
                .to_string()
        };
        let inner = |tag: &str| {
            let l = line(&format!("<{tag}"));
            l[l.find('>').unwrap() + 1..l.rfind("</").unwrap()].to_string()
        };
        let version = line("<version ");
        let checksum = line("<checksum ");
        let p = Primary {
            epoch: attr(&version, "epoch").parse().unwrap(),
            ver: attr(&version, "ver"),
            rel: attr(&version, "rel"),
            arch: inner("arch"),
            checksum: (attr(&checksum, "type"), inner("checksum")),
            size: attr(&line("<size "), "package").parse().unwrap(),
            href: attr(&line("<location "), "href"),
        };
        all.insert(
            format!("{}-{}-{}.{}", inner("name"), p.ver, p.rel, p.arch),
            p,
        );
    }
    all
}

#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn dnf5_through_the_plugin_stops_before_downloading_and_plans_what_dnf5_installs() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "scriptlets run chrooted") {
        return;
    }
    let repo = build(tmp());
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    let dnf5 = prefix.join("bin/dnf5");

    // A: plain dnf5.
    let file_url = format!("file://{}", repo.v1.display());
    let args = dnf5_args(&file_url, &work.path().join("cache-a"), &[]);
    run_ok(
        env(&mut Command::new(&dnf5), &prefix)
            .arg(format!("--installroot={}", a.display()))
            .args(&args)
            .arg("install")
            .args(INSTALL),
        "dnf5 install (plain)",
    );
    let qa_a = qa(&prefix, &a);
    assert!(qa_a.len() >= INSTALL.len(), "A: {qa_a:?}");

    // B: through the plugin, the repository served over HTTP.
    let server = Server::start(&repo.v1, &work.path().join("requests"));
    let home = work.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let dirs = PluginDirs::make(
        &home,
        &so,
        &d5::default_plugin_libs(&dnf5),
        &d5::CONF_DIRS.map(Path::new),
    )
    .unwrap();
    let (order, plan) = (home.join("order"), home.join("plan"));
    let cache_b = work.path().join("cache-b");
    let mut args = dnf5_args(&server.url, &cache_b, &["install", "--downloadonly"]);
    args.extend(INSTALL.iter().map(OsString::from));
    d5::refuse_plugin_options(&args).unwrap();
    let out = env(
        &mut d5::command(&dnf5, &b, &dirs, &order, &plan, &args),
        &prefix,
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(d5::STOP_STATUS),
        "dnf5 with the plugin: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Outcome::Stopped(plan) = d5::outcome(out.status, &plan).unwrap() else {
        panic!("not stopped");
    };
    assert!(qa(&prefix, &b).is_empty(), "dnf5 installed something in B");
    let requests = server.requests();
    assert!(
        requests.iter().any(|r| r.ends_with("repomd.xml")),
        "dnf5 did not read the repository: {requests:?}"
    );
    let fetched: Vec<&String> = requests.iter().filter(|r| r.ends_with(".rpm")).collect();
    assert!(fetched.is_empty(), "dnf5 downloaded {fetched:?}");
    assert_eq!(
        rpms_under(&b),
        Vec::<PathBuf>::new(),
        "dnf5 downloaded into B"
    );
    assert_eq!(
        rpms_under(&cache_b),
        Vec::<PathBuf>::new(),
        "dnf5 downloaded into its cache"
    );

    // The order: every package dnf5 installed in A, each once, all installs.
    let order = std::fs::read_to_string(&order).unwrap();
    let lines: Vec<(&str, &str)> = order.lines().map(|l| l.split_once('\t').unwrap()).collect();
    assert!(lines.iter().all(|(how, _)| *how == "i"), "{order}");
    let nevras: Vec<&str> = lines.iter().map(|(_, n)| *n).collect();
    let mut sorted_a = qa_a.clone();
    sorted_a.sort();
    let mut sorted_order: Vec<String> = nevras.iter().map(|n| n.to_string()).collect();
    sorted_order.sort();
    assert_eq!(
        sorted_order, sorted_a,
        "the order's packages are not what dnf5 installed"
    );

    // The plan: in the order's order, each as primary.xml has it.
    let primary = primary(&repo.v1);
    let planned: Vec<&str> = plan.packages.iter().map(|p| p.nevra.as_str()).collect();
    assert_eq!(planned, nevras);
    for p in &plan.packages {
        let e = &primary[&p.nevra];
        assert_eq!(
            (
                p.epoch,
                &p.version,
                &p.release,
                &p.arch,
                p.size,
                &p.checksum
            ),
            (e.epoch, &e.ver, &e.rel, &e.arch, e.size, &e.checksum),
            "{}",
            p.nevra
        );
        assert_eq!(
            p.urls,
            [format!("{}/{}", server.url, e.href)],
            "{}",
            p.nevra
        );
        assert!(p.local.is_none() && p.repo == "local", "{p:?}");
    }
    let r = &plan.repos["local"];
    assert!(!r.gpgcheck, "--nogpgcheck");
    assert!(plan.why.is_empty(), "{:?}", plan.why);

    // rpm 4.20 installing the plan in the plugin's order gives A's root.
    let mut rpm = Command::new(prefix.join("bin/rpm"));
    env(&mut rpm, &prefix)
        .arg(format!("--root={}", b.display()))
        .arg("-i");
    for p in &plan.packages {
        rpm.arg(repo.v1.join(&primary[&p.nevra].href));
    }
    run_ok(&mut rpm, "rpm -i of the plan");
    assert_eq!(qa(&prefix, &b), qa_a, "rpm -qa (in install order)");
    let log_a = log(&a);
    assert!(!log_a.is_empty(), "A has no scriptlet log");
    assert_eq!(log(&b), log_a, "the scriptlet logs");

    // With SOURCE_DATE_EPOCH, dnf5 hands rpm its packages sorted by NEVRA
    // (reproducible builds): so does the plugin's order.
    let home = work.path().join("home-sde");
    std::fs::create_dir(&home).unwrap();
    let dirs = PluginDirs::make(
        &home,
        &so,
        &d5::default_plugin_libs(&dnf5),
        &d5::CONF_DIRS.map(Path::new),
    )
    .unwrap();
    let c = work.path().join("c");
    let out = env(
        &mut d5::command(
            &dnf5,
            &c,
            &dirs,
            &home.join("order"),
            &home.join("plan"),
            &args,
        ),
        &prefix,
    )
    .env("SOURCE_DATE_EPOCH", "1420070400")
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(d5::STOP_STATUS),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sde: Vec<String> = std::fs::read_to_string(home.join("order"))
        .unwrap()
        .lines()
        .map(|l| l.split_once('\t').unwrap().1.to_string())
        .collect();
    let mut sorted = sde.clone();
    sorted.sort();
    assert_eq!(sde, sorted, "SOURCE_DATE_EPOCH: sorted by NEVRA");
    assert_eq!(sorted, sorted_order, "the same packages");
    assert_ne!(
        sde, nevras,
        "the order without SOURCE_DATE_EPOCH is dnf5's, not sorted"
    );

    // Reinstall: `r` lines, which cowkit hands rpm as `--reinstall`.
    let (order, plan) = through_plugin(
        &prefix,
        &so,
        &b,
        &work.path().join("home-reinstall"),
        &dnf5_args(
            &server.url,
            &cache_b,
            &["reinstall", "--downloadonly", "bash"],
        ),
    );
    // (dnf5 lists the installed copy as replaced: an `e` line, which
    // rpm's reinstall element takes care of.)
    let (inbound, erased) = changes(&order);
    assert_eq!(inbound, erased, "{order}");
    assert!(
        order.starts_with("r\tbash-") && inbound.len() == 1,
        "{order}"
    );
    assert_eq!(plan.expect("a plan").packages.len(), 1);
    let order_file = work.path().join("home-reinstall/order");
    assert!(cowkit_dnf::order::reinstalls(&order_file).unwrap());

    // Upgrade (v2 over HTTP): through the plugin on B, plain on A; the
    // plugin's order names what dnf5 changed in A, the plan is v2's
    // primary.xml; then B follows A by plain dnf5, and the twins agree.
    let server2 = Server::start(&repo.v2, &work.path().join("requests2"));
    let v2_url = format!("file://{}", repo.v2.display());
    let before = qa(&prefix, &a);
    let (order, plan) = through_plugin(
        &prefix,
        &so,
        &b,
        &work.path().join("home-upgrade"),
        &dnf5_args(&server2.url, &cache_b, &["upgrade", "--downloadonly"]),
    );
    let fetched: Vec<String> = server2
        .requests()
        .into_iter()
        .filter(|r| r.ends_with(".rpm"))
        .collect();
    assert!(fetched.is_empty(), "dnf5 downloaded {fetched:?}");
    let plan = plan.expect("a plan");
    plain(
        &prefix,
        &a,
        &dnf5_args(&v2_url, &work.path().join("cache-a"), &["upgrade"]),
    );
    let after = qa(&prefix, &a);
    let (inbound, erased) = changes(&order);
    assert!(!inbound.is_empty() && !erased.is_empty(), "{order}");
    assert_eq!(
        inbound,
        minus(&after, &before),
        "what the upgrade installs: {order}"
    );
    assert_eq!(
        erased,
        minus(&before, &after),
        "what the upgrade erases: {order}"
    );
    let primary2 = self::primary(&repo.v2);
    let planned: BTreeMap<&str, &str> = plan
        .packages
        .iter()
        .map(|p| (p.nevra.as_str(), p.checksum.1.as_str()))
        .collect();
    assert_eq!(planned.len(), inbound.len());
    for n in &inbound {
        assert_eq!(
            planned.get(n.as_str()),
            Some(&primary2[n].checksum.1.as_str()),
            "{n}"
        );
    }
    plain(
        &prefix,
        &b,
        &dnf5_args(&v2_url, &work.path().join("cache-b2"), &["upgrade"]),
    );
    assert_eq!(qa(&prefix, &b), after, "rpm -qa after the upgrade");
    assert_eq!(log(&b), log(&a), "the scriptlet logs after the upgrade");

    // Remove: nothing to fetch, the plugin stops all the same; its
    // erasures are what plain dnf5 removes from A.
    let mut rm = vec!["remove"];
    rm.extend(REMOVE);
    let (order, plan) = through_plugin(
        &prefix,
        &so,
        &b,
        &work.path().join("home-remove"),
        &dnf5_args(&v2_url, &cache_b, &rm),
    );
    assert!(plan.expect("a plan").packages.is_empty());
    let before = qa(&prefix, &a);
    plain(
        &prefix,
        &a,
        &dnf5_args(&v2_url, &work.path().join("cache-a"), &rm),
    );
    let (inbound, erased) = changes(&order);
    assert!(inbound.is_empty(), "{order}");
    assert_eq!(
        erased,
        minus(&before, &qa(&prefix, &a)),
        "what remove erases: {order}"
    );
}

/// dnf5 with `args` on `root` through the plugin (its files in `home`),
/// which must stop it: the order's text and the plan.
fn through_plugin(
    prefix: &Path,
    so: &Path,
    root: &Path,
    home: &Path,
    args: &[OsString],
) -> (String, Option<cowkit_dnf::plan::Plan>) {
    let dnf5 = prefix.join("bin/dnf5");
    std::fs::create_dir(home).unwrap();
    let dirs = PluginDirs::make(
        home,
        so,
        &d5::default_plugin_libs(&dnf5),
        &d5::CONF_DIRS.map(Path::new),
    )
    .unwrap();
    let (order, plan) = (home.join("order"), home.join("plan"));
    let out = env(
        &mut d5::command(&dnf5, root, &dirs, &order, &plan, args),
        prefix,
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(d5::STOP_STATUS),
        "dnf5 with the plugin: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Outcome::Stopped(plan) = d5::outcome(out.status, &plan).unwrap() else {
        panic!("not stopped");
    };
    (std::fs::read_to_string(order).unwrap(), Some(plan))
}

/// Plain dnf5 with `args` on `root`.
fn plain(prefix: &Path, root: &Path, args: &[OsString]) {
    run_ok(
        env(&mut Command::new(prefix.join("bin/dnf5")), prefix)
            .arg(format!("--installroot={}", root.display()))
            .args(args),
        "dnf5 (plain)",
    );
}

/// The order's packages that go in (`i`, `u`, `r`) and out (`e`), sorted.
fn changes(order: &str) -> (Vec<String>, Vec<String>) {
    let (mut inbound, mut erased) = (Vec::new(), Vec::new());
    for l in order.lines() {
        let (how, nevra) = l.split_once('\t').unwrap();
        match how {
            "i" | "u" | "r" => inbound.push(nevra.to_string()),
            "e" => erased.push(nevra.to_string()),
            _ => panic!("{l}"),
        }
    }
    inbound.sort();
    erased.sort();
    (inbound, erased)
}

/// What `a` has that `b` has not, sorted.
fn minus(a: &[String], b: &[String]) -> Vec<String> {
    let mut v: Vec<String> = a.iter().filter(|x| !b.contains(x)).cloned().collect();
    v.sort();
    v
}

#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn what_cowkit_cannot_fetch_goes_on_in_dnf5_and_a_failure_stays_one() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "dnf5 --installroot writes its root") {
        return;
    }
    let repo = build(tmp());
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let dnf5 = prefix.join("bin/dnf5");
    let run_env = |name: &str, extra: &[&str], strict: bool| {
        let home = work.path().join(name);
        std::fs::create_dir(&home).unwrap();
        let dirs = PluginDirs::make(
            &home,
            &so,
            &d5::default_plugin_libs(&dnf5),
            &d5::CONF_DIRS.map(Path::new),
        )
        .unwrap();
        let plan = home.join("plan");
        let root = home.join("root");
        let args = dnf5_args(
            &format!("file://{}", repo.v1.display()),
            &home.join("cache"),
            extra,
        );
        let mut c = d5::command(&dnf5, &root, &dirs, &home.join("order"), &plan, &args);
        env(&mut c, &prefix);
        if strict {
            c.env("COWKIT_DNF_PLAN_STRICT", "1");
        }
        (c.output().unwrap(), plan)
    };
    let run = |name: &str, extra: &[&str]| run_env(name, extra, false);

    // A proxy cowkit does not go through: the plan says so, dnf5 goes on.
    let (out, plan) = run(
        "proxy",
        &[
            "--setopt=local.proxy=http://127.0.0.1:9",
            "install",
            "--downloadonly",
            "bash",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Outcome::Finished(Some(plan)) = d5::outcome(out.status, &plan).unwrap() else {
        panic!("no plan");
    };
    assert_eq!(plan.why, ["repository local: proxy is set"]);

    // The same with COWKIT_DNF_PLAN_STRICT: dnf5 fails, saying why.
    let (out, plan) = run_env(
        "proxy-strict",
        &[
            "--setopt=local.proxy=http://127.0.0.1:9",
            "install",
            "--downloadonly",
            "bash",
        ],
        true,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .contains("cowkit cannot fetch these packages itself: repository local: proxy is set"),
        "{stderr}"
    );
    assert!(matches!(
        d5::outcome(out.status, &plan),
        Err(cowkit_dnf::Error::Dnf5Failed { .. })
    ));

    // A package that does not exist: dnf5's own failure, no plan.
    let (out, plan) = run("missing", &["install", "--downloadonly", "no-such-package"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!plan.exists());
    assert!(matches!(
        d5::outcome(out.status, &plan),
        Err(cowkit_dnf::Error::Dnf5Failed { .. })
    ));

    // A package file named on the command line: read from where it was
    // given, in a repository entry of its own; dnf5 stops all the same.
    let setup = repo.rpm("setup-2.14.5").to_str().unwrap().to_string();
    let (out, plan) = run("cmdline", &["install", "--downloadonly", &setup]);
    assert_eq!(
        out.status.code(),
        Some(d5::STOP_STATUS),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Outcome::Stopped(plan) = d5::outcome(out.status, &plan).unwrap() else {
        panic!("not stopped");
    };
    let [p] = &plan.packages[..] else {
        panic!("{:?}", plan.packages);
    };
    assert_eq!(p.local.as_deref(), Some(Path::new(&setup)));
    assert!(p.urls.is_empty());
    let primary = primary(&repo.v1);
    let e = &primary[&p.nevra];
    assert_eq!((&p.checksum, p.size), (&e.checksum, e.size), "the file's");
    assert!(!plan.repos[&p.repo].gpgcheck, "{}", p.repo);
}

#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn the_plan_carries_the_repositorys_keys_and_refuses_keys_only_the_root_trusts() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "rpm --root --import") {
        return;
    }
    let repo = build(tmp());
    let keys = cowkit_testutil::rpm::pgp_fixtures(tmp());
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let dnf5 = prefix.join("bin/dnf5");
    let short_id = |key: &str| {
        let f = cowkit_testutil::rpm::pgp_fingerprint(&keys, key).to_lowercase();
        f[f.len() - 8..].to_string()
    };
    // A root whose database trusts `imported`; the repository lists rsa.
    let run = |name: &str, imported: &str| {
        let home = work.path().join(name);
        let root = home.join("root");
        std::fs::create_dir_all(&root).unwrap();
        run_ok(
            env(&mut Command::new(prefix.join("bin/rpm")), &prefix)
                .arg(format!("--root={}", root.display()))
                .arg("--import")
                .arg(keys.join(format!("{imported}.asc"))),
            "rpm --import",
        );
        let dirs = PluginDirs::make(
            &home,
            &so,
            &d5::default_plugin_libs(&dnf5),
            &d5::CONF_DIRS.map(Path::new),
        )
        .unwrap();
        let mut args: Vec<OsString> = dnf5_args(
            &format!("file://{}", repo.v1.display()),
            &home.join("cache"),
            &["install", "--downloadonly", "bash"],
        )
        .into_iter()
        .filter(|a| a != "--nogpgcheck")
        .collect();
        args.push("--setopt=local.pkg_gpgcheck=1".into());
        args.push(
            format!(
                "--setopt=local.gpgkey=file://{}",
                keys.join("rsa.asc").display()
            )
            .into(),
        );
        let plan = home.join("plan");
        let out = env(
            &mut d5::command(&dnf5, &root, &dirs, &home.join("order"), &plan, &args),
            &prefix,
        )
        .output()
        .unwrap();
        (out, plan)
    };

    // The root trusts only the repository's key: cowkit fetches.
    let (out, plan) = run("same", "rsa");
    assert_eq!(
        out.status.code(),
        Some(d5::STOP_STATUS),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Outcome::Stopped(plan) = d5::outcome(out.status, &plan).unwrap() else {
        panic!("not stopped");
    };
    let r = &plan.repos["local"];
    assert!(r.gpgcheck);
    assert_eq!(r.keys, [keys.join("rsa.asc")]);

    // The root trusts another key too: dnf5 would accept packages signed by
    // it, cowkit would not: the plan says so, naming the key, and dnf5 goes on.
    let (out, plan) = run("other", "wrong");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Outcome::Finished(Some(plan)) = d5::outcome(out.status, &plan).unwrap() else {
        panic!("no plan");
    };
    assert_eq!(plan.why.len(), 1, "{:?}", plan.why);
    assert!(
        plan.why[0].contains(&short_id("wrong")) && !plan.why[0].contains(&short_id("rsa")),
        "{:?}",
        plan.why
    );
}

/// What the tree comparison leaves out (paths relative to the root, each
/// with what is below it), and why.
const EXCLUDED: [(&str, &str); 4] = [
    (
        "usr/lib/sysimage/rpm",
        "the rpm database (sqlite pages differ with timing): compared through `rpm -qa` and `rpm -Va`",
    ),
    (
        "usr/lib/sysimage/libdnf5",
        "dnf5's own state (its transaction history and reasons): cowkit keeps none",
    ),
    ("var/log/dnf5.log", "dnf5's log: times and process ids"),
    (
        "var/log/dnf5.rpm.log",
        "dnf5's rpm log: times (cowkit's transaction is rpm's, not dnf5's)",
    ),
];

/// `root`'s tree without [`EXCLUDED`].
fn comparable(root: &Path) -> cowkit_testutil::tree::Tree {
    let below = |p: &str, x: &str| p == x || p.starts_with(&format!("{x}/"));
    cowkit_testutil::tree::snapshot(root)
        .into_iter()
        .filter(|(p, _)| !EXCLUDED.iter().any(|(x, _)| below(p, x)))
        .collect()
}

/// `rpm -Va` by the prefix's rpm, sorted; it must say nothing on stderr.
fn verify(prefix: &Path, root: &Path) -> Vec<String> {
    let out = env(&mut Command::new(prefix.join("bin/rpm")), prefix)
        .arg(format!("--root={}", root.display()))
        .arg("-Va")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.trim().is_empty(), "rpm -Va: {stderr}");
    let mut v: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// Every package's file states in the database as the prefix's rpm shows
/// them (`NEVRA state path`, sorted).
fn file_states(prefix: &Path, root: &Path) -> Vec<String> {
    let out = run_ok(
        env(&mut Command::new(prefix.join("bin/rpm")), prefix)
            .arg(format!("--root={}", root.display()))
            .args([
                "-qa",
                "--qf",
                "[%{=NEVRA} %{FILESTATES:fstate} %{FILENAMES}\\n]",
            ]),
        "rpm -qa --qf FILESTATES",
    );
    let mut v: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// Roots `a` (plain dnf5) and `b` (`cowkit dnf` over dnf5) agree on the
/// scriptlet log, `rpm -qa`, `rpm -Va`, the database's file states, the
/// root directory's mode and owner, and their trees (type, mode, size,
/// content, link target, owner, the mtime rpm sets from the package;
/// hardlink groups).
fn assert_same_roots(prefix: &Path, a: &Path, b: &Path, what: &str) {
    let (la, lb) = (log(a), log(b));
    assert!(!la.is_empty(), "{what}: A has no scriptlet log");
    assert!(
        la == lb,
        "{what}: the scriptlet logs differ\n--- dnf5 ---\n{la}--- cowkit ---\n{lb}"
    );
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(qa(prefix, a)),
        sorted(qa(prefix, b)),
        "{what}: rpm -qa"
    );
    assert_eq!(verify(prefix, a), verify(prefix, b), "{what}: rpm -Va");
    assert_eq!(
        file_states(prefix, a),
        file_states(prefix, b),
        "{what}: the database's file states"
    );
    let meta = |root: &Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(root).unwrap();
        (m.mode() & 0o7777, m.uid(), m.gid())
    };
    assert_eq!(meta(a), meta(b), "{what}: the root directory");
    let (ta, tb) = (comparable(a), comparable(b));
    let d = cowkit_testutil::tree::diff(&ta, &tb, |e| {
        (
            e.shape(),
            e.uid,
            e.gid,
            // rpm sets the package's mtime; what scriptlets write has the
            // time of the run, and directories change with their entries.
            (e.kind != 'd' && e.mtime <= cowkit_testutil::fedora::EPOCH_V2 + 86_400)
                .then_some(e.mtime),
        )
    });
    assert!(d.is_empty(), "{what}: the trees differ:\n{d:#?}");
    assert_eq!(
        cowkit_testutil::tree::hardlink_groups(&ta),
        cowkit_testutil::tree::hardlink_groups(&tb),
        "{what}: hardlinks"
    );
}

/// `cowkit dnf --json --root ROOT --cache CACHE -- ARGS` over the prefix's
/// dnf5 (`COWKIT_DNF`) with the plugin `so`, the prefix's rpm 4.20 first
/// on `PATH`.
fn cowkit_dnf5(prefix: &Path, so: &Path, root: &Path, cache: &Path, args: &[OsString]) -> Run {
    common::run(
        env(&mut common::cowkit(), prefix)
            .env("COWKIT_DNF", prefix.join("bin/dnf5"))
            .env("COWKIT_DNF5_PLUGIN", so)
            .env_remove("COWKIT_RPM")
            .args(["dnf", "--json", "--root"])
            .arg(root)
            .arg("--cache")
            .arg(cache)
            .arg("--")
            .args(args),
    )
}

/// `cowkit dnf` over dnf5 builds, reinstalls in, upgrades and shrinks the
/// Fedora-shaped root as plain `dnf5 --installroot` does, rpm 4.20 registering: after
/// each step the twins agree ([`assert_same_roots`]). dnf5 resolves
/// through the plugin and downloads nothing (the HTTP server sees one
/// request per package: cowkit's), cowkit fetches into its cache. The
/// packages are [`INSTALL`]; the upgrade renames procps (`procps-ng`
/// obsoletes it: dnf5 installs procps-ng as an install element and erases
/// procps as an element of its own, which rpm orders after the erasures
/// the upgrades bring), and cowkit runs it as rpm runs it under dnf5.
/// Then the rename alone, on twin roots holding only procps and what it
/// needs: the same again, procps's `%preun`/`%postun` with rpm's `$1`.
#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn cowkit_dnf_over_dnf5_installs_upgrades_and_removes_as_dnf5_does() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "scriptlets run chrooted") {
        return;
    }
    let repo = build(tmp());
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    let ck = work.path().join("ck-cache");
    let v1 = format!("file://{}", repo.v1.display());
    let v2 = format!("file://{}", repo.v2.display());
    let server = Server::start(&repo.v1, &work.path().join("requests"));

    let mut install = vec!["install"];
    install.extend(INSTALL);
    plain(
        &prefix,
        &a,
        &dnf5_args(&v1, &work.path().join("cache-a"), &install),
    );
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &b,
        &ck,
        &dnf5_args(&server.url, &work.path().join("cache-b"), &install),
    );
    assert!(r.ok, "cowkit dnf install: {}", r.stderr);
    let j = r.json();
    assert_eq!(j["downloaded_by"], "cowkit", "{j}");
    let rpms: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.ends_with(".rpm"))
        .collect();
    assert_eq!(
        rpms.len(),
        qa(&prefix, &a).len(),
        "cowkit fetched each package once: {rpms:?}"
    );
    assert_same_roots(&prefix, &a, &b, "install");

    // A reinstall: dnf5 lists the installed copy as replaced (an `e` of
    // the same name), cowkit reinstalls as rpm's `--reinstall`.
    let reinstall = ["reinstall", "bash", "glibc"];
    plain(
        &prefix,
        &a,
        &dnf5_args(&v1, &work.path().join("cache-a"), &reinstall),
    );
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &b,
        &ck,
        &dnf5_args(&v1, &work.path().join("cache-b"), &reinstall),
    );
    assert!(r.ok, "cowkit dnf reinstall: {}", r.stderr);
    assert_eq!(r.json()["downloaded_by"], "cowkit");
    assert_same_roots(&prefix, &a, &b, "reinstall");

    let upgrade = ["upgrade"];
    plain(
        &prefix,
        &a,
        &dnf5_args(&v2, &work.path().join("cache-a"), &upgrade),
    );
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &b,
        &ck,
        &dnf5_args(&v2, &work.path().join("cache-b"), &upgrade),
    );
    assert!(r.ok, "cowkit dnf upgrade: {}", r.stderr);
    assert_eq!(r.json()["downloaded_by"], "cowkit");
    assert_same_roots(&prefix, &a, &b, "upgrade");

    // A downgrade (v2 holds both versions): the old version is an `e` of
    // the same name.
    let downgrade = ["downgrade", "zlib", "krb5-libs.x86_64"];
    plain(
        &prefix,
        &a,
        &dnf5_args(&v2, &work.path().join("cache-a"), &downgrade),
    );
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &b,
        &ck,
        &dnf5_args(&v2, &work.path().join("cache-b"), &downgrade),
    );
    assert!(r.ok, "cowkit dnf downgrade: {}", r.stderr);
    let qa_b = qa(&prefix, &b);
    assert!(
        qa_b.contains(&"zlib-1.2.13-1.fc40.noarch".to_string()),
        "not downgraded: {qa_b:?}"
    );
    assert_same_roots(&prefix, &a, &b, "downgrade");

    let mut remove = vec!["remove"];
    remove.extend(REMOVE);
    plain(
        &prefix,
        &a,
        &dnf5_args(&v2, &work.path().join("cache-a"), &remove),
    );
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &b,
        &ck,
        &dnf5_args(&v2, &work.path().join("cache-b"), &remove),
    );
    assert!(r.ok, "cowkit dnf remove: {}", r.stderr);
    assert_same_roots(&prefix, &a, &b, "remove");

    // procps installed alone, then the upgrade that renames it, as plain
    // dnf5 runs it.
    let (c, d) = (work.path().join("c"), work.path().join("d"));
    let procps = ["install", "procps"];
    plain(
        &prefix,
        &c,
        &dnf5_args(&v1, &work.path().join("cache-c"), &procps),
    );
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &d,
        &ck,
        &dnf5_args(&v1, &work.path().join("cache-d"), &procps),
    );
    assert!(r.ok, "cowkit dnf install procps: {}", r.stderr);
    assert_same_roots(&prefix, &c, &d, "install procps");
    let before = log(&d);
    plain(
        &prefix,
        &c,
        &dnf5_args(&v2, &work.path().join("cache-c"), &upgrade),
    );
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &d,
        &ck,
        &dnf5_args(&v2, &work.path().join("cache-d"), &upgrade),
    );
    assert!(r.ok, "cowkit dnf upgrade renaming procps: {}", r.stderr);
    let qa_d = qa(&prefix, &d);
    assert!(
        qa_d.contains(&"procps-ng-4.0.4-1.fc40.noarch".to_string())
            && !qa_d.iter().any(|n| n.starts_with("procps-3")),
        "not renamed: {qa_d:?}"
    );
    assert_same_roots(&prefix, &c, &d, "upgrade renaming procps");
    // procps's %preun and %postun ran, with rpm's `$1` for the last
    // instance of its name going.
    let ran = log(&d);
    let ran = ran.strip_prefix(&before).expect("the log grows");
    assert!(
        ran.lines()
            .any(|l| l.contains("procps") && l.contains("preun"))
            && ran
                .lines()
                .any(|l| l.contains("procps") && l.contains("postun")),
        "{ran}"
    );
}

/// The spec of `name` `version`: a file of its own, `/var/log` (where
/// its `<lua>` scriptlets, rpm's embedded Lua, no shell in the root,
/// append `NAME-VERSION PHASE $1` to the scriptlet log), `head` added to
/// its preamble, and `phases`' scriptlets; the one named `fails` fails
/// (after logging).
fn rename_spec(name: &str, version: &str, head: &str, phases: &[&str], fails: &str) -> String {
    let mut scripts = String::new();
    for p in phases {
        let fail = if *p == fails {
            "error(\"refused\")\n"
        } else {
            ""
        };
        scripts.push_str(&format!(
            "%{p} -p <lua>\nlocal f = assert(io.open(\"{LOG}\", \"a\"))\n\
             f:write(\"{name}-{version} {p} \" .. tostring(arg[2]) .. \"\\n\")\nf:close()\n{fail}\n"
        ));
    }
    format!(
        "Name: {name}\nVersion: {version}\nRelease: 1\nSummary: rename\nLicense: MIT\n\
         BuildArch: noarch\n{head}\n\
         %global debug_package %{{nil}}\n%global __os_install_post %{{nil}}\n\
         %global _build_id_links none\n%description\nrename\n\
         %install\nmkdir -p %{{buildroot}}/var/log %{{buildroot}}/usr/share/{name}\n\
         echo {name}-{version} > %{{buildroot}}/usr/share/{name}/README\n\
         %files\n%dir /var/log\n/usr/share/{name}/README\n{scripts}"
    )
}

/// The repositories in `dirs` made (`createrepo_c`), as `file://` URLs.
fn repositories<const N: usize>(dirs: [&Path; N]) -> [String; N] {
    dirs.map(|d| {
        run_ok(
            Command::new("createrepo_c")
                .args(["--quiet", "--no-database"])
                .arg(d),
            "createrepo_c",
        );
        format!("file://{}", d.display())
    })
}

/// Twin roots under `w`, `a` by plain dnf5 and `b` by `cowkit dnf` over
/// dnf5 (cowkit's cache `ck-cache`, each its own dnf5 cache), both built
/// by `cmd` from the repository at `url`: both succeed and agree. The
/// roots and cowkit's cache.
fn installed_twins(
    prefix: &Path,
    so: &Path,
    w: &Path,
    url: &str,
    cmd: &[&str],
) -> (PathBuf, PathBuf, PathBuf) {
    let (a, b, ck) = (w.join("a"), w.join("b"), w.join("ck-cache"));
    plain(prefix, &a, &dnf5_args(url, &w.join("cache-a"), cmd));
    let r = cowkit_dnf5(
        prefix,
        so,
        &b,
        &ck,
        &dnf5_args(url, &w.join("cache-b"), cmd),
    );
    assert!(r.ok, "cowkit dnf {cmd:?}: {}", r.stderr);
    assert_same_roots(prefix, &a, &b, &format!("{cmd:?}"));
    (a, b, ck)
}

/// `spec` built by the prefix's rpm 4.20 `rpmbuild` (it knows
/// `%preuntrans`) into `dir`.
fn rpmbuild_420(prefix: &Path, spec: &str, dir: &Path) {
    let top = tempfile::tempdir_in(dir).unwrap();
    let spec_path = top.path().join("t.spec");
    std::fs::write(&spec_path, spec).unwrap();
    run_ok(
        env(&mut Command::new(prefix.join("bin/rpmbuild")), prefix)
            .arg("--define")
            .arg(format!("_topdir {}", top.path().display()))
            .arg("--define")
            .arg(format!("_rpmdir {}", dir.display()))
            .args(["--define", "_build_name_fmt %%{NAME}-%%{VERSION}.rpm"])
            .args(["--nodeps", "--quiet", "-bb"])
            .arg(&spec_path),
        &format!("rpmbuild (4.20) of\n{spec}"),
    );
}

/// Renames by `Obsoletes` as dnf5 hands them to rpm: `new-a` and `new-b`
/// obsolete the installed `old-a` and `old-b`, whose rpm 4.20
/// `%preuntrans`/`%postuntrans` run too, and `new-b`'s `%pre` fails.
/// `dnf5 upgrade` installs the new ones as install elements and erases
/// the old ones as elements of their own: rpm runs those erasures (also
/// `old-b`'s, whose obsoleting package failed), `%preuntrans`'s `$1` is
/// the instances of the name less one, and `new-a`'s `%posttrans` is no
/// update (`$1` 1). `cowkit dnf` over dnf5 on the twin root leaves what
/// plain dnf5 leaves: scriptlet logs, `rpm -qa`, `rpm -Va`, file states,
/// trees. The same upgrade killed before its first element is finished by
/// the next run as dnf5 handed it to rpm, leaving the same root.
#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn renames_by_obsoletes_run_as_dnf5_hands_them_to_rpm() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "scriptlets run chrooted") {
        return;
    }
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let w = work.path();
    let (v1, v2) = (w.join("v1"), w.join("v2"));
    std::fs::create_dir_all(&v1).unwrap();
    let old = [
        "post",
        "preun",
        "postun",
        "posttrans",
        "preuntrans",
        "postuntrans",
    ];
    let new = ["pre", "post", "posttrans", "preun", "postun"];
    for n in ["old-a", "old-b"] {
        rpmbuild_420(&prefix, &rename_spec(n, "1.0", "", &old, ""), &v1);
    }
    run_ok(Command::new("cp").arg("-a").arg(&v1).arg(&v2), "cp -a");
    for (n, o, fail) in [("new-a", "old-a", ""), ("new-b", "old-b", "pre")] {
        let head = format!("Obsoletes: {o} < 2\nProvides: {o} = 2-1");
        rpmbuild_420(&prefix, &rename_spec(n, "2.0", &head, &new, fail), &v2);
    }
    let [url1, url2] = repositories([&v1, &v2]);
    let install = ["install", "old-a", "old-b"];
    let (a, b, ck) = installed_twins(&prefix, &so, w, &url1, &install);
    let before = log(&a);

    let upgrade = dnf5_args(&url2, &w.join("cache-a"), &["upgrade"]);
    let out = env(&mut Command::new(prefix.join("bin/dnf5")), &prefix)
        .arg(format!("--installroot={}", a.display()))
        .args(&upgrade)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "plain dnf5: new-b's %pre failing fails the transaction"
    );
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &b,
        &ck,
        &dnf5_args(&url2, &w.join("cache-b"), &["upgrade"]),
    );
    assert!(!r.ok, "cowkit dnf: new-b failed: {}", r.stderr);
    assert!(r.stderr.contains("new-b"), "{}", r.stderr);
    assert_eq!(qa(&prefix, &a), ["new-a-2.0-1.noarch"]);
    assert_same_roots(&prefix, &a, &b, "upgrade renaming old-a and old-b");
    let ran = log(&b);
    let ran = ran.strip_prefix(&before).expect("the log grows");
    for line in [
        "old-a-1.0 preuntrans 0",
        "old-b-1.0 preuntrans 0",
        "old-b-1.0 preun 0",
        "old-b-1.0 postun 0",
        "old-b-1.0 postuntrans 0",
        "new-a-2.0 posttrans 1",
    ] {
        assert!(ran.lines().any(|l| l == line), "no `{line}`:\n{ran}");
    }

    // The same upgrade killed after its journal and `%pretrans`, before
    // any element: the next run finishes it as dnf5 handed it to rpm (the
    // journal keeps dnf5's elements), and the root ends as A.
    let e = w.join("e");
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &e,
        &ck,
        &dnf5_args(&url1, &w.join("cache-e"), &install),
    );
    assert!(r.ok, "cowkit dnf install: {}", r.stderr);
    let killed = common::run(
        env(&mut common::cowkit(), &prefix)
            .env("COWKIT_DNF", prefix.join("bin/dnf5"))
            .env("COWKIT_DNF5_PLUGIN", &so)
            .env("COWKIT_TXN_CRASH_AT", "pretrans-done")
            .env_remove("COWKIT_RPM")
            .args(["dnf", "--json", "--root"])
            .arg(&e)
            .arg("--cache")
            .arg(&ck)
            .arg("--")
            .args(dnf5_args(&url2, &w.join("cache-e"), &["upgrade"])),
    );
    assert!(!killed.ok, "not killed: {}", killed.stderr);
    assert_eq!(log(&e), before, "the killed run ran a scriptlet");
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &e,
        &ck,
        &dnf5_args(&url2, &w.join("cache-e"), &["upgrade"]),
    );
    assert!(
        r.stderr.contains("installed its packages again"),
        "not recovered: {}",
        r.stderr
    );
    assert_same_roots(&prefix, &a, &e, "the killed upgrade, finished");
}

/// An upgrade whose old versions' erasures fail, under dnf5 and rpm
/// 4.20: `pf-a` 1.0's `%preun` fails, `pf-b` 1.0's `%preuntrans` fails.
/// rpm keeps both installed beside their new versions (the erasures
/// "failed" and "skipped"), their files too, the new versions'
/// `%posttrans` count both, and dnf5 fails the transaction. `cowkit dnf`
/// over dnf5 on the twin root fails too and leaves what plain dnf5 leaves:
/// scriptlet logs, `rpm -qa`, `rpm -Va`, file states, trees. The next
/// `dnf5 upgrade` on both: the same again.
#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn failing_erasures_end_as_dnf5_ends_them() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "scriptlets run chrooted") {
        return;
    }
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let w = work.path();
    let (v1, v2) = (w.join("v1"), w.join("v2"));
    std::fs::create_dir_all(&v1).unwrap();
    std::fs::create_dir_all(&v2).unwrap();
    let phases = [
        "pre",
        "post",
        "preun",
        "postun",
        "posttrans",
        "preuntrans",
        "postuntrans",
    ];
    for (n, fails) in [("pf-a", "preun"), ("pf-b", "preuntrans")] {
        rpmbuild_420(&prefix, &rename_spec(n, "1.0", "", &phases, fails), &v1);
        rpmbuild_420(&prefix, &rename_spec(n, "2.0", "", &phases, ""), &v2);
    }
    let [url1, url2] = repositories([&v1, &v2]);
    let (a, b, ck) = installed_twins(&prefix, &so, w, &url1, &["install", "pf-a", "pf-b"]);
    let before = log(&a);
    for round in ["the upgrade", "the upgrade again"] {
        let out = env(&mut Command::new(prefix.join("bin/dnf5")), &prefix)
            .arg(format!("--installroot={}", a.display()))
            .args(dnf5_args(&url2, &w.join("cache-a"), &["upgrade"]))
            .output()
            .unwrap();
        let r = cowkit_dnf5(
            &prefix,
            &so,
            &b,
            &ck,
            &dnf5_args(&url2, &w.join("cache-b"), &["upgrade"]),
        );
        assert_eq!(
            r.ok,
            out.status.success(),
            "{round}: plain dnf5 {}:\n{}\ncowkit dnf:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            r.stderr
        );
        assert_same_roots(&prefix, &a, &b, round);
    }
    let mut names = qa(&prefix, &a);
    names.sort();
    assert_eq!(
        names,
        [
            "pf-a-1.0-1.noarch",
            "pf-a-2.0-1.noarch",
            "pf-b-1.0-1.noarch",
            "pf-b-2.0-1.noarch"
        ]
    );
    let ran = log(&b);
    let ran = ran.strip_prefix(&before).expect("the log grows");
    for line in [
        "pf-a-1.0 preun 1",
        "pf-b-1.0 preuntrans 1",
        "pf-a-2.0 posttrans 3",
        "pf-b-2.0 posttrans 3",
    ] {
        assert!(ran.lines().any(|l| l == line), "no `{line}`:\n{ran}");
    }
    for line in ["pf-a-1.0 postun", "pf-b-1.0 preun", "pf-a-1.0 postuntrans"] {
        assert!(
            !ran.lines().any(|l| l.starts_with(&format!("{line} "))),
            "`{line}` ran:\n{ran}"
        );
    }
}

/// The spec of `sysu` `version` in the shape of Fedora 41's packages with
/// users of their own (httpd's, systemd's): a `sysusers.d` file, from which
/// rpm 4.20's `rpmbuild` makes `user()`/`group()` provides carrying the
/// lines, a directory owned by that user (rpmbuild then requires
/// `user(sysu)`), one line declared with `%add_sysuser` (a provide of no
/// file), and a `<lua>` `%post` that logs.
fn sysusers_spec(version: &str, lines: &str) -> String {
    format!(
        "Name: sysu\nVersion: {version}\nRelease: 1\nSummary: sysusers\nLicense: MIT\n\
         BuildArch: noarch\n%add_sysuser g sysumacro -\n\
         %global debug_package %{{nil}}\n%global __os_install_post %{{nil}}\n\
         %global _build_id_links none\n%description\nsysusers\n\
         %install\nmkdir -p %{{buildroot}}/usr/lib/sysusers.d %{{buildroot}}/var/lib/sysu \\\n\
         %{{buildroot}}/var/log\n\
         printf '{lines}' > %{{buildroot}}/usr/lib/sysusers.d/sysu.conf\n\
         %files\n%dir /var/log\n/usr/lib/sysusers.d/sysu.conf\n\
         %attr(0750,sysu,sysu) %dir /var/lib/sysu\n\
         %post -p <lua>\nlocal f = assert(io.open(\"{LOG}\", \"a\"))\n\
         f:write(\"sysu-{version} post \" .. tostring(arg[2]) .. \"\\n\")\nf:close()\n"
    )
}

/// Users and groups as Fedora 41's packages bring them, with rpm 4.20
/// registering: `sysu` provides them as sysusers data (a `sysusers.d`
/// file, and `%add_sysuser`), built by rpm 4.20's `rpmbuild`; installed,
/// upgraded (a user more) and removed by plain dnf5 and by `cowkit dnf`
/// over dnf5 on twin roots, they end the same: `/etc/passwd`,
/// `/etc/group`, scriptlet logs, `rpm -qa`, `rpm -Va`, file states, trees
/// (the directory owned by the new user included).
#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn users_and_groups_from_sysusers_data_as_dnf5_with_rpm_420() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "users made in the root") {
        return;
    }
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let w = work.path();
    let (v1, v2) = (w.join("v1"), w.join("v2"));
    std::fs::create_dir_all(&v1).unwrap();
    std::fs::create_dir_all(&v2).unwrap();
    let one = r#"u sysu - "Sysu daemon" /var/lib/sysu\ng sysuextra -\n"#;
    let two = r#"u sysu - "Sysu daemon" /var/lib/sysu\ng sysuextra -\nu sysu2 -\n"#;
    rpmbuild_420(&prefix, &sysusers_spec("1.0", one), &v1);
    rpmbuild_420(&prefix, &sysusers_spec("2.0", two), &v2);
    let [url1, url2] = repositories([&v1, &v2]);
    let (a, b, ck) = (w.join("a"), w.join("b"), w.join("ck-cache"));
    let users = |root: &Path| {
        ["etc/passwd", "etc/group"]
            .map(|f| std::fs::read_to_string(root.join(f)).unwrap_or_default())
    };
    for (url, step, what) in [
        (&url1, &["install", "sysu"][..], "install"),
        (&url2, &["upgrade"][..], "upgrade"),
    ] {
        plain(&prefix, &a, &dnf5_args(url, &w.join("cache-a"), step));
        let r = cowkit_dnf5(
            &prefix,
            &so,
            &b,
            &ck,
            &dnf5_args(url, &w.join("cache-b"), step),
        );
        assert!(r.ok, "cowkit dnf {what}: {}", r.stderr);
        let [passwd, group] = users(&a);
        assert!(
            passwd.contains("sysu:"),
            "{what}: dnf5 made no sysu: {passwd}"
        );
        assert!(
            group.contains("sysumacro:"),
            "{what}: no %add_sysuser group: {group}"
        );
        assert_eq!(users(&a), users(&b), "{what}: the users and groups");
        assert_same_roots(&prefix, &a, &b, what);
    }
    assert!(users(&a)[0].contains("sysu2:"), "the upgrade's user");
    plain(
        &prefix,
        &a,
        &dnf5_args(&url2, &w.join("cache-a"), &["remove", "sysu"]),
    );
    let r = cowkit_dnf5(
        &prefix,
        &so,
        &b,
        &ck,
        &dnf5_args(&url2, &w.join("cache-b"), &["remove", "sysu"]),
    );
    assert!(r.ok, "cowkit dnf remove: {}", r.stderr);
    assert_eq!(users(&a), users(&b), "remove: the users and groups");
    assert_same_roots(&prefix, &a, &b, "remove");
}

/// Where the plan says cowkit cannot fetch as dnf5 would (the root's
/// database trusts a key the repository does not list), `cowkit dnf` over
/// dnf5 lets dnf5 download (`--downloadonly` into cowkit's directory),
/// says why, and installs what dnf5 downloaded; with `--downloader
/// cowkit` it fails instead, naming the key, and installs nothing.
#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn cowkit_dnf_over_dnf5_installs_what_dnf5_downloaded_where_it_cannot_fetch() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "rpm --root --import") {
        return;
    }
    let repo = build(tmp());
    let keys = cowkit_testutil::rpm::pgp_fixtures(tmp());
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let wrong = cowkit_testutil::rpm::pgp_fingerprint(&keys, "wrong").to_lowercase();
    let wrong = &wrong[wrong.len() - 8..];
    let run = |name: &str, more: &[&str]| {
        let root = work.path().join(name);
        std::fs::create_dir_all(&root).unwrap();
        run_ok(
            env(&mut Command::new(prefix.join("bin/rpm")), &prefix)
                .arg(format!("--root={}", root.display()))
                .arg("--import")
                .arg(keys.join("wrong.asc")),
            "rpm --import",
        );
        let mut args: Vec<OsString> = dnf5_args(
            &format!("file://{}", repo.v1.display()),
            &work.path().join(format!("cache-{name}")),
            &["install", "setup"],
        )
        .into_iter()
        .filter(|a| a != "--nogpgcheck")
        .collect();
        args.push("--setopt=local.pkg_gpgcheck=1".into());
        args.push(
            format!(
                "--setopt=local.gpgkey=file://{}",
                keys.join("rsa.asc").display()
            )
            .into(),
        );
        let mut c = env(&mut common::cowkit(), &prefix)
            .env("COWKIT_DNF", prefix.join("bin/dnf5"))
            .env("COWKIT_DNF5_PLUGIN", &so)
            .env_remove("COWKIT_RPM")
            .args(["dnf", "--json"])
            .args(more)
            .arg("--root")
            .arg(&root)
            .arg("--cache")
            .arg(work.path().join("ck"))
            .arg("--")
            .args(&args)
            .output()
            .unwrap();
        c.stderr.truncate(64 * 1024);
        (c, root)
    };

    let (out, root) = run("auto", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["downloaded_by"], "dnf", "{j}");
    let reasons = j["fallback_reasons"].to_string();
    assert!(reasons.contains(wrong), "{reasons}");
    let names: Vec<String> = qa(&prefix, &root)
        .into_iter()
        .filter(|n| !n.starts_with("gpg-pubkey"))
        .collect();
    assert_eq!(names, ["setup-2.14.5-1.fc40.noarch"]);

    let (out, root) = run("strict", &["--downloader", "cowkit"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains(wrong), "{stderr}");
    let names: Vec<String> = qa(&prefix, &root)
        .into_iter()
        .filter(|n| !n.starts_with("gpg-pubkey"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// mkosi's command line for dnf5 (`mkosi/installer/dnf.py`, `Dnf.cmd`:
/// `--assumeyes --best --releasever=… --installroot=… --setopt=keepcache=1
/// --setopt=logdir=… --setopt=cachedir=… --setopt=persistdir=…
/// --setopt=install_weak_deps=0 --setopt=check_config_file_age=0
/// --disable-plugin=* --enable-plugin builddep --enable-plugin versionlock
/// --setopt=metadata_expire=never --setopt=cacheonly=metadata --no-docs
/// --use-host-config`), for `root` with its files under `work/NAME-*`.
/// mkosi runs dnf5 in a sandbox whose `/etc` is its own configuration
/// tree, `/var/log` and `/var/cache` its own; here those are named on the
/// command line (`--config`, `reposdir`, `varsdir`, `logdir`, `cachedir`:
/// dnf5 takes the last two as given, outside the root).
/// mkosi's `sync` runs `makecache` with `--refresh` and without the
/// `metadata_expire`/`cacheonly` pair.
fn mkosi_dnf5_args(work: &Path, name: &str, root: &Path, cached: bool) -> Vec<OsString> {
    let at = |what: &str| work.join(format!("{name}-{what}")).display().to_string();
    let mut v: Vec<String> = vec![
        "--assumeyes".into(),
        "--best".into(),
        "--releasever=40".into(),
        format!("--installroot={}", root.display()),
        "--setopt=keepcache=1".into(),
        format!("--setopt=logdir={}", at("log")),
        format!("--setopt=cachedir={}", at("cache")),
        // dnf5 puts the root in front of it, as mkosi's sandbox does.
        "--setopt=persistdir=/var/lib/libdnf5".into(),
        "--setopt=install_weak_deps=0".into(),
        "--setopt=check_config_file_age=0".into(),
        "--disable-plugin=*".into(),
        "--enable-plugin".into(),
        "builddep".into(),
        "--enable-plugin".into(),
        "versionlock".into(),
    ];
    if cached {
        v.push("--setopt=metadata_expire=never".into());
        v.push("--setopt=cacheonly=metadata".into());
    }
    v.extend([
        "--no-docs".into(),
        "--use-host-config".into(),
        format!("--config={}", work.join("etc/dnf/dnf.conf").display()),
        format!(
            "--setopt=reposdir={}",
            work.join("etc/yum.repos.d").display()
        ),
        format!("--setopt=varsdir={}", work.join("etc/dnf/vars").display()),
    ]);
    v.into_iter().map(OsString::from).collect()
}

/// mkosi's configuration tree for dnf5 under `work/etc`: `dnf.conf` as
/// mkosi writes it for dnf5 (`optional_metadata_types=filelists`), and one
/// repository file with the repository at `url`, unsigned.
fn mkosi_etc(work: &Path, url: &str) {
    let etc = work.join("etc");
    std::fs::create_dir_all(etc.join("dnf/vars")).unwrap();
    std::fs::create_dir_all(etc.join("yum.repos.d")).unwrap();
    std::fs::write(
        etc.join("dnf/dnf.conf"),
        "[main]\noptional_metadata_types=filelists\n",
    )
    .unwrap();
    std::fs::write(
        etc.join("yum.repos.d/mkosi.repo"),
        format!("[local]\nname=local\nbaseurl={url}\ngpgcheck=0\nenabled=1\n"),
    )
    .unwrap();
}

/// `cowkit dnf --shim-dir DIR` with the prefix's dnf5 on `PATH`: DIR, in
/// which `dnf5` (and `dnf`) link to cowkit.
fn shim_dir(prefix: &Path, dir: &Path) -> PathBuf {
    let r = common::run(
        env(&mut common::cowkit(), prefix)
            .env_remove("COWKIT_DNF")
            .args(["dnf", "--shim-dir"])
            .arg(dir),
    );
    assert!(r.ok, "--shim-dir: {}", r.stderr);
    let me = std::fs::canonicalize(env!("CARGO_BIN_EXE_cowkit")).unwrap();
    for name in ["dnf", "dnf5"] {
        assert_eq!(std::fs::read_link(dir.join(name)).unwrap(), me, "{name}");
    }
    dir.to_path_buf()
}

/// `dnf5 ARGS` as an image builder runs it: the first `dnf5` on `PATH`,
/// with `shim` (cowkit's links) in front of the prefix's `bin`, cowkit's
/// options from the environment (its cache `cache`, the plugin `so`).
fn via_shim(prefix: &Path, shim: &Path, so: &Path, cache: &Path, args: &[OsString]) -> Run {
    via_shim_env(prefix, shim, so, cache, args, &[])
}

/// [`via_shim`] with more of cowkit's environment (`COWKIT_JSON=1`).
fn via_shim_env(
    prefix: &Path,
    shim: &Path,
    so: &Path,
    cache: &Path,
    args: &[OsString],
    vars: &[(&str, &str)],
) -> Run {
    let path = format!(
        "{}:{}:{}",
        shim.display(),
        prefix.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    common::run(
        env(&mut Command::new("dnf5"), prefix)
            .env("PATH", path)
            .env_remove("COWKIT_DNF")
            .env_remove("COWKIT_RPM")
            .env("COWKIT_DNF5_PLUGIN", so)
            .env("COWKIT_CACHE", cache)
            .envs(vars.iter().copied())
            .args(args),
    )
}

/// cowkit as `dnf5` (the link `--shim-dir` makes, first on `PATH`) builds
/// the root that plain dnf5 builds from mkosi's dnf5 command line
/// ([`mkosi_dnf5_args`]): mkosi's `makecache`, then `install` of
/// [`INSTALL`] with `--no-docs`; the twins agree
/// ([`assert_same_roots`]: scriptlet logs, `rpm -qa`, `rpm -Va`, file
/// states, trees) and the `%doc` files are left out. cowkit fetched the
/// packages, and dnf5's cache keeps them as plain dnf5's does (mkosi's
/// `keepcache=1`: the HTTP server sees two requests per package, dnf5's
/// and cowkit's), and
/// what installs nothing (`makecache`, `repoquery`) went to the real dnf5
/// unchanged. Then the transaction flags dnf5 holds in a drop-in of the
/// root's own configuration (`/etc/dnf/libdnf5.conf.d`, read without
/// `--use-host-config`), which only dnf5 itself can say: `nodocs` there,
/// and the shim honours it as dnf5 does.
#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn the_shim_as_dnf5_builds_what_plain_dnf5_builds_from_mkosis_command_line() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "scriptlets run chrooted") {
        return;
    }
    let repo = build(tmp());
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let w = work.path();
    // An HTTP repository for each (dnf5 keeps no copy of a local
    // repository's packages).
    let server = Server::start(&repo.v1, &w.join("requests"));
    let plain_server = Server::start(&repo.v1, &w.join("plain-requests"));
    let shim = shim_dir(&prefix, &w.join("shim"));
    let ck = w.join("ck-cache");
    let (a, b) = (w.join("a"), w.join("b"));
    let plain_etc = w.join("plain");
    let shim_etc = w.join("shim-etc");
    mkosi_etc(&plain_etc, &plain_server.url);
    mkosi_etc(&shim_etc, &server.url);

    // mkosi's sync: `makecache --refresh`, dnf5's own business.
    let makecache = |work: &Path, root: &Path, shimmed: bool| {
        let mut args = mkosi_dnf5_args(work, "x", root, false);
        args.extend(["makecache", "--refresh"].map(OsString::from));
        if shimmed {
            let r = via_shim(&prefix, &shim, &so, &ck, &args);
            assert!(r.ok, "makecache through the shim: {}", r.stderr);
        } else {
            run_ok(
                env(&mut Command::new(prefix.join("bin/dnf5")), &prefix).args(&args),
                "dnf5 makecache",
            );
        }
    };
    makecache(&plain_etc, &a, false);
    makecache(&shim_etc, &b, true);
    let mut install = mkosi_dnf5_args(&plain_etc, "x", &a, true);
    install.push("install".into());
    install.extend(INSTALL.map(OsString::from));
    run_ok(
        env(&mut Command::new(prefix.join("bin/dnf5")), &prefix).args(&install),
        "dnf5 install (mkosi's command line)",
    );
    let mut install = mkosi_dnf5_args(&shim_etc, "x", &b, true);
    install.push("install".into());
    install.extend(INSTALL.map(OsString::from));
    let r = via_shim_env(&prefix, &shim, &so, &ck, &install, &[("COWKIT_JSON", "1")]);
    assert!(r.ok, "install through the shim: {}", r.stderr);
    // cowkit's plugin ran (mkosi's `--disable-plugin=*` notwithstanding)
    // and cowkit fetched.
    assert_eq!(r.json()["downloaded_by"], "cowkit", "{}", r.stderr);
    let rpms: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.ends_with(".rpm"))
        .collect();
    // Each package twice: dnf5 once for its own cache (mkosi's
    // `keepcache=1`), cowkit once.
    assert_eq!(
        rpms.len(),
        2 * qa(&prefix, &a).len(),
        "dnf5 and cowkit fetched each package once: {rpms:?}"
    );
    assert_same_roots(&prefix, &a, &b, "mkosi's install");
    // dnf5's cache keeps the packages, as plain dnf5 keeps them.
    let kept = |etc: &Path| {
        let mut v: Vec<String> = rpms_under(&etc.join("x-cache"))
            .iter()
            .map(|p| {
                let parent = p.parent().unwrap().file_name().unwrap();
                assert_eq!(parent, "packages", "{}", p.display());
                p.file_name().unwrap().to_str().unwrap().to_string()
            })
            .collect();
        v.sort();
        v
    };
    let kept_a = kept(&plain_etc);
    assert_eq!(kept_a.len(), qa(&prefix, &a).len(), "{kept_a:?}");
    assert_eq!(kept_a, kept(&shim_etc), "dnf5's kept packages");
    let states = file_states(&prefix, &b);
    let doc = "bash-5.2.26-1.fc40.noarch not installed /usr/share/man/man1/bash.1.gz";
    assert!(states.iter().any(|l| l == doc), "--no-docs: {states:?}");

    // A query goes to dnf5 unchanged, on the root's database.
    let query = |root: &Path, shimmed: bool| -> Vec<u8> {
        let mut args = mkosi_dnf5_args(
            if shimmed { &shim_etc } else { &plain_etc },
            "x",
            root,
            true,
        );
        args.extend(["repoquery", "--installed", "--qf", "%{full_nevra}\\n"].map(OsString::from));
        if shimmed {
            let r = via_shim(&prefix, &shim, &so, &ck, &args);
            assert!(r.ok, "repoquery through the shim: {}", r.stderr);
            r.stdout
        } else {
            run_ok(
                env(&mut Command::new(prefix.join("bin/dnf5")), &prefix).args(&args),
                "dnf5 repoquery",
            )
            .stdout
        }
    };
    let qa_a = query(&a, false);
    assert!(!qa_a.is_empty());
    assert_eq!(qa_a, query(&b, true), "repoquery --installed");

    // The root's own drop-in says nodocs; dnf5 reads it without
    // `--use-host-config`.
    let (c, d) = (w.join("c"), w.join("d"));
    for root in [&c, &d] {
        let dir = root.join("etc/dnf/libdnf5.conf.d");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("50-image.conf"), "[main]\ntsflags=nodocs\n").unwrap();
    }
    let args = |root: &Path, url: &str| {
        let name = root.file_name().unwrap().to_str().unwrap();
        let mut v = dnf5_args(url, &w.join(format!("cache-{name}")), &[]);
        v.push(format!("--installroot={}", root.display()).into());
        v.extend(["install", "bash", "setup", "filesystem", "glibc"].map(OsString::from));
        v
    };
    let v1 = format!("file://{}", repo.v1.display());
    run_ok(
        env(&mut Command::new(prefix.join("bin/dnf5")), &prefix).args(args(&c, &v1)),
        "dnf5 install (drop-in nodocs)",
    );
    let r = via_shim(&prefix, &shim, &so, &ck, &args(&d, &v1));
    assert!(
        r.ok,
        "install through the shim (drop-in nodocs): {}",
        r.stderr
    );
    assert!(
        file_states(&prefix, &c).iter().any(|l| l == doc),
        "dnf5 did not read the drop-in"
    );
    assert_same_roots(&prefix, &c, &d, "the drop-in's nodocs");
}

/// What cowkit as `dnf5` cannot do as dnf5 would is refused by name,
/// before anything is installed: the transaction flags it does not carry
/// out (on the command line, and in the root's drop-in, where only dnf5
/// can say), plugins turned off in the root's drop-in (dnf5 then
/// downloads without cowkit's plugin), `--comment`, `--no-plugins` and its dnf 4 name `--noplugins`,
/// `--setopt=plugins=0`, `--offline`. dnf 4's `--allowerasing` before
/// the command (mkosi 14's command line) is dnf5's own error. And with
/// `COWKIT_DNF` naming a dnf that is not dnf5, cowkit as `dnf5` refuses
/// to run it.
#[test]
#[ignore = "needs dnf5 from ../shared/fedora-tools: scripts/test-dnf5.sh"]
fn the_shim_as_dnf5_refuses_by_name_what_it_cannot_honour() {
    let prefix = fedora_tools();
    let so = plugin();
    if !as_root("dnf5", "scriptlets run chrooted") {
        return;
    }
    let repo = build(tmp());
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let w = work.path();
    let shim = shim_dir(&prefix, &w.join("shim"));
    let ck = w.join("ck-cache");
    let v1 = format!("file://{}", repo.v1.display());
    let mut n = 0;
    let mut refused = |setup: &dyn Fn(&Path), more: &[&str], after: &[&str], said: &[&str]| {
        n += 1;
        let root = w.join(format!("r{n}"));
        std::fs::create_dir_all(&root).unwrap();
        setup(&root);
        let mut args: Vec<OsString> = more.iter().map(OsString::from).collect();
        args.extend(dnf5_args(&v1, &w.join(format!("cache-{n}")), &[]));
        args.push(format!("--installroot={}", root.display()).into());
        args.extend(["install", "setup", "bash"].map(OsString::from));
        args.extend(after.iter().map(OsString::from));
        let r = via_shim(&prefix, &shim, &so, &ck, &args);
        assert!(!r.ok, "{more:?} {after:?}: not refused");
        for s in said {
            assert!(
                r.stderr.contains(s),
                "{more:?} {after:?}: no `{s}` in {}",
                r.stderr
            );
        }
        assert!(qa(&prefix, &root).is_empty(), "{more:?}: installed");
        assert_eq!(log(&root), "", "{more:?}: a scriptlet ran");
    };
    let nothing = |_: &Path| {};
    let drop_in = |flags: &'static str| {
        move |root: &Path| {
            let dir = root.join("etc/dnf/libdnf5.conf.d");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("50-image.conf"), format!("[main]\n{flags}\n")).unwrap();
        }
    };
    refused(
        &nothing,
        &["--setopt=tsflags=test"],
        &[],
        &["`--setopt=tsflags=test`", "nodocs and justdb"],
    );
    refused(
        &drop_in("tsflags=noscripts"),
        &[],
        &[],
        &["`tsflags=noscripts`", "nodocs and justdb"],
    );
    // dnf5's configuration turns its plugins off: dnf5 downloads without
    // cowkit's plugin, whose flags and order cowkit then does not know.
    refused(
        &drop_in("plugins=0"),
        &[],
        &[],
        &["without cowkit's plugin", "plugins=0"],
    );
    refused(
        &nothing,
        &["--comment=image"],
        &[],
        &["`--comment=image`", "history"],
    );
    refused(&nothing, &["--no-plugins"], &[], &["--no-plugins"]);
    refused(&nothing, &["--noplugins"], &[], &["--noplugins"]);
    refused(
        &nothing,
        &["--setopt", "plugins=0"],
        &[],
        &["--setopt plugins=0"],
    );
    refused(&nothing, &[], &["--offline"], &["`--offline`", "next boot"]);
    // mkosi 14 gives `dnf` dnf 4's command line with `--allowerasing`
    // before the command: dnf5's (and so the shim's) argument error.
    refused(
        &nothing,
        &["--allowerasing"],
        &[],
        &["Unknown argument \"--allowerasing\" for command \"dnf5\""],
    );
    // cowkit as dnf5 with COWKIT_DNF naming another dnf.
    let r = common::run(
        Command::new(shim.join("dnf5"))
            .env("COWKIT_DNF", "/bin/true")
            .args(["--installroot=/nonexistent", "install", "x"]),
    );
    assert!(!r.ok);
    assert!(r.stderr.contains("is not dnf5"), "{}", r.stderr);
}
