//! A local RPM repository for tests of rpm database registration,
//! scriptlets, upgrades and the `dnf` workflow: [`build_repo`] builds
//! small noarch packages with `rpmbuild` (deterministically: mtimes and
//! build times come from `%changelog`, a fixed build host) and indexes
//! them with `createrepo_c`.
//!
//! The root the packages go into starts empty, so the repository brings
//! its own shell: `ck-busybox` packages the host's static busybox
//! (Debian package `busybox-static`) as `/usr/bin/busybox` with applet
//! symlinks, and `ck-filesystem` makes the usr-merged skeleton
//! (`/bin -> usr/bin`), so that `rpm` can run `/bin/sh` scriptlets
//! chrooted in the root.
//!
//! Version 1 ([`TestRepo::dir`]): [`TOP`] (`ck-suite`, no files) pulls in
//! every package of [`MAIN`] in one transaction; the packages of [`EXTRA`]
//! stand alone. Version 2 ([`TestRepo::upgrade_dir`] holds version 1 and
//! 2) upgrades the packages of [`UPGRADED`] and brings [`NEW_IN_V2`].
//!
//! | package | what it has |
//! |---|---|
//! | `ck-filesystem` | directories `/etc`, `/usr/bin`, `/var/lib`, … (`/tmp` 1777, `/root` 0550); symlinks `/bin`, `/sbin` → `usr/bin`, `/lib` → `usr/lib` |
//! | `ck-setup` | `/etc/passwd`, `/etc/group` (`%config(noreplace)`: root, nobody) |
//! | `ck-busybox` | `/usr/bin/busybox` (the host's, static) and applet symlinks ([`APPLETS`]); `Provides: /bin/sh` |
//! | `ck-users` | `Requires(pre): ck-busybox ck-setup`; `%pre` appends [`USER`] ([`UID`]) to `/etc/passwd` and `/etc/group` (plain `sh`, idempotent); owns `/usr/share/ck-users/secret` `%attr(0640, ckuser, ckuser)`, `…/group-readable` `%attr(0644, root, ckuser)`, `%dir %attr(0750, ckuser, ckuser) /var/lib/ck-users` |
//! | `ck-scripts` | `%pre`, `%post`, `%preun`, `%postun`, `%posttrans` in `sh`, in both versions: see [`LOG`] |
//! | `ck-config` | `/etc/ck/app.conf` `%config(noreplace)` (changes in v2), `/etc/ck/plain.conf` `%config` (changes in v2), `/etc/ck/same.conf` `%config(noreplace)` (same in v2) |
//! | `ck-drop` | v1: `/usr/share/ck-drop/{keep,gone,olddir/f}`; v2: `keep` changed, `gone` and `olddir` dropped, `added` new |
//! | `ck-links` | under `/usr/share/ck-links`: hardlinks `hl-a`, `hl-b`; symlink `sym -> hl-a`; `empty` (0 bytes); `cap` (`%caps(cap_net_raw=ep)`, 0755); owned empty directory `emptydir`; `%ghost /var/lib/ck-links/state` |
//! | `ck-app` → `ck-lib1` → `ck-lib2` → `ck-lib3` → `ck-busybox` | a `Requires` chain; `ck-app` also requires the virtual `ck-editor` (provided by `ck-vi`) and, in v2, `ck-lib4` ([`NEW_IN_V2`]); `/usr/bin/ck-app` is a `#!/bin/sh` script; the libs own `/usr/lib/ck/libN.txt` |
//! | `ck-vi` | `Provides: ck-editor` |
//! | `ck-data` | `/usr/share/ck-data/blob.txt`, 256 KiB, no two 4 KiB blocks alike; v2 changes its second half |
//! | `ck-doc` | `%doc /usr/share/doc/ck-doc/README`, `%license /usr/share/licenses/ck-doc/LICENSE` |
//! | `ck-suite` ([`TOP`]) | no files; requires the above |
//! | `ck-lua` ([`EXTRA`]) | `%post -p <lua>` and `%postun -p <lua>`: write `/var/lib/ck/<phase>-ck-lua` (the `$1` value) and append to [`LOG`] |
//! | `ck-trigger` ([`EXTRA`]) | `%filetriggerin -- /usr/lib/ck`: appends the paths it is given to `/var/lib/ck/filetrigger-ck-trigger` |
//! | `ck-conflict-a`, `ck-conflict-b` ([`EXTRA`]) | both own `/usr/share/ck-conflict/file`, with `a` and `b` |
//!
//! `dnf` and `rpm` calls on a root: [`dnf`], [`rpm_in`], [`installed`],
//! [`verify`], [`owner_mode`].

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use crate::rpm::{once_per_process, rpmbuild};
use crate::tree::mkdir;
use crate::{hex, run_ok};

/// The package that pulls in all of [`MAIN`].
pub const TOP: &str = "ck-suite";

/// The packages `dnf install` [`TOP`] installs (version 1), [`TOP`]
/// included.
pub const MAIN: [&str; 16] = [
    "ck-filesystem",
    "ck-setup",
    "ck-busybox",
    "ck-users",
    "ck-scripts",
    "ck-config",
    "ck-drop",
    "ck-links",
    "ck-app",
    "ck-lib1",
    "ck-lib2",
    "ck-lib3",
    "ck-vi",
    "ck-data",
    "ck-doc",
    "ck-suite",
];

/// Version-1 packages nothing requires: a Lua scriptlet, a file trigger,
/// and two packages that conflict on a file.
pub const EXTRA: [&str; 4] = ["ck-lua", "ck-trigger", "ck-conflict-a", "ck-conflict-b"];

/// The packages of [`MAIN`] that have a version 2.
pub const UPGRADED: [&str; 5] = ["ck-scripts", "ck-config", "ck-drop", "ck-app", "ck-data"];

/// The package only the upgrade repository has (version 1), required by
/// `ck-app` 2: `dnf upgrade` installs it.
pub const NEW_IN_V2: &str = "ck-lib4";

/// The user and group `ck-users`' `%pre` adds.
pub const USER: &str = "ckuser";
/// Uid and gid of [`USER`].
pub const UID: u32 = 1234;

/// The log every scriptlet of `ck-scripts`, `ck-users` and `ck-lua`
/// appends a line `<name>-<version> <phase> <$1>` to (relative to the
/// root); each also writes `$1` to `var/lib/ck/<phase>-<name>`.
pub const LOG: &str = "var/lib/ck/scriptlets.log";

/// The busybox applets `ck-busybox` links in `/usr/bin`.
pub const APPLETS: [&str; 30] = [
    "sh", "ash", "cat", "echo", "printf", "mkdir", "rmdir", "grep", "sed", "ls", "cp", "mv", "rm",
    "ln", "id", "touch", "test", "[", "true", "false", "head", "tail", "wc", "sort", "stat",
    "readlink", "chmod", "chown", "env", "sleep",
];

/// Mtime of every file of a version-1 package, and its build time
/// (2015-01-01 00:00 UTC, from `%changelog`).
pub const EPOCH_V1: i64 = 1_420_070_400;
/// Same for version 2 (one day later).
pub const EPOCH_V2: i64 = EPOCH_V1 + 86_400;

/// The payload compressor (as Fedora's).
pub const PAYLOAD: &str = "w19.zstdio";

/// `dnf --releasever` for [`dnf`] (the root has no release package).
pub const RELEASEVER: &str = "40";

/// The built repositories.
#[derive(Clone, Debug)]
pub struct TestRepo {
    /// Version-1 packages ([`MAIN`] and [`EXTRA`]) with `repodata/`.
    pub dir: PathBuf,
    /// Version-1 and version-2 packages (and [`NEW_IN_V2`]) with
    /// `repodata/`, for `dnf upgrade`.
    pub upgrade_dir: PathBuf,
    /// The version-1 packages, in `dir`, in the order of [`MAIN`] then
    /// [`EXTRA`].
    pub v1: Vec<PathBuf>,
    /// The version-2 packages of [`UPGRADED`], then [`NEW_IN_V2`], in
    /// `upgrade_dir`.
    pub v2: Vec<PathBuf>,
    /// [`TOP`].
    pub top: &'static str,
}

impl TestRepo {
    /// The version-1 package `name`.
    pub fn rpm(&self, name: &str) -> &Path {
        find_pkg(&self.v1, name)
    }

    /// The version-2 package `name` (or [`NEW_IN_V2`]).
    pub fn rpm_v2(&self, name: &str) -> &Path {
        find_pkg(&self.v2, name)
    }
}

fn find_pkg<'a>(list: &'a [PathBuf], name: &str) -> &'a Path {
    let prefix = format!("{name}-");
    list.iter()
        .find(|p| {
            let f = p.file_name().unwrap().to_str().unwrap();
            // `<name>-<version>-1.noarch.rpm`, the version being digits.
            f.strip_prefix(&prefix)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .unwrap_or_else(|| panic!("no package {name}"))
}

// ---------------------------------------------------------------------------
// Specs.

/// What a test package's spec holds besides its header: `preamble` goes
/// before `%description` (`Requires:` and the like), `install` is the
/// `%install` shell (with `$RPM_BUILD_ROOT` as `B`), `files` the `%files`
/// list, `scripts` whole scriptlet sections.
#[derive(Default)]
pub(crate) struct Sections {
    pub(crate) preamble: String,
    pub(crate) install: String,
    pub(crate) files: String,
    pub(crate) scripts: String,
}

/// The builder of a test package's [`Sections`], one line at a time.
pub(crate) trait Build: Sized {
    /// Its sections.
    fn sections(&mut self) -> &mut Sections;

    /// A preamble line.
    fn pre(mut self, s: &str) -> Self {
        line(&mut self.sections().preamble, s);
        self
    }

    /// An `%install` line.
    fn install(mut self, s: &str) -> Self {
        line(&mut self.sections().install, s);
        self
    }

    /// A `%files` line.
    fn files(mut self, s: &str) -> Self {
        line(&mut self.sections().files, s);
        self
    }
}

fn line(to: &mut String, s: &str) {
    to.push_str(s);
    to.push('\n');
}

/// A test package's spec: its header (`release`, a summary and
/// description naming `repository`), the globals that make builds
/// reproducible, its sections, and a changelog entry dated `date` (it
/// sets `SOURCE_DATE_EPOCH`: mtimes and build time).
pub(crate) fn spec_text(
    (name, version, release): (&str, &str, &str),
    repository: &str,
    date: &str,
    s: &Sections,
) -> String {
    [
        &format!("Name: {name}\nVersion: {version}\nRelease: {release}\n"),
        &format!("Summary: {repository} package {name}\n"),
        "License: MIT\nBuildArch: noarch\n",
        &s.preamble,
        "%global debug_package %{nil}\n%global __os_install_post %{nil}\n",
        "%global _build_id_links none\n",
        "%global source_date_epoch_from_changelog 1\n",
        "%global clamp_mtime_to_source_date_epoch 1\n",
        "%global use_source_date_epoch_as_buildtime 1\n",
        "%global _buildhost cowkit.invalid\n",
        "%global _binaries_in_noarch_packages_terminate_build 0\n",
        &format!("%description\nPackage {name} of the {repository}.\n"),
        "%install\nB=\"$RPM_BUILD_ROOT\"\nmkdir -p \"$B\"\n",
        &s.install,
        "\n%files\n",
        &s.files,
        "\n",
        &s.scripts,
        "\n%changelog\n",
        &format!(
            "* {date} cowkit <cowkit@example.invalid> - {version}-{release}\n- test package\n"
        ),
    ]
    .concat()
}

/// One package of the test repository.
struct Pkg {
    name: &'static str,
    version: u32,
    sections: Sections,
}

impl Build for Pkg {
    fn sections(&mut self) -> &mut Sections {
        &mut self.sections
    }
}

impl Pkg {
    fn new(name: &'static str, version: u32) -> Pkg {
        Pkg {
            name,
            version,
            sections: Sections::default(),
        }
    }

    fn script(mut self, s: &str) -> Pkg {
        line(&mut self.sections.scripts, s);
        self
    }

    /// A `sh` scriptlet `phase` that records `$1` (see [`LOG`]).
    fn logged(self, phase: &str) -> Pkg {
        let (name, v) = (self.name, self.version);
        self.script(&format!(
            "%{phase}\nmkdir -p /var/lib/ck\necho \"$1\" > /var/lib/ck/{phase}-{name}\n\
             echo \"{name}-{v} {phase} $1\" >> /{LOG}\n"
        ))
    }

    /// A Lua scriptlet `phase` that records its argument (see [`LOG`]).
    fn logged_lua(self, phase: &str) -> Pkg {
        let (name, v) = (self.name, self.version);
        self.script(&format!(
            "%{phase} -p <lua>\n\
             posix.mkdir(\"/var/lib/ck\")\n\
             local a = tostring(arg[2])\n\
             local f = io.open(\"/var/lib/ck/{phase}-{name}\", \"w\")\n\
             f:write(a .. \"\\n\")\n\
             f:close()\n\
             local l = io.open(\"/{LOG}\", \"a\")\n\
             l:write(\"{name}-{v} {phase} \" .. a .. \"\\n\")\n\
             l:close()\n"
        ))
    }

    fn file_name(&self) -> String {
        format!("{}-{}-1.noarch.rpm", self.name, self.version)
    }

    fn spec(&self) -> String {
        let date = if self.version == 1 {
            "Thu Jan 01 2015"
        } else {
            "Fri Jan 02 2015"
        };
        let v = self.version.to_string();
        spec_text(
            (self.name, &v, "1"),
            "cowkit test repository",
            date,
            &self.sections,
        )
    }
}

/// A `%install` line writing `text` (no single quotes) to `path` in the
/// build root, making its directory.
fn put(path: &str, text: &str) -> String {
    let dir = &path[..path.rfind('/').unwrap()];
    format!("mkdir -p \"$B{dir}\"\nprintf '%%s\\n' '{text}' > \"$B{path}\"")
}

/// The static busybox of the host.
pub(crate) fn host_busybox() -> PathBuf {
    for p in ["/usr/bin/busybox", "/bin/busybox"] {
        let p = Path::new(p);
        if let Ok(b) = std::fs::read(p) {
            assert!(
                is_static_elf(&b),
                "{} is not statically linked: install Debian package `busybox-static` \
                 (the test root has no libc)",
                p.display()
            );
            return p.to_path_buf();
        }
    }
    panic!("no busybox: install Debian package `busybox-static`")
}

/// A 64-bit little-endian ELF file without a `PT_INTERP` program header.
fn is_static_elf(b: &[u8]) -> bool {
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return false;
    }
    let u16_at = |at: usize| u16::from_le_bytes(b[at..at + 2].try_into().unwrap()) as usize;
    let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().unwrap()) as usize;
    let (size, n) = (u16_at(0x36), u16_at(0x38));
    (0..n).all(|i| {
        let at = phoff + i * size;
        at + 4 <= b.len() && u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) != 3
    })
}

fn packages(busybox: &Path) -> (Vec<Pkg>, Vec<Pkg>) {
    let mut v1 = Vec::new();
    let mut v2 = Vec::new();

    v1.push(
        Pkg::new("ck-filesystem", 1)
            .install(
                "cd \"$B\"\n\
                 mkdir -p etc usr/bin usr/lib usr/share/doc usr/share/licenses \
                 var/lib var/log var/tmp tmp root run dev\n\
                 chmod 1777 tmp var/tmp\nchmod 0550 root\n\
                 ln -s usr/bin bin\nln -s usr/bin sbin\nln -s usr/lib lib",
            )
            .files(
                "%dir /etc\n%dir /usr\n%dir /usr/bin\n%dir /usr/lib\n%dir /usr/share\n\
                 %dir /usr/share/doc\n%dir /usr/share/licenses\n%dir /var\n%dir /var/lib\n\
                 %dir /var/log\n%dir /var/tmp\n%dir /tmp\n%dir /root\n%dir /run\n%dir /dev\n\
                 /bin\n/sbin\n/lib",
            ),
    );

    v1.push(
        Pkg::new("ck-setup", 1)
            .pre("Requires: ck-filesystem")
            .install(&put(
                "/etc/passwd",
                "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false",
            ))
            .install(&put("/etc/group", "root:x:0:\nnogroup:x:65534:"))
            .files("%config(noreplace) /etc/passwd\n%config(noreplace) /etc/group"),
    );

    let links: String = APPLETS
        .iter()
        .map(|a| format!("ln -s busybox \"$B/usr/bin/{a}\"\n"))
        .collect();
    let linked: String = APPLETS.iter().map(|a| format!("/usr/bin/{a}\n")).collect();
    v1.push(
        Pkg::new("ck-busybox", 1)
            .pre("Requires(pre): ck-filesystem\nProvides: /bin/sh")
            .install(&format!(
                "mkdir -p \"$B/usr/bin\"\ncp {} \"$B/usr/bin/busybox\"\n\
                 chmod 0755 \"$B/usr/bin/busybox\"\n{links}",
                busybox.display()
            ))
            .files(&format!("/usr/bin/busybox\n{linked}")),
    );

    v1.push(
        Pkg::new("ck-users", 1)
            .pre("Requires(pre): ck-busybox\nRequires(pre): ck-setup")
            .install(&put("/usr/share/ck-users/secret", "only for ckuser"))
            .install(&put("/usr/share/ck-users/group-readable", "for group ckuser"))
            .install("mkdir -p \"$B/var/lib/ck-users\"")
            .files(
                "%dir /usr/share/ck-users\n\
                 %attr(0640, ckuser, ckuser) /usr/share/ck-users/secret\n\
                 %attr(0644, root, ckuser) /usr/share/ck-users/group-readable\n\
                 %dir %attr(0750, ckuser, ckuser) /var/lib/ck-users",
            )
            .script(&format!(
                "%pre\n\
                 grep -q '^{USER}:' /etc/group || echo '{USER}:x:{UID}:' >> /etc/group\n\
                 grep -q '^{USER}:' /etc/passwd || \
                 echo '{USER}:x:{UID}:{UID}:cowkit test user:/var/lib/ck-users:/bin/sh' >> /etc/passwd\n\
                 mkdir -p /var/lib/ck\n\
                 echo \"ck-users-1 pre $1\" >> /{LOG}\n\
                 echo \"$1\" > /var/lib/ck/pre-ck-users\n"
            )),
    );

    for v in [1, 2] {
        let mut p = Pkg::new("ck-scripts", v)
            .pre("Requires: ck-busybox")
            .install(&put("/usr/share/ck-scripts/version", &v.to_string()))
            .files("/usr/share/ck-scripts");
        for phase in ["pre", "post", "preun", "postun", "posttrans"] {
            p = p.logged(phase);
        }
        if v == 1 { &mut v1 } else { &mut v2 }.push(p);
    }

    for v in [1, 2] {
        let p = Pkg::new("ck-config", v)
            .pre("Requires: ck-filesystem")
            .install(&put("/etc/ck/app.conf", &format!("setting = {v}")))
            .install(&put("/etc/ck/plain.conf", &format!("plain = {v}")))
            .install(&put("/etc/ck/same.conf", "same = 1"))
            .files(
                "%dir /etc/ck\n%config(noreplace) /etc/ck/app.conf\n%config /etc/ck/plain.conf\n\
                 %config(noreplace) /etc/ck/same.conf",
            );
        if v == 1 { &mut v1 } else { &mut v2 }.push(p);
    }

    v1.push(
        Pkg::new("ck-drop", 1)
            .pre("Requires: ck-filesystem")
            .install(&put("/usr/share/ck-drop/keep", "keep 1"))
            .install(&put("/usr/share/ck-drop/gone", "gone in 2"))
            .install(&put("/usr/share/ck-drop/olddir/f", "gone in 2"))
            .files("/usr/share/ck-drop"),
    );
    v2.push(
        Pkg::new("ck-drop", 2)
            .pre("Requires: ck-filesystem")
            .install(&put("/usr/share/ck-drop/keep", "keep 2"))
            .install(&put("/usr/share/ck-drop/added", "new in 2"))
            .files("/usr/share/ck-drop"),
    );

    v1.push(
        Pkg::new("ck-links", 1)
            .pre("Requires: ck-filesystem")
            .install(
                "D=\"$B/usr/share/ck-links\"\nmkdir -p \"$D/emptydir\" \"$B/var/lib/ck-links\"\n\
                 printf 'hardlinked\\n' > \"$D/hl-a\"\nln \"$D/hl-a\" \"$D/hl-b\"\n\
                 ln -s hl-a \"$D/sym\"\n: > \"$D/empty\"\n\
                 printf '#!/bin/sh\\necho cap\\n' > \"$D/cap\"\nchmod 0755 \"$D/cap\"",
            )
            .files(
                "%dir /usr/share/ck-links\n%dir /usr/share/ck-links/emptydir\n\
                 /usr/share/ck-links/hl-a\n/usr/share/ck-links/hl-b\n/usr/share/ck-links/sym\n\
                 /usr/share/ck-links/empty\n\
                 %caps(cap_net_raw=ep) /usr/share/ck-links/cap\n\
                 %dir /var/lib/ck-links\n%ghost %attr(0600, root, root) /var/lib/ck-links/state",
            ),
    );

    // The chain ck-app -> ck-lib1 -> ck-lib2 -> ck-lib3 -> ck-busybox.
    for (lib, req) in [
        ("ck-lib1", "ck-lib2"),
        ("ck-lib2", "ck-lib3"),
        ("ck-lib3", "ck-busybox"),
        ("ck-lib4", "ck-busybox"),
    ] {
        let n = &lib[6..];
        let p = Pkg::new(lib, 1)
            .pre(&format!("Requires: {req}"))
            .install(&put(
                &format!("/usr/lib/ck/lib{n}.txt"),
                &format!("lib {n}"),
            ))
            .files(&format!("%dir /usr/lib/ck\n/usr/lib/ck/lib{n}.txt"));
        if lib == NEW_IN_V2 { &mut v2 } else { &mut v1 }.push(p);
    }
    for v in [1, 2] {
        let extra = if v == 2 { "\nRequires: ck-lib4" } else { "" };
        let p = Pkg::new("ck-app", v)
            .pre(&format!("Requires: ck-lib1\nRequires: ck-editor{extra}"))
            .install(&format!(
                "mkdir -p \"$B/usr/bin\"\n\
                 printf '#!/bin/sh\\necho ck-app {v}\\n' > \"$B/usr/bin/ck-app\"\n\
                 chmod 0755 \"$B/usr/bin/ck-app\""
            ))
            .files("/usr/bin/ck-app");
        if v == 1 { &mut v1 } else { &mut v2 }.push(p);
    }
    v1.push(
        Pkg::new("ck-vi", 1)
            .pre("Provides: ck-editor\nRequires: ck-filesystem")
            .install(&put("/usr/share/ck-vi/vi.txt", "an editor"))
            .files("/usr/share/ck-vi"),
    );

    for v in [1, 2] {
        // 8192 lines of 32 bytes: no two 4 KiB blocks alike; v2 changes
        // the second half.
        let second = if v == 1 { "v1" } else { "v2" };
        let p = Pkg::new("ck-data", v)
            .pre("Requires: ck-filesystem")
            .install(&format!(
                "mkdir -p \"$B/usr/share/ck-data\"\n\
                 {{ seq -f 'ck-data v1 line %%012g --' 1 4096\n\
                 seq -f 'ck-data {second} line %%012g --' 4097 8192; }} \
                 > \"$B/usr/share/ck-data/blob.txt\""
            ))
            .files("/usr/share/ck-data");
        if v == 1 { &mut v1 } else { &mut v2 }.push(p);
    }

    v1.push(
        Pkg::new("ck-doc", 1)
            .pre("Requires: ck-filesystem")
            .install(&put("/usr/share/doc/ck-doc/README", "read me"))
            .install(&put("/usr/share/licenses/ck-doc/LICENSE", "MIT"))
            .files(
                "%doc /usr/share/doc/ck-doc/README\n%license /usr/share/licenses/ck-doc/LICENSE",
            ),
    );

    let requires: String = MAIN
        .iter()
        .filter(|n| !["ck-suite", "ck-lib1", "ck-lib2", "ck-lib3", "ck-vi"].contains(n))
        .map(|n| format!("Requires: {n}\n"))
        .collect();
    v1.push(Pkg::new(TOP, 1).pre(requires.trim_end()));

    v1.push(
        Pkg::new("ck-lua", 1)
            .pre("Requires: ck-filesystem")
            .install(&put("/usr/share/ck-lua/lua.txt", "lua"))
            .files("/usr/share/ck-lua")
            .logged_lua("post")
            .logged_lua("postun"),
    );
    v1.push(
        Pkg::new("ck-trigger", 1)
            .pre("Requires: ck-busybox")
            .install(&put("/usr/share/ck-trigger/trigger.txt", "trigger"))
            .files("/usr/share/ck-trigger")
            .script(
                "%filetriggerin -- /usr/lib/ck\nmkdir -p /var/lib/ck\n\
                 cat >> /var/lib/ck/filetrigger-ck-trigger",
            ),
    );
    for c in ["a", "b"] {
        let name = if c == "a" {
            "ck-conflict-a"
        } else {
            "ck-conflict-b"
        };
        v1.push(
            Pkg::new(name, 1)
                .pre("Requires: ck-filesystem")
                .install(&put("/usr/share/ck-conflict/file", c))
                .files(&format!(
                    "/usr/share/ck-conflict/file\n/usr/share/ck-conflict/only-{c}"
                ))
                .install(&put(&format!("/usr/share/ck-conflict/only-{c}"), c)),
        );
    }
    (v1, v2)
}

// ---------------------------------------------------------------------------
// Building.

/// A repository built once under `work` and reused: the directory
/// `PREFIX-<hash>` is named after a hash of the `specs` (and whatever
/// else decides the packages), the busybox
/// binary and the `createrepo_c` version, made by `build` into a
/// temporary directory and renamed into place (another run that finished
/// first wins; its `DONE/repodata/repomd.xml` marks it complete).
pub(crate) fn cached_build(
    work: &Path,
    prefix: &str,
    specs: &[String],
    busybox: &Path,
    done_dir: &str,
    build: impl FnOnce(&Path),
) -> PathBuf {
    let mut hash = Sha256::new();
    for s in specs {
        hash.update(s);
    }
    hash.update(std::fs::read(busybox).unwrap());
    let version = run_ok(
        Command::new("createrepo_c").arg("--version"),
        "createrepo_c (Debian package `createrepo-c`)",
    );
    hash.update(&version.stdout);
    let tag = hex(&hash.finalize()[..6]);
    let done = work.join(format!("{prefix}-{tag}"));
    let marker = format!("{done_dir}/repodata/repomd.xml");
    let key = format!("{prefix} {}", done.display());
    once_per_process(key, || {
        if !done.join(&marker).exists() {
            let part = work.join(format!("{prefix}-{tag}.tmp{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&part);
            build(&part);
            if std::fs::rename(&part, &done).is_err() {
                // Another run finished first: use its copy.
                assert!(done.join(&marker).exists(), "cannot rename {part:?}");
                let _ = std::fs::remove_dir_all(&part);
            }
        }
        done
    })
}

/// Build the repositories under `work` (usually `CARGO_TARGET_TMPDIR`), or
/// reuse a finished build: the directory `work/ck-repo-<hash>` is named
/// after a hash of the specs, the busybox binary and the `createrepo_c`
/// version, and made by an atomic rename, so that test binaries running
/// concurrently share one finished copy and never see a partial one.
/// Needs `rpmbuild` (Debian package `rpm`), `createrepo_c`
/// (`createrepo-c`) and a static busybox (`busybox-static`); panics
/// without them.
pub fn build_repo(work: &Path) -> TestRepo {
    let busybox = host_busybox();
    let (v1, v2) = packages(&busybox);
    let mut specs: Vec<String> = v1.iter().chain(&v2).map(|p| p.spec()).collect();
    specs.push(PAYLOAD.to_string());
    let done = cached_build(work, "ck-repo", &specs, &busybox, "all", |part| {
        build_into(part, &v1, &v2)
    });
    TestRepo {
        dir: done.join("v1"),
        upgrade_dir: done.join("all"),
        v1: v1
            .iter()
            .map(|p| done.join("v1").join(p.file_name()))
            .collect(),
        v2: v2
            .iter()
            .map(|p| done.join("all").join(p.file_name()))
            .collect(),
        top: TOP,
    }
}

/// Build every package into `dir/v1` or `dir/v2` (on all cores), link
/// them into `dir/all`, and index `v1` and `all`.
fn build_into(dir: &Path, v1: &[Pkg], v2: &[Pkg]) {
    let jobs: Vec<(&Pkg, PathBuf)> = v1
        .iter()
        .map(|p| (p, dir.join("v1").join(p.file_name())))
        .chain(v2.iter().map(|p| (p, dir.join("v2").join(p.file_name()))))
        .collect();
    on_all_cores(jobs.len(), |i| {
        let (p, dst) = &jobs[i];
        rpmbuild(&p.spec(), PAYLOAD, dst);
    });
    let all = mkdir(&dir.join("all"));
    for (_, path) in &jobs {
        set_mtime(path, EPOCH_V1);
        std::fs::hard_link(path, all.join(path.file_name().unwrap())).unwrap();
    }
    for repo in ["v1", "all"] {
        createrepo(&dir.join(repo));
    }
}

/// Run `job(i)` for every `i` below `n`, on all cores.
pub(crate) fn on_all_cores(n: usize, job: impl Fn(usize) + Sync) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                job(i);
            });
        }
    });
}

/// Set the package file `path`'s mtime to `secs` after the epoch:
/// createrepo_c records it.
pub(crate) fn set_mtime(path: &Path, secs: i64) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs as u64))
        .unwrap();
}

/// Index the repository `dir` with `createrepo_c`, dated [`EPOCH_V1`].
pub(crate) fn createrepo(dir: &Path) {
    run_ok(
        Command::new("createrepo_c")
            .args(["--quiet", "--no-database", "--workers", "1"])
            .arg(format!("--revision={EPOCH_V1}"))
            .arg("--set-timestamp-to-revision")
            .arg(dir),
        "createrepo_c (Debian package `createrepo-c`)",
    );
}

// ---------------------------------------------------------------------------
// dnf and rpm on a root.

/// The `HOME` [`dnf`] and [`rpm_in`] run with: Debian's `rpm` puts its
/// database at `~/.rpmdb` (inside the root), so it must be fixed.
pub const HOME: &str = "/root";

/// `rpm`'s database path inside a root, for `rpm --dbpath` (on Debian
/// `/root/.rpmdb`, as [`HOME`] is `/root`; elsewhere `/var/lib/rpm`).
pub fn dbpath() -> String {
    let out = run_ok(
        Command::new("rpm")
            .env("HOME", HOME)
            .args(["-E", "%_dbpath"]),
        "rpm -E %_dbpath",
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `dnf -y --quiet` on `root` with only the repository `repo` (id
/// `local`, no GPG check), no host repositories, configuration or
/// plugins, `cache` as its cache directory (created, with the empty
/// `dnf.conf` passed to `--config` in it), [`RELEASEVER`], no weak
/// dependencies and `clean_requirements_on_remove=False` (so `remove`
/// removes only what depends on its arguments). Add the command
/// (`install NAME…`, `upgrade`, …).
///
/// A cache directory is keyed by the repository's URL, so one cache
/// serves [`TestRepo::dir`] and [`TestRepo::upgrade_dir`]; only a
/// directory whose content changes needs a fresh cache. `dnf` also makes
/// an empty copy of the cache directory's path inside `root` (cache
/// `/tmp/x/c` makes `root/tmp/x/c`), which belongs to no package.
pub fn dnf(repo: &Path, root: &Path, cache: &Path) -> Command {
    let conf = mkdir(cache).join("dnf.conf");
    std::fs::write(&conf, "[main]\n").unwrap();
    let mut c = Command::new("dnf");
    c.env("HOME", HOME)
        .env("LC_ALL", "C.UTF-8")
        .args(["-y", "--quiet", "--noplugins", "--nogpgcheck"])
        .arg(format!("--config={}", conf.display()))
        .arg(format!("--installroot={}", root.display()))
        .arg(format!("--releasever={RELEASEVER}"))
        .arg("--setopt=reposdir=/dev/null")
        .arg(format!("--setopt=cachedir={}", cache.display()))
        .arg("--setopt=skip_if_unavailable=False")
        .arg("--setopt=install_weak_deps=False")
        .arg("--setopt=clean_requirements_on_remove=False")
        .arg(format!("--repofrompath=local,file://{}", repo.display()))
        .args(["--repo", "local"]);
    c
}

/// `rpm --root ROOT --dbpath` [`dbpath`]; add the rest.
pub fn rpm_in(root: &Path) -> Command {
    let mut c = Command::new("rpm");
    c.env("HOME", HOME)
        .env("LC_ALL", "C.UTF-8")
        .arg(format!("--root={}", root.display()))
        .arg(format!("--dbpath={}", dbpath()));
    c
}

/// `name → version-release` of every package in `root`'s database.
pub fn installed(root: &Path) -> BTreeMap<String, String> {
    let out = run_ok(
        rpm_in(root).args(["-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\\n"]),
        "rpm -qa",
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, v) = l.split_once(' ').unwrap();
            (n.to_string(), v.to_string())
        })
        .collect()
}

/// Owner, group and permission bits of `path` in `root`, without
/// following a final symlink.
pub fn owner_mode(root: &Path, path: &str) -> (u32, u32, u32) {
    let p = root.join(path.trim_start_matches('/'));
    let m = std::fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (m.uid(), m.gid(), m.mode() & 0o7777)
}

/// The lines of `rpm -Va` in `root` (sorted), e.g.
/// `S.5....T.  c /etc/passwd`; empty when every file is as its package
/// says.
pub fn verify(root: &Path) -> Vec<String> {
    let out = rpm_in(root)
        .arg("-Va")
        .output()
        .expect("cannot run rpm -Va");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.trim().is_empty(), "rpm -Va: {stderr}");
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(
        out.status.success(),
        lines.is_empty(),
        "rpm -Va exit status {} with {lines:?}",
        out.status
    );
    lines
}
