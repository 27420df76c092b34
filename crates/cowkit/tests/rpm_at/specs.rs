//! Spec text for the packages of rpm's scenarios, written here in the
//! shapes those scenarios build (the same names, versions, paths, file
//! types, contents, `%config` flags and scriptlets), not copied from rpm's
//! spec files.

/// One package to build: `rpmbuild -bb` of [`Spec::text`], for `arch`
/// (`None`: `BuildArch: noarch`).
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    pub version: String,
    pub release: String,
    pub arch: Option<&'static str>,
    /// Lines before `%description` (`Provides:`, `Obsoletes:`, ...).
    pub preamble: String,
    /// `%install` shell; `$B` is the build root.
    pub install: String,
    /// `%files` lines.
    pub files: String,
    /// Whole scriptlet sections.
    pub scripts: String,
}

impl Spec {
    pub fn new(name: &str, version: &str) -> Spec {
        Spec {
            name: name.into(),
            version: version.into(),
            release: "1".into(),
            arch: None,
            preamble: String::new(),
            install: String::new(),
            files: String::new(),
            scripts: String::new(),
        }
    }

    /// The spec file.
    pub fn text(&self) -> String {
        let arch = match self.arch {
            None => "BuildArch: noarch\n".to_string(),
            Some(_) => String::new(),
        };
        format!(
            "Name: {}\nVersion: {}\nRelease: {}\nSummary: rpm scenario package\n\
             License: MIT\n{arch}{}\n\
             %global debug_package %{{nil}}\n%global __os_install_post %{{nil}}\n\
             %global _build_id_links none\n\
             %description\nA package in the shape of one of rpm's own test scenarios.\n\
             %install\nB=\"$RPM_BUILD_ROOT\"\nmkdir -p \"$B\"\n{}\n\
             %files\n{}\n{}\n",
            self.name,
            self.version,
            self.release,
            self.preamble,
            self.install,
            self.files,
            self.scripts
        )
    }

    /// `NAME-VERSION-RELEASE.ARCH`.
    pub fn nevra(&self) -> String {
        format!(
            "{}-{}-{}.{}",
            self.name,
            self.version,
            self.release,
            self.arch.unwrap_or("noarch")
        )
    }
}

/// What a scenario's one path is in a package.
#[derive(Clone, Copy, Debug)]
pub enum Ty<'a> {
    /// A regular file holding this line.
    File(&'a str),
    /// A symlink to this target.
    Link(&'a str),
    /// An empty directory.
    Dir,
    /// A directory holding one file of this name (content `WOOT`).
    DataDir(&'a str),
}

impl Ty<'_> {
    /// Shell that makes `path` (relative to `$B`) of this type.
    fn make(&self, path: &str) -> String {
        match self {
            Ty::File(data) => format!("echo '{data}' > \"$B/{path}\""),
            Ty::Link(to) => format!("ln -s '{to}' \"$B/{path}\""),
            Ty::Dir => format!("mkdir -p \"$B/{path}\""),
            Ty::DataDir(f) => format!("mkdir -p \"$B/{path}\"\necho WOOT > \"$B/{path}/{f}\""),
        }
    }
}

/// `%config` flavour of the config scenarios' one file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cfg {
    /// Not a config file.
    No,
    /// `%config`.
    Plain,
    /// `%config(noreplace)`.
    NoReplace,
}

/// The config scenarios' package: `configtest[-SUB]` at `ver` owning
/// `/etc/my.conf` of type `ty`, flagged `cfg`, with `attr` (`%ghost`) in
/// front of it.
pub fn configtest(sub: Option<&str>, ver: &str, ty: Ty, cfg: Cfg, attr: &str) -> Spec {
    let name = match sub {
        Some(s) => format!("configtest-{s}"),
        None => "configtest".into(),
    };
    let mut s = Spec::new(&name, ver);
    s.install = format!("mkdir -p \"$B/etc\"\n{}", ty.make("etc/my.conf"));
    let flag = match cfg {
        Cfg::No => "",
        Cfg::Plain => "%config",
        Cfg::NoReplace => "%config(noreplace)",
    };
    s.files = format!("%defattr(-,root,root,-)\n{attr} {flag} /etc/my.conf");
    s
}

/// The file replacement scenarios' package: `replacetest` at `ver` owning
/// `/opt/foo` of type `ty`, the directory `/opt/zoo` and the file
/// `/opt/goo` (`FOO`), all as `user:group`; `pretrans` a `<lua>`
/// `%pretrans` body.
pub fn replacetest(ver: &str, ty: Ty, owner: (&str, &str), pretrans: Option<&str>) -> Spec {
    let mut s = Spec::new("replacetest", ver);
    s.install = format!(
        "mkdir -p \"$B/opt/zoo\"\n{}\necho FOO > \"$B/opt/goo\"",
        ty.make("opt/foo")
    );
    s.files = format!("%defattr(-,{},{},-)\n/opt/*", owner.0, owner.1);
    if let Some(lua) = pretrans {
        s.scripts = format!("%pretrans -p <lua>\n{lua}");
    }
    s
}

/// An empty package `versiontest` at `ver`.
pub fn versiontest(ver: &str) -> Spec {
    let mut s = Spec::new("versiontest", ver);
    s.files = "%defattr(-,root,root)".into();
    s
}

/// `deptest-PKG` 1.0 owning `/opt/bar`, with `preamble` dependencies.
pub fn deptest(pkg: &str, preamble: &str) -> Spec {
    let mut s = Spec::new(&format!("deptest-{pkg}"), "1.0");
    s.preamble = preamble.into();
    s.install = "mkdir -p \"$B/opt\"\necho FOO > \"$B/opt/bar\"".into();
    s.files = "%defattr(-,root,root,-)\n/opt/bar".into();
    s
}

/// `conflictPKG` 1.0 owning `/usr/share/my.version` holding `data`, with
/// `attr` in front of it.
pub fn conflicttest(pkg: &str, data: &str, attr: &str) -> Spec {
    let mut s = Spec::new(&format!("conflict{pkg}"), "1.0");
    s.install = format!("mkdir -p \"$B/usr/share\"\necho '{data}' > \"$B/usr/share/my.version\"");
    s.files = format!("%defattr(-,root,root,-)\n{attr} /usr/share/my.version");
    s
}

/// The bytes of an ELF header that rpmbuild's classifier colours as
/// 32-bit (i386) or 64-bit (x86-64), as `printf` escapes, then zeros up
/// to the header size; `tag` (ASCII) after it makes the builds differ.
fn elf(bits64: bool, tag: &str) -> String {
    let (class, machine, pad) = if bits64 {
        ("\\002", "\\076", 44)
    } else {
        ("\\001", "\\003", 28)
    };
    format!(
        "printf '\\177ELF{class}\\001\\001\\000\\000\\000\\000\\000\\000\\000\\000\\000\\002\\000{machine}\\000\\001\\000\\000\\000' > \"$F\"\n\
         head -c {pad} /dev/zero >> \"$F\"\nprintf '{tag}' >> \"$F\"\nchmod 0755 \"$F\""
    )
}

/// `hello` 2.0 for `arch` (`x86_64` or `i686`): `/usr/bin/hello`, an ELF
/// file of the arch's colour (different bytes per arch) requiring the C
/// library of its arch as a linked program does (a file's dependencies
/// give the package its colour: rpm's multilib rules go by it), and three
/// `%doc` files in `/usr/share/doc/hello-2.0` (the same in both).
pub fn hello(arch: &'static str) -> Spec {
    let mut s = Spec::new("hello", "2.0");
    s.arch = Some(arch);
    let requires = if arch == "x86_64" {
        "echo 'libc.so.6()(64bit)'; echo 'libc.so.6(GLIBC_2.2.5)(64bit)'; echo 'rtld(GNU_HASH)'"
    } else {
        "echo libc.so.6; echo 'libc.so.6(GLIBC_2.0)'; echo 'rtld(GNU_HASH)'"
    };
    // rpmbuild's ELF dependency generator, answering for the stub.
    s.preamble = format!("%global __elf_requires /bin/sh -c \"cat >/dev/null; {requires}\"");
    s.install = format!(
        "mkdir -p \"$B/usr/bin\" \"$B/usr/share/doc/hello-2.0\"\nF=\"$B/usr/bin/hello\"\n{}\n\
         for d in COPYING FAQ README; do echo \"hello $d\" > \"$B/usr/share/doc/hello-2.0/$d\"; done",
        elf(arch == "x86_64", &format!("hello for {arch}"))
    );
    s.files = "%defattr(-,root,root)\n/usr/bin/hello\n%dir /usr/share/doc/hello-2.0\n\
               %doc /usr/share/doc/hello-2.0/COPYING\n%doc /usr/share/doc/hello-2.0/FAQ\n\
               %doc /usr/share/doc/hello-2.0/README"
        .into();
    s
}

/// `testdoc` 1.0: `/usr/share/testdoc/nodoc` and `%doc` files (two, and
/// two in `examples/`) under `/usr/share/doc/testdoc`.
pub fn testdoc() -> Spec {
    let mut s = Spec::new("testdoc", "1.0");
    s.install = "mkdir -p \"$B/usr/share/testdoc\" \"$B/usr/share/doc/testdoc/examples\"\n\
                 echo nodoc > \"$B/usr/share/testdoc/nodoc\"\n\
                 for n in 1 2; do echo doc$n > \"$B/usr/share/doc/testdoc/documentation$n\"; \
                 echo example$n > \"$B/usr/share/doc/testdoc/examples/example$n\"; done"
        .into();
    s.files = "/usr/share/testdoc/nodoc\n%dir /usr/share/doc/testdoc\n\
               %doc /usr/share/doc/testdoc/documentation1\n%doc /usr/share/doc/testdoc/documentation2\n\
               %dir /usr/share/doc/testdoc/examples\n\
               %doc /usr/share/doc/testdoc/examples/example1\n%doc /usr/share/doc/testdoc/examples/example2"
        .into();
    s
}

/// `hlinktest` 1.0: files in `/foo` (not owned): `hello` with three
/// hardlinks `hello-{foo,bar,world}`, its copy `copyllo`, and the pair
/// `aaaa`/`zzzz` of hardlinks; `owned_dir` owns `/foo` too.
pub fn hlinktest(owned_dir: bool) -> Spec {
    let mut s = Spec::new("hlinktest", "1.0");
    // Its scripts' `#!/bin/sh` needs a /bin/sh; the roots have none.
    s.preamble = "Provides: /bin/sh".into();
    s.install = "mkdir -p \"$B/foo\"\nprintf '#!/bin/sh\\necho hlinktest-1.0\\n' > \"$B/foo/hello\"\n\
                 cp \"$B/foo/hello\" \"$B/foo/copyllo\"\ncp \"$B/foo/hello\" \"$B/foo/aaaa\"\n\
                 ln \"$B/foo/aaaa\" \"$B/foo/zzzz\"\nchmod 0755 \"$B/foo/hello\" \"$B/foo/copyllo\"\n\
                 for f in foo bar world; do ln \"$B/foo/hello\" \"$B/foo/hello-$f\"; done"
        .into();
    s.files = format!(
        "%defattr(-,root,root)\n{}/foo/*",
        if owned_dir { "%dir /foo\n" } else { "" }
    );
    s
}

/// `suicidal` 1-`rel`: `/opt/foot`, and a `<lua>` `%pre` that removes it.
pub fn suicidal(rel: &str) -> Spec {
    let mut s = Spec::new("suicidal", "1");
    s.release = rel.into();
    s.install = "mkdir -p \"$B/opt\"\necho shoot > \"$B/opt/foot\"".into();
    s.files = "/opt/foot".into();
    s.scripts = "%pre -p <lua>\nos.remove('/opt/foot')".into();
    s
}

/// `fs` 1.0 owning `/` and the directories `/bin /lib /opt /etc /tmp /var`.
pub fn fs() -> Spec {
    let mut s = Spec::new("fs", "1.0");
    s.install = "mkdir -p \"$B/bin\" \"$B/lib\" \"$B/opt\" \"$B/etc\" \"$B/tmp\" \"$B/var\"".into();
    s.files = "/".into();
    s
}

/// `fakeshell` 1.0: no files, `Provides: /bin/sh` (the scriptlets'
/// interpreter is the root's own).
pub fn fakeshell() -> Spec {
    let mut s = Spec::new("fakeshell", "1.0");
    s.preamble = "Provides: /bin/sh".into();
    s
}

/// `conflictPKG` 1.0 as [`conflicttest`], its file's mtime `mtime` (a
/// `touch -d` date: rpm's scenario builds the two packages a second
/// apart).
pub fn conflicttest_at(pkg: &str, data: &str, mtime: &str) -> Spec {
    let mut s = conflicttest(pkg, data, "");
    s.install
        .push_str(&format!("\ntouch -d '{mtime}' \"$B/usr/share/my.version\""));
    s
}

/// `selfconflict` 1.0 owning `/opt/mydir` with `one/somefile` (`foo`)
/// and `two/somefile` (`bar`).
pub fn selfconflict() -> Spec {
    let mut s = Spec::new("selfconflict", "1.0");
    s.install = "mkdir -p \"$B/opt/mydir/one\" \"$B/opt/mydir/two\"\n\
                 echo foo > \"$B/opt/mydir/one/somefile\"\necho bar > \"$B/opt/mydir/two/somefile\""
        .into();
    s.files = "%defattr(-,root,root,-)\n/opt/mydir".into();
    s
}

/// `symlinktest` 1.0-`rel`: `/usr/share/symlinktest` a directory holding
/// `README`, or (`link`) a symlink to `../lib/symlinktest`, the directory
/// holding `README`, owned too.
pub fn symlinktest(rel: &str, link: bool) -> Spec {
    let mut s = Spec::new("symlinktest", "1.0");
    s.release = rel.into();
    if link {
        s.install = "mkdir -p \"$B/usr/share\" \"$B/usr/lib/symlinktest\"\n\
                     echo symlinktest > \"$B/usr/lib/symlinktest/README\"\n\
                     ln -s ../lib/symlinktest \"$B/usr/share/symlinktest\""
            .into();
        s.files = "%defattr(-,root,root,-)\n/usr/lib/symlinktest\n/usr/share/symlinktest".into();
    } else {
        s.install = "mkdir -p \"$B/usr/share/symlinktest\"\n\
                     echo symlinktest > \"$B/usr/share/symlinktest/README\""
            .into();
        s.files = "%defattr(-,root,root,-)\n/usr/share/symlinktest".into();
    }
    s
}

/// `hello-script` 1.0: `/usr/bin/hello`, a shell text (no ELF colour),
/// and the directory `/zoot`.
pub fn hello_script() -> Spec {
    let mut s = Spec::new("hello-script", "1.0");
    s.install = "mkdir -p \"$B/usr/bin\" \"$B/zoot\"\n\
                 echo 'echo \"Hello world!\"' > \"$B/usr/bin/hello\""
        .into();
    s.files = "%defattr(-,root,root,-)\n/usr/bin/hello\n/zoot".into();
    s
}

/// `hello` 1.0 for `arch`: `/usr/local/bin/hello` (mode 0751, an ELF file
/// of the arch's colour), the directory `/usr/share/doc/hello-1.0` and
/// its `%doc` `FAQ`; empty `%pre`/`%post`/`%preun`/`%postun` run by
/// `/bin/sh`.
pub fn hello1(arch: &'static str) -> Spec {
    let mut s = Spec::new("hello", "1.0");
    s.arch = Some(arch);
    s.install = format!(
        "mkdir -p \"$B/usr/local/bin\" \"$B/usr/share/doc/hello-1.0\"\nF=\"$B/usr/local/bin/hello\"\n{}\n\
         chmod 0751 \"$F\"\necho 'hello FAQ' > \"$B/usr/share/doc/hello-1.0/FAQ\"",
        elf(arch == "x86_64", &format!("hello 1.0 for {arch}"))
    );
    s.files = "%defattr(-,root,root)\n/usr/local/bin/hello\n%dir /usr/share/doc/hello-1.0\n\
               %doc /usr/share/doc/hello-1.0/FAQ"
        .into();
    s.scripts = "%pre -p /bin/sh\n%post -p /bin/sh\n%preun -p /bin/sh\n%postun -p /bin/sh".into();
    s
}

/// `vattrtest` 1.0: the directory `/opt/vattrtest` and in it one file
/// per virtual attribute, named by it: `a` `%artifact`, `c` `%config`,
/// `cn` `%config(noreplace)`, `d` `%doc`, `g` `%ghost`, `l` `%license`,
/// `m` `%missingok`, `r` `%readme`.
pub fn vattrtest() -> Spec {
    let mut s = Spec::new("vattrtest", "1.0");
    s.install = "mkdir -p \"$B/opt/vattrtest\"\n\
                 for x in a c cn d g l m r; do echo $x > \"$B/opt/vattrtest/$x\"; done"
        .into();
    s.files = "%dir /opt/vattrtest\n%artifact /opt/vattrtest/a\n%config /opt/vattrtest/c\n\
               %config(noreplace) /opt/vattrtest/cn\n%doc /opt/vattrtest/d\n%ghost /opt/vattrtest/g\n\
               %license /opt/vattrtest/l\n%missingok /opt/vattrtest/m\n%readme /opt/vattrtest/r"
        .into();
    s
}

/// `verifyscript` 1.0: no files; a `<lua>` `%verifyscript` that fails
/// unless `/var/checkme` exists.
pub fn verifyscript() -> Spec {
    let mut s = Spec::new("verifyscript", "1.0");
    s.files = "%defattr(-,root,root)".into();
    s.scripts = "%verifyscript -p <lua>\nif not posix.access('/var/checkme', 'f') then\n  error('no /var/checkme')\nend".into();
    s
}

/// `hlbreak` `ver`-0: `/opt/file2`, and at version 1 `/opt/file1`, a
/// hardlink of it.
pub fn hlbreak(ver: &str) -> Spec {
    let mut s = Spec::new("hlbreak", ver);
    s.release = "0".into();
    s.install = "mkdir -p \"$B/opt\"\necho content > \"$B/opt/file2\"".into();
    s.files = "/opt/file2".into();
    if ver == "1" {
        s.install.push_str("\nln \"$B/opt/file2\" \"$B/opt/file1\"");
        s.files = "/opt/file1\n/opt/file2".into();
    }
    s
}

/// `capstest` 1.0: `/a/emptyCaps1` (`%caps(=)`), `/a/emptyCaps2`
/// (`%caps()`) and `/a/noCaps`, all mode 0777.
pub fn capstest() -> Spec {
    let mut s = Spec::new("capstest", "1.0");
    s.install =
        "mkdir -p \"$B/a\"\nfor f in emptyCaps1 emptyCaps2 noCaps; do echo x > \"$B/a/$f\"; done"
            .into();
    s.files = "%attr(0777,root,root) %caps(=) /a/emptyCaps1\n\
               %attr(0777,root,root) %caps() /a/emptyCaps2\n\
               %attr(0777,root,root) /a/noCaps"
        .into();
    s
}

/// `scriptfail` `ver`: no files; `%pre`, `%preun`, `%pretrans`, `%post`,
/// `%postun`, `%posttrans`, each `-e` (its body expanded at install
/// time): `exit %{exitPHASE}`, 0 unless the install defines it.
pub fn scriptfail(ver: &str) -> Spec {
    let mut s = Spec::new("scriptfail", ver);
    s.files = "%defattr(-,root,root,-)".into();
    s.scripts = ["pre", "preun", "pretrans", "post", "postun", "posttrans"]
        .iter()
        .map(|p| format!("%{p} -e\n%%{{!?exit{p}:%%global exit{p} 0}}\nexit %%{{exit{p}}}\n"))
        .collect();
    s
}

/// `scripts` 1.0-`rel`: no files; every install/erase scriptlet and a
/// `%verifyscript`, each echoing `scripts-1.0-REL PHASE $*`.
pub fn scripts(rel: &str) -> Spec {
    let mut s = Spec::new("scripts", "1.0");
    s.release = rel.into();
    s.files = "%defattr(-,root,root,-)".into();
    s.scripts = [
        ("pretrans", "PRETRANS"),
        ("pre", "PRE"),
        ("post", "POST"),
        ("preun", "PREUN"),
        ("postun", "POSTUN"),
        ("posttrans", "POSTTRANS"),
        ("verifyscript", "VERIFY"),
    ]
    .iter()
    .map(|(p, w)| format!("%{p}\necho scripts-1.0-{rel} {w} $*\n"))
    .collect();
    s
}

/// `triggers` 1.0-`rel`: no files; `%triggerprein`, `%triggerin`,
/// `%triggerun`, `%triggerpostun` on `on`, each echoing
/// `triggers-1.0-REL KIND $*`.
pub fn triggers(rel: &str, on: &str) -> Spec {
    let mut s = Spec::new("triggers", "1.0");
    s.release = rel.into();
    s.files = "%defattr(-,root,root,-)".into();
    s.scripts = [
        ("triggerprein", "TRIGGERPREIN"),
        ("triggerin", "TRIGGERIN"),
        ("triggerun", "TRIGGERUN"),
        ("triggerpostun", "TRIGGERPOSTUN"),
    ]
    .iter()
    .map(|(p, w)| format!("%{p} -- {on}\necho triggers-1.0-{rel} {w} $*\n"))
    .collect();
    s
}

/// `filetriggers` 1.0: no files; shell file triggers of every kind on
/// `/usr/bin` (echoing their arguments) and `/foo` (not), each printing
/// its kind and the paths it is given on stdin, and a `<lua>`
/// `%filetriggerin` on each, printing the paths `rpm.next_file` gives.
pub fn filetriggers() -> Spec {
    let mut s = Spec::new("filetriggers", "1.0");
    let mut t = String::new();
    for (dir, args) in [("/usr/bin", " $*"), ("/foo", "")] {
        let colon = if args.is_empty() { ":" } else { ": " };
        for kind in [
            "filetriggerin",
            "filetriggerun",
            "filetriggerpostun",
            "transfiletriggerin",
            "transfiletriggerun",
            "transfiletriggerpostun",
        ] {
            t.push_str(&format!(
                "%{kind} -- {dir}\necho \"{kind}({dir}*){colon}{}\"\ncat\necho\n\n",
                args.trim_start()
            ));
        }
        let arg = if args.is_empty() { "" } else { "..arg[2]" };
        t.push_str(&format!(
            "%filetriggerin -p <lua> -- {dir}\nprint(\"filetriggerin({dir}*)<lua>:{}\"{arg})\n\
             local f = rpm.next_file()\nwhile f do\n  print(f)\n  f = rpm.next_file()\nend\n\
             print(\"\")\nio.flush()\n\n",
            if args.is_empty() { "" } else { " " }
        ));
    }
    s.scripts = t;
    s
}

/// `parallel` `ver`: `/opt/parallel/VER/{mydir,yourdir}/{1,2,3,4}`.
pub fn parallel(ver: &str) -> Spec {
    let mut s = Spec::new("parallel", ver);
    s.install = format!(
        "for d in mydir yourdir; do mkdir -p \"$B/opt/parallel/{ver}/$d\"; \
         for f in 1 2 3 4; do echo $f > \"$B/opt/parallel/{ver}/$d/$f\"; done; done"
    );
    s.files = "/opt/parallel".into();
    s
}

/// `parallel-trigger` `ver`: no files; file triggers on `/opt/parallel`
/// (`%filetriggerin`, `%filetriggerpostun` and the three transaction
/// ones), each echoing its kind and arguments and counting the paths it
/// is given.
pub fn parallel_trigger(ver: &str) -> Spec {
    let mut s = Spec::new("parallel-trigger", ver);
    s.scripts = [
        "transfiletriggerin",
        "transfiletriggerun",
        "transfiletriggerpostun",
        "filetriggerin",
        "filetriggerpostun",
    ]
    .iter()
    .map(|k| format!("%{k} -- /opt/parallel\necho %%{k}: $*\ncat | wc -l\n\n"))
    .collect();
    s
}
