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
        let spec = format!(
            "Name: {name}\nVersion: {version}\nRelease: 1\nSummary: x\nLicense: MIT\n\
             BuildArch: {arch}\n{preamble}\n\
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
        self.same(&format!("after -U {args:?} {pkgs:?}\ncowkit said:\n{}", c.stderr));
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
