//! A local repository whose packages copy the scriptlet *shapes* of real
//! Fedora packages (not their bulk), for comparing plain
//! `dnf --installroot` with cowkit on install, upgrade and removal (issue
//! 26). Every scriptlet and trigger appends one line to [`LOG`]:
//! `<name>-<version> <kind> [<arguments>]`, and for file triggers
//! ` files: <the paths it was given>` (stdin for shell, `rpm.next_file()`
//! for Lua), so that order, arguments and file lists can be compared
//! byte for byte.
//!
//! Where each shape comes from (Fedora rawhide specs, read in the
//! `r0x0d/fedora-rpm-specs` mirror; mandoc's Lua triggers from openSUSE's
//! `mandoc.lua`, as Fedora's mandoc has none):
//!
//! | package | shape | from |
//! |---|---|---|
//! | `setup` | `%verify(not md5 size mtime) %config(noreplace)` `/etc/passwd`, `group`, `shells`; Lua `%post` removing `.rpmnew` files and fork/exec of `newaliases` when present | `setup.spec` |
//! | `filesystem` | `Requires(pre): setup`; Lua `%pretrans` making `/usr/…`, `/var/log`, `/run` and the usr-merge symlinks in an empty root; Lua `%posttrans` calling `restorecon` only if present (`rpm.execute`) | `filesystem.spec` |
//! | `coreutils-single` | the host's static busybox as `/usr/bin/busybox` and applet links (the root's tools; no scriptlets) | stand-in |
//! | `bash` | `Provides: /bin/sh`; `/usr/bin/sh` → busybox; Lua `%post` appending `/bin/sh` and `/bin/bash` to `/etc/shells`, Lua `%postun` removing them when `arg[2] == 0` | `bash.spec` |
//! | `glibc` | `Provides: /sbin/ldconfig`; Lua `%pre` (`posix.uname`, `rpm.vercmp`, `error()` on an old kernel); Lua `%post` editing `/etc/ld.so.conf` and running `ldconfig` by `posix.fork`/`posix.exec`/`posix.wait` (`glibc_post_funcs`); `%ghost /etc/ld.so.cache`; `/usr/sbin/ldconfig` is a `sh` stand-in that logs and writes the cache | `glibc.spec` |
//! | `glibc-common` | `%transfiletriggerin -P 2000000 -p <lua> -- /lib /usr/lib /lib64 /usr/lib64` and `%transfiletriggerpostun` of the same shape, both calling `ldconfig` (in Fedora they are `%transfiletriggerin common`, i.e. of this subpackage) | `glibc.spec` |
//! | `zlib` | `%post -p /sbin/ldconfig`, `%postun -p /sbin/ldconfig` (no body: rpm passes no arguments); v2 changes the library's name | old `zlib.spec` (today `%ldconfig_scriptlets`) |
//! | `systemd` | `%filetriggerin`/`%filetriggerun -P 1000700 -- /usr/lib/systemd/system` (≥ 10000: around `%post`/`%preun`), `%filetriggerin -P 9000 -- /usr/lib/tmpfiles.d` (< 10000: after `%post`; creates the `d` lines' directories like `systemd-tmpfiles --create`), `%transfiletriggerin -P 900900` and `%transfiletriggerpostun -P 1000100` and `-P 10000 -- /usr/lib/systemd/system /etc/systemd/system`, `%transfiletriggerin -P 100700 -- /usr/lib/sysusers.d`, `%triggerun -- systemd < 256`; shell `%post`; Lua `%posttrans` using `rpm.expand` at run time; stand-ins for `systemctl`, `systemd-update-helper`, `kernel-install` | `systemd.spec`, systemd's `src/rpm/triggers.systemd.in` |
//! | `httpd` | `%pre` adding user and group `apache` (48) to `/etc/passwd`/`/etc/group` when absent (the pre-sysusers `getent \|\| useradd` shape, with `grep`/`echo`: the root has no shadow-utils), files owned by `apache`, `%systemd_post`/`%systemd_preun`/`%systemd_postun_with_restart`-shaped scriptlets, `%posttrans` try-restart, a unit file, a tmpfiles.d file, a MIME package file; 1.3.42 in v1, 2.4.58 in v2 | `httpd.spec`, `macros.systemd` |
//! | `mod_legacy` | `%triggerin`/`%triggerun`/`%triggerpostun -- httpd < 2.0` (a version condition) and `%triggerin -- systemd` | the `%triggerun -- httpd < 2.2.21-5` shape of older `httpd.spec`s |
//! | `mandoc` | Lua `%filetriggerin`/`%filetriggerun -- /usr/share/man` collecting `rpm.next_file()` into a *global* table, Lua `%transfiletriggerin`/`%transfiletriggerpostun` reading it (rpm's Lua state persists between scriptlets) | openSUSE `mandoc.spec` / `mandoc.lua` |
//! | `shared-mime-info` | `%post` `touch --no-create`; `%transfiletriggerin`/`%transfiletriggerpostun -- /usr/share/mime` running `update-mime-database` (a stand-in writing `mime.cache`) | `shared-mime-info.spec` |
//! | `procps` → `procps-ng` | v2 renames: `Obsoletes: procps < 3.2.9`, `Provides: procps = 3.2.9-1`; shell `%post`/`%preun`/`%postun` | `procps-ng.spec` |
//! | `kernel-core` | `Provides: installonlypkg(kernel)`, 6.1.0 in v1 and 6.2.0 in v2 (installed beside); `%posttrans` `kernel-install add`, `%preun` `kernel-install remove`, `%ghost /boot/vmlinuz-<version>` | `kernel.spec` |
//! | `cyrus-sasl-lib` (x86_64 and i686) | a multilib pair: both own `/usr/sbin/saslpasswd2`, a real ELF of each class (rpm colours it 2 and 1: the x86_64 file is installed, the i686 one recorded "wrong color"), `%{_libdir}/libsasl2.so.3*`, `%dir /etc/sasl2`, the same `%license COPYING` and `%doc AUTHORS`; 2.1.28 in v1, 2.1.29 in v2 (new ELFs) | `cyrus-sasl.spec` (`%files lib`) |
//! | `krb5-libs` (x86_64 and i686) | a multilib pair sharing the config `%verify(not md5 size mtime) %config(noreplace) /etc/krb5.conf` (changed in v2; the tests edit it between install and upgrade) and the `%lang(de)`, `%lang(fr)`, `%lang(pt_BR)` catalogues of `-f %{gettext_domain}.lang` (`%find_lang`); `%{_libdir}/libkrb5.so.3` | `krb5.spec` (`%files libs`) |
//! | `dejavu-sans-fonts` | a `%config(noreplace)` symlink `/etc/fonts/conf.d/57-dejavu-sans-fonts.conf` → its file in `/usr/share/fontconfig/conf.avail`, absolute in v1 and relative in v2 (retargeted); `%license`, `%doc` | Fedora font packages (the `ln -s` of `%{_fontconfig_templatedir}` files into `%{_fontconfig_confdir}` listed `%config(noreplace)`) |
//!
//! `filesystem` also owns `/` (`%dir %attr(555,root,root) /`) and
//! `%attr(555,root,root) /boot`, as Fedora's `filesystem.spec` has them.
//! The ELF files are written by the module itself (a few bytes of header and code,
//! no toolchain needed) and built with `rpmbuild --target`.
//!
//! [`build`] makes `v1/` (install) and `v2/` (the v1 packages and the v2
//! ones, for `dnf upgrade`), each indexed with `createrepo_c`.

use std::path::{Path, PathBuf};

use crate::repo::{createrepo, host_busybox, on_all_cores, set_mtime, Build, Sections};
use crate::rpm::rpmbuild_for;
use crate::tree::mkdir;

/// The log every scriptlet appends one line to (absolute, in the root).
pub const LOG: &str = "/var/log/scriptlets.log";

/// What `dnf install` is given on an empty root (v1).
pub const INSTALL: [&str; 19] = [
    "setup",
    "filesystem",
    "coreutils-single",
    "bash",
    "glibc",
    "glibc-common",
    "zlib",
    "systemd",
    "httpd",
    "mod_legacy",
    "mandoc",
    "shared-mime-info",
    "procps",
    "kernel-core",
    // A multilib pair is installed as users do: the i686 package named
    // by its arch next to the x86_64 one.
    "cyrus-sasl-lib.x86_64",
    "cyrus-sasl-lib.i686",
    "krb5-libs.x86_64",
    "krb5-libs.i686",
    "dejavu-sans-fonts",
];

/// What `dnf remove` is given after the upgrade (`mod_legacy` goes with
/// `httpd`, which it requires; the old kernel by its full name; one arch
/// of each multilib pair: the i686 krb5-libs, whose files the x86_64 one
/// shares, and the x86_64 cyrus-sasl-lib, whose `saslpasswd2` won over
/// the i686 one's).
pub const REMOVE: [&str; 5] = [
    "httpd",
    "mandoc",
    "kernel-core-6.1.0-1.fc40",
    "krb5-libs.i686",
    "cyrus-sasl-lib.x86_64",
];

/// The languages of krb5-libs' `%lang` message catalogues
/// (`/usr/share/locale/<lang>/LC_MESSAGES/mit-krb5.mo`).
pub const KRB5_LANGS: [&str; 3] = ["de", "fr", "pt_BR"];

/// krb5-libs' shared `%config(noreplace)` file, which the tests edit
/// between install and upgrade as an admin would.
pub const KRB5_CONF: &str = "/etc/krb5.conf";

/// The payload compressor, and the build time and file mtimes of v1 and
/// v2 packages: those of [`crate::repo`].
pub use crate::repo::{EPOCH_V1, EPOCH_V2, PAYLOAD};

/// The built repositories.
#[derive(Clone, Debug)]
pub struct FedoraRepo {
    /// The v1 packages with `repodata/`.
    pub v1: PathBuf,
    /// The v1 and v2 packages with `repodata/`.
    pub v2: PathBuf,
    /// The v1 package files (in `v1`), in the order of [`INSTALL`]
    /// (the multilib pairs x86_64 first).
    pub v1_rpms: Vec<PathBuf>,
    /// The v2-only package files (in `v2`): zlib, systemd, httpd,
    /// procps-ng, kernel-core 6.2.0, both arches of cyrus-sasl-lib and
    /// krb5-libs, dejavu-sans-fonts.
    pub v2_rpms: Vec<PathBuf>,
}

impl FedoraRepo {
    /// The package file whose name starts with `<name>-<version>-`, from
    /// either set.
    pub fn rpm(&self, name_version: &str) -> &Path {
        let prefix = format!("{name_version}-");
        self.v1_rpms
            .iter()
            .chain(&self.v2_rpms)
            .find(|p| {
                p.file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| f.starts_with(&prefix))
            })
            .unwrap_or_else(|| panic!("no package {name_version}"))
    }
}

/// One spec.
struct Pkg {
    name: &'static str,
    version: &'static str,
    v2: bool,
    /// `noarch`, or the architecture it is built for (`rpmbuild --target`).
    arch: &'static str,
    sections: Sections,
}

impl Build for Pkg {
    fn sections(&mut self) -> &mut Sections {
        &mut self.sections
    }
}

impl Pkg {
    fn new(name: &'static str, version: &'static str, v2: bool) -> Pkg {
        Pkg {
            name,
            version,
            v2,
            arch: "noarch",
            sections: Sections::default(),
        }
    }

    /// Built for `arch` (`x86_64`, `i686`) instead of `noarch`.
    fn arch(mut self, arch: &'static str) -> Pkg {
        self.arch = arch;
        self
    }

    fn label(&self) -> String {
        format!("{}-{}", self.name, self.version)
    }

    /// A scriptlet section: `header` (`%post`, `%filetriggerin -P 9000 --
    /// /x`, …) and its body, to which the log line is prepended.
    fn sh(mut self, header: &str, kind: &str, body: &str) -> Pkg {
        let log = sh_log(&self.label(), kind);
        self.sections
            .scripts
            .push_str(&format!("{header}\n{log}{body}\n\n"));
        self
    }

    /// A shell file trigger: logs the paths it reads on stdin.
    fn sh_files(mut self, header: &str, kind: &str, body: &str) -> Pkg {
        let log = sh_log_files(&self.label(), kind);
        self.sections
            .scripts
            .push_str(&format!("{header}\n{log}{body}\n\n"));
        self
    }

    /// A Lua scriptlet (`header` ends in `-p <lua>` and maybe `-- …`).
    fn lua(mut self, header: &str, kind: &str, body: &str) -> Pkg {
        let log = lua_log(&self.label(), kind, false);
        self.sections
            .scripts
            .push_str(&format!("{header}\n{log}{body}\n\n"));
        self
    }

    /// A Lua scriptlet that logs after `body` (filesystem's `%pretrans`
    /// makes `/var/log` first).
    fn lua_then_log(mut self, header: &str, kind: &str, body: &str) -> Pkg {
        let log = lua_log(&self.label(), kind, false);
        self.sections
            .scripts
            .push_str(&format!("{header}\n{body}\n{log}\n"));
        self
    }

    /// A Lua file trigger: logs the paths `rpm.next_file()` gives, kept
    /// in the local `files` (a table) for `body`.
    fn lua_files(mut self, header: &str, kind: &str, body: &str) -> Pkg {
        let log = lua_log(&self.label(), kind, true);
        self.sections
            .scripts
            .push_str(&format!("{header}\n{log}{body}\n\n"));
        self
    }

    /// A raw section (a `-p /program` scriptlet without a body).
    fn raw(mut self, s: &str) -> Pkg {
        self.sections.scripts.push_str(s);
        self.sections.scripts.push_str("\n\n");
        self
    }

    fn file_name(&self) -> String {
        format!("{}-{}-1.fc40.{}.rpm", self.name, self.version, self.arch)
    }

    fn spec(&self) -> String {
        let date = if self.v2 {
            "Fri Jan 02 2015"
        } else {
            "Thu Jan 01 2015"
        };
        let spec = crate::repo::spec_text(
            (self.name, self.version, "1.fc40"),
            "cowkit Fedora-shaped repository",
            date,
            &self.sections,
        );
        if self.arch == "noarch" {
            spec
        } else {
            spec.replacen("BuildArch: noarch\n", "", 1)
        }
    }
}

/// The shell line appending `<label> <kind> [$*]` to [`LOG`].
fn sh_log(label: &str, kind: &str) -> String {
    format!("echo \"{label} {kind} [$*]\" >> {LOG}\n")
}

/// The same with ` files:` and every line of stdin.
fn sh_log_files(label: &str, kind: &str) -> String {
    format!(
        "files=\nwhile read -r f; do files=\"$files $f\"; done\n\
         echo \"{label} {kind} [$*] files:$files\" >> {LOG}\n"
    )
}

/// Lua appending `<label> <kind> [<arg…>]` (and ` files: …` from
/// `rpm.next_file()`, kept in the local table `files`) to [`LOG`].
fn lua_log(label: &str, kind: &str, with_files: bool) -> String {
    let mut s = String::from(
        "local ck_a = {}\n\
         for i = 1, #(arg or {}) do ck_a[i] = tostring(arg[i]) end\n\
         local ck_line = \"",
    );
    s.push_str(&format!(
        "{label} {kind} [\" .. table.concat(ck_a, \" \") .. \"]\"\n"
    ));
    if with_files {
        // rpm 4.18 gives `rpm.next_file` to the "in" and "un" file
        // triggers only: calling it in a `%transfiletriggerpostun` fails.
        s.push_str(
            "local files = {}\n\
             if rpm.next_file then\n\
               local ck_f = rpm.next_file()\n\
               while ck_f do files[#files + 1] = ck_f; ck_f = rpm.next_file() end\n\
               ck_line = ck_line .. \" files:\"\n\
             else\n\
               ck_line = ck_line .. \" files: (no rpm.next_file)\"\n\
             end\n\
             for _, p in ipairs(files) do ck_line = ck_line .. \" \" .. p end\n",
        );
    }
    s.push_str(&format!(
        "local ck_l = assert(io.open(\"{LOG}\", \"a\"))\n\
         ck_l:write(ck_line .. \"\\n\")\nck_l:close()\n"
    ));
    s
}

/// `%install` lines writing `text` (no single quotes) to `path`, making
/// its directory; `mode` for `chmod`.
fn put(path: &str, mode: &str, text: &str) -> String {
    let dir = &path[..path.rfind('/').unwrap()];
    format!(
        "mkdir -p \"$B{dir}\"\nprintf '%%s\\n' '{text}' > \"$B{path}\"\nchmod {mode} \"$B{path}\""
    )
}

/// `%install` lines writing a gzipped man page (`gzip -n`: no name or
/// time in it).
fn man(path: &str, text: &str) -> String {
    let dir = &path[..path.rfind('/').unwrap()];
    format!("mkdir -p \"$B{dir}\"\nprintf '%%s\\n' '{text}' | gzip -n -9 > \"$B{path}\"")
}

/// `%install` lines writing `bytes` to `path` (`printf` with octal
/// escapes, so the spec holds them), making its directory; `mode` for
/// `chmod`.
fn put_bytes(path: &str, mode: &str, bytes: &[u8]) -> String {
    let dir = &path[..path.rfind('/').unwrap()];
    let octal: String = bytes.iter().map(|b| format!("\\{b:03o}")).collect();
    format!("mkdir -p \"$B{dir}\"\nprintf '{octal}' > \"$B{path}\"\nchmod {mode} \"$B{path}\"")
}

/// A minimal static ELF executable that exits with status `code`: 32-bit
/// i386 (`bits` 32) or 64-bit x86-64 (64). rpm colours a file by its
/// `file` classification ("ELF 32-bit" is colour 1, "ELF 64-bit" 2), so
/// a multilib pair's shared path needs real ELF files of each class.
fn elf(bits: u8, code: u8) -> Vec<u8> {
    let mut v = Vec::new();
    let mut put = |b: &[u8]| v.extend_from_slice(b);
    if bits == 64 {
        // mov eax, 60 (exit); mov edi, CODE; syscall
        let text = [0xb8, 60, 0, 0, 0, 0xbf, code, 0, 0, 0, 0x0f, 0x05];
        let (base, eh, ph) = (0x40_0000u64, 64u16, 56u16);
        let start = u64::from(eh + ph);
        let size = start + text.len() as u64;
        put(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        put(&2u16.to_le_bytes()); // ET_EXEC
        put(&0x3eu16.to_le_bytes()); // EM_X86_64
        put(&1u32.to_le_bytes());
        put(&(base + start).to_le_bytes()); // entry
        put(&u64::from(eh).to_le_bytes()); // phoff
        put(&0u64.to_le_bytes()); // shoff
        put(&0u32.to_le_bytes()); // flags
        for h in [eh, ph, 1, 0, 0, 0] {
            put(&h.to_le_bytes());
        }
        put(&1u32.to_le_bytes()); // PT_LOAD
        put(&5u32.to_le_bytes()); // R+X
        put(&0u64.to_le_bytes()); // offset
        put(&base.to_le_bytes());
        put(&base.to_le_bytes());
        put(&size.to_le_bytes());
        put(&size.to_le_bytes());
        put(&0x1000u64.to_le_bytes());
        put(&text);
    } else {
        // mov eax, 1 (exit); mov ebx, CODE; int 0x80
        let text = [0xb8, 1, 0, 0, 0, 0xbb, code, 0, 0, 0, 0xcd, 0x80];
        let (base, eh, ph) = (0x804_8000u32, 52u16, 32u16);
        let start = u32::from(eh + ph);
        let size = start + text.len() as u32;
        put(&[0x7f, b'E', b'L', b'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        put(&2u16.to_le_bytes());
        put(&3u16.to_le_bytes()); // EM_386
        put(&1u32.to_le_bytes());
        put(&(base + start).to_le_bytes());
        put(&u32::from(eh).to_le_bytes());
        put(&0u32.to_le_bytes());
        put(&0u32.to_le_bytes());
        for h in [eh, ph, 1, 0, 0, 0] {
            put(&h.to_le_bytes());
        }
        for w in [1, 0, base, base, size, size, 5, 0x1000] {
            put(&w.to_le_bytes());
        }
        put(&text);
    }
    v
}

/// `fork`/`exec`/`wait` of `/sbin/ldconfig` from Lua, as glibc's
/// `post_exec` does it where `rpm.spawn` is missing (rpm 4.18).
const LUA_LDCONFIG: &str = "local pid = posix.fork()\n\
     if pid == 0 then\n\
       posix.exec(\"/sbin/ldconfig\")\n\
       io.stdout:write(\"Error: call to ldconfig failed.\\n\")\n\
       os.exit(1)\n\
     elseif pid > 0 then\n\
       posix.wait(pid)\n\
     end";

mod packages;

/// Build the repositories under `work` (or reuse a finished build: the
/// directory `fedora-repo-<hash>` is named after a hash of the specs, the
/// busybox binary and the `createrepo_c` version, and made by an atomic
/// rename). Needs `rpmbuild`, `createrepo_c`, `gzip` and a static
/// busybox.
pub fn build(work: &Path) -> FedoraRepo {
    let busybox = host_busybox();
    let pkgs = packages::all(&busybox);
    let mut specs: Vec<String> = pkgs
        .iter()
        .map(|p| format!("{}\n{}", p.file_name(), p.spec()))
        .collect();
    specs.push(PAYLOAD.to_string());
    let done = crate::repo::cached_build(work, "fedora-repo", &specs, &busybox, "v2", |part| {
        build_into(part, &pkgs)
    });
    let in_dir = |v2: bool| -> Vec<PathBuf> {
        let dir = done.join(if v2 { "v2" } else { "v1" });
        pkgs.iter()
            .filter(|p| p.v2 == v2)
            .map(|p| dir.join(p.file_name()))
            .collect()
    };
    FedoraRepo {
        v1: done.join("v1"),
        v2: done.join("v2"),
        v1_rpms: in_dir(false),
        v2_rpms: in_dir(true),
    }
}

/// Every spec, as text (for reading them, or building them elsewhere).
pub fn specs() -> Vec<(String, String)> {
    packages::all(&host_busybox())
        .iter()
        .map(|p| (p.file_name(), p.spec()))
        .collect()
}

fn build_into(dir: &Path, pkgs: &[Pkg]) {
    let built = mkdir(&dir.join("built"));
    on_all_cores(pkgs.len(), |i| {
        let p = &pkgs[i];
        let target = (p.arch != "noarch").then_some(p.arch);
        rpmbuild_for(&p.spec(), PAYLOAD, target, &built.join(p.file_name()));
    });
    let (v1, v2) = (mkdir(&dir.join("v1")), mkdir(&dir.join("v2")));
    for p in pkgs {
        let path = built.join(p.file_name());
        set_mtime(&path, if p.v2 { EPOCH_V2 } else { EPOCH_V1 });
        if !p.v2 {
            std::fs::hard_link(&path, v1.join(p.file_name())).unwrap();
        }
        std::fs::hard_link(&path, v2.join(p.file_name())).unwrap();
    }
    for repo in ["v1", "v2"] {
        createrepo(&dir.join(repo));
    }
}
