//! rpm 4.20's file trigger arguments (`lib/rpmtriggers.c`, `lib/psm.c`
//! at `rpm-4.20.1-release`; rpm 4.18 gives every file trigger `$1` 0 and
//! no `$2`): scenarios in the shape of rpm 4.20's own "basic file
//! triggers: runtime args" (`rpmscript.at`), with a trigger package that
//! has every kind of file trigger, in shell (`$*`) and in `<lua>`
//! (`arg[2]`, `arg[3]`), for the rpm 4.20 tier only; and a
//! `%transfiletriggerpostun` whose first prefix matches nothing (rpm 4.20
//! runs it by any prefix, rpm 4.18 by the first only).

use super::harness::{Scenario, Step, Want};
use super::specs::{self, Spec};

/// The six kinds, as rpm's spec sections and as the lines say them.
const KINDS: [(&str, &str); 6] = [
    ("transfiletriggerin", "TRANSFILETRIGGERIN"),
    ("transfiletriggerun", "TRANSFILETRIGGERUN"),
    ("transfiletriggerpostun", "TRANSFILETRIGGERPOSTUN"),
    ("filetriggerin", "FILETRIGGERIN"),
    ("filetriggerun", "FILETRIGGERUN"),
    ("filetriggerpostun", "FILETRIGGERPOSTUN"),
];

/// `NAME` `ver`: no files; every kind of file trigger on `/opt/parallel`,
/// each printing `NAME-VER-1 KIND ARGS | N` (`N`: the paths it is given;
/// `%transfiletriggerpostun` is given none). `lua`: the triggers are
/// `<lua>`, `ARGS` being `arg[2] arg[3]` (`nil` when absent).
fn trigger(name: &str, ver: &str, lua: bool) -> Spec {
    let mut s = Spec::new(name, ver);
    s.files = "%defattr(-,root,root,-)".into();
    let who = format!("{name}-{ver}-1");
    s.scripts = KINDS
        .iter()
        .map(|(k, w)| {
            if lua {
                // rpm.next_file() has nothing to give a
                // %transfiletriggerpostun (rpm fails the call there).
                let count = if *k == "transfiletriggerpostun" {
                    ""
                } else {
                    "while rpm.next_file() do n = n + 1 end\n"
                };
                format!(
                    "%{k} -p <lua> -- /opt/parallel\nlocal n = 0\n{count}\
                     print(\"{who} {w} \" .. tostring(arg[2]) .. \" \" .. tostring(arg[3]) .. \" | \" .. n)\n\
                     io.flush()\n\n"
                )
            } else {
                format!("%{k} -- /opt/parallel\necho -n \"{who} {w} $* | \"\ncat | wc -l\n\n")
            }
        })
        .collect();
    s
}

fn step(args: &[&str], pkgs: &[&str], stdout: &str) -> Step {
    Step::Rpm {
        args: args.iter().map(|a| a.to_string()).collect(),
        pkgs: pkgs.iter().map(|a| a.to_string()).collect(),
        env: vec![],
        want: Want {
            status: Some(0),
            stdout: Some(stdout.into()),
            ..Want::default()
        },
    }
}

fn erase(name: &str, stdout: &str) -> Step {
    Step::Erase {
        args: vec![name.into()],
        want: Want {
            status: Some(0),
            stdout: Some(stdout.into()),
            ..Want::default()
        },
    }
}

fn shell() -> Step {
    Step::Sh(
        "mkdir -p bin && cp /usr/bin/busybox bin/busybox && for a in sh cat wc; do ln -s busybox bin/$a; done"
            .into(),
    )
}

/// The runtime-args scenario with the trigger package `name` (`lua`: its
/// triggers in `<lua>`): the lines rpm 4.20 prints, where `$2` is
/// `nil` in Lua and nothing in shell when rpm passes none.
fn runtime(id: &str, name: &str, lua: bool) -> Scenario {
    let t1 = format!("{name}-1.0-1");
    let t2 = format!("{name}-2.0-1");
    // One argument: shell `$*` is "1", Lua's `arg[3]` is nil.
    let one = |a: u32| {
        if lua {
            format!("{a} nil")
        } else {
            format!("{a}")
        }
    };
    let lines = |l: &[String]| l.join("\n");
    let steps = vec![
        shell(),
        step(&["-U"], &["fakeshell"], ""),
        step(&["-U"], &["t1"], ""),
        step(
            &["-i"],
            &["p1"],
            &lines(&[
                format!("{t1} FILETRIGGERIN 1 1 | 12"),
                format!("{t1} TRANSFILETRIGGERIN {} | 12", one(1)),
            ]),
        ),
        step(
            &["-U"],
            &["p2"],
            &lines(&[
                format!("{t1} TRANSFILETRIGGERUN {} | 12", one(1)),
                format!("{t1} FILETRIGGERIN 1 2 | 12"),
                format!("{t1} FILETRIGGERUN 1 1 | 11"),
                format!("{t1} FILETRIGGERPOSTUN 1 1 | 11"),
                format!("{t1} TRANSFILETRIGGERIN {} | 12", one(1)),
                format!("{t1} TRANSFILETRIGGERPOSTUN {} | 0", one(1)),
            ]),
        ),
        step(
            &["-U"],
            &["t2"],
            &lines(&[
                format!("{t1} TRANSFILETRIGGERUN {} | 12", one(1)),
                format!("{t2} FILETRIGGERIN 2 1 | 12"),
                format!("{t1} FILETRIGGERUN 1 1 | 12"),
                format!("{t2} TRANSFILETRIGGERIN {} | 12", one(2)),
            ]),
        ),
        erase(
            "parallel",
            &lines(&[
                format!("{t2} TRANSFILETRIGGERUN {} | 12", one(1)),
                format!("{t2} FILETRIGGERUN 1 0 | 12"),
                format!("{t2} FILETRIGGERPOSTUN 1 0 | 12"),
                format!("{t2} TRANSFILETRIGGERPOSTUN {} | 0", one(1)),
            ]),
        ),
        erase(name, ""),
        step(&["-i"], &["p1", "p2", "p3"], ""),
        step(
            &["-U"],
            &["t1"],
            &lines(&[
                format!("{t1} FILETRIGGERIN 1 3 | 36"),
                format!("{t1} TRANSFILETRIGGERIN {} | 36", one(1)),
            ]),
        ),
        step(
            &["-U"],
            &["t2"],
            &lines(&[
                format!("{t1} TRANSFILETRIGGERUN {} | 36", one(1)),
                format!("{t2} FILETRIGGERIN 2 3 | 36"),
                format!("{t1} FILETRIGGERUN 1 3 | 36"),
                format!("{t2} TRANSFILETRIGGERIN {} | 36", one(2)),
            ]),
        ),
        erase(
            name,
            &lines(&[
                format!("{t2} TRANSFILETRIGGERUN {} | 36", one(0)),
                format!("{t2} FILETRIGGERUN 0 3 | 36"),
            ]),
        ),
    ];
    Scenario {
        id: id.into(),
        file: "rpm 4.20",
        title: "file trigger arguments",
        what: format!(
            "every kind of file trigger ({}) of a package installed before, upgraded over and installed after three versions of another installed side by side, printing $1, $2 and how many paths it is given",
            if lua { "<lua>" } else { "shell" }
        ),
        pkgs: vec![
            ("fakeshell".into(), specs::fakeshell()),
            ("p1".into(), specs::parallel("1.0")),
            ("p2".into(), specs::parallel("2.0")),
            ("p3".into(), specs::parallel("3.0")),
            ("t1".into(), trigger(name, "1.0", lua)),
            ("t2".into(), trigger(name, "2.0", lua)),
        ],
        steps,
    }
}

/// `ftpfx` 1.0: a `%transfiletriggerpostun` on `/opt/aaa` (nothing
/// installs there) and `/opt/parallel`, and a `%filetriggerin` on `/opt`,
/// each printing its arguments and how many paths it is given.
fn prefixes() -> Spec {
    let mut s = Spec::new("ftpfx", "1.0");
    s.files = "%defattr(-,root,root,-)".into();
    s.scripts = "%transfiletriggerpostun -- /opt/aaa /opt/parallel\n\
                 echo -n \"ftpfx TRANSFILETRIGGERPOSTUN $* | \"\ncat | wc -l\n\n\
                 %filetriggerin -- /opt\n\
                 echo -n \"ftpfx FILETRIGGERIN $* | \"\ncat | wc -l\n\n"
        .into();
    s
}

/// `early` 1.0: `/opt/early/f`.
fn early() -> Spec {
    let mut s = Spec::new("early", "1.0");
    s.install = "mkdir -p \"$B/opt/early\"\necho f > \"$B/opt/early/f\"".into();
    s.files = "/opt/early".into();
    s
}

/// A trigger package installed after `early` and two versions of
/// `parallel`: its own `%filetriggerin`'s `$2` counts the package whose
/// file comes first (`early`: 1), not all of them; then an upgrade of
/// `parallel` erasing both versions: the trigger's `$2` is the new
/// version's count, and the `%transfiletriggerpostun` whose second prefix
/// matches runs, once.
fn first_package() -> Scenario {
    Scenario {
        id: "ftargs-2.1".into(),
        file: "rpm 4.20",
        title: "file trigger arguments",
        what: "a package's own %filetriggerin on files of several packages ($2 counts the package of the first file), a %filetriggerin on an upgrade erasing two versions, a %transfiletriggerpostun by its second prefix".into(),
        pkgs: vec![
            ("fakeshell".into(), specs::fakeshell()),
            ("early".into(), early()),
            ("p1".into(), specs::parallel("1.0")),
            ("p2".into(), specs::parallel("2.0")),
            ("p3".into(), specs::parallel("3.0")),
            ("ftpfx".into(), prefixes()),
        ],
        steps: vec![
            shell(),
            step(&["-U"], &["fakeshell"], ""),
            step(&["-U"], &["early"], ""),
            step(&["-i"], &["p1", "p2"], ""),
            step(&["-U"], &["ftpfx"], "ftpfx FILETRIGGERIN 1 1 | 26"),
            step(
                &["-U"],
                &["p3"],
                "ftpfx FILETRIGGERIN 1 3 | 12\nftpfx TRANSFILETRIGGERPOSTUN 1 | 0",
            ),
        ],
    }
}

/// The scenarios.
pub fn all() -> Vec<Scenario> {
    vec![
        runtime("ftargs-1.1", "parallel-trigger", false),
        runtime("ftargs-1.2", "parallel-luatrigger", true),
        first_package(),
    ]
}
