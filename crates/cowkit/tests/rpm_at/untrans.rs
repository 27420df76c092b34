//! rpm 4.20's `%preuntrans` and `%postuntrans` (`lib/transaction.c`,
//! `lib/psm.c` at `rpm-4.20.1-release`): an installed package's scriptlets
//! that run when a transaction erases it, before anything is changed and
//! after the whole transaction. Scenarios in the shape of rpm's own
//! scriptlet scenarios (`rpmscript.at`), for the rpm 4.20 tier only (rpm
//! 4.18's `rpmbuild` does not know these sections); and a package with a
//! `sysusers.d` file, whose `user()`/`group()` provides rpm 4.20 turns into
//! a user and a group in the root.

use super::harness::{Scenario, Step, Want};
use super::specs::{self, Spec};

/// `untrans` 1.0-`rel`: no files; every scriptlet echoing
/// `untrans-1.0-REL KIND $*` (`lua`: `%preuntrans` and `%postuntrans` in
/// `<lua>`, printing the same); `fail`: its `%preuntrans` exits 1.
fn untrans(rel: &str, lua: bool, fail: bool) -> Spec {
    let mut s = Spec::new("untrans", "1.0");
    s.release = rel.into();
    s.files = "%defattr(-,root,root,-)".into();
    let mut text = String::new();
    for (p, w) in [
        ("pretrans", "PRETRANS"),
        ("pre", "PRE"),
        ("post", "POST"),
        ("preun", "PREUN"),
        ("postun", "POSTUN"),
        ("posttrans", "POSTTRANS"),
        ("preuntrans", "PREUNTRANS"),
        ("postuntrans", "POSTUNTRANS"),
    ] {
        let untrans = p.ends_with("untrans");
        if untrans && lua {
            text.push_str(&format!(
                "%{p} -p <lua>\nprint(\"untrans-1.0-{rel} {w} \" .. arg[2])\n"
            ));
        } else {
            let exit = if fail && p == "preuntrans" {
                "\nexit 1"
            } else {
                ""
            };
            text.push_str(&format!("%{p}\necho untrans-1.0-{rel} {w} $*{exit}\n"));
        }
    }
    s.scripts = text;
    s
}

fn step_u(pkg: &str, status: i32, stdout: &str, stderr: Option<&str>) -> Step {
    Step::Rpm {
        args: vec!["-U".into()],
        pkgs: vec![pkg.into()],
        env: vec![],
        want: Want {
            status: Some(status),
            stdout: Some(stdout.into()),
            stderr: stderr.map(str::to_string),
            own_stdout: false,
            unheld: false,
        },
    }
}

fn scenario(id: &str, title: &'static str, what: &str, lua: bool, fail: bool) -> Scenario {
    let one = "untrans-1.0-1";
    let two = "untrans-1.0-2";
    // What rpm 4.20 prints: a <lua> scriptlet's `print` goes through C's
    // buffered stdout, which the next shell scriptlet's fork flushes, so
    // it shows after that scriptlet's parent side.
    let upgrade = match (lua, fail) {
        (_, true) => None,
        (false, false) => Some(format!(
            "{two} PRETRANS 2\n{one} PREUNTRANS 1\n{two} PRE 2\n{two} POST 2\n{one} PREUN 1\n{one} POSTUN 1\n{two} POSTTRANS 2\n{one} POSTUNTRANS 1"
        )),
        (true, false) => Some(format!(
            "{two} PRETRANS 2\n{two} PRE 2\n{one} PREUNTRANS 1\n{two} POST 2\n{one} PREUN 1\n{one} POSTUN 1\n{two} POSTTRANS 2\n{one} POSTUNTRANS 1"
        )),
    };
    let mut steps = vec![
        Step::Sh(
            "mkdir -p bin && cp /usr/bin/busybox bin/busybox && for a in sh cat wc; do ln -s busybox bin/$a; done"
                .into(),
        ),
        Step::Rpm {
            args: vec!["-U".into()],
            pkgs: vec!["fakeshell".into()],
            env: vec![],
            want: Want::default(),
        },
        step_u(
            "1",
            0,
            &format!("{one} PRETRANS 1\n{one} PRE 1\n{one} POST 1\n{one} POSTTRANS 1"),
            None,
        ),
        match upgrade {
            Some(out) => step_u("2", 0, &out, None),
            // rpm 4.20 marks the erasure failed and skips it, and fails.
            None => step_u(
                "2",
                1,
                // (`$1` of %posttrans counts the old version still there;
                // a failed element runs no %postuntrans.)
                &format!("{two} PRETRANS 2\n{one} PREUNTRANS 1\n{two} PRE 2\n{two} POST 2\n{two} POSTTRANS 3"),
                Some("error: untrans-1.0-1.noarch: erase skipped"),
            ),
        },
    ];
    if !fail {
        let erase = if lua {
            format!("{two} PREUN 0\n{two} PREUNTRANS 0\n{two} POSTUN 0\n{two} POSTUNTRANS 0")
        } else {
            format!("{two} PREUNTRANS 0\n{two} PREUN 0\n{two} POSTUN 0\n{two} POSTUNTRANS 0")
        };
        steps.push(Step::Erase {
            args: vec!["untrans".into()],
            want: Want {
                status: Some(0),
                stdout: Some(erase),
                stderr: None,
                own_stdout: false,
                unheld: false,
            },
        });
    }
    Scenario {
        id: id.into(),
        file: "rpm 4.20",
        title,
        what: what.into(),
        pkgs: vec![
            ("fakeshell".into(), specs::fakeshell()),
            ("1".into(), untrans("1", lua, fail)),
            ("2".into(), untrans("2", lua, false)),
        ],
        steps,
    }
}

/// `supkg` 1.0 with `/usr/lib/sysusers.d/supkg.conf` creating the user
/// `suuser` (rpm 4.20's `rpmbuild` makes the `user(suuser)` and
/// `group(suuser)` provides from it).
pub fn sysusers_spec() -> Spec {
    let mut p = Spec::new("supkg", "1.0");
    p.install = "mkdir -p \"$B/usr/lib/sysusers.d\"\n\
                 echo 'u suuser - \"Su user\" /var/lib/su' > \"$B/usr/lib/sysusers.d/supkg.conf\""
        .into();
    p.files = "/usr/lib/sysusers.d/supkg.conf".into();
    p
}

/// [`sysusers_spec`] installed into a root with a database.
fn sysusers() -> Scenario {
    let p = sysusers_spec();
    Scenario {
        id: "sysusers-1.1".into(),
        file: "rpm 4.20",
        title: "sysusers",
        what: "a package whose sysusers.d file rpm 4.20 turns into a user and a group".into(),
        pkgs: vec![("su".into(), p)],
        steps: vec![step_u("su", 0, "", None)],
    }
}

/// Every `%preuntrans`/`%postuntrans` scenario, and the sysusers one.
pub fn all() -> Vec<Scenario> {
    vec![
        sysusers(),
        scenario(
            "untrans-1.1",
            "%preuntrans and %postuntrans",
            "an upgrade and an erase of a package with every scriptlet: the old version's %preuntrans after every %pretrans, its %postuntrans after every %posttrans, their $1",
            false,
            false,
        ),
        scenario(
            "untrans-1.2",
            "<lua> %preuntrans and %postuntrans",
            "the same with both in <lua> (rpm's Lua, its arg table)",
            true,
            false,
        ),
        scenario(
            "untrans-1.3",
            "a failing %preuntrans",
            "an upgrade whose old version's %preuntrans fails: rpm 4.20 marks the erasure failed",
            false,
            true,
        ),
    ]
}
