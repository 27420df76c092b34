//! The install, upgrade, erase, config, replacement, conflict, order,
//! verify and scriptlet scenarios of rpm 4.18's test suite (`tests/*.at` at `rpm-4.18.0-release`), one per
//! `AT_CHECK`, as steps on twin roots. Ids are `FILE-SETUP.CHECK`: the
//! ordinal of the `AT_SETUP` in its file and of the `AT_CHECK` in it.
//!
//! Where the scenario passes `--ignoreos`/`--ignorearch` (its packages are
//! prebuilt for x86_64 and the suite runs anywhere) they are left out: the
//! packages here are built for this host's arches. `--define
//! "_transaction_color 3"` and `--define "_prefer_color 2"` are rpm's
//! defaults on x86_64 and are left out too; every other option is passed
//! as the scenario passes it.

use super::harness::{Scenario, Step, Want};
use super::specs::{self, Cfg, Spec, Ty};

fn s(x: &str) -> String {
    x.to_string()
}

fn v(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|x| s(x)).collect()
}

/// `rpm ARGS PKGS` / `cowkit install`, what rpm must do.
fn rpm_w(args: &[&str], pkgs: &[&str], want: Want) -> Step {
    Step::Rpm {
        args: v(args),
        pkgs: v(pkgs),
        env: vec![],
        want,
    }
}

/// What rpm must do: its exit status, its stdout (compared with
/// cowkit's), text its stderr holds.
fn w(status: Option<i32>, stdout: Option<&str>, stderr: Option<&str>) -> Want {
    Want {
        status,
        stdout: stdout.map(s),
        stderr: stderr.map(s),
        own_stdout: false,
        unheld: false,
    }
}

/// `rpm -e ARGS` on both roots, what rpm must do.
fn e_w(args: &[&str], want: Want) -> Step {
    Step::Erase {
        args: v(args),
        want,
    }
}

/// A query whose output and exit status rpm's root must give.
fn query_st(args: &[&str], want: Option<&str>, status: i32) -> Step {
    Step::Query {
        args: v(args),
        want: want.map(s),
        status: Some(status),
    }
}

/// `rpm ARGS PKGS` / `cowkit install`.
fn rpm(args: &[&str], pkgs: &[&str]) -> Step {
    Step::Rpm {
        args: v(args),
        pkgs: v(pkgs),
        env: vec![],
        want: Want::default(),
    }
}

fn u(pkgs: &[&str]) -> Step {
    rpm(&["-U"], pkgs)
}

fn e(args: &[&str]) -> Step {
    Step::Erase {
        args: v(args),
        want: Want::default(),
    }
}

fn sh(cmd: &str) -> Step {
    Step::Sh(s(cmd))
}

fn show(paths: &[&str], want: &str) -> Step {
    Step::Show {
        paths: v(paths),
        want: Some(s(want)),
    }
}

fn query(args: &[&str], want: Option<&str>) -> Step {
    Step::Query {
        args: v(args),
        want: want.map(s),
        status: None,
    }
}

fn sc(
    id: &str,
    file: &'static str,
    title: &'static str,
    what: &str,
    pkgs: Vec<(&str, Spec)>,
    steps: Vec<Step>,
) -> Scenario {
    Scenario {
        id: s(id),
        file,
        title,
        what: s(what),
        pkgs: pkgs.into_iter().map(|(l, p)| (s(l), p)).collect(),
        steps,
    }
}

/// Every scenario.
pub fn all() -> Vec<Scenario> {
    let mut out = Vec::new();
    out.extend(config_files());
    out.extend(config_three());
    out.extend(replace());
    out.extend(rpmi());
    out.extend(rpme());
    out.extend(conflict());
    out.extend(order());
    out.extend(verify());
    out.extend(script());
    out
}

// ---------------------------------------------------------------------------
// rpmconfig.at (files) and rpmconfig2.at (symlinks): one matrix.

#[derive(Clone, Copy, PartialEq)]
enum Check {
    /// An admin's file is where the package's goes; install, erase.
    OverExisting,
    /// The admin's file is the package's content; install, erase.
    OverIdentical,
    EraseUnmodified,
    EraseModified,
    Upgrade,
    /// Upgrade with an unchanged file: rpm keeps the file (its inode).
    UpgradeKeepsFile,
    /// Modified, then an upgrade whose file is unchanged.
    ModifiedUnchanged,
    /// Modified, then an upgrade whose file changed.
    ModifiedChanged,
    /// Modified to the new version's content, then upgraded.
    ModifiedToNew,
}

/// The matrix's groups: file, setup ordinal, title, version-dependent
/// content, flag, shared by two packages, checks.
type Group = (
    &'static str,
    u32,
    &'static str,
    bool,
    Cfg,
    bool,
    &'static [Check],
);

fn config_files() -> Vec<Scenario> {
    use Check::*;
    let groups: &[(bool, Group)] = &[
        (
            false,
            (
                "rpmconfig.at",
                1,
                "config file install/upgrade/erase",
                false,
                Cfg::Plain,
                false,
                &[
                    OverExisting,
                    OverIdentical,
                    EraseUnmodified,
                    EraseModified,
                    Upgrade,
                    UpgradeKeepsFile,
                    ModifiedUnchanged,
                ],
            ),
        ),
        (
            false,
            (
                "rpmconfig.at",
                2,
                "config(noreplace) file install/upgrade/erase",
                false,
                Cfg::NoReplace,
                false,
                &[OverExisting, EraseModified],
            ),
        ),
        (
            false,
            (
                "rpmconfig.at",
                3,
                "upgrade changing config",
                true,
                Cfg::Plain,
                false,
                &[Upgrade, ModifiedChanged, ModifiedToNew],
            ),
        ),
        (
            false,
            (
                "rpmconfig.at",
                4,
                "upgrade changing config(noreplace)",
                false,
                Cfg::NoReplace,
                false,
                &[Upgrade, ModifiedUnchanged],
            ),
        ),
        (
            false,
            (
                "rpmconfig.at",
                5,
                "upgrade changing config(noreplace)",
                true,
                Cfg::NoReplace,
                false,
                &[Upgrade, ModifiedChanged, ModifiedToNew],
            ),
        ),
        (
            false,
            (
                "rpmconfig.at",
                6,
                "upgrade shared config",
                false,
                Cfg::Plain,
                true,
                &[Upgrade, ModifiedUnchanged],
            ),
        ),
        (
            false,
            (
                "rpmconfig.at",
                7,
                "upgrade changing shared config",
                true,
                Cfg::Plain,
                true,
                &[Upgrade, ModifiedChanged, ModifiedToNew],
            ),
        ),
        (
            false,
            (
                "rpmconfig.at",
                8,
                "upgrade shared config(noreplace)",
                true,
                Cfg::NoReplace,
                true,
                &[ModifiedChanged, ModifiedToNew],
            ),
        ),
        (
            true,
            (
                "rpmconfig2.at",
                1,
                "config symlinks",
                false,
                Cfg::Plain,
                false,
                &[
                    OverExisting,
                    OverIdentical,
                    EraseUnmodified,
                    EraseModified,
                    Upgrade,
                    UpgradeKeepsFile,
                    ModifiedUnchanged,
                ],
            ),
        ),
        (
            true,
            (
                "rpmconfig2.at",
                2,
                "changing config symlinks",
                true,
                Cfg::Plain,
                false,
                &[Upgrade, ModifiedChanged, ModifiedToNew],
            ),
        ),
        (
            true,
            (
                "rpmconfig2.at",
                3,
                "upgrade unchanged config(noreplace) links",
                false,
                Cfg::NoReplace,
                false,
                &[Upgrade, ModifiedUnchanged],
            ),
        ),
        (
            true,
            (
                "rpmconfig2.at",
                4,
                "upgrade changing config(noreplace) links",
                true,
                Cfg::NoReplace,
                false,
                &[Upgrade, ModifiedChanged, ModifiedToNew],
            ),
        ),
        (
            true,
            (
                "rpmconfig2.at",
                5,
                "upgrade unchanged shared config links",
                false,
                Cfg::Plain,
                true,
                &[Upgrade, ModifiedUnchanged],
            ),
        ),
        (
            true,
            (
                "rpmconfig2.at",
                6,
                "upgrade changing shared config links",
                true,
                Cfg::Plain,
                true,
                &[Upgrade, ModifiedChanged, ModifiedToNew],
            ),
        ),
        (
            true,
            (
                "rpmconfig2.at",
                7,
                "upgrade changing shared config(noreplace) links",
                true,
                Cfg::NoReplace,
                true,
                &[ModifiedChanged, ModifiedToNew],
            ),
        ),
    ];
    let mut out = Vec::new();
    for &(link, (file, setup, title, changing, cfg, shared, checks)) in groups {
        for (n, &check) in checks.iter().enumerate() {
            out.push(config_check(
                link,
                file,
                setup,
                n as u32 + 1,
                title,
                changing,
                cfg,
                shared,
                check,
            ));
        }
    }
    out.push(ghost_config());
    out
}

#[expect(clippy::too_many_arguments, reason = "one row of the matrix")]
fn config_check(
    link: bool,
    file: &'static str,
    setup: u32,
    n: u32,
    title: &'static str,
    changing: bool,
    cfg: Cfg,
    shared: bool,
    check: Check,
) -> Scenario {
    use Check::*;
    let data = |ver: &str| {
        if changing {
            format!("foo-{ver}")
        } else {
            s("foo")
        }
    };
    let (d1, d2) = (data("1.0"), data("2.0"));
    let ty = |d: &str| -> Ty<'static> {
        let d: &'static str = Box::leak(d.to_string().into_boxed_str());
        if link {
            Ty::Link(d)
        } else {
            Ty::File(d)
        }
    };
    let subs: &[Option<&str>] = if shared {
        &[Some("A"), Some("B")]
    } else {
        &[None]
    };
    let mut pkgs = Vec::new();
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for sub in subs {
        let l1 = format!("{}1", sub.unwrap_or(""));
        let l2 = format!("{}2", sub.unwrap_or(""));
        pkgs.push((l1.clone(), specs::configtest(*sub, "1.0", ty(&d1), cfg, "")));
        pkgs.push((l2.clone(), specs::configtest(*sub, "2.0", ty(&d2), cfg, "")));
        one.push(l1);
        two.push(l2);
    }
    let names: Vec<String> = pkgs
        .iter()
        .map(|(_, p)| p.name.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let one: Vec<&str> = one.iter().map(String::as_str).collect();
    let two: Vec<&str> = two.iter().map(String::as_str).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    // An admin's edit, and what `show` says of a value.
    let put = |x: &str| {
        if link {
            sh(&format!("ln -sfn '{x}' etc/my.conf"))
        } else {
            sh(&format!("echo '{x}' > etc/my.conf"))
        }
    };
    let is = |suffix: &str, x: &str| {
        if link {
            format!("etc/my.conf{suffix}->{x}")
        } else {
            format!("etc/my.conf{suffix}={x}")
        }
    };
    let cf = &["etc/my.conf"][..];
    let noreplace = cfg == Cfg::NoReplace;
    let (what, steps) = match check {
        OverExisting => {
            let (after_install, after_erase) = if noreplace {
                (
                    format!("{} {}", is("", "otherstuff"), is(".rpmnew", &d1)),
                    format!("{} {}", is(".rpmnew", &d1), is(".rpmsave", "otherstuff")),
                )
            } else {
                (
                    format!("{} {}", is("", &d1), is(".rpmorig", "otherstuff")),
                    is(".rpmorig", "otherstuff"),
                )
            };
            (
                "install over an existing different config, erase",
                vec![sh("mkdir -p etc"), put("otherstuff"), u(&one), show(cf, &after_install), e(&names), show(cf, &after_erase)],
            )
        }
        OverIdentical => (
            "install over an existing identical config, erase",
            vec![sh("mkdir -p etc"), put(&d1), u(&one), show(cf, &is("", &d1)), e(&names), show(cf, "")],
        ),
        EraseUnmodified => (
            "erase an unmodified config",
            vec![u(&one), show(cf, &is("", &d1)), e(&names), show(cf, "")],
        ),
        EraseModified => (
            "erase a modified config",
            vec![u(&one), put("otherstuff"), e(&names), show(cf, &is(".rpmsave", "otherstuff"))],
        ),
        Upgrade => (
            "upgrade an unmodified config",
            vec![u(&one), show(cf, &is("", &d1)), u(&two), show(cf, &is("", &d2))],
        ),
        UpgradeKeepsFile => (
            "upgrade an unchanged config: the file is kept, not rewritten",
            vec![
                u(&one),
                sh("stat -c %i etc/my.conf > ../$(basename \"$PWD\").ino"),
                u(&two),
                Step::Show { paths: v(&["etc/my.conf"]), want: Some(is("", &d2)) },
                out_step(
                    "[ \"$(stat -c %i etc/my.conf)\" = \"$(cat ../$(basename \"$PWD\").ino)\" ] && echo kept || echo rewritten",
                    "kept",
                ),
            ],
        ),
        ModifiedUnchanged => (
            "upgrade a modified config, unchanged in the package",
            vec![u(&one), put("otherstuff"), u(&two), show(cf, &is("", "otherstuff"))],
        ),
        ModifiedChanged => (
            "upgrade a modified config, changed in the package",
            vec![
                u(&one),
                put("otherstuff"),
                u(&two),
                show(
                    cf,
                    &if noreplace {
                        format!("{} {}", is("", "otherstuff"), is(".rpmnew", &d2))
                    } else {
                        format!("{} {}", is("", &d2), is(".rpmsave", "otherstuff"))
                    },
                ),
            ],
        ),
        ModifiedToNew => (
            "upgrade a config modified to the new version's content",
            vec![u(&one), put(&d2), u(&two), show(cf, &is("", &d2))],
        ),
    };
    sc(
        &format!("{}-{setup}.{n}", file.trim_end_matches(".at")),
        file,
        title,
        what,
        pkgs.iter().map(|(l, p)| (l.as_str(), p.clone())).collect(),
        steps,
    )
}

/// A shell command run in both roots whose output is compared (`want`:
/// rpm's).
fn out_step(cmd: &str, want: &str) -> Step {
    Step::Out {
        cmd: s(cmd),
        want: Some(s(want)),
    }
}

fn ghost_config() -> Scenario {
    let p = |ver| specs::configtest(None, ver, Ty::File("buster"), Cfg::Plain, "%ghost");
    let cf = &["etc/my.conf"][..];
    sc(
        "rpmconfig-9.1",
        "rpmconfig.at",
        "ghost config",
        "a %ghost %config: an existing file survives install and erase; one made after install survives upgrade and erase",
        vec![("1", p("1.0")), ("2", p("2.0"))],
        vec![
            show(cf, ""),
            sh("mkdir -p etc && echo keaton > etc/my.conf"),
            u(&["1"]),
            show(cf, "etc/my.conf=keaton"),
            e(&["configtest"]),
            show(cf, "etc/my.conf=keaton"),
            sh("rm -f etc/my.conf"),
            u(&["1"]),
            show(cf, ""),
            sh("echo buster > etc/my.conf"),
            u(&["2"]),
            show(cf, "etc/my.conf=buster"),
            e(&["configtest"]),
            show(cf, "etc/my.conf=buster"),
        ],
    )
}

// ---------------------------------------------------------------------------
// rpmconfig3.at: a config file whose type or flag changes.

fn config_three() -> Vec<Scenario> {
    let file = "rpmconfig3.at";
    let cf = &["etc/my.conf"][..];
    let c = |ver, ty, cfg| specs::configtest(None, ver, ty, cfg, "");
    let to_noconfig = || {
        vec![
            ("1", c("1.0", Ty::File("foo"), Cfg::Plain)),
            ("2", c("2.0", Ty::File("bar"), Cfg::No)),
        ]
    };
    let to_link = || {
        vec![
            ("1", c("1.0", Ty::File("foo"), Cfg::Plain)),
            ("2", c("2.0", Ty::Link("bar"), Cfg::Plain)),
        ]
    };
    let to_dir = || {
        vec![
            ("1", c("1.0", Ty::File("foo"), Cfg::Plain)),
            ("2", c("2.0", Ty::Dir, Cfg::Plain)),
        ]
    };
    let back = || rpm(&["-U", "--oldpackage"], &["1"]);
    let t1 = "upgrade config to/from non-config";
    let t2 = "upgrade config to/from config link";
    vec![
        sc(
            "rpmconfig3-1.1",
            file,
            t1,
            "unmodified config becomes a non-config and back",
            to_noconfig(),
            vec![
                u(&["1"]),
                show(cf, "etc/my.conf=foo"),
                u(&["2"]),
                show(cf, "etc/my.conf=bar"),
                back(),
                show(cf, "etc/my.conf=foo"),
            ],
        ),
        sc(
            "rpmconfig3-1.2",
            file,
            t1,
            "modified config becomes a non-config (saved) and back",
            to_noconfig(),
            vec![
                u(&["1"]),
                sh("echo otherstuff > etc/my.conf"),
                u(&["2"]),
                show(cf, "etc/my.conf=bar etc/my.conf.rpmsave=otherstuff"),
                back(),
                show(cf, "etc/my.conf=foo etc/my.conf.rpmsave=otherstuff"),
            ],
        ),
        sc(
            "rpmconfig3-1.3",
            file,
            t1,
            "config modified to the non-config's content, and back",
            to_noconfig(),
            vec![
                u(&["1"]),
                sh("echo bar > etc/my.conf"),
                u(&["2"]),
                show(cf, "etc/my.conf=bar"),
                back(),
                show(cf, "etc/my.conf=foo"),
            ],
        ),
        sc(
            "rpmconfig3-2.1",
            file,
            t2,
            "unmodified config file becomes a config symlink and back",
            to_link(),
            vec![
                u(&["1"]),
                u(&["2"]),
                show(cf, "etc/my.conf->bar"),
                back(),
                show(cf, "etc/my.conf=foo"),
            ],
        ),
        sc(
            "rpmconfig3-2.2",
            file,
            t2,
            "modified config file becomes a config symlink",
            to_link(),
            vec![
                u(&["1"]),
                sh("echo otherstuff > etc/my.conf"),
                u(&["2"]),
                show(cf, "etc/my.conf->bar etc/my.conf.rpmsave=otherstuff"),
            ],
        ),
        sc(
            "rpmconfig3-3.1",
            file,
            "upgrade modified config link to config",
            "modified config symlink becomes a config file",
            vec![
                ("1", c("1.0", Ty::Link("foo"), Cfg::Plain)),
                ("2", c("2.0", Ty::File("bar"), Cfg::Plain)),
            ],
            vec![
                u(&["1"]),
                sh("ln -sfn otherstuff etc/my.conf"),
                u(&["2"]),
                show(cf, "etc/my.conf=bar etc/my.conf.rpmsave->otherstuff"),
            ],
        ),
        sc(
            "rpmconfig3-4.1",
            file,
            "upgrade config to directory",
            "unmodified config file becomes a directory",
            to_dir(),
            vec![u(&["1"]), u(&["2"]), show(cf, "etc/my.conf/")],
        ),
        sc(
            "rpmconfig3-4.2",
            file,
            "upgrade config to directory",
            "modified config file becomes a directory",
            to_dir(),
            vec![
                u(&["1"]),
                sh("echo otherstuff > etc/my.conf"),
                u(&["2"]),
                show(cf, "etc/my.conf/ etc/my.conf.rpmsave=otherstuff"),
            ],
        ),
    ]
}

// ---------------------------------------------------------------------------
// rpmreplace.at: a file's type changes on upgrade.

fn replace() -> Vec<Scenario> {
    let file = "rpmreplace.at";
    let tf = &["opt/foo"][..];
    let root = ("root", "root");
    let p = |a: Ty<'static>, b: Ty<'static>| {
        vec![
            ("1", specs::replacetest("1.0", a, root, None)),
            ("2", specs::replacetest("2.0", b, root, None)),
        ]
    };
    let there_and_back = |first: &str, second: &str| {
        vec![
            u(&["1"]),
            show(tf, first),
            u(&["2"]),
            show(tf, second),
            rpm(&["-U", "--oldpackage"], &["1"]),
            show(tf, first),
        ]
    };
    let up =
        |first: &str, second: &str| vec![u(&["1"]), show(tf, first), u(&["2"]), show(tf, second)];
    let datadir = |d: &'static str| Ty::DataDir(d);
    vec![
        sc("rpmreplace-1.1", file, "upgrade to/from regular file", "file to file and back", p(Ty::File("foo"), Ty::File("bar")),
            there_and_back("opt/foo=foo", "opt/foo=bar")),
        sc("rpmreplace-2.1", file, "upgrade regular file to/from link", "file to broken link and back", p(Ty::File("foo"), Ty::Link("stuff")),
            there_and_back("opt/foo=foo", "opt/foo->stuff")),
        sc("rpmreplace-2.2", file, "upgrade regular file to/from link", "file to link and back (the scenario's second check, same packages)",
            p(Ty::File("foo"), Ty::Link("stuff")), there_and_back("opt/foo=foo", "opt/foo->stuff")),
        sc("rpmreplace-3.1", file, "upgrade broken link to broken link", "broken link to another", p(Ty::Link("stiff"), Ty::Link("stuff")),
            up("opt/foo->stiff", "opt/foo->stuff")),
        sc("rpmreplace-4.1", file, "upgrade file link to file link", "link to a file, unchanged", p(Ty::Link("goo"), Ty::Link("goo")),
            up("opt/foo->goo", "opt/foo->goo")),
        sc("rpmreplace-5.1", file, "upgrade directory link to directory link", "link to a directory, unchanged", p(Ty::Link("zoo"), Ty::Link("zoo")),
            up("opt/foo->zoo", "opt/foo->zoo")),
        sc("rpmreplace-6.1", file, "upgrade regular file to directory", "file becomes a directory", p(Ty::File("foo"), Ty::Dir),
            up("opt/foo=foo", "opt/foo/")),
        sc("rpmreplace-7.1", file, "upgrade broken link to directory", "broken link becomes a directory", p(Ty::Link("other"), Ty::Dir),
            up("opt/foo->other", "opt/foo/")),
        sc("rpmreplace-8.1", file, "upgrade file link to directory", "link to a file becomes a directory", p(Ty::Link("goo"), Ty::Dir),
            up("opt/foo->goo", "opt/foo/")),
        sc("rpmreplace-9.1", file, "upgrade directory link to directory", "link to a directory becomes a directory", p(Ty::Link("zoo"), Ty::Dir),
            vec![u(&["1"]), show(tf, "opt/foo->zoo"), u(&["2"])]),
        sc("rpmreplace-10.1", file, "upgrade empty directory to empty directory", "directory stays", p(Ty::Dir, Ty::Dir),
            up("opt/foo/", "opt/foo/")),
        sc("rpmreplace-11.1", file, "upgrade empty directory to regular file", "directory becomes a file", p(Ty::Dir, Ty::File("woot")),
            vec![u(&["1"]), show(tf, "opt/foo/"), u(&["2"])]),
        sc("rpmreplace-12.1", file, "upgrade locally symlinked directory",
            "the package's directory is the admin's symlink to a directory of the same owner", p(datadir("README1"), datadir("README2")),
            vec![sh("mkdir -p opt/f00f && ln -s f00f opt/foo"), u(&["1"]), show(tf, "opt/foo->f00f"), u(&["2"]), show(tf, "opt/foo->f00f")]),
        sc("rpmreplace-13.1", file, "upgrade invalid locally symlinked directory",
            "the package's directory is the admin's symlink of another owner (65534) than the directory's",
            p(datadir("README1"), datadir("README2")),
            vec![sh("mkdir -p opt/f00f && ln -s f00f opt/foo && chown -h 65534:65534 opt/foo"), u(&["1"]), u(&["2"])]),
        sc("rpmreplace-14.1", file, "upgrade empty directory to broken link", "directory becomes a broken link", p(Ty::Dir, Ty::Link("woot")),
            vec![u(&["1"]), show(tf, "opt/foo/"), u(&["2"])]),
        sc("rpmreplace-14.2", file, "upgrade empty directory to broken link",
            "directory becomes a link (the scenario's second check, same packages)", p(Ty::Dir, Ty::Link("woot")),
            vec![u(&["1"]), show(tf, "opt/foo/"), u(&["2"])]),
        sc("rpmreplace-15.1", file, "upgrade empty directory to file link", "directory removed by the admin becomes a link",
            p(Ty::Dir, Ty::Link("goo")), vec![u(&["1"]), sh("rmdir opt/foo"), u(&["2"]), show(tf, "opt/foo->goo")]),
        sc("rpmreplace-15.2", file, "upgrade empty directory to file link", "directory the admin replaced by the link becomes the link",
            p(Ty::Dir, Ty::Link("goo")), vec![u(&["1"]), sh("rmdir opt/foo && ln -sf goo opt/foo"), u(&["2"]), show(tf, "opt/foo->goo")]),
        sc("rpmreplace-16.1", file, "upgrade empty directory to file link with pretrans",
            "directory becomes a link, a <lua> %pretrans removing the directory",
            vec![
                ("1", specs::replacetest("1.0", Ty::Dir, root, None)),
                ("2", specs::replacetest("2.0", Ty::Link("goo"), root, Some("posix.rmdir('/opt/foo')"))),
            ],
            vec![u(&["1"]), rpm(&["-U", "--test"], &["2"]), u(&["2"]), show(tf, "opt/foo->goo")]),
    ]
}

// ---------------------------------------------------------------------------
// rpmi.at

fn rpmi() -> Vec<Scenario> {
    let file = "rpmi.at";
    let mut out = Vec::new();
    let mut foo_pkg = Spec::new("foo", "1.0");
    foo_pkg.install = s("mkdir -p \"$B/usr/share/foo\"\necho foo > \"$B/usr/share/foo/foo\"");
    foo_pkg.files = s("/usr/share/foo");
    let time_env = |t: &str| vec![(s("SOURCE_DATE_EPOCH"), s(t))];
    out.push(sc(
        "rpmi-16.1",
        file,
        "rpm -i <overridden time>",
        "SOURCE_DATE_EPOCH is the install time",
        vec![("foo", foo_pkg.clone()), ("hello", specs::hello("x86_64"))],
        vec![
            rpm(&["-i", "--nodeps"], &["foo"]),
            Step::Rpm {
                args: v(&["-i", "--nodeps"]),
                pkgs: v(&["hello"]),
                env: time_env("97445"),
                want: Want::default(),
            },
            query(&["-q", "--tid", "97445"], Some("hello-2.0-1.x86_64")),
            query(&["-q", "--qf", "%{INSTALLTIME}", "hello"], Some("97445")),
        ],
    ));
    out.push(sc(
        "rpmi-17.1",
        file,
        "rpm -i <overridden time keeps ticking>",
        "SOURCE_DATE_EPOCH, one second per package",
        vec![("foo", foo_pkg.clone()), ("hello", specs::hello("x86_64"))],
        vec![
            Step::Rpm {
                args: v(&["-i", "--nodeps"]),
                pkgs: v(&["foo", "hello"]),
                env: time_env("1445412535"),
                want: Want::default(),
            },
            query(&["-q", "--tid", "1445412535"], None),
            query(&["-qa", "--qf", "%{NAME} %{INSTALLTIME}\\n"], None),
        ],
    ));
    out.push(sc(
        "rpmi-18.1",
        file,
        "rpm -i --nodb",
        "install without the database",
        vec![("h", specs::hlinktest(true))],
        vec![rpm(&["-U", "--nodb"], &["h"]), query(&["-qa"], Some(""))],
    ));
    out.push(sc(
        "rpmi-19.1",
        file,
        "rpm -i --justdb",
        "register without placing files",
        vec![("h", specs::hlinktest(true))],
        vec![
            sh("mkdir foo"),
            rpm(&["-U", "--justdb"], &["h"]),
            query(&["-qa"], Some("hlinktest-1.0-1.noarch")),
        ],
    ));
    out.push(sc(
        "rpmi-22.1",
        file,
        "rpm -i <nonexistent file>",
        "a package file that does not exist",
        vec![],
        vec![Step::Rpm {
            args: v(&["-i"]),
            pkgs: v(&["root:no_such_file"]),
            env: vec![],
            want: Want::default(),
        }],
    ));
    out.push(sc(
        "rpmi-24.1",
        file,
        "rpm -i <garbage text file",
        "a text file naming packages that do not exist",
        vec![],
        vec![
            sh("printf 'no_such.file\\nnot_pkg.rpm\\n' > not_an.rpm"),
            Step::Rpm {
                args: v(&["-Uv"]),
                pkgs: v(&["root:not_an.rpm"]),
                env: vec![],
                want: Want::default(),
            },
        ],
    ));

    // rpm upgrade/downgrade
    let vt = || {
        vec![
            ("1", specs::versiontest("1.0")),
            ("2", specs::versiontest("2.0")),
        ]
    };
    let q = |want: &str| query(&["-q", "versiontest"], Some(want));
    let (one, two) = ("versiontest-1.0-1.noarch", "versiontest-2.0-1.noarch");
    let ud = "rpm upgrade/downgrade";
    let rows: Vec<(&str, Vec<Step>)> = vec![
        ("normal upgrade", vec![u(&["1"]), u(&["2"]), q(two)]),
        (
            "upgrade to an older version fails",
            vec![u(&["2"]), u(&["1"]), q(two)],
        ),
        (
            "downgrade with --oldpackage",
            vec![u(&["2"]), rpm(&["-U", "--oldpackage"], &["1"]), q(one)],
        ),
        (
            "two versions in one -U, older first",
            vec![rpm(&["-Uv"], &["1", "2"]), q(two)],
        ),
        (
            "two versions in one -U, newer first",
            vec![rpm(&["-Uv"], &["2", "1"]), q(two)],
        ),
        (
            "two versions in one -i",
            vec![rpm(&["-i"], &["1", "2"]), q(&format!("{two}\n{one}"))],
        ),
        (
            "one version twice in one -i",
            vec![rpm(&["-i"], &["1", "1"]), q(one)],
        ),
        ("freshen", vec![u(&["1"]), rpm(&["-F"], &["2"]), q(two)]),
        (
            "freshen, not installed",
            vec![
                rpm(&["-F"], &["2"]),
                q("package versiontest is not installed"),
            ],
        ),
        (
            "freshen with an older version",
            vec![u(&["2"]), rpm(&["-F"], &["1"]), q(two)],
        ),
        (
            "freshen --oldpackage",
            vec![u(&["2"]), rpm(&["-F", "--oldpackage"], &["1"]), q(one)],
        ),
        (
            "freshen --oldpackage, same version",
            vec![u(&["2"]), rpm(&["-F", "--oldpackage"], &["2"]), q(two)],
        ),
    ];
    for (n, (what, steps)) in rows.into_iter().enumerate() {
        out.push(sc(
            &format!("rpmi-25.{}", n + 1),
            file,
            ud,
            what,
            vt(),
            steps,
        ));
    }
    let deps = || {
        vec![
            (
                "one",
                specs::deptest("one", "Obsoletes: deptest-two <= 1.0"),
            ),
            ("two", specs::deptest("two", "")),
        ]
    };
    out.push(sc(
        "rpmi-26.1",
        file,
        "rpm -U obsoleted packages",
        "a package and the one it obsoletes, obsoleted first",
        deps(),
        vec![
            rpm(&["-Uv"], &["two", "one"]),
            query(&["-qa"], Some("deptest-one-1.0-1.noarch")),
        ],
    ));
    out.push(sc(
        "rpmi-26.2",
        file,
        "rpm -U obsoleted packages",
        "a package and the one it obsoletes, obsoleter first",
        deps(),
        vec![
            rpm(&["-Uv"], &["one", "two"]),
            query(&["-qa"], Some("deptest-one-1.0-1.noarch")),
        ],
    ));
    let mut hs = Spec::new("hello-script", "1.0");
    hs.install =
        s("mkdir -p \"$B/usr/share/hello-script\"\necho hi > \"$B/usr/share/hello-script/hi\"");
    hs.files = s("/usr/share/hello-script");
    hs.scripts = s("%post\necho post\n%preun\necho preun");
    out.push(sc(
        "rpmi-27.1",
        file,
        "rpm -U with invalid --relocate",
        "--relocate of a package that is not relocatable",
        vec![("h", hs.clone())],
        vec![rpm(&["-U", "--test", "--relocate", "/usr=/opt"], &["h"])],
    ));
    out.push(sc(
        "rpmi-28.1",
        file,
        "rpm -U --badreloc with invalid --relocate",
        "--badreloc --relocate of a package that is not relocatable",
        vec![("h", hs)],
        vec![rpm(
            &["-U", "--test", "--badreloc", "--relocate", "/usr=/opt"],
            &["h"],
        )],
    ));
    out.push(sc("rpmi-30.1", file, "rpm -i with/without --excludedocs", "--excludedocs, erase, then with the docs",
        vec![("d", specs::testdoc())],
        vec![
            rpm(&["-i", "--excludedocs"], &["d"]),
            show(&["usr/share/doc/testdoc", "usr/share/testdoc/nodoc"], "usr/share/testdoc/nodoc=nodoc"),
            e(&["testdoc"]),
            rpm(&["-i"], &["d"]),
            show(&["usr/share/doc/testdoc/documentation", "usr/share/doc/testdoc/examples/example"],
                "usr/share/doc/testdoc/documentation1=doc1 usr/share/doc/testdoc/documentation2=doc2 \
                 usr/share/doc/testdoc/examples/example1=example1 usr/share/doc/testdoc/examples/example2=example2"),
            e(&["testdoc"]),
        ]));
    for (n, w) in ["0", "1"].iter().enumerate() {
        out.push(sc(
            &format!("rpmi-32.{}", n + 1),
            file,
            "rpm -U <suicidal>",
            &format!(
                "a <lua> %pre removing the package's own file, upgraded, _minimize_writes {w}"
            ),
            vec![("1", specs::suicidal("1")), ("2", specs::suicidal("2"))],
            vec![
                rpm(
                    &["-U", "--define", &format!("_minimize_writes {w}")],
                    &["1"],
                ),
                rpm(
                    &["-U", "--define", &format!("_minimize_writes {w}")],
                    &["2"],
                ),
                show(&["opt/foot"], "opt/foot=shoot"),
            ],
        ));
    }
    let hl = || vec![("h", specs::hlinktest(true))];
    out.push(sc(
        "rpmi-33.4",
        file,
        "rpm -i hardlinks",
        "hardlinks installed as hardlinks, erased",
        hl(),
        vec![
            rpm(&["-i"], &["h"]),
            out_step("ls -i foo/hello* | awk '{print $1}' | sort -u | wc -l", "1"),
            e(&["hlinktest"]),
        ],
    ));
    for (n, ex) in [
        &["/foo/zzzz"][..],
        &["/foo/aaaa"],
        &["/foo/aaaa", "/foo/zzzz"],
        &["/foo/hello-foo"],
    ]
    .iter()
    .enumerate()
    {
        let mut args = vec!["-i"];
        let owned: Vec<String> = ex.iter().map(|p| format!("--excludepath={p}")).collect();
        args.extend(owned.iter().map(String::as_str));
        out.push(sc(
            &format!("rpmi-33.{}", n + 5),
            file,
            "rpm -i hardlinks",
            &format!("a hardlink group with {} excluded", ex.join(" and ")),
            hl(),
            vec![rpm(&args, &["h"]), e(&["hlinktest"])],
        ));
    }
    out.push(sc(
        "rpmi-34.1",
        file,
        "rpm -U filesystem",
        "a package owning `/`",
        vec![("fs", specs::fs())],
        vec![
            rpm(&["-U"], &["fs"]),
            query(&["-qf", "/"], Some("fs-1.0-1.noarch")),
        ],
    ));
    out
}

// ---------------------------------------------------------------------------
// rpme.at

fn rpme() -> Vec<Scenario> {
    let file = "rpme.at";
    let both = || {
        vec![
            ("x64", specs::hello("x86_64")),
            ("x32", specs::hello("i686")),
        ]
    };
    let nd = |pkgs: &[&str]| rpm(&["-U", "--nodeps"], pkgs);
    let mut out = vec![
        sc(
            "rpme-1.1",
            file,
            "rpm -e and verify files removed",
            "install, erase",
            vec![("x64", specs::hello("x86_64"))],
            vec![
                nd(&["x64"]),
                e(&["hello"]),
                show(&["usr/bin/hello", "usr/share/doc/hello-2.0"], ""),
            ],
        ),
        sc(
            "rpme-2.1",
            file,
            "rpm reinstall with shared files",
            "a multilib pair installed, then reinstalled",
            both(),
            vec![
                nd(&["x64", "x32"]),
                rpm(&["--reinstall", "--nodeps"], &["x64", "x32"]),
            ],
        ),
        sc(
            "rpme-3.1",
            file,
            "rpm -e and shared files removed 1.1",
            "x86_64 without docs, then i686, erase x86_64",
            both(),
            vec![
                rpm(&["-U", "--nodeps", "--nodocs"], &["x64"]),
                nd(&["x32"]),
                e(&["hello.x86_64"]),
            ],
        ),
        sc(
            "rpme-4.1",
            file,
            "rpm -e and shared files removed 1.2",
            "x86_64 without docs, then i686, erase i686",
            both(),
            vec![
                rpm(&["-U", "--nodeps", "--nodocs"], &["x64"]),
                nd(&["x32"]),
                e(&["hello.i686"]),
            ],
        ),
        sc(
            "rpme-5.1",
            file,
            "rpm -e and verify colored files removed 1.1",
            "a multilib pair, erase i686",
            both(),
            vec![nd(&["x32", "x64"]), e(&["hello.i686"])],
        ),
        sc(
            "rpme-6.1",
            file,
            "rpm -e and verify colored files removed 1.2",
            "a multilib pair, erase x86_64",
            both(),
            vec![nd(&["x32", "x64"]), e(&["hello.x86_64"])],
        ),
    ];
    for (n, order) in [
        ["hello.i686", "hello.x86_64"],
        ["hello.x86_64", "hello.i686"],
    ]
    .iter()
    .enumerate()
    {
        out.push(sc(
            &format!("rpme-{}.1", 7 + n),
            file,
            if n == 0 {
                "rpm -e and verify colored files removed 2.1"
            } else {
                "rpm -e and verify colored files removed 2.2"
            },
            "a multilib pair with _transaction_color 2, both erased",
            both(),
            vec![
                rpm(
                    &["-U", "--nodeps", "--define", "_transaction_color 2"],
                    &["x32", "x64"],
                ),
                e(&order[..]),
            ],
        ));
    }
    let ct = || {
        vec![
            ("a", specs::conflicttest("a", "pkg-a", "")),
            ("b", specs::conflicttest("b", "pkg-b", "")),
        ]
    };
    let rows: [(&str, Vec<Step>); 4] = [
        (
            "conflicting file excluded from the second package",
            vec![
                u(&["a"]),
                rpm(&["-U", "--excludepath=/usr/share"], &["b"]),
                e(&["conflicta"]),
                e(&["conflictb"]),
            ],
        ),
        (
            "conflicting file excluded from the first package",
            vec![
                rpm(&["-U", "--excludepath=/usr/share"], &["a"]),
                u(&["b"]),
                e(&["conflicta"]),
                e(&["conflictb"]),
            ],
        ),
        (
            "second package forced over the first, first erased first",
            vec![
                u(&["a"]),
                rpm(&["-U", "--force"], &["b"]),
                e(&["conflicta"]),
                e(&["conflictb"]),
            ],
        ),
        (
            "second package forced over the first, second erased first",
            vec![
                u(&["a"]),
                rpm(&["-U", "--force"], &["b"]),
                e(&["conflictb"]),
                e(&["conflicta"]),
            ],
        ),
    ];
    for (n, (what, steps)) in rows.into_iter().enumerate() {
        out.push(sc(
            &format!("rpme-9.{}", n + 1),
            file,
            "rpm -e and verify conflicting files removed 1",
            what,
            ct(),
            steps,
        ));
    }
    out.push(sc(
        "rpme-10.1",
        file,
        "rpm -e and verify netshared files not removed",
        "erase with _netsharedpath",
        vec![("x64", specs::hello("x86_64"))],
        vec![
            nd(&["x64"]),
            e(&["--define", "_netsharedpath /usr/share", "hello"]),
        ],
    ));
    out
}

// ---------------------------------------------------------------------------
// rpmconflict.at

fn conflict() -> Vec<Scenario> {
    let file = "rpmconflict.at";
    // Each package's file holds `data`, or its own name.
    let pair = |data: Option<&str>| {
        vec![
            ("one", specs::conflicttest("one", data.unwrap_or("one"), "")),
            ("two", specs::conflicttest("two", data.unwrap_or("two"), "")),
        ]
    };
    let st = |n| rpm_w(&["-U"], &[], w(Some(n), None, None));
    let with = |step: Step, pkgs: &[&str]| match step {
        Step::Rpm {
            args, env, want, ..
        } => Step::Rpm {
            args,
            pkgs: v(pkgs),
            env,
            want,
        },
        other => other,
    };
    let mut out = vec![
        sc(
            "rpmconflict-1.1",
            file,
            "packages with file conflicts",
            "a package whose file conflicts with an installed one's",
            pair(None),
            vec![u(&["one"]), with(st(1), &["two"])],
        ),
        sc(
            "rpmconflict-1.2",
            file,
            "packages with file conflicts",
            "two packages whose files conflict, in one transaction",
            pair(None),
            vec![with(st(2), &["one", "two"])],
        ),
        sc(
            "rpmconflict-2.1",
            file,
            "shareable files",
            "a package sharing an identical file with an installed one",
            pair(Some("same_stuff")),
            vec![u(&["one"]), with(st(0), &["two"])],
        ),
        sc(
            "rpmconflict-2.2",
            file,
            "shareable files",
            "two packages sharing an identical file, in one transaction",
            pair(Some("same_stuff")),
            vec![with(st(0), &["one", "two"])],
        ),
        sc(
            "rpmconflict-3.1",
            file,
            "non-conflicting identical basenames",
            "one package, the same basename in two directories",
            vec![("p", specs::selfconflict())],
            vec![sh("rm -rf opt/mydir"), with(st(0), &["p"])],
        ),
        sc(
            "rpmconflict-4.1",
            file,
            "conflicting identical basenames",
            "one package, the same basename in two directories one of which is the admin's symlink to the other",
            vec![("p", specs::selfconflict())],
            vec![
                sh("rm -rf opt/mydir && mkdir -p opt/mydir/one && ln -s one opt/mydir/two"),
                rpm_w(
                    &["-U"],
                    &["p"],
                    w(
                        Some(1),
                        Some(""),
                        Some("file /opt/mydir/two/somefile conflicts between attempted installs of selfconflict-1.0-1.noarch and selfconflict-1.0-1.noarch"),
                    ),
                ),
            ],
        ),
    ];

    // Colored (ELF) files of a multilib pair: rpm's default prefers the
    // 64-bit one; `_prefer_color 1` the 32-bit one.
    let both = || {
        vec![
            ("x64", specs::hello("x86_64")),
            ("x32", specs::hello("i686")),
        ]
    };
    let states = &["-q", "--qf", "[%{filestates:fstate},]\\n"];
    let q = |pkgs: &[&str], want: &str| {
        let mut a = states.to_vec();
        a.extend_from_slice(pkgs);
        query(&a, Some(want))
    };
    let normal = "normal,normal,normal,normal,normal,";
    let wrong = "wrong color,normal,normal,normal,normal,";
    let both_q = ["hello.i686", "hello.x86_64"];
    for (setup, prefer, title) in [
        (5, None, "multilib elf conflict, prefer 64bit"),
        (
            8,
            Some("_prefer_color 1"),
            "multilib elf conflict, prefer 32bit",
        ),
    ] {
        let mut args = vec!["-U", "--nodeps"];
        if let Some(d) = prefer {
            args.extend(["--define", d]);
        }
        // Which package's file loses: i686's when 64-bit is preferred.
        let (q32, q64) = if prefer.is_none() {
            (wrong, normal)
        } else {
            (normal, wrong)
        };
        let titles: [&'static str; 3] = if prefer.is_none() {
            [
                "multilib elf conflict, prefer 64bit 1",
                "multilib elf conflict, prefer 64bit 2",
                "multilib elf conflict, prefer 64bit 3",
            ]
        } else {
            [
                "multilib elf conflict, prefer 32bit 1",
                "multilib elf conflict, prefer 32bit 2",
                "multilib elf conflict, prefer 32bit 3",
            ]
        };
        out.push(sc(
            &format!("rpmconflict-{setup}.1"),
            file,
            titles[0],
            &format!("{title}: the pair in one transaction"),
            both(),
            vec![
                rpm(&args, &["x32", "x64"]),
                q(&both_q, &format!("{q32}\n{q64}")),
            ],
        ));
        out.push(sc(
            &format!("rpmconflict-{}.1", setup + 1),
            file,
            titles[1],
            &format!("{title}: i686, then x86_64"),
            both(),
            vec![
                rpm(&args, &["x32"]),
                q(&["hello.i686"], normal),
                rpm(&args, &["x64"]),
                q(&both_q, &format!("{q32}\n{q64}")),
            ],
        ));
        out.push(sc(
            &format!("rpmconflict-{}.1", setup + 2),
            file,
            titles[2],
            &format!("{title}: x86_64, then i686"),
            both(),
            vec![
                rpm(&args, &["x64"]),
                q(&["hello.x86_64"], normal),
                rpm(&args, &["x32"]),
                q(&both_q, &format!("{q32}\n{q64}")),
            ],
        ));
    }

    let hs = || {
        vec![
            ("x64", specs::hello("x86_64")),
            ("hs", specs::hello_script()),
        ]
    };
    let nd = |pkgs: &[&str], status, says: &str| {
        rpm_w(
            &["-U", "--nodeps"],
            pkgs,
            w(Some(status), Some(""), Some(says)),
        )
    };
    out.push(sc(
        "rpmconflict-11.1",
        file,
        "multilib elf vs non-elf file conflict 1",
        "an ELF file and a text file at one path, in one transaction",
        hs(),
        vec![nd(
            &["x64", "hs"],
            2,
            "file /usr/bin/hello conflicts between attempted installs of hello-2.0-1.x86_64 and hello-script-1.0-1.noarch",
        )],
    ));
    out.push(sc(
        "rpmconflict-12.1",
        file,
        "multilib elf vs non-elf file conflict 2",
        "a text file over an installed ELF file",
        hs(),
        vec![
            rpm(&["-U", "--nodeps"], &["x64"]),
            nd(
                &["hs"],
                1,
                "file /usr/bin/hello from install of hello-script-1.0-1.noarch conflicts with file from package hello-2.0-1.x86_64",
            ),
        ],
    ));
    out.push(sc(
        "rpmconflict-13.1",
        file,
        "multilib elf vs non-elf file conflict 3",
        "an ELF file over an installed text file",
        hs(),
        vec![
            rpm(&["-U", "--nodeps"], &["hs"]),
            nd(
                &["x64"],
                1,
                "file /usr/bin/hello from install of hello-2.0-1.x86_64 conflicts with file from package hello-script-1.0-1.noarch",
            ),
        ],
    ));
    let says = "file /usr/share/symlinktest from install of symlinktest-1.0-2.noarch conflicts with file from package symlinktest-1.0-1.noarch";
    for (n, (title, first_link)) in [
        ("replacing directory with symlink", false),
        ("replacing symlink with directory", true),
    ]
    .into_iter()
    .enumerate()
    {
        out.push(sc(
            &format!("rpmconflict-{}.1", 14 + n),
            file,
            title,
            "an upgrade turning a directory into a symlink or back: a conflict",
            vec![
                ("1", specs::symlinktest("1", first_link)),
                ("2", specs::symlinktest("2", !first_link)),
            ],
            vec![
                sh("rm -rf usr/share/symlinktest* usr/lib/symlinktest*"),
                u(&["1"]),
                rpm_w(&["-U"], &["2"], w(Some(2), Some(""), Some(says))),
            ],
        ));
    }
    let mv = &["usr/share/my.version"][..];
    out.push(sc(
        "rpmconflict-16.1",
        file,
        "real file with shared ghost",
        "a file and another package's %ghost at its path: the file stays until its package is erased",
        vec![
            ("one", specs::conflicttest("one", "one", "")),
            ("two", specs::conflicttest("two", "two", "%ghost")),
        ],
        vec![
            show(mv, ""),
            u(&["one", "two"]),
            show(mv, "usr/share/my.version=one"),
            e(&["conflicttwo"]),
            show(mv, "usr/share/my.version=one"),
            e(&["conflictone"]),
            show(mv, ""),
        ],
    ));
    out
}

// ---------------------------------------------------------------------------
// rpmorder.at

fn order() -> Vec<Scenario> {
    let file = "rpmorder.at";
    let rows: [(&'static str, [&str; 3]); 3] = [
        (
            "basic install/erase order 1",
            [
                "Requires: deptest-two",
                "OrderWithRequires: deptest-three",
                "",
            ],
        ),
        (
            "basic install/erase order 2",
            ["Recommends: deptest-two", "Suggests: deptest-three", ""],
        ),
        (
            "basic install/erase order 3",
            ["", "Supplements: deptest-one", "Enhances: deptest-two"],
        ),
    ];
    let mut out = Vec::new();
    for (n, (title, deps)) in rows.into_iter().enumerate() {
        let installed =
            "deptest-three-1.0-1.noarch\ndeptest-two-1.0-1.noarch\ndeptest-one-1.0-1.noarch";
        out.push(sc(
            &format!("rpmorder-{}.1", n + 1),
            file,
            title,
            "three packages given out of their dependencies' order, registered only (--justdb) and erased so",
            vec![
                ("one", specs::deptest("one", deps[0])),
                ("two", specs::deptest("two", deps[1])),
                ("three", specs::deptest("three", deps[2])),
            ],
            vec![
                rpm_w(
                    &["-Uv", "--justdb"],
                    &["two", "three", "one"],
                    Want {
                        status: Some(0),
                        stdout: Some(format!(
                            "Verifying packages...\nPreparing packages...\n{installed}"
                        )),
                        stderr: None,
                        own_stdout: true,
                        unheld: false,
                    },
                ),
                // The order the packages were registered in.
                query(&["-qa", "--qf", "%{NEVRA}\\n"], Some(installed)),
                e_w(
                    &["-v", "--justdb", "deptest-three", "deptest-one", "deptest-two"],
                    w(
                        Some(0),
                        Some("Preparing packages...\ndeptest-one-1.0-1.noarch\ndeptest-two-1.0-1.noarch\ndeptest-three-1.0-1.noarch"),
                        None,
                    ),
                ),
            ],
        ));
    }
    out
}

// ---------------------------------------------------------------------------
// rpmverify.at: each scenario installs (some erase) before verifying. The
// `--fsmdebug` twins of the minimize-writes checks (12.2, 14.2) are left
// out: what they count is rpm's debug log, which cowkit has no part in.
// `/data/RPMS/hello-1.0-1.ppc64.rpm` (installed with --ignorearch) is
// built here for x86_64.

fn verify() -> Vec<Scenario> {
    let file = "rpmverify.at";
    let va = ["-Va", "--nodeps", "--nouser", "--nogroup"];
    let h1 = || vec![("h", specs::hello1("i386"))];
    let plain = || rpm(&["-U", "--nodeps", "--noscripts"], &["h"]);
    let mutilate = sh(
        "rm -f usr/share/doc/hello-1.0/FAQ && chmod u-x usr/local/bin/hello && \
         dd if=/dev/zero of=usr/local/bin/hello conv=notrunc bs=1 seek=5 count=6 2>/dev/null",
    );
    let mutilated = ".M5....T.    /usr/local/bin/hello\nmissing   d /usr/share/doc/hello-1.0/FAQ";
    let root = ("root", "root");
    let rt = |ty| vec![("1", specs::replacetest("1.0", ty, root, None))];
    let mut out = vec![
        sc(
            "rpmverify-1.1",
            file,
            "dependency problems",
            "a package installed with --nodeps, its dependency missing",
            vec![("one", specs::deptest("one", "Requires: deptest-two"))],
            vec![
                rpm(&["-U", "--nodeps"], &["one"]),
                query_st(
                    &["-Va", "--nofiles"],
                    Some("Unsatisfied dependencies for deptest-one-1.0-1.noarch:\n\tdeptest-two is needed by (installed) deptest-one-1.0-1.noarch"),
                    1,
                ),
            ],
        ),
        sc(
            "rpmverify-2.1",
            file,
            "files with no problems",
            "install (--nodeps --noscripts), verify",
            h1(),
            vec![plain(), query_st(&va, Some(""), 0)],
        ),
        sc(
            "rpmverify-3.1",
            file,
            "files with no problems in verbose mode",
            "install (--nodeps --noscripts), verify verbosely",
            h1(),
            vec![
                plain(),
                query_st(
                    &["-Vva", "--nodeps", "--nouser", "--nogroup"],
                    Some(".........    /usr/local/bin/hello\n.........    /usr/share/doc/hello-1.0\n.........  d /usr/share/doc/hello-1.0/FAQ"),
                    0,
                ),
            ],
        ),
        sc(
            "rpmverify-4.1",
            file,
            "directory replaced with a directory symlink",
            "the package's directory moved and replaced by the admin's symlink to it",
            rt(Ty::DataDir("README1")),
            vec![
                u(&["1"]),
                sh("mv opt/foo opt/was && ln -s was opt/foo"),
                query_st(
                    &["-Vv", "replacetest"],
                    Some(".........    /opt/foo\n.........    /opt/foo/README1\n.........    /opt/goo\n.........    /opt/zoo"),
                    0,
                ),
            ],
        ),
        sc(
            "rpmverify-5.1",
            file,
            "directory replaced with an invalid directory symlink",
            "the package's directory moved and replaced by a symlink of another owner (bin)",
            rt(Ty::DataDir("README1")),
            vec![
                u(&["1"]),
                sh("mv opt/foo opt/was && ln -s was opt/foo && chown -h bin opt/foo"),
                query_st(
                    &["-Vv", "--nouser", "--nogroup", "replacetest"],
                    Some("....L....    /opt/foo\n.........    /opt/foo/README1\n.........    /opt/goo\n.........    /opt/zoo"),
                    1,
                ),
            ],
        ),
        sc(
            "rpmverify-6.1",
            file,
            "verify from db, with problems present",
            "install, then a file removed, one changed",
            h1(),
            vec![plain(), mutilate.clone(), query_st(&va, Some(mutilated), 1)],
        ),
        sc(
            "rpmverify-7.1",
            file,
            "verify from package, with problems present",
            "install, then a file removed, one changed; verified against the package",
            h1(),
            vec![
                plain(),
                mutilate,
                query_st(
                    &["-Vp", "--nodeps", "--nouser", "--nogroup", "pkg:h"],
                    Some(mutilated),
                    1,
                ),
            ],
        ),
    ];
    let mut filters = vec![sc(
        "rpmverify-8.1",
        file,
        "verify file attribute filtering",
        "files of every virtual attribute, verified with each filter",
        vec![("p", specs::vattrtest())],
        vec![
            u(&["p"]),
            sh("touch opt/vattrtest/g && chmod 644 opt/vattrtest/g"),
        ],
    )];
    let ok = |f: &str| format!(".........  {f} /opt/vattrtest/{f}");
    let dir = ".........    /opt/vattrtest";
    for (filter, want) in [
        (
            "--noconfig",
            vec![
                dir.to_string(),
                ok("a"),
                ok("d"),
                ok("g"),
                ok("l"),
                ok("m"),
                ok("r"),
            ],
        ),
        (
            "--noghost",
            vec![
                dir.to_string(),
                ok("a"),
                ok("c"),
                ".........  c /opt/vattrtest/cn".to_string(),
                ok("d"),
                ok("l"),
                ok("m"),
                ok("r"),
            ],
        ),
        (
            "--noartifact",
            vec![
                dir.to_string(),
                ok("c"),
                ".........  c /opt/vattrtest/cn".to_string(),
                ok("d"),
                ok("g"),
                ok("l"),
                ok("m"),
                ok("r"),
            ],
        ),
        ("-A", vec![ok("a")]),
        (
            "-c",
            vec![ok("c"), ".........  c /opt/vattrtest/cn".to_string()],
        ),
        ("-d", vec![ok("d")]),
        ("-L", vec![ok("l")]),
    ] {
        filters[0].steps.push(query(
            &["-Vv", "--nouser", "--nogroup", filter, "vattrtest"],
            Some(&want.join("\n")),
        ));
    }
    out.append(&mut filters);
    out.push(sc(
        "rpmverify-9.1",
        file,
        "verifyscript failure",
        "a <lua> %verifyscript that fails",
        vec![("p", specs::verifyscript())],
        vec![
            rpm(&["-U", "--nodeps"], &["p"]),
            sh("rm -f var/checkme"),
            query_st(&["-V", "--nodeps", "verifyscript"], None, 1),
        ],
    ));
    out.push(sc(
        "rpmverify-10.1",
        file,
        "verifyscript success",
        "a <lua> %verifyscript that succeeds",
        vec![("p", specs::verifyscript())],
        vec![
            rpm(&["-U", "--nodeps"], &["p"]),
            sh("mkdir -p var && touch var/checkme"),
            query_st(&["-V", "--nodeps", "verifyscript"], Some(""), 0),
        ],
    ));
    out.push(sc(
        "rpmverify-11.1",
        file,
        "shared file timestamp behavior",
        "a file shared by two packages with different mtimes, in the order given (--noorder); the first one erased",
        vec![
            ("one", specs::conflicttest_at("one", "same_stuff", "2017-03-17 17:17:00")),
            ("two", specs::conflicttest_at("two", "same_stuff", "2017-03-17 17:17:01")),
        ],
        vec![
            rpm(&["-U", "--noorder"], &["one", "two"]),
            e(&["conflicttwo"]),
            query_st(&["-Va", "--nouser", "--nogroup"], Some(""), 0),
        ],
    ));

    // _minimize_writes: files and symlinks.
    let mw = ["-U", "--define", "_minimize_writes 1"];
    let mw_old = ["-U", "--oldpackage", "--define", "_minimize_writes 1"];
    let vrt = || {
        query_st(
            &["-Va", "--nouser", "--nogroup", "replacetest"],
            Some(""),
            0,
        )
    };
    let tf = &["opt/foo"][..];
    let files = vec![
        ("1", specs::replacetest("1.0", Ty::File("foo"), root, None)),
        ("2", specs::replacetest("2.0", Ty::File("foo"), root, None)),
        ("3", specs::replacetest("3.0", Ty::File("fox"), root, None)),
        ("4", specs::replacetest("4.0", Ty::File("fox"), root, None)),
    ];
    out.push(sc(
        "rpmverify-12.1",
        file,
        "minimize writes (files)",
        "upgrades with _minimize_writes: unchanged, changed, over a modified file, back",
        files,
        vec![
            rpm(&["-i"], &["1"]),
            show(tf, "opt/foo=foo"),
            sh("touch -t 201703171717 opt/foo"),
            rpm(&mw, &["2"]),
            vrt(),
            show(tf, "opt/foo=foo"),
            rpm(&mw, &["3"]),
            vrt(),
            show(tf, "opt/foo=fox"),
            sh("echo xx > opt/foo"),
            show(tf, "opt/foo=xx"),
            rpm(&mw, &["4"]),
            vrt(),
            show(tf, "opt/foo=fox"),
            sh("touch -t 201703171717 opt/foo"),
            rpm(&mw_old, &["3"]),
            vrt(),
            show(tf, "opt/foo=fox"),
        ],
    ));
    let vav = |want: &str| query_st(&["-Vav", "--nouser", "--nogroup"], Some(want), 0);
    out.push(sc(
        "rpmverify-13.1",
        file,
        "minimize writes (hardlinks)",
        "an upgrade with _minimize_writes adding a hardlink to an unchanged file",
        vec![("0", specs::hlbreak("0")), ("1", specs::hlbreak("1"))],
        vec![
            rpm(&mw, &["0"]),
            vav(".........    /opt/file2"),
            rpm(&mw, &["1"]),
            vav(".........    /opt/file1\n.........    /opt/file2"),
        ],
    ));
    let links = vec![
        ("1", specs::replacetest("1.0", Ty::Link("doh"), root, None)),
        ("2", specs::replacetest("2.0", Ty::Link("doh"), root, None)),
        ("3", specs::replacetest("3.0", Ty::Link("fox"), root, None)),
        ("4", specs::replacetest("4.0", Ty::Link("fox"), root, None)),
    ];
    out.push(sc(
        "rpmverify-14.1",
        file,
        "minimize writes (symlinks)",
        "upgrades with _minimize_writes: unchanged, changed, over a modified link, back",
        links,
        vec![
            rpm(&["-i"], &["1"]),
            show(tf, "opt/foo->doh"),
            rpm(&mw, &["2"]),
            vrt(),
            show(tf, "opt/foo->doh"),
            rpm(&mw, &["3"]),
            vrt(),
            show(tf, "opt/foo->fox"),
            sh("ln -sfn xx opt/foo"),
            show(tf, "opt/foo->xx"),
            rpm(&mw, &["4"]),
            vrt(),
            show(tf, "opt/foo->fox"),
            rpm(&mw_old, &["3"]),
            vrt(),
            show(tf, "opt/foo->fox"),
        ],
    ));
    let suid = |ver| {
        let mut p = specs::replacetest(ver, Ty::File("foo"), root, None);
        p.files = s("%defattr(-,root,root,-)\n%attr(2755,-,-) /opt/*");
        p
    };
    out.push(sc(
        "rpmverify-15.1",
        file,
        "minimize writes (SUID files)",
        "setgid files upgraded with _minimize_writes, then a modified mode, back",
        vec![("1", suid("1.0")), ("2", suid("2.0"))],
        vec![
            sh("rm -rf opt/foo opt/foo.rpm*"),
            u(&["1"]),
            vrt(),
            rpm(&mw, &["2"]),
            vrt(),
            sh("chmod 777 opt/foo"),
            rpm(&mw_old, &["1"]),
            vrt(),
        ],
    ));
    out.push(sc(
        "rpmverify-16.1",
        file,
        "verify empty/no capabilities 1",
        "files with empty capabilities installed with --nocaps",
        vec![("p", specs::capstest())],
        vec![
            rpm(&["-U", "--nocaps"], &["p"]),
            query_st(
                &["-Va", "--nouser", "--nogroup"],
                Some("........P    /a/emptyCaps1\n........P    /a/emptyCaps2"),
                1,
            ),
        ],
    ));
    out.push(sc(
        "rpmverify-17.1",
        file,
        "verify empty/no capabilities 2",
        "files without capabilities installed with --nocaps",
        vec![("h", specs::hello1("x86_64"))],
        vec![
            rpm(&["-U", "--nocaps", "--nodeps", "--noscripts"], &["h"]),
            query_st(&va, Some(""), 0),
        ],
    ));
    out.push(sc(
        "rpmverify-18.1",
        file,
        "rpm --restore",
        "install, a mode and an mtime changed, rpm --restore",
        h1(),
        vec![
            plain(),
            sh("touch usr/share/doc/hello-1.0/FAQ && chmod a-x usr/local/bin/hello"),
            query_st(
                &va,
                Some(
                    ".M.......    /usr/local/bin/hello\n.......T.  d /usr/share/doc/hello-1.0/FAQ",
                ),
                1,
            ),
            query_st(&["--restore", "hello"], Some(""), 0),
            query_st(&va, Some(""), 0),
        ],
    ));
    out
}

// ---------------------------------------------------------------------------
// rpmscript.at

/// The root's shell for scriptlets (rpm's scenarios run in a copy of the
/// host, which has one): a static busybox as `/bin/sh`, `cat` and `wc`.
fn shell() -> Step {
    sh("mkdir -p bin && cp /usr/bin/busybox bin/busybox && for a in sh cat wc; do ln -s busybox bin/$a; done")
}

fn script() -> Vec<Scenario> {
    let file = "rpmscript.at";
    let mut out = Vec::new();

    // Each scriptlet failing, then not, in turn.
    let def = |phase: &str, code: u8| format!("exit{phase} {code}");
    let q = |want: &str| query(&["-q", "scriptfail"], Some(want));
    let (one, two) = ("scriptfail-1.0-1.noarch", "scriptfail-2.0-1.noarch");
    let none = "package scriptfail is not installed";
    let mut steps = vec![shell(), u(&["fakeshell"])];
    let ud = |d: String, pkg: &str, want: Want| rpm_w(&["-U", "--define", &d], &[pkg], want);
    let fail = |tag: &str, nevra: &str, then: &str| {
        format!("error: %{tag}({nevra}) scriptlet failed, exit status 1\nerror: {nevra}: {then}")
    };
    steps.extend([
        ud(
            def("pretrans", 1),
            "1",
            w(
                Some(1),
                Some(""),
                Some(&fail("pretrans", one, "install skipped")),
            ),
        ),
        q(none),
        ud(def("pretrans", 0), "1", w(Some(0), Some(""), None)),
        q(one),
        e(&["scriptfail"]),
        ud(
            def("pre", 1),
            "1",
            w(
                Some(1),
                Some(""),
                Some(&fail("prein", one, "install failed")),
            ),
        ),
        q(none),
        ud(def("pre", 0), "1", w(Some(0), Some(""), None)),
        q(one),
        e_w(
            &["--define", &def("preun", 1), "scriptfail"],
            w(Some(1), Some(""), Some(&fail("preun", one, "erase failed"))),
        ),
        q(one),
        e_w(
            &["--define", &def("preun", 0), "scriptfail"],
            w(Some(0), Some(""), None),
        ),
        q(none),
    ]);
    for (phase, tag, code, first, last) in [
        ("post", "post", 1, true, two),
        ("post", "post", 0, true, two),
        ("posttrans", "posttrans", 1, false, one),
        ("posttrans", "posttrans", 0, false, one),
        ("postun", "postun", 1, true, two),
        ("postun", "postun", 0, true, two),
    ] {
        let (pkg, failed) = if first { ("2", two) } else { ("1", one) };
        // %postun's failure is the old package's.
        let failed = if phase == "postun" { one } else { failed };
        if first {
            steps.push(u(&["1"]));
        }
        let warn = format!("warning: %{tag}({failed}) scriptlet failed, exit status 1");
        steps.push(ud(
            def(phase, code),
            pkg,
            w(Some(0), Some(""), (code == 1).then_some(warn.as_str())),
        ));
        steps.push(q(last));
        steps.push(e(&["scriptfail"]));
    }
    out.push(sc(
        "rpmscript-1.1",
        file,
        "basic script failures 1",
        "each scriptlet failing (exit 1 by --define), then not: install, erase, upgrade",
        vec![
            ("fakeshell", specs::fakeshell()),
            ("1", specs::scriptfail("1.0")),
            ("2", specs::scriptfail("2.0")),
        ],
        steps,
    ));

    let sp = || {
        vec![
            ("fakeshell", specs::fakeshell()),
            ("s1", specs::scripts("1")),
            ("s2", specs::scripts("2")),
        ]
    };
    let out_w = |o: &str| w(Some(0), Some(o), None);
    let install1 = "scripts-1.0-1 PRETRANS 1\nscripts-1.0-1 PRE 1\nscripts-1.0-1 POST 1\nscripts-1.0-1 POSTTRANS 1";
    out.push(sc(
        "rpmscript-2.1",
        file,
        "basic scripts and arguments",
        "every scriptlet's output and argument: install, upgrade, verify, erase",
        sp(),
        vec![
            shell(),
            u(&["fakeshell"]),
            query(&["-Vvp", "pkg:s1"], Some("scripts-1.0-1 VERIFY 0")),
            rpm_w(&["-U"], &["s1"], out_w(install1)),
            rpm_w(
                &["-U"],
                &["s2"],
                out_w("scripts-1.0-2 PRETRANS 2\nscripts-1.0-2 PRE 2\nscripts-1.0-2 POST 2\nscripts-1.0-1 PREUN 1\nscripts-1.0-1 POSTUN 1\nscripts-1.0-2 POSTTRANS 2"),
            ),
            query(&["-Vv", "scripts"], Some("scripts-1.0-2 VERIFY 1")),
            e_w(&["scripts"], out_w("scripts-1.0-2 PREUN 0\nscripts-1.0-2 POSTUN 0")),
        ],
    ));

    let mut pk = sp();
    pk.push(("t1", specs::triggers("1", "scripts")));
    pk.push(("t2", specs::triggers("2", "scripts")));
    out.push(sc(
        "rpmscript-3.1",
        file,
        "basic trigger scripts and arguments",
        "triggers on a package's install, upgrade and erase, and the triggering package's upgrade",
        pk,
        vec![
            shell(),
            u(&["fakeshell"]),
            rpm_w(&["-U"], &["t1"], out_w("")),
            rpm_w(
                &["-U"],
                &["s1"],
                out_w("scripts-1.0-1 PRETRANS 1\ntriggers-1.0-1 TRIGGERPREIN 1 0\nscripts-1.0-1 PRE 1\nscripts-1.0-1 POST 1\ntriggers-1.0-1 TRIGGERIN 1 1\nscripts-1.0-1 POSTTRANS 1"),
            ),
            rpm_w(
                &["-U"],
                &["s2"],
                out_w("scripts-1.0-2 PRETRANS 2\ntriggers-1.0-1 TRIGGERPREIN 1 1\nscripts-1.0-2 PRE 2\nscripts-1.0-2 POST 2\ntriggers-1.0-1 TRIGGERIN 1 2\ntriggers-1.0-1 TRIGGERUN 1 1\nscripts-1.0-1 PREUN 1\nscripts-1.0-1 POSTUN 1\ntriggers-1.0-1 TRIGGERPOSTUN 1 1\nscripts-1.0-2 POSTTRANS 2"),
            ),
            rpm_w(
                &["-U"],
                &["t2"],
                out_w("triggers-1.0-2 TRIGGERPREIN 1 1\ntriggers-1.0-2 TRIGGERIN 2 1\ntriggers-1.0-1 TRIGGERUN 1 1"),
            ),
            e_w(
                &["scripts"],
                out_w("triggers-1.0-2 TRIGGERUN 1 0\nscripts-1.0-2 PREUN 0\nscripts-1.0-2 POSTUN 0\ntriggers-1.0-2 TRIGGERPOSTUN 1 0"),
            ),
        ],
    ));

    let in_foo = "/foo/aaaa\n/foo/copyllo\n/foo/hello\n/foo/hello-bar\n/foo/hello-foo\n/foo/hello-world\n/foo/zzzz\n";
    let bin = "/usr/bin/hello\n";
    let installed = format!(
        "filetriggerin(/foo*):\n{in_foo}\nfiletriggerin(/foo*)<lua>:\n{in_foo}\n\
         filetriggerin(/usr/bin*): 0\n{bin}\nfiletriggerin(/usr/bin*)<lua>: 0\n{bin}\n\
         transfiletriggerin(/usr/bin*): 0\n{bin}\ntransfiletriggerin(/foo*):\n{in_foo}"
    );
    let erased = format!(
        "transfiletriggerun(/usr/bin*): 0\n{bin}\ntransfiletriggerun(/foo*):\n{in_foo}\n\
         filetriggerun(/foo*):\n{in_foo}\nfiletriggerpostun(/foo*):\n{in_foo}\n\
         filetriggerun(/usr/bin*): 0\n{bin}\nfiletriggerpostun(/usr/bin*): 0\n{bin}\n\
         transfiletriggerpostun(/usr/bin*): 0\n\ntransfiletriggerpostun(/foo*):\n"
    );
    out.push(sc(
        "rpmscript-4.1",
        file,
        "basic file trigger scripts",
        "file triggers of every kind (shell and <lua>) on two packages' install and erase",
        vec![
            ("fakeshell", specs::fakeshell()),
            ("ft", specs::filetriggers()),
            ("hs", specs::hello_script()),
            ("hl", specs::hlinktest(false)),
        ],
        vec![
            shell(),
            u(&["fakeshell"]),
            u(&["ft"]),
            rpm_w(&["-U"], &["hs", "hl"], out_w(&installed)),
            e_w(&["hello-script", "hlinktest"], out_w(&erased)),
        ],
    ));

    out.push(sc(
        "rpmscript-5.1",
        file,
        "basic file triggers 2",
        "file triggers of a package installed after, and upgraded over, three versions of another installed side by side",
        vec![
            ("fakeshell", specs::fakeshell()),
            ("p1", specs::parallel("1.0")),
            ("p2", specs::parallel("2.0")),
            ("p3", specs::parallel("3.0")),
            ("t1", specs::parallel_trigger("1.0")),
            ("t2", specs::parallel_trigger("2.0")),
        ],
        vec![
            shell(),
            u(&["fakeshell"]),
            rpm(&["-i"], &["p1", "p2", "p3"]),
            rpm_w(
                &["-U"],
                &["t1"],
                out_w("%filetriggerin: 0\n36\n%transfiletriggerin: 0\n36"),
            ),
            rpm_w(
                &["-U"],
                &["t2"],
                out_w("%transfiletriggerun: 0\n36\n%filetriggerin: 0\n36\n%transfiletriggerin: 0\n36"),
            ),
            e_w(&["parallel-trigger"], out_w("%transfiletriggerun: 0\n36")),
        ],
    ));
    out
}
