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
/// file of the arch's colour (different bytes per arch), and three `%doc`
/// files in `/usr/share/doc/hello-2.0` (the same in both).
pub fn hello(arch: &'static str) -> Spec {
    let mut s = Spec::new("hello", "2.0");
    s.arch = Some(arch);
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
