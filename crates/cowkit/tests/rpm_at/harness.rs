//! Running one scenario on twin roots: root A by the real `rpm`, root B by
//! `cowkit install`, compared after every step.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cowkit_testutil::repo::{dbpath, rpm_in};
use cowkit_testutil::run_ok;
use cowkit_testutil::tree::snapshot;

use super::specs::Spec;

/// One step of a scenario.
#[derive(Clone, Debug)]
pub enum Step {
    /// Shell run in both roots (the working directory is the root): what
    /// the scenario does by hand between rpm's runs (edit a config file,
    /// make a symlink).
    Sh(String),
    /// `rpm ARGS PKGS` on A (`-U`, `-i`, with the scenario's options) and
    /// `cowkit install` with the same options in cowkit's spelling on B
    /// ([`cowkit_args`]); `env` set for both; `want`: what the scenario
    /// expects of rpm (its stdout, the scriptlets' output, is compared
    /// with cowkit's when given).
    Rpm {
        args: Vec<String>,
        pkgs: Vec<String>,
        env: Vec<(String, String)>,
        want: Want,
    },
    /// `rpm -e ARGS` on both roots: cowkit has no erase of its own. What
    /// cowkit registered and placed before decides what rpm erases (and
    /// which scriptlets and triggers run: the stdouts are compared when
    /// `want.stdout` is given).
    Erase { args: Vec<String>, want: Want },
    /// What these paths (and the names beginning with them: `.rpmnew`,
    /// `.rpmsave`, `.rpmorig`) are in both roots ([`show`]); `want` is the
    /// answer the scenario expects of rpm (a port that does not reproduce
    /// it is broken, whatever cowkit does).
    Show {
        paths: Vec<String>,
        want: Option<String>,
    },
    /// Shell run in both roots (as [`Step::Sh`]), its output compared;
    /// `want` as for [`Step::Show`].
    Out { cmd: String, want: Option<String> },
    /// `rpm -q ARGS` (or any rpm query) in both roots, outputs and exit
    /// statuses compared; `want` as for [`Step::Show`], `status` the exit
    /// status the scenario expects of rpm. An argument `pkg:LABEL` is the
    /// built package of that label, copied into the root as
    /// `/build/LABEL.rpm` (`rpm -Vp` reads it there).
    Query {
        args: Vec<String>,
        want: Option<String>,
        status: Option<i32>,
    },
}

/// What a scenario expects of one run of rpm (a port whose rpm does
/// otherwise is broken).
#[derive(Clone, Debug, Default)]
pub struct Want {
    /// Its exit status.
    pub status: Option<i32>,
    /// Its whole stdout (what the scriptlets print, `-v` lines); cowkit's
    /// (or, for an erase, the other root's) must be the same.
    pub stdout: Option<String>,
    /// Text its stderr holds (rpm's own message; cowkit's words are its
    /// own and not compared).
    pub stderr: Option<String>,
    /// `stdout` is rpm's own (its `-v` lines): checked, not compared with
    /// cowkit's.
    pub own_stdout: bool,
    /// rpm's stdout and stderr are not held to `stdout` and `stderr` (the
    /// texts are rpm 4.18's and the reference is another rpm); only its
    /// exit status is. Its stdout is still compared with cowkit's.
    pub unheld: bool,
}

impl Step {
    fn label(&self) -> String {
        match self {
            Step::Sh(s) => format!("sh `{s}`"),
            Step::Rpm {
                args, pkgs, env, ..
            } => {
                let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
                format!("{}rpm {} {}", env.concat(), args.join(" "), pkgs.join(" "))
            }
            Step::Erase { args, .. } => format!("rpm -e {}", args.join(" ")),
            Step::Show { paths, .. } => format!("show {}", paths.join(" ")),
            Step::Query { args, .. } => format!("rpm {}", args.join(" ")),
            Step::Out { cmd, .. } => format!("sh `{cmd}`"),
        }
    }
}

/// One scenario of rpm's test suite.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// `FILE-SETUP.CHECK`: the `.at` file's stem, the ordinal of its
    /// `AT_SETUP` in the file and of the `AT_CHECK` in the setup.
    pub id: String,
    /// The `.at` file.
    pub file: &'static str,
    /// Its `AT_SETUP` title.
    pub title: &'static str,
    /// What the check does, in a few words.
    pub what: String,
    /// The packages, by the labels the steps use.
    pub pkgs: Vec<(String, Spec)>,
    pub steps: Vec<Step>,
}

/// How a scenario ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every step ended alike in both roots.
    Equal,
    /// The first difference.
    Differs(String),
    /// cowkit refused a step that rpm did, before touching its root: its
    /// message.
    Refused(String),
    /// rpm itself did not give the scenario's expected answer: the port of
    /// the scenario is wrong.
    Broken(String),
}

/// cowkit's spelling of rpm's install options: `-U` is `cowkit install`
/// (which upgrades like `-U`), `-i` is `cowkit install -i` (beside, never
/// upgrading); `--nodb` is `--no-db`; options cowkit shares keep their
/// names; any other is passed as rpm spells it (cowkit refuses what it
/// does not know).
pub fn cowkit_args(rpm: &[String]) -> Vec<String> {
    rpm.iter()
        .filter(|a| !matches!(a.as_str(), "-U" | "-Uv"))
        .map(|a| match a.as_str() {
            "--nodb" => "--no-db".to_string(),
            "-iv" => "-i".to_string(),
            other => other.to_string(),
        })
        .collect()
}

/// What a root holds, for comparison.
#[derive(Clone, Debug, PartialEq)]
struct State {
    /// Path → `TYPE MODE UID:GID CONTENT/TARGET` (the database excluded;
    /// `.` is the root itself).
    tree: BTreeMap<String, String>,
    /// `rpm -qa`, each package followed by its files' states
    /// (`%{FILESTATES:fstate} %{FILENAMES}`).
    db: Vec<String>,
    /// `rpm -Va`, stdout and stderr, sorted.
    va: Vec<String>,
}

fn render(root: &Path) -> BTreeMap<String, String> {
    let db = dbpath().trim_start_matches('/').to_string();
    let mut out: BTreeMap<String, String> = snapshot(root)
        .into_iter()
        .filter(|(p, _)| {
            *p != db && !p.starts_with(&format!("{db}/")) && !db.starts_with(&format!("{p}/"))
        })
        .map(|(p, e)| {
            let what = match e.kind {
                'f' => e.sha256.clone().unwrap_or_default()[..12].to_string(),
                'l' => format!("-> {}", e.target.clone().unwrap_or_default().display()),
                _ => String::new(),
            };
            (
                p,
                format!("{} {:o} {}:{} {what}", e.kind, e.perm, e.uid, e.gid),
            )
        })
        .collect();
    let m = std::fs::symlink_metadata(root).unwrap();
    out.insert(
        ".".into(),
        format!("d {:o} {}:{}", m.mode() & 0o7777, m.uid(), m.gid()),
    );
    out
}

fn lines(out: &std::process::Output, with_stderr: bool) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    if with_stderr {
        v.extend(
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .map(str::to_string),
        );
    }
    v
}

fn db_state(root: &Path) -> Vec<String> {
    let out = run_ok(
        rpm_in(root).args([
            "-qa",
            "--qf",
            "%{NEVRA}\\n[  %{FILESTATES:fstate} %{FILENAMES}\\n]",
        ]),
        "rpm -qa",
    );
    // Packages in name order, each with its files.
    let mut pkgs: Vec<Vec<String>> = Vec::new();
    for l in lines(&out, false) {
        if l.starts_with("  ") {
            pkgs.last_mut().unwrap().push(l);
        } else {
            pkgs.push(vec![l]);
        }
    }
    pkgs.sort();
    pkgs.concat()
}

fn state(root: &Path) -> State {
    let va = rpm_in(root).arg("-Va").output().expect("rpm -Va");
    let mut va = lines(&va, true);
    va.sort();
    State {
        tree: render(root),
        db: db_state(root),
        va,
    }
}

/// The first difference of two lists, as `- rpm's` / `+ cowkit's` lines.
fn list_diff(a: &[String], b: &[String]) -> Option<String> {
    if a == b {
        return None;
    }
    let sa: BTreeSet<&String> = a.iter().collect();
    let sb: BTreeSet<&String> = b.iter().collect();
    let only_a: Vec<&&String> = sa.difference(&sb).take(3).collect();
    let only_b: Vec<&&String> = sb.difference(&sa).take(3).collect();
    if only_a.is_empty() && only_b.is_empty() {
        return Some("same lines in another order".into());
    }
    let mut s = String::new();
    for l in only_a {
        s.push_str(&format!(" rpm: `{}`;", l.trim()));
    }
    for l in only_b {
        s.push_str(&format!(" cowkit: `{}`;", l.trim()));
    }
    Some(s.trim_end_matches(';').trim().to_string())
}

fn state_diff(a: &State, b: &State) -> Option<String> {
    if let Some(d) = list_diff(&a.db, &b.db) {
        return Some(format!("database (rpm -qa, file states): {d}"));
    }
    let ta: Vec<String> = a.tree.iter().map(|(p, e)| format!("/{p}: {e}")).collect();
    let tb: Vec<String> = b.tree.iter().map(|(p, e)| format!("/{p}: {e}")).collect();
    if let Some(d) = list_diff(&ta, &tb) {
        return Some(format!("tree: {d}"));
    }
    list_diff(&a.va, &b.va).map(|d| format!("rpm -Va: {d}"))
}

/// What `paths` (relative to the root) and the entries whose names begin
/// with them are: `p=CONTENT` (a file's first line), `p->TARGET`, `p/`,
/// space-separated; nothing for no such entry.
pub fn show(root: &Path, paths: &[String]) -> String {
    let mut out = Vec::new();
    for p in paths {
        let path = root.join(p);
        let dir = path.parent().unwrap();
        let base = path.file_name().unwrap().to_string_lossy().to_string();
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with(&base))
            .collect();
        names.sort();
        let rel_dir = Path::new(p).parent().unwrap();
        for n in names {
            let full = dir.join(&n);
            let rel = rel_dir.join(&n).display().to_string();
            let m = std::fs::symlink_metadata(&full).unwrap();
            if m.is_symlink() {
                out.push(format!(
                    "{rel}->{}",
                    std::fs::read_link(&full).unwrap().display()
                ));
            } else if m.is_dir() {
                out.push(format!("{rel}/"));
            } else {
                let c = std::fs::read_to_string(&full).unwrap_or_default();
                out.push(format!("{rel}={}", c.lines().next().unwrap_or("")));
            }
        }
    }
    out.join(" ")
}

/// What one command did.
struct Ran {
    ok: bool,
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

fn ran(cmd: &mut Command) -> Ran {
    let out = cmd.output().unwrap();
    Ran {
        ok: out.status.success(),
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// How rpm's run `r` is not what the scenario expects (`want`), if it is
/// not.
fn unwanted(r: &Ran, want: &Want) -> Option<String> {
    if let Some(s) = want.status {
        if r.status != Some(s) {
            return Some(format!(
                "rpm's exit status is {:?}, the scenario expects {s} ({})",
                r.status,
                gist(&r.stderr)
            ));
        }
    }
    if want.unheld {
        return None;
    }
    if let Some(o) = &want.stdout {
        if r.stdout.trim_end() != o.trim_end() {
            return Some(format!(
                "rpm's stdout is `{}`, the scenario expects `{o}`",
                r.stdout.trim_end()
            ));
        }
    }
    if let Some(e) = &want.stderr {
        if !r.stderr.contains(e.as_str()) {
            return Some(format!(
                "rpm's stderr is `{}`, the scenario expects it to say `{e}`",
                r.stderr.trim_end()
            ));
        }
    }
    None
}

/// The first lines of a message, on one line.
fn gist(s: &str) -> String {
    let l: Vec<&str> = s
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    let mut g = l.join(" / ");
    if g.len() > 400 {
        g.truncate(400);
        g.push('…');
    }
    g
}

/// A query's arguments in root `r`: `pkg:LABEL` is the built package
/// `pkg(LABEL)`, copied into the root as `/build/LABEL.rpm` (rpm reads it
/// inside the root, as rpm's scenarios' `/build/RPMS`).
fn query_args(r: &Path, args: &[String], pkg: &dyn Fn(&str) -> PathBuf) -> Vec<std::ffi::OsString> {
    args.iter()
        .map(|a| match a.strip_prefix("pkg:") {
            Some(l) => {
                std::fs::create_dir_all(r.join("build")).unwrap();
                let inside = format!("/build/{l}.rpm");
                std::fs::copy(pkg(l), r.join(&inside[1..])).unwrap();
                inside.into()
            }
            None => a.into(),
        })
        .collect()
}

/// The packages of a step, in root `root`: `root:PATH` is a file in the
/// root, any other label a built package.
fn files_in(root: &Path, labels: &[String], pkg: &dyn Fn(&str) -> PathBuf) -> Vec<PathBuf> {
    labels
        .iter()
        .map(|l| match l.strip_prefix("root:") {
            Some(p) => root.join(p),
            None => pkg(l),
        })
        .collect()
}

/// Run `sc` in `dir` (made; roots `dir/rpm` and `dir/cowkit`) with the
/// built packages `built` (spec text → package file). After a difference
/// or a refusal, the rest of the scenario still runs in rpm's root alone,
/// held to the scenario's expectations: a port rpm does not pass is
/// broken wherever that shows.
pub fn run_scenario(
    sc: &Scenario,
    dir: &Path,
    built: &BTreeMap<String, PathBuf>,
    cowkit: &Path,
) -> Outcome {
    let pkg = |label: &str| -> PathBuf {
        let spec = &sc
            .pkgs
            .iter()
            .find(|(l, _)| l == label)
            .unwrap_or_else(|| panic!("{}: no package labelled {label}", sc.id))
            .1;
        built[&build_key(spec)].clone()
    };
    let mut ended_at = 0;
    let o = run_twins(sc, dir, &pkg, cowkit, &mut ended_at);
    if matches!(o, Outcome::Equal | Outcome::Broken(_)) {
        return o;
    }
    let a = dir.join("rpm");
    for (i, step) in sc.steps.iter().enumerate().skip(ended_at + 1) {
        if let Some(why) = rpm_side(step, &a, &pkg) {
            return Outcome::Broken(format!(
                "step {} (`{}`), in rpm's root alone after the scenario ended ({}): {why}",
                i + 1,
                step.label(),
                match &o {
                    Outcome::Differs(d) | Outcome::Refused(d) => gist(d),
                    _ => String::new(),
                }
            ));
        }
    }
    o
}

/// `step` in rpm's root `a` alone: how rpm does not do what the scenario
/// expects, if it does not.
fn rpm_side(step: &Step, a: &Path, pkg: &dyn Fn(&str) -> PathBuf) -> Option<String> {
    match step {
        Step::Sh(cmd) => {
            run_ok(Command::new("sh").args(["-ec", cmd]).current_dir(a), "sh");
            None
        }
        Step::Rpm {
            args,
            pkgs,
            env,
            want,
        } => {
            let mut rpm = rpm_in(a);
            rpm.args(args).args(files_in(a, pkgs, pkg));
            for (k, v) in env {
                rpm.env(k, v);
            }
            unwanted(&ran(&mut rpm), want)
        }
        Step::Erase { args, want } => unwanted(&ran(rpm_in(a).arg("-e").args(args)), want),
        Step::Query { args, want, status } => {
            let out = rpm_in(a).args(query_args(a, args, pkg)).output().unwrap();
            let got = lines(&out, true).join("\n");
            match (want, status) {
                (Some(w), _) if &got != w => {
                    Some(format!("rpm shows `{got}`, the scenario expects `{w}`"))
                }
                (_, Some(s)) if out.status.code() != Some(*s) => Some(format!(
                    "rpm's exit status is {:?}, the scenario expects {s}",
                    out.status.code()
                )),
                _ => None,
            }
        }
        Step::Out { cmd, want } => {
            let out = Command::new("sh")
                .args(["-c", cmd])
                .current_dir(a)
                .output()
                .unwrap();
            let got = lines(&out, true).join("\n");
            match want {
                Some(w) if &got != w => Some(format!(
                    "rpm's root shows `{got}`, the scenario expects `{w}`"
                )),
                _ => None,
            }
        }
        Step::Show { paths, want } => {
            let got = show(a, paths);
            match want {
                Some(w) if &got != w => Some(format!(
                    "rpm's root shows `{got}`, the scenario expects `{w}`"
                )),
                _ => None,
            }
        }
    }
}

/// The scenario on both roots, up to its end; `ended_at` is the index of
/// the step it ended at.
fn run_twins(
    sc: &Scenario,
    dir: &Path,
    pkg: &dyn Fn(&str) -> PathBuf,
    cowkit: &Path,
    ended_at: &mut usize,
) -> Outcome {
    let a = dir.join("rpm");
    let b = dir.join("cowkit");
    std::fs::create_dir_all(&a).unwrap();
    run_ok(rpm_in(&a).arg("--initdb"), "rpm --initdb");
    run_ok(Command::new("cp").arg("-a").arg(&a).arg(&b), "cp -a");
    let files_in = |root: &Path, labels: &[String]| files_in(root, labels, pkg);
    for (i, step) in sc.steps.iter().enumerate() {
        *ended_at = i;
        let at = format!("step {} (`{}`)", i + 1, step.label());
        match step {
            Step::Sh(cmd) => {
                for r in [&a, &b] {
                    run_ok(
                        Command::new("sh").args(["-ec", cmd]).current_dir(r),
                        &format!("{}: {at}", sc.id),
                    );
                }
            }
            Step::Show { want, .. } | Step::Query { want, .. } | Step::Out { want, .. } => {
                // What the step shows of a root, and its exit status.
                let look = |r: &Path| -> (String, Option<i32>) {
                    match step {
                        Step::Query { args, .. } => {
                            let args = query_args(r, args, pkg);
                            let out = rpm_in(r).args(args).output().unwrap();
                            (lines(&out, true).join("\n"), out.status.code())
                        }
                        Step::Out { cmd, .. } => {
                            let out = Command::new("sh")
                                .args(["-c", cmd])
                                .current_dir(r)
                                .output()
                                .unwrap();
                            (lines(&out, true).join("\n"), None)
                        }
                        Step::Show { paths, .. } => (show(r, paths), None),
                        _ => unreachable!(),
                    }
                };
                let ((sa, ca), (sb, cb)) = (look(&a), look(&b));
                if let Some(w) = want {
                    if &sa != w {
                        return Outcome::Broken(format!(
                            "{at}: rpm's root shows `{sa}`, the scenario expects `{w}`"
                        ));
                    }
                }
                if let Step::Query {
                    status: Some(s), ..
                } = step
                {
                    if ca != Some(*s) {
                        return Outcome::Broken(format!(
                            "{at}: rpm's exit status in its root is {ca:?}, the scenario expects {s}"
                        ));
                    }
                }
                if sa != sb {
                    return Outcome::Differs(format!("{at}: rpm `{sa}`, cowkit `{sb}`"));
                }
                if ca != cb {
                    return Outcome::Differs(format!(
                        "{at}: exit status {ca:?} in rpm's root, {cb:?} in cowkit's"
                    ));
                }
            }
            Step::Erase { args, want } => {
                let before = (state(&a), state(&b));
                if let Some(d) = state_diff(&before.0, &before.1) {
                    return Outcome::Differs(format!("before {at}: {d}"));
                }
                let ra = ran(rpm_in(&a).arg("-e").args(args));
                let rb = ran(rpm_in(&b).arg("-e").args(args));
                if let Some(why) = unwanted(&ra, want) {
                    return Outcome::Broken(format!("{at}: {why}"));
                }
                if want.stdout.is_some() && ra.stdout != rb.stdout {
                    return Outcome::Differs(format!(
                        "{at}: stdout `{}` in rpm's root, `{}` in cowkit's",
                        ra.stdout.trim_end(),
                        rb.stdout.trim_end()
                    ));
                }
                if ra.ok != rb.ok {
                    return Outcome::Differs(format!(
                        "{at}: exit status 0 = {} in rpm's root, {} in cowkit's: {}",
                        ra.ok,
                        rb.ok,
                        gist(if rb.ok { &ra.stderr } else { &rb.stderr })
                    ));
                }
                if let Some(d) = state_diff(&state(&a), &state(&b)) {
                    return Outcome::Differs(format!("after {at}: {d}"));
                }
            }
            Step::Rpm {
                args,
                pkgs,
                env,
                want,
            } => {
                let before_b = state(&b);
                let mut rpm = rpm_in(&a);
                rpm.args(args).args(files_in(&a, pkgs));
                let mut ck = Command::new(cowkit);
                ck.env("HOME", cowkit_testutil::repo::HOME)
                    .env("LC_ALL", "C.UTF-8")
                    .arg("install")
                    .arg("--root")
                    .arg(&b)
                    .arg("--dbpath")
                    .arg(dbpath())
                    .args(cowkit_args(args))
                    .args(files_in(&b, pkgs));
                for (k, v) in env {
                    rpm.env(k, v);
                    ck.env(k, v);
                }
                let ra = ran(&mut rpm);
                if let Some(why) = unwanted(&ra, want) {
                    return Outcome::Broken(format!("{at}: {why}"));
                }
                let rb = ran(&mut ck);
                let after_b = state(&b);
                // cowkit refusing a step (by its option parser or its
                // check, its root untouched) that rpm failed (as the
                // scenario expects) after changing its root is a refusal
                // too: cowkit did not run the step. (When rpm's failure
                // left its root as it was, both ended alike.)
                let untouched = after_b == before_b;
                if !rb.ok && (ra.ok || (untouched && state(&a) != after_b)) {
                    return if after_b == before_b {
                        let how = if rb.stderr.contains("unexpected argument") {
                            "option parser"
                        } else if rb.stderr.contains("hint:") {
                            "cowkit's check"
                        } else {
                            "an error before any change"
                        };
                        Outcome::Refused(format!("{at}, by {how}: {}", gist(&rb.stderr)))
                    } else {
                        Outcome::Differs(format!(
                            "{at}: rpm succeeded; cowkit failed after changing its root: {}",
                            gist(&rb.stderr)
                        ))
                    };
                }
                if ra.ok != rb.ok {
                    return Outcome::Differs(format!(
                        "{at}: rpm failed ({}), cowkit succeeded",
                        gist(&ra.stderr)
                    ));
                }
                if want.stdout.is_some() && !want.own_stdout && ra.stdout != rb.stdout {
                    return Outcome::Differs(format!(
                        "{at}: stdout `{}` from rpm, `{}` from cowkit",
                        ra.stdout.trim_end(),
                        rb.stdout.trim_end()
                    ));
                }
                if let Some(d) = state_diff(&state(&a), &after_b) {
                    let why = if rb.ok {
                        String::new()
                    } else {
                        format!(" (both failed; cowkit: {})", gist(&rb.stderr))
                    };
                    return Outcome::Differs(format!("after {at}: {d}{why}"));
                }
            }
        }
    }
    Outcome::Equal
}

/// The key a built package is found by: its spec text and target.
pub fn build_key(spec: &Spec) -> String {
    format!("{}\n{}", spec.arch.unwrap_or("noarch"), spec.text())
}

/// Build `spec` (once: kept in `cache` under a hash of it, for later runs).
pub fn build(spec: &Spec, cache: &Path) -> PathBuf {
    let key = build_key(spec);
    let tag = &cowkit_testutil::sha256_hex(key.as_bytes())[..16];
    std::fs::create_dir_all(cache).unwrap();
    let dst = cache.join(format!("{}-{tag}.rpm", spec.nevra()));
    if dst.exists() {
        return dst;
    }
    let top = tempfile::tempdir_in(cache).unwrap();
    for d in ["SPECS", "RPMS", "BUILD", "BUILDROOT", "SOURCES", "SRPMS"] {
        std::fs::create_dir_all(top.path().join(d)).unwrap();
    }
    let spec_path = top.path().join("SPECS/t.spec");
    std::fs::write(&spec_path, spec.text()).unwrap();
    let mut cmd = Command::new("rpmbuild");
    cmd.env("HOME", cowkit_testutil::repo::HOME)
        .arg("--define")
        .arg(format!("_topdir {}", top.path().display()))
        .args([
            "--define",
            "_binary_payload w9.gzdio",
            "--nodeps",
            "--quiet",
            "-bb",
        ]);
    if let Some(arch) = spec.arch {
        cmd.args(["--target", arch]);
    }
    run_ok(
        cmd.arg(&spec_path),
        &format!("rpmbuild of\n{}\n", spec.text()),
    );
    let dir = top.path().join("RPMS").join(spec.arch.unwrap_or("noarch"));
    let built = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .expect("rpmbuild made a package")
        .unwrap()
        .path();
    let part = dst.with_extension(format!("part{}", std::process::id()));
    std::fs::copy(&built, &part).unwrap();
    std::fs::rename(&part, &dst).unwrap();
    dst
}
