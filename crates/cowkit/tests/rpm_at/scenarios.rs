//! The install, upgrade, erase, config and replacement scenarios of rpm
//! 4.18's test suite (`tests/*.at` at `rpm-4.18.0-release`), one per
//! `AT_CHECK`, as steps on twin roots. Ids are `FILE-SETUP.CHECK`: the
//! ordinal of the `AT_SETUP` in its file and of the `AT_CHECK` in it.
//!
//! Where the scenario passes `--ignoreos`/`--ignorearch` (its packages are
//! prebuilt for x86_64 and the suite runs anywhere) they are left out: the
//! packages here are built for this host's arches. `--define
//! "_transaction_color 3"` and `--define "_prefer_color 2"` are rpm's
//! defaults on x86_64 and are left out too; every other option is passed
//! as the scenario passes it.

use super::harness::{Scenario, Step};
use super::specs::{self, Cfg, Spec, Ty};

fn s(x: &str) -> String {
    x.to_string()
}

fn v(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|x| s(x)).collect()
}

/// `rpm ARGS PKGS` / `cowkit install`.
fn rpm(args: &[&str], pkgs: &[&str]) -> Step {
    Step::Rpm {
        args: v(args),
        pkgs: v(pkgs),
        env: vec![],
    }
}

fn u(pkgs: &[&str]) -> Step {
    rpm(&["-U"], pkgs)
}

fn e(args: &[&str]) -> Step {
    Step::Erase(v(args))
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
