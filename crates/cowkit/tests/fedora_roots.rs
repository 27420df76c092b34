//! Issue 26: roots built from a repository with the scriptlet shapes of
//! real Fedora packages (`cowkit_testutil::fedora`: Lua `%pretrans`,
//! `%pre`, `%post` and file triggers, glibc-common's ldconfig
//! `%transfiletriggerin`, systemd's prioritised file triggers, name
//! triggers with a version condition, `%post -p /sbin/ldconfig`,
//! `rpm.expand`, an install-only kernel, a rename by `Obsoletes`), built by
//! plain `dnf --installroot` on root A and by `cowkit dnf` on its twin B,
//! on the rig's XFS, for install, upgrade and removal, then changed by
//! `rpm -e`, `rpm -U` and `dnf remove` on both. After every step the two
//! roots must agree on:
//!
//! - the scriptlet log, byte for byte (every scriptlet and trigger logs
//!   its package, kind, arguments and file list, in the order run);
//! - `rpm -qa` (NEVRA) and `rpm -Va`;
//! - the database's file states (`%{FILESTATES:fstate}`: normal, not
//!   installed, wrong color, replaced) of every file of every package, and
//!   the root directory's mode and owner (`filesystem` owns `/`);
//! - the trees: type, mode, content, link target, owner, capabilities and
//!   every other extended attribute, hardlink groups, and the mtime of
//!   every non-directory entry whose mtime rpm sets from the package (at
//!   most the v2 build day); but for [`EXCLUDED`].
//!
//! The dnf steps run in three settings of dnf (see [`Setting`]): its
//! defaults, `--setopt=tsflags=nodocs`, and two ways of asking for
//! languages (dnf 4's non-option `install_langs`, rpm's `%_install_langs`).
//!
//! [`plain_dnf_twice_gives_equal_roots`] runs plain dnf on both twins: it
//! shows that the comparison itself is deterministic and that the
//! exclusions hide nothing the packages or scriptlets make.
//!
//! Needs root (scriptlets run chrooted), `dnf`, `createrepo_c`,
//! `rpmbuild`, `busybox-static`, and the rig's XFS.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{as_root, cowkit, run, tmp, Run};
use cowkit_testutil::fedora::{
    build, FedoraRepo, EPOCH_V2, INSTALL, KRB5_CONF, KRB5_LANGS, LOG, REMOVE,
};
use cowkit_testutil::repo::{dbpath, dnf, rpm_in, verify};
use cowkit_testutil::tree::{diff, hardlink_groups, mkdir, snapshot, Tree};
use cowkit_testutil::{run_ok, scratch, Fs};

/// What is left out of the tree comparison, and why. `{db}` is the rpm
/// database directory, `{cache}` dnf's cache path (both relative to the
/// root).
const EXCLUDED: [(&str, &str); 7] = [
    (
        "{db}",
        "the rpm database (sqlite pages, WAL and shared memory differ with timing); \
         compared through `rpm -qa` and `rpm -Va` instead",
    ),
    (
        "var/lib/dnf",
        "dnf's history database: transaction ids and times",
    ),
    ("var/log/dnf.log", "dnf's own log, with times"),
    (
        "var/log/dnf.rpm.log",
        "dnf's log of rpm's messages, with times",
    ),
    ("var/log/dnf.librepo.log", "librepo's log, with times"),
    ("var/log/hawkey.log", "libdnf's log, with times"),
    (
        "{cache}",
        "the empty copy of dnf's cache path that dnf makes inside the root \
         (see `cowkit_testutil::repo::dnf`), with its parents",
    ),
];

/// The twin roots of one test and their caches.
struct Twin {
    repo: FedoraRepo,
    a: PathBuf,
    b: PathBuf,
    dnf_cache: PathBuf,
    ck_cache: PathBuf,
    setting: Setting,
    /// `HOME` of every dnf run ([`Setting::LangsMacro`]'s has an
    /// `.rpmmacros`).
    home: PathBuf,
}

/// How dnf is configured for a whole run (every dnf command of it, plain
/// and through cowkit, gets the same).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Setting {
    /// dnf's defaults.
    Default,
    /// `--setopt=tsflags=nodocs`: rpm leaves `%doc` files out (not
    /// `%license` ones) and records them "not installed".
    NoDocs,
    /// `--setopt=install_langs=de,pt`: dnf 4 has no such option; it warns
    /// ("Main config did not have a install_langs attr. before setopt")
    /// and installs every language.
    LangsSetopt,
    /// rpm's own `%_install_langs de:pt` in the rpm configuration dnf's
    /// rpm reads (`~/.rpmmacros` here, as `/etc/rpm/macros.image-language-conf`
    /// in Fedora's images): `de` files installed; `fr` and `pt_BR` ones
    /// recorded "not installed" (rpm takes a language only when it is
    /// named exactly: `pt` is not `pt_BR`).
    LangsMacro,
}

impl Setting {
    fn args(self) -> &'static [&'static str] {
        match self {
            Setting::Default | Setting::LangsMacro => &[],
            Setting::NoDocs => &["--setopt=tsflags=nodocs"],
            Setting::LangsSetopt => &["--setopt=install_langs=de,pt"],
        }
    }
}

impl Twin {
    fn new(d: &Path) -> Twin {
        Twin::with(d, Setting::Default)
    }

    fn with(d: &Path, setting: Setting) -> Twin {
        let home = if setting == Setting::LangsMacro {
            let h = mkdir(&d.join("home"));
            // The database stays where Debian's rpm has it for HOME=/root.
            std::fs::write(
                h.join(".rpmmacros"),
                format!("%_install_langs de:pt\n%_dbpath {}\n", dbpath()),
            )
            .unwrap();
            h
        } else {
            PathBuf::from(cowkit_testutil::repo::HOME)
        };
        Twin {
            repo: build(tmp()),
            a: mkdir(&d.join("a")),
            b: mkdir(&d.join("b")),
            dnf_cache: d.join("dnf-cache"),
            ck_cache: d.join("cowkit-cache"),
            setting,
            home,
        }
    }

    /// Plain dnf with this run's setting on `root`.
    fn plain(&self, repo: &Path, root: &Path, cmd: &[&str]) -> Output {
        let out = dnf(repo, root, &self.dnf_cache)
            .env("HOME", &self.home)
            .args(self.setting.args())
            .args(cmd)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "dnf {cmd:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn repo_for(&self, step: &str) -> &Path {
        if step == "install" {
            &self.repo.v1
        } else {
            &self.repo.v2
        }
    }
}

/// `cowkit dnf --root ROOT --cache CK --dbpath DB -- <the same dnf
/// arguments> CMD`.
fn cowkit_dnf(t: &Twin, repo: &Path, cmd: &[&str]) -> Run {
    let dnf_args = common::dnf_args(repo, &t.b, &t.dnf_cache);
    run(cowkit()
        .env("HOME", &t.home)
        .args(["dnf", "--json", "--root"])
        .arg(&t.b)
        .arg("--cache")
        .arg(&t.ck_cache)
        .arg("--dbpath")
        .arg(dbpath())
        .arg("--")
        .args(dnf_args)
        .args(t.setting.args())
        .args(cmd))
}

fn log(root: &Path) -> String {
    std::fs::read_to_string(root.join(LOG.trim_start_matches('/'))).unwrap_or_default()
}

/// `rpm -qa` as sorted NEVRAs.
fn nevras(root: &Path) -> Vec<String> {
    let out = run_ok(rpm_in(root).args(["-qa", "--qf", "%{NEVRA}\\n"]), "rpm -qa");
    let mut l: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    l.sort();
    l
}

/// Whether `p` is `pre` or below it.
fn at_or_below(p: &str, pre: &str) -> bool {
    p == pre || p.starts_with(&format!("{pre}/"))
}

/// The tree of `root` without [`EXCLUDED`] (and the parents only they
/// made: a directory above an excluded path that holds nothing else).
fn comparable(root: &Path, cache: &Path) -> Tree {
    let db = dbpath().trim_start_matches('/').to_string();
    let cache_rel = cache.to_str().unwrap().trim_start_matches('/').to_string();
    let excluded: Vec<String> = EXCLUDED
        .iter()
        .map(|(p, _)| p.replace("{db}", &db).replace("{cache}", &cache_rel))
        .collect();
    let tree = snapshot(root);
    let kept: Tree = tree
        .iter()
        .filter(|(p, _)| !excluded.iter().any(|x| at_or_below(p, x)))
        .map(|(p, e)| (p.clone(), e.clone()))
        .collect();
    // Drop a directory that is a parent of an excluded path and has no
    // kept entry below it.
    kept.iter()
        .filter(|(p, e)| {
            let parent_of_excluded =
                e.kind == 'd' && excluded.iter().any(|x| x.starts_with(&format!("{p}/")));
            let holds_kept = kept.keys().any(|k| k.starts_with(&format!("{p}/")));
            !parent_of_excluded || holds_kept || owned_dirs(p)
        })
        .map(|(p, e)| (p.clone(), e.clone()))
        .collect()
}

/// Directories the packages own that may hold only excluded entries
/// (`var/log` holds the scriptlet log, `var/lib`, `etc`, `root` more).
fn owned_dirs(p: &str) -> bool {
    ["etc", "var", "var/lib", "var/log", "root", "tmp"].contains(&p)
}

/// Every extended attribute of every entry (`security.capability`
/// included), not following symlinks.
fn xattrs(root: &Path, tree: &Tree) -> BTreeMap<String, Vec<(String, Vec<u8>)>> {
    let mut all = BTreeMap::new();
    for p in tree.keys() {
        let path = root.join(p);
        let mut names = vec![0u8; 65536];
        let n = rustix::fs::llistxattr(&path, &mut names[..])
            .unwrap_or_else(|e| panic!("llistxattr {}: {e}", path.display()));
        let mut attrs = Vec::new();
        for name in names[..n].split(|b| *b == 0).filter(|s| !s.is_empty()) {
            let name = std::ffi::CString::new(name).unwrap();
            let mut value = vec![0u8; 65536];
            let len = rustix::fs::lgetxattr(&path, name.as_c_str(), &mut value[..])
                .unwrap_or_else(|e| panic!("lgetxattr {} {name:?}: {e}", path.display()));
            value.truncate(len);
            attrs.push((name.to_string_lossy().into_owned(), value));
        }
        if !attrs.is_empty() {
            attrs.sort();
            all.insert(p.clone(), attrs);
        }
    }
    all
}

/// Every package's file states in the database, as rpm shows them:
/// `NEVRA state path` lines, sorted.
fn file_states(root: &Path) -> Vec<String> {
    let out = run_ok(
        rpm_in(root).args([
            "-qa",
            "--qf",
            "[%{=NEVRA} %{FILESTATES:fstate} %{FILENAMES}\\n]",
        ]),
        "rpm -qa --qf FILESTATES",
    );
    let mut l: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    l.sort();
    l
}

/// The mode and owner of the root directory itself (`filesystem` owns
/// `/`).
fn root_meta(root: &Path) -> (u32, u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(root).unwrap();
    (m.mode() & 0o7777, m.uid(), m.gid())
}

/// Roots `a` and `b` agree on the log, `rpm -qa`, `rpm -Va`, the
/// database's file states and the trees (see the module documentation).
fn assert_same_roots(a: &Path, b: &Path, cache: &Path, what: &str) {
    let (la, lb) = (log(a), log(b));
    assert!(
        la == lb,
        "{what}: the scriptlet logs differ\n--- dnf ---\n{la}--- cowkit ---\n{lb}"
    );
    assert_eq!(nevras(a), nevras(b), "{what}: rpm -qa");
    assert_eq!(verify(a), verify(b), "{what}: rpm -Va");
    let (fa, fb) = (file_states(a), file_states(b));
    let differ: Vec<_> = fa
        .iter()
        .filter(|l| !fb.contains(l))
        .map(|l| format!("dnf:    {l}"))
        .chain(
            fb.iter()
                .filter(|l| !fa.contains(l))
                .map(|l| format!("cowkit: {l}")),
        )
        .collect();
    assert!(
        differ.is_empty(),
        "{what}: the database's file states differ:\n{}",
        differ.join("\n")
    );
    assert_eq!(root_meta(a), root_meta(b), "{what}: the root directory");
    let (ta, tb) = (comparable(a, cache), comparable(b, cache));
    let d = diff(&ta, &tb, |e| {
        (
            e.shape(),
            e.uid,
            e.gid,
            // rpm sets the package's mtime; what scriptlets write has the
            // time of the run, and directories change with their entries.
            (e.kind != 'd' && e.mtime <= EPOCH_V2 + 86_400).then_some(e.mtime),
        )
    });
    assert!(d.is_empty(), "{what}: the trees differ:\n{d:#?}");
    assert_eq!(
        hardlink_groups(&ta),
        hardlink_groups(&tb),
        "{what}: hardlinks"
    );
    assert_eq!(
        xattrs(a, &ta),
        xattrs(b, &tb),
        "{what}: extended attributes"
    );
}

/// The dnf steps: install (v1), upgrade (v2), removal.
fn steps() -> [(&'static str, Vec<&'static str>); 3] {
    [
        ("install", [&["install"][..], &INSTALL[..]].concat()),
        ("upgrade", vec!["upgrade"]),
        ("remove", [&["remove"][..], &REMOVE[..]].concat()),
    ]
}

/// After the dnf steps: `rpm -e zlib`, `rpm -U` of mandoc (v1) and
/// `dnf remove shared-mime-info`, run by the real rpm and dnf on both
/// roots, which must still agree.
fn afterwards_on_both(t: &Twin) {
    let mandoc = t.repo.rpm("mandoc-1.14.6");
    for root in [&t.a, &t.b] {
        run_ok(rpm_in(root).args(["-e", "zlib"]), "rpm -e zlib");
    }
    assert_same_roots(&t.a, &t.b, &t.dnf_cache, "rpm -e zlib");
    for root in [&t.a, &t.b] {
        run_ok(rpm_in(root).arg("-U").arg(mandoc), "rpm -U mandoc");
    }
    assert_same_roots(&t.a, &t.b, &t.dnf_cache, "rpm -U mandoc");
    for root in [&t.a, &t.b] {
        t.plain(&t.repo.v2, root, &["remove", "shared-mime-info"]);
    }
    assert_same_roots(&t.a, &t.b, &t.dnf_cache, "dnf remove shared-mime-info");
}

/// Issue 26: `cowkit dnf` builds, upgrades and shrinks the Fedora-shaped
/// root exactly as plain dnf does, running every scriptlet and trigger as
/// rpm 4.18 does; rpm and dnf work on its root afterwards.
#[test]
fn cowkit_dnf_builds_fedora_shaped_roots_as_dnf_does() {
    if !as_root(
        "cowkit_dnf_builds_fedora_shaped_roots_as_dnf_does",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let t = cowkit_dnf_as_dnf(dir.path(), Setting::Default);
    afterwards_on_both(&t);
}

/// Install, upgrade and removal by plain dnf on root A and `cowkit dnf`
/// on B with `setting`, compared after each step; after the install, the
/// Fedora shapes are checked on A (what dnf made: the comparison is not
/// vacuous) and krb5-libs' shared config is edited on both.
fn cowkit_dnf_as_dnf(d: &Path, setting: Setting) -> Twin {
    let t = Twin::with(d, setting);
    for (step, cmd) in steps() {
        let repo = t.repo_for(step);
        t.plain(repo, &t.a, &cmd);
        let r = cowkit_dnf(&t, repo, &cmd);
        assert!(
            r.ok,
            "cowkit dnf {step} ({setting:?}) failed:\n{}",
            r.stderr
        );
        assert_same_roots(
            &t.a,
            &t.b,
            &t.dnf_cache,
            &format!("dnf {step} ({setting:?})"),
        );
        if step == "install" {
            shapes_installed(&t.a, setting);
            admin_edits(&t.a);
            admin_edits(&t.b);
        }
    }
    t
}

/// The admin's edit of krb5-libs' shared `%config(noreplace)` file
/// between install and upgrade (v2 changes it too: rpm keeps the edit and
/// writes the new one as `.rpmnew`).
fn admin_edits(root: &Path) {
    let p = root.join(KRB5_CONF.trim_start_matches('/'));
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str("    default_realm = EXAMPLE.ORG\n");
    std::fs::write(&p, text).unwrap();
}

/// What rpm made of the Fedora shapes on `root` after the v1 install with
/// `setting`, from its database and tree.
fn shapes_installed(root: &Path, setting: Setting) {
    let states = file_states(root);
    let has = |line: &str| {
        assert!(
            states.iter().any(|l| l == line),
            "{setting:?}: no `{line}` in\n{}",
            states.join("\n")
        )
    };
    has("cyrus-sasl-lib-2.1.28-1.fc40.x86_64 normal /usr/sbin/saslpasswd2");
    has("cyrus-sasl-lib-2.1.28-1.fc40.i686 wrong color /usr/sbin/saslpasswd2");
    let sasl = std::fs::read(root.join("usr/sbin/saslpasswd2")).unwrap();
    assert_eq!(sasl[4], 2, "the 64-bit ELF won");
    assert_eq!(root_meta(root).0, 0o555, "filesystem's `/`");
    let doc = if setting == Setting::NoDocs {
        "not installed"
    } else {
        "normal"
    };
    for arch in ["x86_64", "i686"] {
        has(&format!(
            "cyrus-sasl-lib-2.1.28-1.fc40.{arch} {doc} /usr/share/doc/cyrus-sasl-lib/AUTHORS"
        ));
        has(&format!(
            "cyrus-sasl-lib-2.1.28-1.fc40.{arch} normal /usr/share/licenses/cyrus-sasl-lib/COPYING"
        ));
        has(&format!(
            "krb5-libs-1.21.2-1.fc40.{arch} normal {KRB5_CONF}"
        ));
        for lang in KRB5_LANGS {
            let state = if setting == Setting::LangsMacro && lang != "de" {
                "not installed"
            } else {
                "normal"
            };
            has(&format!(
                "krb5-libs-1.21.2-1.fc40.{arch} {state} /usr/share/locale/{lang}/LC_MESSAGES/mit-krb5.mo"
            ));
        }
    }
    assert_eq!(
        root.join("usr/share/doc/cyrus-sasl-lib/AUTHORS").exists(),
        setting != Setting::NoDocs
    );
    assert!(
        std::fs::symlink_metadata(root.join("etc/fonts/conf.d/57-dejavu-sans-fonts.conf"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// After install and upgrade: `dnf downgrade` of the multilib pairs (the
/// shared config the admin edited, the shared ELF path) and of the
/// package with the config symlink, then `dnf reinstall` of a pair and of
/// systemd (file triggers, Lua `%posttrans`), by plain dnf on A and
/// `cowkit dnf` on B with `setting`, compared after each.
fn downgrade_and_reinstall_as_dnf(d: &Path, setting: Setting) {
    let t = Twin::with(d, setting);
    let steps: [(&str, &Path, Vec<&str>); 4] = [
        (
            "install",
            &t.repo.v1,
            [&["install"][..], &INSTALL[..]].concat(),
        ),
        ("upgrade", &t.repo.v2, vec!["upgrade"]),
        (
            "downgrade",
            &t.repo.v2,
            vec![
                "downgrade",
                "krb5-libs",
                "cyrus-sasl-lib",
                "dejavu-sans-fonts",
            ],
        ),
        (
            "reinstall",
            &t.repo.v2,
            vec!["reinstall", "krb5-libs", "systemd"],
        ),
    ];
    for (step, repo, cmd) in steps {
        t.plain(repo, &t.a, &cmd);
        let r = cowkit_dnf(&t, repo, &cmd);
        assert!(
            r.ok,
            "cowkit dnf {step} ({setting:?}) failed:\n{}",
            r.stderr
        );
        assert_same_roots(
            &t.a,
            &t.b,
            &t.dnf_cache,
            &format!("dnf {step} ({setting:?})"),
        );
        if step == "install" {
            admin_edits(&t.a);
            admin_edits(&t.b);
        }
        if step == "downgrade" {
            // The downgrade took effect on dnf's root (the comparison
            // above is not vacuous).
            let krb5: Vec<String> = nevras(&t.a)
                .into_iter()
                .filter(|n| n.starts_with("krb5-libs-"))
                .collect();
            assert!(
                !krb5.is_empty() && krb5.iter().all(|n| n.starts_with("krb5-libs-1.21.2-")),
                "dnf's downgrade: {krb5:?}"
            );
        }
    }
}

/// `cowkit dnf downgrade` and `reinstall` of Fedora's shapes as plain dnf.
#[test]
fn cowkit_dnf_downgrades_and_reinstalls_fedora_shapes_as_dnf() {
    if !as_root(
        "cowkit_dnf_downgrades_and_reinstalls_fedora_shapes_as_dnf",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    downgrade_and_reinstall_as_dnf(dir.path(), Setting::Default);
}

/// The same with `--setopt=tsflags=nodocs`.
#[test]
fn cowkit_dnf_downgrades_and_reinstalls_with_nodocs_as_dnf() {
    if !as_root(
        "cowkit_dnf_downgrades_and_reinstalls_with_nodocs_as_dnf",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    downgrade_and_reinstall_as_dnf(dir.path(), Setting::NoDocs);
}

/// `cowkit dnf` as plain dnf with `--setopt=tsflags=nodocs` (mkosi's
/// default): `%doc` files left out and recorded "not installed" alike,
/// `%license` files installed.
#[test]
fn cowkit_dnf_with_tsflags_nodocs_as_dnf() {
    if !as_root(
        "cowkit_dnf_with_tsflags_nodocs_as_dnf",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    cowkit_dnf_as_dnf(dir.path(), Setting::NoDocs);
}

/// `cowkit dnf` as plain dnf given `--setopt=install_langs=de,pt`, which
/// dnf 4 does not have (it warns and installs every language): cowkit
/// installs every language too.
#[test]
fn cowkit_dnf_with_install_langs_setopt_as_dnf() {
    if !as_root(
        "cowkit_dnf_with_install_langs_setopt_as_dnf",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    cowkit_dnf_as_dnf(dir.path(), Setting::LangsSetopt);
}

/// `cowkit dnf` as plain dnf with rpm's `%_install_langs de:pt` in the
/// rpm configuration: the `fr` and `pt_BR` catalogues of both arches left
/// out and recorded "not installed", `de` installed.
#[test]
fn cowkit_dnf_with_rpm_install_langs_as_dnf() {
    if !as_root(
        "cowkit_dnf_with_rpm_install_langs_as_dnf",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    cowkit_dnf_as_dnf(dir.path(), Setting::LangsMacro);
}

/// `cowkit install` of the package files against `rpm -U` of the same
/// files: the v1 set into an empty root, then the v2 packages that
/// upgrade or rename (`rpm -U` would erase the old kernel, which
/// `cowkit install` refuses, so the second kernel is left out here; the
/// `cowkit dnf` test has it).
#[test]
fn cowkit_install_runs_fedora_shaped_scriptlets_as_rpm_does() {
    if !as_root(
        "cowkit_install_runs_fedora_shaped_scriptlets_as_rpm_does",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let t = Twin::new(dir.path());
    let upgrades: Vec<PathBuf> = t
        .repo
        .v2_rpms
        .iter()
        .filter(|p| !p.to_string_lossy().contains("kernel-core"))
        .cloned()
        .collect();
    for (what, pkgs) in [("install", &t.repo.v1_rpms), ("upgrade", &upgrades)] {
        run_ok(
            rpm_in(&t.a).arg("-U").args(pkgs),
            &format!("rpm -U ({what})"),
        );
        let r = run(cowkit()
            .arg("install")
            .arg("--root")
            .arg(&t.b)
            .arg("--dbpath")
            .arg(dbpath())
            .args(pkgs));
        assert!(r.ok, "cowkit install ({what}) failed:\n{}", r.stderr);
        assert_same_roots(&t.a, &t.b, &t.dnf_cache, &format!("rpm -U ({what})"));
    }
}

/// Two versions of the install-only kernel in one dnf transaction (both
/// named from the v2 repository, which has both): dnf adds every install
/// as rpm's install element, so rpm keeps both, and so must `cowkit dnf`
/// (an upgrade would keep only the newer one).
#[test]
fn cowkit_dnf_installs_two_kernels_of_one_transaction_as_dnf_does() {
    if !as_root(
        "cowkit_dnf_installs_two_kernels_of_one_transaction_as_dnf_does",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let t = Twin::new(dir.path());
    let base: Vec<&str> = [&["install"][..], &INSTALL[..]]
        .concat()
        .into_iter()
        .filter(|p| *p != "kernel-core")
        .collect();
    t.plain(&t.repo.v1, &t.a, &base);
    let r = cowkit_dnf(&t, &t.repo.v1, &base);
    assert!(r.ok, "cowkit dnf install failed:\n{}", r.stderr);
    assert_same_roots(&t.a, &t.b, &t.dnf_cache, "dnf install (no kernel)");
    let kernels = [
        "install",
        "kernel-core-6.1.0-1.fc40",
        "kernel-core-6.2.0-1.fc40",
    ];
    t.plain(&t.repo.v2, &t.a, &kernels);
    let both: Vec<String> = nevras(&t.a)
        .into_iter()
        .filter(|n| n.starts_with("kernel-core-"))
        .collect();
    assert_eq!(both.len(), 2, "dnf installs both kernels: {both:?}");
    let r = cowkit_dnf(&t, &t.repo.v2, &kernels);
    assert!(
        r.ok,
        "cowkit dnf install of two kernels failed:\n{}",
        r.stderr
    );
    assert_same_roots(&t.a, &t.b, &t.dnf_cache, "dnf install of two kernels");
}

/// The comparison itself: plain dnf on both twins gives equal roots after
/// every step and afterwards, so a difference the cowkit tests report is
/// cowkit's, and the exclusions hide nothing the packages make.
#[test]
fn plain_dnf_twice_gives_equal_roots() {
    if !as_root(
        "plain_dnf_twice_gives_equal_roots",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let t = Twin::new(dir.path());
    for (step, cmd) in steps() {
        let repo = t.repo_for(step);
        t.plain(repo, &t.a, &cmd);
        t.plain(repo, &t.b, &cmd);
        assert_same_roots(&t.a, &t.b, &t.dnf_cache, &format!("dnf {step}"));
        if step == "install" {
            shapes_installed(&t.a, Setting::Default);
            admin_edits(&t.a);
            admin_edits(&t.b);
        }
    }
    assert!(
        log(&t.a).contains("glibc-common-2.39 transfiletriggerin(2000000)"),
        "the ldconfig file trigger ran:\n{}",
        log(&t.a)
    );
    afterwards_on_both(&t);

    // The comparison sees what the packages and scriptlets made ...
    let tree = comparable(&t.a, &t.dnf_cache);
    for p in [
        "etc/passwd",
        "etc/ld.so.cache",
        "etc/machine-id",
        "run/httpd",
        "usr/lib64/libc.so.6",
        "boot/loader/entries/6.2.0.conf",
        "var/log/scriptlets.log",
        "var/lib/systemd",
    ] {
        assert!(tree.contains_key(p), "{p} is not compared");
    }
    // ... and a difference in any of it fails it.
    let shells = t.b.join("etc/shells");
    let mode = std::fs::metadata(&shells).unwrap().permissions();
    std::fs::set_permissions(&shells, std::fs::Permissions::from_mode(0o600)).unwrap();
    let caught = std::panic::catch_unwind(|| {
        assert_same_roots(&t.a, &t.b, &t.dnf_cache, "a changed mode");
    });
    std::fs::set_permissions(&shells, mode).unwrap();
    assert!(caught.is_err(), "a changed mode went unseen");
}

// ---------------------------------------------------------------------------
// Scriptlets that fail: what rpm 4.18 does, and cowkit next to it.

/// A package `name`-`version` owning `/usr/share/NAME/v`, with `preamble`
/// and whole scriptlet sections `scripts`, built into `dir`.
fn small(dir: &Path, name: &str, version: u32, preamble: &str, scripts: &str) -> PathBuf {
    let spec = format!(
        "Name: {name}\nVersion: {version}\nRelease: 1\nSummary: x\nLicense: MIT\n\
         BuildArch: noarch\n{preamble}\n\
         %global debug_package %{{nil}}\n%global __os_install_post %{{nil}}\n\
         %description\nx\n%install\nmkdir -p \"$RPM_BUILD_ROOT/usr/share/{name}\"\n\
         echo {version} > \"$RPM_BUILD_ROOT/usr/share/{name}/v\"\n\
         %files\n/usr/share/{name}\n{scripts}\n"
    );
    let dst = dir.join(format!("{name}-{version}-1.noarch.rpm"));
    cowkit_testutil::rpm::rpmbuild(&spec, "w9.gzdio", &dst);
    dst
}

/// A shell scriptlet line appending `text` to [`LOG`].
fn say(text: &str) -> String {
    format!("echo \"{text}\" >> {LOG}")
}

/// The failing packages and the ones beside them.
struct Bad {
    target1: PathBuf,
    target2: PathBuf,
    lua: BTreeMap<&'static str, PathBuf>,
    trig: PathBuf,
    ftrig: PathBuf,
    up1: Vec<PathBuf>,
    up2: Vec<PathBuf>,
    /// `preunfail` 1, whose `%preun` fails, and 2, which upgrades it.
    preun: [PathBuf; 2],
}

fn bad_packages(dir: &Path) -> Bad {
    let d = mkdir(dir);
    let target = |v| {
        small(
            &d,
            "target",
            v,
            "",
            &format!("%post\n{}", say(&format!("target-{v} post $1"))),
        )
    };
    let mut lua = BTreeMap::new();
    for phase in ["pretrans", "pre", "post", "posttrans"] {
        let name = format!("lua{phase}");
        let log = format!(
            "io.open('{LOG}', 'a'):write('{name} {phase}\\n'):close()\nerror('boom in {phase}')"
        );
        lua.insert(
            phase,
            small(&d, &name, 1, "", &format!("%{phase} -p <lua>\n{log}")),
        );
    }
    let trig = small(
        &d,
        "trigfail",
        1,
        "",
        &format!(
            "%triggerin -p <lua> -- target\nerror('boom in triggerin')\n\
             %triggerun -- target\n{}\nexit 3",
            say("trigfail triggerun $*")
        ),
    );
    let ftrig = small(
        &d,
        "ftrigfail",
        1,
        "",
        &format!(
            "%filetriggerin -- /usr/share/target\n{}\nexit 4\n\
             %transfiletriggerin -p <lua> -- /usr/share/target\nerror('boom in transfiletriggerin')",
            say("ftrigfail filetriggerin")
        ),
    );
    let up1 = vec![
        small(
            &d,
            "upa",
            1,
            "",
            &format!("%post\n{}", say("upa-1 post $1")),
        ),
        small(
            &d,
            "upb",
            1,
            "",
            &format!("%postun\n{}", say("upb-1 postun $1")),
        ),
        small(&d, "upc", 1, "", ""),
    ];
    let up2 = vec![
        small(
            &d,
            "upa",
            2,
            "",
            &format!(
                "%pre\n{}\n%post\n{}",
                say("upa-2 pre $1"),
                say("upa-2 post $1")
            ),
        ),
        small(
            &d,
            "upb",
            2,
            "",
            &format!("%pre\n{}\nexit 7", say("upb-2 pre $1")),
        ),
        small(
            &d,
            "upc",
            2,
            "Requires: upb",
            "%pre -p <lua>\nerror('upc-2 pre fails')",
        ),
    ];
    let preun = [
        small(
            &d,
            "preunfail",
            1,
            "",
            &format!(
                "%preun\n{}\nexit 5\n%postun\n{}",
                say("preunfail-1 preun $1"),
                say("preunfail-1 postun $1")
            ),
        ),
        small(
            &d,
            "preunfail",
            2,
            "",
            &format!(
                "%post\n{}\n%posttrans\n{}",
                say("preunfail-2 post $1"),
                say("preunfail-2 posttrans $1")
            ),
        ),
    ];
    Bad {
        target1: target(1),
        target2: target(2),
        lua,
        trig,
        ftrig,
        up1,
        up2,
        preun,
    }
}

/// A root with setup, filesystem, coreutils-single (busybox) and bash of
/// the Fedora-shaped repository and `more`, installed by the real rpm; and
/// its twin.
fn bad_twins(d: &Path, name: &str, more: &[&Path]) -> (PathBuf, PathBuf) {
    let repo = build(tmp());
    let a = mkdir(&d.join(format!("{name}-rpm")));
    let mut base: Vec<&Path> = [
        "setup-2.14.5",
        "filesystem-3.18",
        "coreutils-single-9.4",
        "bash-5.2.26",
    ]
    .iter()
    .map(|n| repo.rpm(n))
    .collect();
    base.extend(more);
    run_ok(
        rpm_in(&a).args(["-i", "--nodeps"]).args(&base),
        "rpm -i (base)",
    );
    let _ = std::fs::remove_file(a.join(LOG.trim_start_matches('/')));
    let b = d.join(format!("{name}-cowkit"));
    run_ok(
        std::process::Command::new("cp").arg("-a").arg(&a).arg(&b),
        "cp -a",
    );
    (a, b)
}

/// `rpm ARGS PKGS` on `a` and `cowkit install PKGS` on `b`: both succeed
/// or both fail (rpm's exit status is its count of failed elements), and
/// the roots agree afterwards.
fn rpm_and_cowkit(a: &Path, b: &Path, rpm_args: &[&str], pkgs: &[&Path], what: &str) {
    let out = rpm_in(a).args(rpm_args).args(pkgs).output().unwrap();
    let r = run(cowkit()
        .arg("install")
        .arg("--root")
        .arg(b)
        .arg("--dbpath")
        .arg(dbpath())
        .args(pkgs));
    assert_eq!(
        r.ok,
        out.status.success(),
        "{what}: rpm {} with\n{}\ncowkit: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        r.stderr
    );
    assert_same_roots(a, b, Path::new("/nonexistent-cache"), what);
}

/// Issue 26, bad cases (rpm 4.18's outcomes, observed): a Lua error in
/// `%pretrans` skips the package and in `%pre` fails it (nothing placed,
/// not registered, rpm exits non-zero); in `%post` and `%posttrans` it
/// only warns (installed, exit 0). A failing name trigger (Lua error in
/// `%triggerin`, `exit 3` in `%triggerun`) and failing file triggers
/// (`exit 4` in `%filetriggerin`, a Lua error in `%transfiletriggerin`)
/// only warn. In an upgrade of three packages where the second's `%pre`
/// exits 7 and the third's Lua `%pre` errors, the first is upgraded and
/// the other two keep their old versions (their erasure is "skipped",
/// the old `%postun` does not run). cowkit must end each case as rpm
/// does: same success, same log, database and tree.
#[test]
fn failing_scriptlets_end_as_rpm_ends_them() {
    if !as_root(
        "failing_scriptlets_end_as_rpm_ends_them",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let p = bad_packages(&d.join("pkgs"));
    for (phase, pkg) in &p.lua {
        let (a, b) = bad_twins(d, &format!("lua-{phase}"), &[]);
        rpm_and_cowkit(
            &a,
            &b,
            &["-i"],
            &[pkg, &p.target1],
            &format!("a Lua error in %{phase}"),
        );
    }
    let (a, b) = bad_twins(d, "trigger", &[&p.trig]);
    rpm_and_cowkit(&a, &b, &["-i"], &[&p.target1], "a failing %triggerin");
    rpm_and_cowkit(&a, &b, &["-U"], &[&p.target2], "a failing %triggerun");
    let (a, b) = bad_twins(d, "filetrigger", &[&p.ftrig]);
    rpm_and_cowkit(&a, &b, &["-i"], &[&p.target1], "failing file triggers");
    let up1: Vec<&Path> = p.up1.iter().map(PathBuf::as_path).collect();
    let up2: Vec<&Path> = p.up2.iter().map(PathBuf::as_path).collect();
    let (a, b) = bad_twins(d, "upgrade", &up1);
    rpm_and_cowkit(
        &a,
        &b,
        &["-U"],
        &up2,
        "%pre failing in the middle of an upgrade",
    );
    let (a, b) = bad_twins(d, "preun", &[&p.preun[0]]);
    rpm_and_cowkit(
        &a,
        &b,
        &["-U"],
        &[&p.preun[1]],
        "the old version's %preun failing in an upgrade",
    );
}

/// The old version's `%preun` failing in a `dnf upgrade`: dnf 4 reports
/// the element failed ("Failed: preunfail-1-1.noarch") and fails the
/// transaction; rpm keeps both versions. `cowkit dnf` on the twin root
/// fails too and leaves the same root ([`assert_same_roots`]).
#[test]
fn a_failing_preun_in_an_upgrade_ends_as_dnf_ends_it() {
    if !as_root(
        "a_failing_preun_in_an_upgrade_ends_as_dnf_ends_it",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let p = bad_packages(&d.join("pkgs"));
    let v2 = mkdir(&d.join("v2"));
    std::fs::copy(&p.preun[1], v2.join(p.preun[1].file_name().unwrap())).unwrap();
    run_ok(
        std::process::Command::new("createrepo_c")
            .args(["--quiet", "--no-database"])
            .arg(&v2),
        "createrepo_c",
    );
    let (a, b) = bad_twins(d, "dnf-preun", &[&p.preun[0]]);
    // One dnf cache path for both: dnf makes its copy inside the root.
    let cache = d.join("dnf-cache");
    let out = dnf(&v2, &a, &cache).arg("upgrade").output().unwrap();
    let r = common::cowkit_dnf(&v2, &b, &cache, &d.join("cowkit-cache"), &["upgrade"]);
    assert!(!out.status.success(), "plain dnf: the erasure fails");
    assert!(!r.ok, "cowkit dnf: the erasure fails: {}", r.stderr);
    assert!(
        r.stderr.contains("preunfail-1-1.noarch: erase failed"),
        "{}",
        r.stderr
    );
    assert!(nevras(&a).iter().any(|n| n == "preunfail-1-1.noarch"));
    assert_same_roots(&a, &b, &cache, "dnf upgrade");
}

/// The rpm side of [`failing_scriptlets_end_as_rpm_ends_them`]
/// pinned: what the cowkit test compares against is what the
/// documentation there says.
#[test]
fn rpm_outcomes_of_failing_scriptlets() {
    if !as_root(
        "rpm_outcomes_of_failing_scriptlets",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let p = bad_packages(&d.join("pkgs"));
    let rpm = |root: &Path, args: &[&str], pkgs: &[&Path]| {
        let out = rpm_in(root).args(args).args(pkgs).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (phase, fails) in [
        ("pretrans", true),
        ("pre", true),
        ("post", false),
        ("posttrans", false),
    ] {
        let (a, _) = bad_twins(d, &format!("lua-{phase}"), &[]);
        let (code, err) = rpm(&a, &["-i"], &[&p.lua[phase], &p.target1]);
        assert!(err.contains(&format!("boom in {phase}")), "%{phase}: {err}");
        assert_eq!(code == Some(0), !fails, "%{phase}: {code:?} {err}");
        let names = nevras(&a).join(" ");
        assert_eq!(names.contains(&format!("lua{phase}")), !fails, "{names}");
        assert!(names.contains("target-1-1"), "{names}");
        assert_eq!(
            a.join(format!("usr/share/lua{phase}/v")).exists(),
            !fails,
            "%{phase}: files placed"
        );
        assert!(
            verify(&a).iter().all(|l| l.ends_with("/etc/shells")),
            "{:?}",
            verify(&a)
        );
    }
    let (a, _) = bad_twins(d, "trigger", &[&p.trig]);
    let (code, err) = rpm(&a, &["-i"], &[&p.target1]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("boom in triggerin"), "{err}");
    let (code, err) = rpm(&a, &["-U"], &[&p.target2]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning: %triggerun(trigfail-1-1.noarch) scriptlet failed, exit status 3"),
        "{err}"
    );
    let (a, _) = bad_twins(d, "filetrigger", &[&p.ftrig]);
    let (code, err) = rpm(&a, &["-i"], &[&p.target1]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(
            "warning: %filetriggerin(ftrigfail-1-1.noarch) scriptlet failed, exit status 4"
        ) && err.contains("boom in transfiletriggerin"),
        "{err}"
    );
    let up1: Vec<&Path> = p.up1.iter().map(PathBuf::as_path).collect();
    let up2: Vec<&Path> = p.up2.iter().map(PathBuf::as_path).collect();
    let (a, _) = bad_twins(d, "upgrade", &up1);
    let _ = std::fs::remove_file(a.join(LOG.trim_start_matches('/')));
    let (code, err) = rpm(&a, &["-U"], &up2);
    assert_eq!(code, Some(3), "{err}");
    for line in [
        "error: %prein(upb-2-1.noarch) scriptlet failed, exit status 7",
        "error: upb-2-1.noarch: install failed",
        "error: upc-2-1.noarch: install failed",
        "error: upc-1-1.noarch: erase skipped",
        "error: upb-1-1.noarch: erase skipped",
    ] {
        assert!(err.contains(line), "{line} not in {err}");
    }
    assert_eq!(log(&a), "upb-2 pre 2\nupa-2 pre 2\nupa-2 post 2\n");
    assert_eq!(
        nevras(&a)
            .into_iter()
            .filter(|n| n.starts_with("up"))
            .collect::<Vec<_>>(),
        ["upa-2-1.noarch", "upb-1-1.noarch", "upc-1-1.noarch"]
    );
    assert!(
        verify(&a).iter().all(|l| l.ends_with("/etc/shells")),
        "{:?}",
        verify(&a)
    );
    // The old version's %preun fails: the erasure fails, the old version
    // stays registered beside the new one (their shared file's states
    // untouched), rpm counts one failed element.
    let (a, _) = bad_twins(d, "preun", &[&p.preun[0]]);
    let (code, err) = rpm(&a, &["-U"], &[&p.preun[1]]);
    assert_eq!(code, Some(1), "{err}");
    for line in [
        "error: %preun(preunfail-1-1.noarch) scriptlet failed, exit status 5",
        "error: preunfail-1-1.noarch: erase failed",
    ] {
        assert!(err.contains(line), "{line} not in {err}");
    }
    assert_eq!(
        log(&a),
        "preunfail-2 post 2\npreunfail-1 preun 1\npreunfail-2 posttrans 3\n"
    );
    let names: Vec<String> = nevras(&a)
        .into_iter()
        .filter(|n| n.starts_with("preunfail"))
        .collect();
    assert_eq!(names, ["preunfail-1-1.noarch", "preunfail-2-1.noarch"]);
    let states = rpm_in(&a)
        .args(["-q", "--qf", "[%{FILESTATES}]\n", "preunfail"])
        .output()
        .unwrap();
    // Each: its directory and its file, both "normal".
    assert_eq!(String::from_utf8_lossy(&states.stdout), "00\n00\n");
}

// ---------------------------------------------------------------------------
// A scriptlet that never ends, and signals meanwhile.

/// `hang`, whose `%post` writes its process id to `/var/tmp/hang.pid` and
/// then sleeps for good, and `after`, which requires it (so it comes
/// later in the transaction) and logs its `%post` and `%posttrans`.
fn hanging_packages(dir: &Path) -> [PathBuf; 2] {
    let d = mkdir(dir);
    [
        small(
            &d,
            "hang",
            1,
            "",
            &format!(
                "%post\n{}\necho $$ > /var/tmp/hang.pid\nexec sleep 100000",
                say("hang post $1")
            ),
        ),
        small(
            &d,
            "after",
            1,
            "Requires: hang",
            &format!(
                "%post\n{}\n%posttrans\n{}",
                say("after post $1"),
                say("after posttrans")
            ),
        ),
    ]
}

/// `cmd` started as the leader of a process group of its own (as a shell
/// starts a foreground job); the hanging `%post` waited for in `root`;
/// Ctrl-C sent to the group as a terminal sends it, and SIGTERM to the
/// program alone as `kill` sends it. Some time later, the program and the
/// scriptlet must still run. Returned, after the scriptlet is killed (the
/// only way out under rpm): the signal the program ended on, and its
/// stderr.
fn interrupt_while_hanging(cmd: std::process::Command, root: &Path) -> (Option<i32>, String) {
    use std::os::unix::process::CommandExt;
    let err = tempfile::NamedTempFile::new().unwrap();
    // As from a terminal: SIGINT and SIGQUIT not ignored (the rig runs the
    // tests as a background job, which ignores them).
    let mut from_terminal = std::process::Command::new("env");
    from_terminal
        .arg("--default-signal=INT,QUIT")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let mut child = from_terminal
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap();
    let pid_file = root.join("var/tmp/hang.pid");
    let started = std::time::Instant::now();
    let scriptlet = loop {
        let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        let pid = pid.trim().to_string();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if !pid.is_empty() && comm.trim() == "sleep" {
            break pid;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before the scriptlet hung: {}",
            std::fs::read_to_string(err.path()).unwrap()
        );
        assert!(
            started.elapsed().as_secs() < 300,
            "the scriptlet never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    std::fs::remove_file(&pid_file).unwrap();
    let kill = |args: &str| {
        run_ok(
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("kill {args}")),
            "kill",
        )
    };
    kill(&format!("-INT -{}", child.id()));
    kill(&format!("-TERM {}", child.id()));
    // Time for a program that does not wait to die of the signals.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the signals ended the transaction in its middle: {}",
        std::fs::read_to_string(err.path()).unwrap()
    );
    assert!(
        Path::new(&format!("/proc/{scriptlet}")).exists(),
        "Ctrl-C stopped the scriptlet"
    );
    kill(&format!("-TERM {scriptlet}"));
    let status = child.wait().unwrap();
    // rpm exits with 128 + the signal; cowkit dies of it (a shell shows
    // 130 for both).
    use std::os::unix::process::ExitStatusExt;
    let signal = match (status.code(), status.signal()) {
        (Some(c), _) if c > 128 => Some(c - 128),
        (_, s) => s,
    };
    (signal, std::fs::read_to_string(err.path()).unwrap())
}

/// Issue 26, a scriptlet that never ends: rpm 4.18 waits for it (no
/// timeout), and blocks SIGINT, SIGTERM and SIGHUP while its transaction
/// runs, with SIGINT and SIGQUIT blocked in the scriptlet too; killing
/// the scriptlet's process is the way out: rpm warns that it failed,
/// finishes the transaction (the next package and `%posttrans` run, the
/// database agrees with the tree) and then exits on the signal it
/// deferred. cowkit must be no worse: the same wait, the same end, the
/// same exit status, and it names the scriptlet it waits for and its
/// process. The next transaction on each root then ends alike, with no
/// scriptlet directory left behind.
#[test]
fn a_scriptlet_that_never_ends_holds_the_transaction_as_rpm_does() {
    if !as_root(
        "a_scriptlet_that_never_ends_holds_the_transaction_as_rpm_does",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let [hang, after] = hanging_packages(&d.join("pkgs"));
    let p = bad_packages(&d.join("more"));
    let (a, b) = bad_twins(d, "hang", &[]);
    let mut rpm = rpm_in(&a);
    rpm.arg("-i").arg(&hang).arg(&after);
    let (rpm_sig, rpm_err) = interrupt_while_hanging(rpm, &a);
    let mut ck = cowkit();
    ck.arg("install")
        .arg("--root")
        .arg(&b)
        .arg("--dbpath")
        .arg(dbpath())
        .arg(&hang)
        .arg(&after);
    let (ck_sig, ck_err) = interrupt_while_hanging(ck, &b);
    assert!(
        rpm_err.contains("%post(hang-1-1.noarch) scriptlet failed, signal 15"),
        "{rpm_err}"
    );
    assert_eq!(rpm_sig, Some(2), "rpm exits on the SIGINT: {rpm_err}");
    assert_eq!(ck_sig, rpm_sig, "cowkit: {ck_err}");
    assert!(ck_err.contains("%post(hang-1-1.noarch)"), "{ck_err}");
    assert_eq!(
        log(&a),
        "hang post 1\nafter post 1\nafter posttrans\n",
        "rpm finished the transaction"
    );
    assert_same_roots(
        &a,
        &b,
        Path::new("/nonexistent-cache"),
        "an interrupted hang",
    );
    rpm_and_cowkit(&a, &b, &["-i"], &[&p.target1], "the next transaction");
    let left: Vec<_> = std::fs::read_dir(b.join("var/tmp"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with("cowkit-script."))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
