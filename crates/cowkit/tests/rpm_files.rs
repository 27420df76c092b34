//! Every file as rpm 4.18 places it: each test runs the same steps with
//! the real `rpm -U` on one root and `cowkit install` on its twin, and
//! compares the exit status, the tree (types, modes, owners, content,
//! link targets, `.rpmnew`/`.rpmsave`/`.rpmorig`, the root directory
//! itself), `rpm -qa`, `rpm -Va` and the file states rpm's database
//! records (`%{FILESTATES:fstate}`).
//!
//! Needs root (owners) and the rig's XFS.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{as_root, cowkit, run, tmp};
use cowkit_testutil::repo::{dbpath, rpm_in};
use cowkit_testutil::tree::{mkdir, snapshot, Tree};
use cowkit_testutil::{run_ok, scratch, Fs};

/// A package built from its parts: `name`, `version`, `arch` (`noarch`,
/// `x86_64`, `i686`), `preamble` before `%description`, `install` its
/// `%install` shell (`$B` the build root), `files` its `%files`.
struct Spec<'a> {
    name: &'a str,
    version: &'a str,
    arch: &'a str,
    preamble: &'a str,
    install: &'a str,
    files: &'a str,
}

impl Spec<'_> {
    fn build(&self, dir: &Path) -> PathBuf {
        let Spec {
            name,
            version,
            arch,
            preamble,
            install,
            files,
        } = self;
        // Built for an architecture with `--target`; `BuildArch` only
        // for noarch.
        let build_arch = if *arch == "noarch" {
            "BuildArch: noarch"
        } else {
            ""
        };
        let spec = format!(
            "Name: {name}\nVersion: {version}\nRelease: 1\nSummary: x\nLicense: MIT\n\
             {build_arch}\n{preamble}\n\
             %global debug_package %{{nil}}\n%global __os_install_post %{{nil}}\n\
             %global _build_id_links none\n\
             %description\nx\n%install\nB=\"$RPM_BUILD_ROOT\"\n{install}\n\
             %files\n{files}\n"
        );
        let top = tempfile::tempdir_in(mkdir(dir)).unwrap();
        let spec_path = top.path().join("test.spec");
        std::fs::write(&spec_path, &spec).unwrap();
        run_ok(
            Command::new("rpmbuild")
                .arg("--define")
                .arg(format!("_topdir {}", top.path().display()))
                .args(["--define", "_binary_payload w9.gzdio"])
                .args(["--target", arch, "--nodeps", "-bb"])
                .arg(&spec_path),
            &format!("rpmbuild of\n{spec}\n"),
        );
        let built = std::fs::read_dir(top.path().join("RPMS").join(arch))
            .unwrap()
            .next()
            .expect("rpmbuild made a package")
            .unwrap()
            .path();
        let dst = dir.join(built.file_name().unwrap());
        std::fs::copy(&built, &dst).unwrap();
        dst
    }
}

/// A `noarch` package of `name`-`version` with `install` and `files`.
fn noarch(dir: &Path, name: &str, version: &str, install: &str, files: &str) -> PathBuf {
    Spec {
        name,
        version,
        arch: "noarch",
        preamble: "",
        install,
        files,
    }
    .build(dir)
}

/// Two empty roots: `rpm` for rpm, `cowkit` for cowkit.
struct Twin {
    rpm: PathBuf,
    ck: PathBuf,
}

/// What a root looks like: the tree but the database (the root directory
/// itself as ``), `rpm -qa`, `rpm -Va`, and every installed file's state.
#[derive(Debug, PartialEq)]
struct State {
    tree: Vec<(String, String)>,
    qa: Vec<String>,
    va: Vec<String>,
    states: Vec<String>,
}

fn lines(c: &mut Command) -> Vec<String> {
    let out = c.output().unwrap();
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

fn state(root: &Path) -> State {
    let db = dbpath().trim_start_matches('/').to_string();
    let tree: Tree = snapshot(root)
        .into_iter()
        .filter(|(p, _)| *p != db && !db.starts_with(&format!("{p}/")) && !p.starts_with(&db))
        .collect();
    let mut out: Vec<(String, String)> = tree
        .iter()
        .map(|(p, e)| (p.clone(), format!("{:?}", (e.shape(), e.uid, e.gid))))
        .collect();
    let m = std::fs::metadata(root).unwrap();
    use std::os::unix::fs::MetadataExt;
    out.push((
        "/".into(),
        format!("{:o} {}:{}", m.mode() & 0o7777, m.uid(), m.gid()),
    ));
    let has_db = root.join(&db).exists();
    let q = |args: &[&str]| {
        if has_db {
            lines(rpm_in(root).args(args))
        } else {
            Vec::new()
        }
    };
    State {
        tree: out,
        qa: q(&["-qa", "--qf", "%{NEVRA}\\n"]),
        va: q(&["-Va"]),
        states: q(&[
            "-qa",
            "--qf",
            "[%{=NEVRA} %{FILESTATES:fstate} %{FILENAMES}\\n]",
        ]),
    }
}

impl Twin {
    fn new(dir: &Path) -> Twin {
        Twin {
            rpm: mkdir(&dir.join("rpm")),
            ck: mkdir(&dir.join("cowkit")),
        }
    }

    /// `rpm -U ARGS PKGS` on one root, `cowkit install ARGS PKGS` on the
    /// other: the same exit status and the same roots after.
    fn step(&self, args: &[&str], pkgs: &[&Path]) {
        let r = rpm_in(&self.rpm)
            .args(["-U", "--nodeps"])
            .args(args)
            .args(pkgs)
            .output()
            .unwrap();
        let c = run(cowkit()
            .arg("install")
            .arg("--root")
            .arg(&self.ck)
            .arg("--dbpath")
            .arg(dbpath())
            .arg("--nodeps")
            .args(args)
            .args(pkgs));
        assert_eq!(
            c.ok,
            r.status.success(),
            "exit status: rpm {}\n{}\ncowkit:\n{}",
            r.status,
            String::from_utf8_lossy(&r.stderr),
            c.stderr
        );
        self.same(&format!(
            "after -U {args:?} {pkgs:?}\ncowkit said:\n{}",
            c.stderr
        ));
    }

    /// `f` run on both roots (an admin's edit).
    fn edit(&self, f: impl Fn(&Path)) {
        f(&self.rpm);
        f(&self.ck);
    }

    fn same(&self, when: &str) {
        let (a, b) = (state(&self.rpm), state(&self.ck));
        if a != b {
            let only = |x: &[(String, String)], y: &[(String, String)]| -> Vec<(String, String)> {
                x.iter().filter(|e| !y.contains(e)).cloned().collect()
            };
            panic!(
                "{when}\nrpm's root but not cowkit's: {:#?}\ncowkit's but not rpm's: {:#?}\n\
                 rpm -qa {:?} / {:?}\nrpm -Va {:?} / {:?}\nstates rpm {:#?}\nstates cowkit {:#?}",
                only(&a.tree, &b.tree),
                only(&b.tree, &a.tree),
                a.qa,
                b.qa,
                a.va,
                b.va,
                a.states,
                b.states
            );
        }
    }
}

fn setup(test: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    if !as_root(test, "files are owned by root and other users") {
        return None;
    }
    let dir = scratch(Fs::Xfs)?;
    let pk = mkdir(&tmp().join(format!("rpm-files-{test}")));
    Some((dir, pk))
}

/// Fedora's `filesystem` owns `/` (`%dir %attr(555,root,root) /`): rpm
/// gives the root directory that mode and owner and creates nothing.
/// cowkit used to refuse the package (`/` "names the root itself").
#[test]
fn root_directory_owned_by_a_package() {
    let Some((dir, pk)) = setup("root_directory_owned_by_a_package") else {
        return;
    };
    let fs = noarch(
        &pk,
        "ck-fs",
        "1",
        "mkdir -p \"$B/usr/share/ck-fs\" \"$B/etc\"\necho x > \"$B/usr/share/ck-fs/f\"",
        "%dir %attr(555,root,root) /\n%dir /etc\n/usr/share/ck-fs",
    );
    let fs2 = noarch(
        &pk,
        "ck-fs",
        "2",
        "mkdir -p \"$B/usr/share/ck-fs\" \"$B/etc\"\necho y > \"$B/usr/share/ck-fs/f\"",
        "%dir %attr(551,root,root) /\n%dir /etc\n/usr/share/ck-fs",
    );
    let t = Twin::new(dir.path());
    t.step(&[], &[&fs]);
    t.step(&[], &[&fs2]);
}

/// rpm's `configtest` package (`tests/data/SPECS/configtest.spec`):
/// `/etc/my.conf` holding `data` (a file, or a symlink to `data` when
/// `link`), `%config` (`(noreplace)`) or plain.
fn configtest(pk: &Path, sub: &str, ver: &str, data: &str, how: &str, link: bool) -> PathBuf {
    let name = if sub.is_empty() {
        "configtest".to_string()
    } else {
        format!("configtest-{sub}")
    };
    let tag: String = format!("{data}-{how}-{link}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = mkdir(&pk.join(format!("{name}-{ver}-{tag}")));
    let install = if link {
        format!("mkdir -p \"$B/etc\"\nln -s '{data}' \"$B/etc/my.conf\"")
    } else {
        format!("mkdir -p \"$B/etc\"\necho '{data}' > \"$B/etc/my.conf\"")
    };
    let files = format!("%defattr(-,root,root,-)\n{how} /etc/my.conf");
    noarch(&dir, &name, ver, &install, &files)
}

fn write_conf(content: &str) -> impl Fn(&Path) + '_ {
    move |root| std::fs::write(root.join("etc/my.conf"), format!("{content}\n")).unwrap()
}

fn link_conf(target: &str) -> impl Fn(&Path) + '_ {
    move |root| {
        let p = root.join("etc/my.conf");
        let _ = std::fs::remove_file(&p);
        std::os::unix::fs::symlink(target, &p).unwrap();
    }
}

/// rpmconfig.at, "upgrade changing shared config" and "upgrade shared
/// config": a config file two packages share. Unmodified: replaced, no
/// `.rpmsave` (cowkit made one); modified: the edit is kept in `.rpmsave`
/// (cowkit's held the new content); edited to the new content: nothing
/// saved (cowkit saved it).
#[test]
fn shared_config_files() {
    let Some((dir, pk)) = setup("shared_config_files") else {
        return;
    };
    let a1 = configtest(&pk, "A", "1.0", "foo-1.0", "%config", false);
    let b1 = configtest(&pk, "B", "1.0", "foo-1.0", "%config", false);
    let a2 = configtest(&pk, "A", "2.0", "foo-2.0", "%config", false);
    let b2 = configtest(&pk, "B", "2.0", "foo-2.0", "%config", false);
    for (k, edit) in [None, Some("otherstuff"), Some("foo-2.0")]
        .into_iter()
        .enumerate()
    {
        let t = Twin::new(&dir.path().join(k.to_string()));
        t.step(&[], &[&a1, &b1]);
        if let Some(e) = edit {
            t.edit(write_conf(e));
        }
        t.step(&[], &[&a2, &b2]);
    }
    // Shared and unchanged between versions, edited: kept.
    let a2same = configtest(&pk, "A", "2.0", "foo-1.0", "%config", false);
    let b2same = configtest(&pk, "B", "2.0", "foo-1.0", "%config", false);
    let t = Twin::new(&dir.path().join("same"));
    t.step(&[], &[&a1, &b1]);
    t.edit(write_conf("otherstuff"));
    t.step(&[], &[&a2same, &b2same]);
}

/// rpmconfig.at and rpmconfig3.at: one package's config file through an
/// upgrade. Edited to exactly the new content: no `.rpmnew`/`.rpmsave`;
/// a modified config that becomes a plain file: `.rpmsave` (cowkit
/// overwrote it); and the plain cases.
#[test]
fn config_file_upgrades() {
    let Some((dir, pk)) = setup("config_file_upgrades") else {
        return;
    };
    let cases: [(&str, &str, Option<&str>); 8] = [
        ("%config", "%config", None),
        ("%config", "%config", Some("otherstuff")),
        ("%config", "%config", Some("foo-2.0")),
        (
            "%config(noreplace)",
            "%config(noreplace)",
            Some("otherstuff"),
        ),
        ("%config(noreplace)", "%config(noreplace)", Some("foo-2.0")),
        ("%config", "", Some("otherstuff")),
        ("", "%config", Some("otherstuff")),
        ("%config", "", None),
    ];
    for (k, (old, new, edit)) in cases.into_iter().enumerate() {
        let v1 = configtest(&pk, "", "1.0", "foo-1.0", old, false);
        let v2 = configtest(&pk, "", "2.0", "foo-2.0", new, false);
        let t = Twin::new(&dir.path().join(k.to_string()));
        t.step(&[], &[&v1]);
        if let Some(e) = edit {
            t.edit(write_conf(e));
        }
        t.step(&[], &[&v2]);
    }
}

/// rpmconfig2.at: config symlinks get rpm's config handling: an
/// admin's changed link is kept (`noreplace`: the new one as `.rpmnew`;
/// plain `%config`: the changed one as `.rpmsave`); a link changed to the
/// new target is left (cowkit had no config handling for symlinks).
#[test]
fn config_symlinks() {
    let Some((dir, pk)) = setup("config_symlinks") else {
        return;
    };
    for (k, (how, edit)) in [
        ("%config", None),
        ("%config", Some("otherstuff")),
        ("%config(noreplace)", Some("otherstuff")),
        ("%config(noreplace)", Some("foo-2.0")),
        ("%config(noreplace)", None),
    ]
    .into_iter()
    .enumerate()
    {
        let v1 = configtest(&pk, "", "1.0", "foo-1.0", how, true);
        let v2 = configtest(&pk, "", "2.0", "foo-2.0", how, true);
        let t = Twin::new(&dir.path().join(k.to_string()));
        t.step(&[], &[&v1]);
        if let Some(e) = edit {
            t.edit(link_conf(e));
        }
        t.step(&[], &[&v2]);
    }
    // A config symlink on disk before the package (`.rpmorig`).
    let v1 = configtest(&pk, "", "1.0", "foo-1.0", "%config", true);
    let t = Twin::new(&dir.path().join("orig"));
    t.edit(|r| {
        std::fs::create_dir_all(r.join("etc")).unwrap();
        link_conf("mine")(r)
    });
    t.step(&[], &[&v1]);
}

/// `--excludedocs` and `--excludepath`: the files are not installed, and
/// rpm records them "not installed" (cowkit refused both options; rpm's
/// `--justdb` registration alone records them "normal").
#[test]
fn excluded_docs_and_paths() {
    let Some((dir, pk)) = setup("excluded_docs_and_paths") else {
        return;
    };
    let p = noarch(
        &pk,
        "ck-docs",
        "1",
        "mkdir -p \"$B/usr/share/doc/ck-docs\" \"$B/usr/bin\" \"$B/usr/share/ck-docs/sub\"\n\
         echo doc > \"$B/usr/share/doc/ck-docs/README\"\necho lic > \"$B/usr/share/doc/ck-docs/COPYING\"\n\
         echo bin > \"$B/usr/bin/ck-docs\"\necho data > \"$B/usr/share/ck-docs/sub/data\"",
        "%doc /usr/share/doc/ck-docs/README\n%license /usr/share/doc/ck-docs/COPYING\n\
         /usr/bin/ck-docs\n/usr/share/ck-docs",
    );
    let t = Twin::new(&dir.path().join("docs"));
    t.step(&["--excludedocs"], &[&p]);
    let t = Twin::new(&dir.path().join("path"));
    t.step(&["--excludepath", "/usr/share/ck-docs"], &[&p]);
}

/// A file and a broken symlink that become directories on upgrade: rpm
/// removes them and makes the directory (cowkit failed with "Not a
/// directory", or midway).
#[test]
fn type_changes_to_directories() {
    let Some((dir, pk)) = setup("type_changes_to_directories") else {
        return;
    };
    let v1 = noarch(
        &pk,
        "ck-type",
        "1",
        "mkdir -p \"$B/usr/share/ck-type\"\necho f > \"$B/usr/share/ck-type/a\"\n\
         ln -s /nowhere \"$B/usr/share/ck-type/b\"",
        "/usr/share/ck-type",
    );
    let v2 = noarch(
        &pk,
        "ck-type",
        "2",
        "mkdir -p \"$B/usr/share/ck-type/a\" \"$B/usr/share/ck-type/b\"\n\
         echo x > \"$B/usr/share/ck-type/a/x\"\necho y > \"$B/usr/share/ck-type/b/y\"",
        "/usr/share/ck-type",
    );
    let t = Twin::new(dir.path());
    t.step(&[], &[&v1]);
    t.step(&[], &[&v2]);
}

/// A static ELF program of `bits` (32 or 64) built by `gcc` into `dir`:
/// what makes rpmbuild colour a file (1 for ELF32, 2 for ELF64).
fn elf(dir: &Path, bits: u32) -> PathBuf {
    let src = dir.join("start.c");
    std::fs::write(&src, "void _start(void) { for (;;) ; }\n").unwrap();
    let out = dir.join(format!("hello{bits}"));
    run_ok(
        Command::new("gcc")
            .arg(if bits == 32 { "-m32" } else { "-m64" })
            .args(["-nostdlib", "-static", "-o"])
            .arg(&out)
            .arg(&src),
        "gcc (a static ELF program of each class)",
    );
    out
}

/// A multilib pair (x86_64 and i686 of one package sharing
/// `/usr/bin/hello`) in one transaction and one after the other: rpm
/// keeps the 64-bit file (`%_prefer_color` 2) and records the other
/// "wrong color" (cowkit wrote the i686 one over it, both "normal").
#[test]
fn multilib_colours() {
    let Some((dir, pk)) = setup("multilib_colours") else {
        return;
    };
    let build = |arch: &str, bits: u32| {
        Spec {
            name: "ck-hello",
            version: "1",
            arch,
            preamble: "AutoReqProv: no",
            install: &format!(
                "mkdir -p \"$B/usr/bin\" \"$B/usr/share/ck-hello\"\n\
                 cp '{}' \"$B/usr/bin/hello\"\nchmod 755 \"$B/usr/bin/hello\"\n\
                 echo same > \"$B/usr/share/ck-hello/data\"",
                elf(&mkdir(&pk.join(format!("elf{bits}"))), bits).display()
            ),
            files: "/usr/bin/hello\n/usr/share/ck-hello",
        }
        .build(&mkdir(&pk.join(arch)))
    };
    let x64 = build("x86_64", 64);
    let x32 = build("i686", 32);
    let colours = lines(
        Command::new("rpm")
            .args(["-qp", "--qf", "[%{FILECOLORS} %{FILENAMES}\\n]"])
            .arg(&x32),
    );
    assert!(
        colours.iter().any(|l| l == "1 /usr/bin/hello"),
        "{colours:?}"
    );
    let t = Twin::new(&dir.path().join("one"));
    t.step(&[], &[&x32, &x64]);
    let t = Twin::new(&dir.path().join("two"));
    t.step(&[], &[&x64]);
    t.step(&[], &[&x32]);
    let t = Twin::new(&dir.path().join("three"));
    t.step(&[], &[&x32]);
    t.step(&[], &[&x64]);
}

/// A package whose file cannot be placed inside the root (a `..`
/// component) refuses the whole transaction before anything is touched:
/// the other package of the transaction is not placed and nothing is
/// registered (cowkit used to place and register the others and fail
/// that one alone, after the fact).
#[test]
fn unplaceable_package_refuses_the_whole_transaction() {
    let Some((dir, pk)) = setup("unplaceable_package_refuses_the_whole_transaction") else {
        return;
    };
    let good = noarch(
        &pk,
        "ck-good",
        "1",
        "mkdir -p \"$B/usr/share/ck-good\"\necho x > \"$B/usr/share/ck-good/f\"",
        "/usr/share/ck-good",
    );
    let bad = pk.join("ck-dotdot.rpm");
    std::fs::write(
        &bad,
        cowkit_testutil::forge::Package::new(
            "ck-dotdot",
            vec![cowkit_testutil::forge::File::regular(
                "/usr/share/ck-dotdot/../escape",
                b"x\n",
            )],
        )
        .build(),
    )
    .unwrap();
    let root = mkdir(&dir.path().join("root"));
    let r = run(cowkit()
        .arg("install")
        .arg("--root")
        .arg(&root)
        .arg("--dbpath")
        .arg(dbpath())
        .arg("--nodeps")
        .arg(&good)
        .arg(&bad));
    assert!(!r.ok, "{}", r.stderr);
    assert!(
        r.stderr.contains("ck-dotdot") && r.stderr.contains("`..` component"),
        "{}",
        r.stderr
    );
    let left: Vec<String> = snapshot(&root).into_keys().collect();
    assert!(left.is_empty(), "the root changed: {left:?}");
}

/// An admin's symlink in place of a directory: rpm follows it only when
/// root or the directory's owner owns the link (`fsmOpenat`, the fix of
/// CVE-2021-35939). Where the package owns the directory, rpm replaces
/// an unsafe link by the directory (rpmreplace.at's "upgrade invalid
/// locally symlinked directory"); where the path only passes through
/// it, the package fails. A link owned by root, or by the directory's
/// owner, is followed.
#[test]
fn symlinked_directories_followed_only_when_safe() {
    let Some((dir, pk)) = setup("symlinked_directories_followed_only_when_safe") else {
        return;
    };
    // Files below /opt/ck-pass, which the package does not own.
    let pass = noarch(
        &pk,
        "ck-pass",
        "1",
        "mkdir -p \"$B/opt/ck-pass\"\necho p > \"$B/opt/ck-pass/f\"",
        "/opt/ck-pass/f",
    );
    for (n, (link_owner, dir_owner)) in [("65534", "0"), ("0", "65534"), ("65534", "65534")]
        .into_iter()
        .enumerate()
    {
        let t = Twin::new(&dir.path().join(n.to_string()));
        t.edit(|r| {
            run_ok(
                Command::new("sh").arg("-c").arg(format!(
                    "mkdir -p {r}/opt/real && chown {dir_owner}:{dir_owner} {r}/opt/real && \
                     ln -s real {r}/opt/ck-pass && chown -h {link_owner}:{link_owner} {r}/opt/ck-pass",
                    r = r.display()
                )),
                "the admin's symlink",
            );
        });
        t.step(&[], &[&pass]);
    }
}

/// `--define '_minimize_writes 1'`: a file (and a symlink) that an upgrade
/// does not change, and that is unchanged on disk, is only touched, as
/// rpm touches it (`FA_TOUCH`): the inode stays, the new mode and times
/// are set. A changed file, a hardlinked one (rpm cannot touch those) and
/// every file without the macro get a new inode, in both roots.
#[test]
fn minimize_writes_touches_unchanged_files() {
    let Some((dir, pk)) = setup("minimize_writes_touches_unchanged_files") else {
        return;
    };
    let build = |v: &str, changed: &str, mode: &str| {
        noarch(
            &pk,
            "mw",
            v,
            &format!(
                "mkdir -p $B/opt/mw\necho same > $B/opt/mw/same\necho {changed} > $B/opt/mw/changed\n\
                 echo hl > $B/opt/mw/h1\nln $B/opt/mw/h1 $B/opt/mw/h2\nln -s same $B/opt/mw/link\n\
                 touch -d @{} $B/opt/mw/*",
                if v == "1" { 1_000_000 } else { 2_000_000 }
            ),
            &format!("%dir /opt/mw\n%attr({mode},root,root) /opt/mw/same\n/opt/mw/changed\n/opt/mw/h1\n/opt/mw/h2\n/opt/mw/link"),
        )
    };
    let v1 = build("1", "a", "644");
    let v2 = build("2", "b", "600");
    let v3 = build("3", "c", "640");
    use std::os::unix::fs::MetadataExt;
    let inodes = |root: &Path| -> Vec<u64> {
        ["same", "changed", "h1", "link"]
            .iter()
            .map(|n| {
                std::fs::symlink_metadata(root.join("opt/mw").join(n))
                    .unwrap()
                    .ino()
            })
            .collect()
    };
    let t = Twin::new(dir.path());
    let on = ["--define", "_minimize_writes 1"];
    t.step(&on, &[&v1]);
    let before = (inodes(&t.rpm), inodes(&t.ck));
    t.step(&on, &[&v2]);
    let after = (inodes(&t.rpm), inodes(&t.ck));
    let kept =
        |b: &[u64], a: &[u64]| -> Vec<bool> { b.iter().zip(a).map(|(x, y)| x == y).collect() };
    assert_eq!(kept(&before.0, &after.0), [true, false, false, true], "rpm");
    assert_eq!(
        kept(&before.1, &after.1),
        [true, false, false, true],
        "cowkit"
    );
    // Without the macro: written again.
    t.step(&["--define", "_minimize_writes 0"], &[&v3]);
    let last = (inodes(&t.rpm), inodes(&t.ck));
    assert_eq!(kept(&after.0, &last.0), [false, false, false, false], "rpm");
    assert_eq!(
        kept(&after.1, &last.1),
        [false, false, false, false],
        "cowkit"
    );
}

/// `--nocaps`: rpm sets no file capabilities (its database still records
/// them, so `rpm -V` then shows the file's `P`); without it the
/// capability is set. The same in both roots, both ways.
#[test]
fn nocaps_leaves_capabilities_unset() {
    let Some((dir, pk)) = setup("nocaps_leaves_capabilities_unset") else {
        return;
    };
    let build = |v: &str| {
        noarch(
            &pk,
            "ck-caps",
            v,
            "mkdir -p $B/usr/libexec/ck-caps\necho x > $B/usr/libexec/ck-caps/ping",
            "%caps(cap_net_raw=ep) /usr/libexec/ck-caps/ping",
        )
    };
    let (v1, v2) = (build("1"), build("2"));
    let t = Twin::new(dir.path());
    t.step(&["--nocaps"], &[&v1]);
    assert_eq!(
        cowkit_testutil::tree::caps_of(&t.ck.join("usr/libexec/ck-caps/ping")),
        None,
        "cowkit set a capability under --nocaps"
    );
    t.step(&[], &[&v2]);
    assert!(
        cowkit_testutil::tree::caps_of(&t.ck.join("usr/libexec/ck-caps/ping")).is_some(),
        "no capability without --nocaps"
    );
}
