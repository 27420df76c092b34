//! RPM packages for tests: the fixture package `cowkit-fixture` (every kind
//! of entry), small packages built from spec text, packages signed with
//! throwaway OpenPGP keys, what `rpm -qp` says about a header, what
//! `rpm2cpio | cpio -idm` extracts, and header edits that keep the header
//! digest valid, as a forger would make them.
//!
//! The packages are built by `rpmbuild` (Debian package `rpm`) into a
//! directory the caller names, usually its `CARGO_TARGET_TMPDIR` (which
//! Cargo gives integration tests only, so a library cannot know it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::tree::{mkdir, snapshot, under, Tree};
use crate::{count, find, hex, run_ok, sha256_hex};

/// Every payload compressor `rpmbuild` can write here, as
/// `_binary_payload` values.
pub const PAYLOADS: [&str; 6] = [
    "w19.zstdio",
    "w6.xzdio",
    "w9.gzdio",
    "w9.bzdio",
    "w9.lzdio",
    "w.ufdio",
];

/// Where the fixture package installs its files (relative to a root).
pub const FIXTURE: &str = "usr/share/cowkit-fixture";

/// Size of the fixture's `dir/large.bin` (and `dir/sub/same-content.bin`).
pub const LARGE: u64 = 1_048_581;

/// The fixture's hardlink group, relative to [`FIXTURE`].
pub const HARDLINKS: [&str; 3] = ["dir/hl-c", "hl-a", "hl-b"];

/// The fixture's hardlink group under `prefix`, as
/// [`hardlink_groups`](crate::tree::hardlink_groups) gives it.
pub fn expected_hardlinks(prefix: &str) -> BTreeSet<Vec<String>> {
    [HARDLINKS.iter().map(|h| format!("{prefix}/{h}")).collect()].into()
}

/// The `etc/passwd` and `etc/group` lines that give `nobody:nogroup`
/// (owner of the fixture's `name with spaces`) the ids 65534.
pub const PASSWD: &str = "root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n";
/// See [`PASSWD`].
pub const GROUP: &str = "root:x:0:\nnogroup:x:65534:\n";

/// Write [`PASSWD`] and [`GROUP`] into `root/etc`.
pub fn write_owner_db(root: &Path) {
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/passwd"), PASSWD).unwrap();
    std::fs::write(root.join("etc/group"), GROUP).unwrap();
}

/// The id of `name` in [`PASSWD`] / [`GROUP`].
pub fn id_of(name: &str) -> u32 {
    match name {
        "root" => 0,
        "nobody" | "nogroup" => 65534,
        other => panic!("no id for {other}"),
    }
}

// ---------------------------------------------------------------------------
// Fixture packages.

/// `crates/cowkit-archive/tests/fixtures`: the scripts that make the
/// fixture and the signed packages.
fn archive_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../cowkit-archive/tests/fixtures")
}

/// `make()`'s path, made once per process and `key`; one at a time (test
/// threads asking for the same thing wait for the first).
pub(crate) fn once_per_process(key: String, make: impl FnOnce() -> PathBuf) -> PathBuf {
    static MADE: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = made.get(&key) {
        return p.clone();
    }
    let p = make();
    made.insert(key, p.clone());
    p
}

/// The fixture package `cowkit-fixture` (every kind of entry) built with
/// `rpmbuild` and the given `_binary_payload` (one of [`PAYLOADS`]), into
/// `dir`. Built once per process and payload; panics when `rpmbuild` fails.
pub fn fixture_in(dir: &Path, payload: &str) -> PathBuf {
    let key = format!("fixture {payload} {}", dir.display());
    once_per_process(key, || {
        let script = archive_fixtures().join("rpm/build.sh");
        // A directory of its own per process: test binaries run concurrently.
        let out_dir = dir.join(format!("rpm-fixtures-{}", std::process::id()));
        let out = run_ok(
            Command::new("bash").arg(&script).arg(&out_dir).arg(payload),
            &format!("building the {payload} fixture ({})", script.display()),
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// Keys and packages signed with them, made by the archive crate's
/// `pgp/make-signed.sh` (needs `gpg`, `gpg-agent` and `rpmsign`) under
/// `dir`: `unsigned.rpm`, `signed-rsa.rpm`, `signed-ed.rpm`, the keys
/// `rsa`, `ed` and `wrong` (`.asc`, `.gpg`, `.fpr`), `header.bin` and
/// `header-ed.sig` (see the script). The directory is named after a hash
/// of the scripts that make it and is created by an atomic rename, so that
/// concurrent test runs share a finished copy and never see a partial one.
pub fn pgp_fixtures(dir: &Path) -> PathBuf {
    let here = archive_fixtures();
    let script = here.join("pgp/make-signed.sh");
    let mut hash = Sha256::new();
    for input in [
        &script,
        &here.join("rpm/build.sh"),
        &here.join("rpm/cowkit-fixture.spec"),
    ] {
        hash.update(std::fs::read(input).unwrap());
    }
    let tag = hex(&hash.finalize()[..6]);
    let done = dir.join(format!("pgp-fixtures-{tag}"));
    let key = format!("pgp {}", done.display());
    once_per_process(key, || {
        if done.join("header-ed.sig").exists() {
            return done;
        }
        let part = dir.join(format!("pgp-fixtures-{tag}.tmp{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&part);
        run_ok(
            Command::new("bash").arg(&script).arg(&part),
            "making the signed fixtures (are `gpg` and `rpmsign` installed? \
             Debian packages `gpg`, `gpg-agent` and `rpm`)",
        );
        if std::fs::rename(&part, &done).is_err() {
            // Another run finished first: use its copy.
            assert!(
                done.join("header-ed.sig").exists(),
                "cannot rename {part:?}"
            );
            let _ = std::fs::remove_dir_all(&part);
        }
        done
    })
}

/// The fingerprint (40 lower-case hex digits) of `key` (`rsa`, `ed` or
/// `wrong`) in a directory of [`pgp_fixtures`].
pub fn pgp_fingerprint(fixtures: &Path, key: &str) -> String {
    std::fs::read_to_string(fixtures.join(format!("{key}.fpr")))
        .unwrap()
        .trim()
        .to_string()
}

// ---------------------------------------------------------------------------
// Packages from spec text.

/// The spec of a package named `name`: `install` is its `%install` (shell,
/// with `%{buildroot}`), `files` its `%files`.
pub fn spec(name: &str, install: &str, files: &str) -> String {
    [
        &format!("Name: {name}\n"),
        "Version: 1\nRelease: 1\nSummary: cowkit install test package\nLicense: MIT\n",
        "BuildArch: noarch\n",
        "%global debug_package %{nil}\n%global __os_install_post %{nil}\n",
        "%global _build_id_links none\n",
        "%description\nBuilt by the cowkit install tests.\n",
        "%install\n",
        install,
        "\n%files\n",
        files,
        "\n",
    ]
    .concat()
}

/// The package of [`spec`]`(name, install, files)` with `payload`, built
/// once and kept in `dir/test-rpms` under a hash of its spec, for later
/// runs too.
pub fn build_rpm_cached(
    dir: &Path,
    name: &str,
    install: &str,
    files: &str,
    payload: &str,
) -> PathBuf {
    let spec = spec(name, install, files);
    let tag = &sha256_hex(format!("{payload}\n{spec}").as_bytes())[..16];
    let dst = dir.join("test-rpms").join(format!("{name}-{tag}.rpm"));
    if !dst.exists() {
        rpmbuild(&spec, payload, &dst);
    }
    dst
}

/// The package of [`spec`]`(name, install, files)` with `payload`, built
/// into `dir` (for specs that name paths of one test run).
pub fn build_rpm_in(dir: &Path, name: &str, install: &str, files: &str, payload: &str) -> PathBuf {
    let dst = dir.join(format!("{name}.rpm"));
    rpmbuild(&spec(name, install, files), payload, &dst);
    dst
}

/// Run `rpmbuild -bb` on `spec` in a fresh top directory (made next to
/// `dst`, removed afterwards) and put the package at `dst` (atomically:
/// concurrent builds of one spec are fine).
pub fn rpmbuild(spec: &str, payload: &str, dst: &Path) {
    rpmbuild_for(spec, payload, None, dst)
}

/// [`rpmbuild`] for the architecture `target` (`rpmbuild --target`, for
/// a spec without `BuildArch`), or the spec's own (`None`).
pub fn rpmbuild_for(spec: &str, payload: &str, target: Option<&str>, dst: &Path) {
    let parent = mkdir(dst.parent().unwrap());
    let top = tempfile::tempdir_in(&parent).unwrap();
    for d in ["SPECS", "RPMS", "BUILD", "BUILDROOT", "SOURCES", "SRPMS"] {
        std::fs::create_dir_all(top.path().join(d)).unwrap();
    }
    let spec_path = top.path().join("SPECS/test.spec");
    std::fs::write(&spec_path, spec).unwrap();
    let mut cmd = Command::new("rpmbuild");
    cmd.arg("--define")
        .arg(format!("_topdir {}", top.path().display()))
        .arg("--define")
        .arg(format!("_binary_payload {payload}"));
    if let Some(t) = target {
        cmd.args(["--target", t]);
    }
    run_ok(
        cmd.args(["--nodeps", "-bb"]).arg(&spec_path),
        &format!("rpmbuild (Debian package `rpm`) of\n{spec}\n"),
    );
    let arch_dir = top
        .path()
        .join(format!("RPMS/{}", target.unwrap_or("noarch")));
    let built = std::fs::read_dir(arch_dir)
        .unwrap()
        .next()
        .expect("rpmbuild made a package")
        .unwrap()
        .path();
    let part = dst.with_extension(format!("part{}", std::process::id()));
    std::fs::copy(&built, &part).unwrap();
    std::fs::rename(&part, dst).unwrap();
}

/// `rpm2cpio RPM | cpio -idm` in `dir`, created if need be (as root:
/// owners and modes kept).
pub fn cpio_extract(rpm: &Path, dir: &Path) {
    mkdir(dir);
    run_ok(
        Command::new("bash")
            .args([
                "-o",
                "pipefail",
                "-c",
                "rpm2cpio \"$1\" | cpio -idm --quiet",
                "sh",
            ])
            .arg(rpm)
            .current_dir(dir),
        "rpm2cpio | cpio",
    );
}

// ---------------------------------------------------------------------------
// What the header says, according to rpm itself.

/// One file of a package, as `rpm -qp` lists it.
#[derive(Clone, Debug)]
pub struct HeaderFile {
    /// Absolute path.
    pub path: String,
    /// Owner name.
    pub user: String,
    /// Group name.
    pub group: String,
    /// Modification time.
    pub mtime: i64,
    /// Mode with type bits.
    pub mode: u32,
    /// `%ghost`.
    pub ghost: bool,
}

/// The file list of `pkg` (an `.rpm` or `.rpme`) according to `rpm -qp`.
pub fn header_files(pkg: &Path) -> Vec<HeaderFile> {
    let out = run_ok(
        Command::new("rpm")
            .args(["-qp", "--nosignature", "--nodigest", "--qf"])
            .arg(
                "[%{FILENAMES}\\t%{FILEUSERNAME}\\t%{FILEGROUPNAME}\\t%{FILEMTIMES}\\t\
                 %{FILEMODES}\\t%{FILEFLAGS}\\n]",
            )
            .arg(pkg),
        &format!("rpm -qp {}", pkg.display()),
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 6, "{l:?}");
            let mode: u32 = f[4].parse().unwrap();
            let flags: u32 = f[5].parse().unwrap();
            HeaderFile {
                path: f[0].to_string(),
                user: f[1].to_string(),
                group: f[2].to_string(),
                mtime: f[3].parse().unwrap(),
                mode: mode & 0o177777,
                ghost: flags & 64 != 0, // RPMFILE_GHOST
            }
        })
        .collect()
}

/// Owners, modes, mtimes and capabilities of an installed tree are the
/// header's; no file under [`FIXTURE`] is missing or extra; the ghost is
/// absent. `caps` is what the fixture's `suid-cap` must carry.
pub fn assert_as_the_header_says(what: &str, tree: &Tree, header: &[HeaderFile], caps: &[u8]) {
    let mut listed = Vec::new();
    for h in header {
        let rel = h.path.trim_start_matches('/');
        if h.ghost {
            assert!(!tree.contains_key(rel), "{what}: ghost {rel} was installed");
            continue;
        }
        listed.push(rel.to_string());
        let e = tree
            .get(rel)
            .unwrap_or_else(|| panic!("{what}: {rel} is missing"));
        let kind = match h.mode & 0o170000 {
            0o040000 => 'd',
            0o100000 => 'f',
            0o120000 => 'l',
            m => panic!("unexpected type {m:o} of {rel}"),
        };
        assert_eq!(e.kind, kind, "{what}: type of {rel}");
        assert_eq!(
            format!("{:o}", e.perm),
            format!("{:o}", h.mode & 0o7777),
            "{what}: mode of {rel}"
        );
        assert_eq!(
            (e.uid, e.gid),
            (id_of(&h.user), id_of(&h.group)),
            "{what}: owner of {rel} ({}:{})",
            h.user,
            h.group
        );
        assert_eq!(e.mtime, h.mtime, "{what}: mtime of {rel}");
        let want_caps = rel.ends_with("/suid-cap").then_some(caps);
        assert_eq!(
            e.caps.as_deref(),
            want_caps,
            "{what}: capabilities of {rel}"
        );
    }
    listed.sort();
    let mut have: Vec<String> = under(tree, FIXTURE).into_keys().collect();
    have.sort();
    assert_eq!(have, listed, "{what}: the installed files are the header's");
}

/// Owners (all `root` here), modes and mtimes of everything the header
/// of `pkg` lists under `prefix`, in the installed `root`.
pub fn assert_as_the_header_says_under(pkg: &Path, root: &Path, prefix: &str) {
    let tree = snapshot(root);
    for h in header_files(pkg) {
        let rel = h.path.trim_start_matches('/');
        if h.ghost || !(rel == prefix || rel.starts_with(&format!("{prefix}/"))) {
            continue;
        }
        let e = &tree[rel];
        assert_eq!(
            format!("{:o}", e.perm),
            format!("{:o}", h.mode & 0o7777),
            "{}: mode of {rel}",
            pkg.display()
        );
        assert_eq!(
            (e.uid, e.gid),
            (id_of(&h.user), id_of(&h.group)),
            "{}: owner of {rel}",
            pkg.display()
        );
        assert_eq!(e.mtime, h.mtime, "{}: mtime of {rel}", pkg.display());
    }
}

// ---------------------------------------------------------------------------
// Package bytes.

fn be32(b: &[u8], at: usize) -> usize {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

/// `(start, end)` of the main header in an RPM's (or an extents file's)
/// bytes, found from the lead and header intros (independently of cowkit).
pub fn header_range(b: &[u8]) -> (usize, usize) {
    let sig_len = 16 + be32(b, 96 + 8) * 16 + be32(b, 96 + 12);
    let start = 96 + sig_len.next_multiple_of(8);
    let end = start + 16 + be32(b, start + 8) * 16 + be32(b, start + 12);
    (start, end)
}

/// Change the main header with `edit`, then write the new header's
/// SHA-256 (hex) over the old one in the signature header, so that the
/// header digest check passes, as a forger would do.
pub fn edit_header(b: &mut [u8], edit: impl FnOnce(&mut [u8])) {
    let (start, end) = header_range(b);
    let old = sha256_hex(&b[start..end]);
    edit(&mut b[start..end]);
    let new = sha256_hex(&b[start..end]);
    let at = find(&b[..start], old.as_bytes()).expect("RPMSIGTAG_SHA256 in the signature header");
    b[at..at + 64].copy_from_slice(new.as_bytes());
}

/// Replace the only occurrence of `old` in `region` by `new` (same length).
pub fn replace_once(region: &mut [u8], old: &[u8], new: &[u8]) {
    assert_eq!(old.len(), new.len());
    assert_eq!(
        count(region, old),
        1,
        "{:?} must occur exactly once",
        String::from_utf8_lossy(old)
    );
    let at = find(region, old).unwrap();
    region[at..at + old.len()].copy_from_slice(new);
}

/// The footer of an extents file (`docs/extents-format.md`) after its
/// prefix was changed: the new header digest, and the checksum over table
/// and footer recomputed.
pub fn refresh_footer(b: &mut [u8]) {
    let len = b.len();
    let footer = len - 176;
    let table = u64::from_le_bytes(b[footer + 32..footer + 40].try_into().unwrap()) as usize;
    let (start, end) = header_range(b);
    let header_sha: [u8; 32] = Sha256::digest(&b[start..end]).into();
    b[footer + 88..footer + 120].copy_from_slice(&header_sha);
    let mut h = Sha256::new();
    h.update(&b[table..footer]);
    h.update(&b[footer..footer + 128]);
    let sum: [u8; 32] = h.finalize().into();
    b[footer + 128..footer + 160].copy_from_slice(&sum);
}

/// The little-endian `u64` at offset `at` of an extents file's 176-byte
/// footer (32: where the table starts).
pub fn footer_u64(b: &[u8], at: usize) -> u64 {
    let f = b.len() - 176;
    u64::from_le_bytes(b[f + at..f + at + 8].try_into().unwrap())
}
