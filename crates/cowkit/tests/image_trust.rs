//! Issue 25, item 1: root mounting an image that a user built, in a store
//! the user owns. The user (`nobody` here) controls every byte of the
//! store: the image's metadata (owners, modes, devices), its redirects, and
//! what `objects` is. Root's mount must give them neither root, nor a
//! device, nor a host file they cannot read; root must not write into
//! their store.
//!
//! Every test plays the attacker with `setpriv --reuid=nobody`, and root
//! runs `cowkit` as an administrator would.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{as_root, cowkit, run, Run};
use cowkit_testutil::{find, scratch, sha256_hex, Fs};

fn sh(script: &str, dir: &Path) {
    let st = Command::new("bash")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success(), "{script}");
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `prog args` as `nobody` in `dir` (relative paths from there: the rig's
/// directories above the scratch directory are root's alone).
fn as_nobody(dir: &Path, prog: &str, args: &[&str]) -> Output {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", prog]);
    c.args(args).current_dir(dir);
    c.output().unwrap()
}

const MOTD: &[u8] = b"issue 25: a file anyone may read\n";
const MOTD2: &[u8] = b"issue 25: another file anyone may read\n";
const SECRET: &[u8] = b"root's secret, mode 0600\n";

/// The attacker's package, as the issue describes it: `/rootsh` (a copy of
/// `id`) root-owned 04755, `/disk` a block device and `/zero` a character
/// device (`/dev/zero`'s numbers), both 0666, and two plain files.
fn evil_package(dir: &Path) -> PathBuf {
    let install = format!(
        "%global _binaries_in_noarch_packages_terminate_build 0\nmkdir -p %{{buildroot}}\ncp /usr/bin/id %{{buildroot}}/rootsh\nprintf '{}' > %{{buildroot}}/motd\nprintf '{}' > %{{buildroot}}/motd2\n",
        String::from_utf8_lossy(MOTD).trim_end().to_string() + "\\n",
        String::from_utf8_lossy(MOTD2).trim_end().to_string() + "\\n",
    );
    let files = "%attr(4755,root,root) /rootsh\n%attr(0644,root,root) /motd\n%attr(0644,root,root) /motd2\n%dev(b,7,0) %attr(0666,root,root) /disk\n%dev(c,1,5) %attr(0666,root,root) /zero\n";
    cowkit_testutil::rpm::build_rpm_in(dir, "ck-evil", &install, files, "w.ufdio")
}

/// The scene: `D` (root's, 0755) holds `user/` (nobody's) with the
/// package, a copy of `cowkit` and nobody's store `user/store` with the
/// image `evil` that nobody made; `D/secret` is root's, 0600; `D/mnt` is
/// where root mounts.
struct Scene {
    _t: tempfile::TempDir,
    d: PathBuf,
    user: PathBuf,
    store: PathBuf,
    secret: PathBuf,
    mnt: PathBuf,
}

fn scene() -> Option<Scene> {
    // Under the temporary directory (`/tmp`), not the rig's scratch
    // directories: nobody's `cowkit` needs a path it can walk, and the
    // rig's own directories are root's alone.
    scratch(Fs::Xfs)?;
    let t = tempfile::Builder::new()
        .prefix("ck-i25-")
        .tempdir()
        .unwrap();
    let d = t.path().to_path_buf();
    let user = d.join("user");
    sh("chmod 755 . && mkdir user mnt && chown nobody: user", &d);
    std::fs::copy(env!("CARGO_BIN_EXE_cowkit"), user.join("cowkit")).unwrap();
    let pkg = evil_package(&d.join("pkgs"));
    std::fs::copy(&pkg, user.join("evil.rpm")).unwrap();
    sh("chmod 755 cowkit && chmod 644 evil.rpm", &user);
    // Two names, for redirects of either parity of length.
    let secret = d.join("secret0");
    std::fs::write(&secret, SECRET).unwrap();
    std::fs::write(d.join("secret"), SECRET).unwrap();
    sh("chmod 600 secret0 secret", &d);
    let o = as_nobody(
        &user,
        "./cowkit",
        &[
            "image", "create", "evil", "--from", "evil.rpm", "--store", "store",
        ],
    );
    assert!(o.status.success(), "nobody's image create: {}", text(&o));
    Some(Scene {
        store: user.join("store"),
        mnt: d.join("mnt"),
        _t: t,
        d,
        user,
        secret,
    })
}

/// Unmounts on drop.
struct Mounted(PathBuf);
impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Root runs `cowkit image mount NAME MNT --store STORE [extra]`.
fn root_mounts(store: &Path, name: &str, mnt: &Path, extra: &[&str]) -> (Run, Option<Mounted>) {
    let r = run(cowkit()
        .args(["image", "mount", name])
        .arg(mnt)
        .arg("--store")
        .arg(store)
        .args(extra));
    let m = r.ok.then(|| Mounted(mnt.to_path_buf()));
    (r, m)
}

/// The mount options of the mount at `mnt` (`/proc/self/mountinfo`'s
/// per-mount options, field 6).
fn mount_options(mnt: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = mnt.to_str().unwrap();
    let line = info
        .lines()
        .rfind(|l| l.split(' ').nth(4) == Some(want))
        .unwrap_or_else(|| panic!("{want} is not a mount point:\n{info}"));
    line.split(' ')
        .nth(5)
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect()
}

/// Rewrite, as the attacker, the redirect of the file whose content is
/// `content` in nobody's EROFS image to the absolute path `to`, padded with
/// `./` components to the length of the redirect it replaces (the image's
/// layout stays).
fn rewrite_redirect(s: &Scene, content: &[u8], to: &str) {
    let digest = sha256_hex(content);
    let old = format!("/{}/{}", &digest[..2], &digest[2..]);
    let pad = old.len() - to.len();
    assert!(
        pad.is_multiple_of(2),
        "`{to}` cannot be padded to {} bytes",
        old.len()
    );
    let new = format!("/{}{}", "./".repeat(pad / 2), &to[1..]);
    let image = s.store.join("images/evil.erofs");
    let mut b = std::fs::read(&image).unwrap();
    let at = find(&b, old.as_bytes()).expect("the redirect is in the image");
    b[at..at + new.len()].copy_from_slice(new.as_bytes());
    // Written by nobody: a file they own in a directory they own.
    let edited = s.user.join("edited.erofs");
    std::fs::write(&edited, &b).unwrap();
    sh("chown nobody: edited.erofs", &s.user);
    let o = as_nobody(
        &s.user,
        "sh",
        &[
            "-ec",
            "rm -f store/images/evil.erofs && mv edited.erofs store/images/evil.erofs",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
}

/// nobody reads `rel` under the mount: its bytes, or the error.
fn nobody_reads(s: &Scene, rel: &str) -> Result<Vec<u8>, String> {
    let o = as_nobody(&s.d, "cat", &[&format!("mnt/{rel}")]);
    if o.status.success() {
        Ok(o.stdout)
    } else {
        Err(text(&o))
    }
}

/// The first attack: a user's image with a setuid-root copy of
/// `id` and world-writable device nodes, mounted by root. The mount is
/// `nosuid,nodev`: nobody runs `rootsh` as themselves and cannot open the
/// devices. `--trusted` is refused for a store root does not own; on
/// root's own store it mounts with setuid honoured.
#[test]
fn a_users_image_mounts_nosuid_nodev() {
    if !as_root("a_users_image_mounts_nosuid_nodev", "mounts, setpriv") {
        return;
    }
    let Some(s) = scene() else { return };
    let (r, m) = root_mounts(&s.store, "evil", &s.mnt, &[]);
    assert!(r.ok, "root's mount of nobody's image: {}", r.stderr);
    let opts = mount_options(&s.mnt);
    assert!(
        opts.iter().any(|o| o == "nosuid") && opts.iter().any(|o| o == "nodev"),
        "the mount of a user's image lacks nosuid,nodev: {opts:?}"
    );
    let id = as_nobody(&s.d, "mnt/rootsh", &["-u"]);
    assert!(id.status.success(), "{}", text(&id));
    assert_eq!(
        String::from_utf8_lossy(&id.stdout).trim(),
        "65534",
        "the setuid-root file of a user's image gave nobody euid 0"
    );
    let zero = nobody_reads(&s, "zero");
    assert!(
        zero.as_ref()
            .is_err_and(|e| e.contains("Permission denied")),
        "nobody opened a device node of a user's image: {zero:?}"
    );
    drop(m);

    // An image root cannot trust is not mounted with setuid.
    let (r, m) = root_mounts(&s.store, "evil", &s.mnt, &["--trusted"]);
    drop(m);
    assert!(!r.ok, "--trusted mounted a user's image");
    assert!(
        r.stderr.contains("owned by") && r.stderr.contains("hint:"),
        "{}",
        r.stderr
    );

    // Root's own store: --trusted keeps setuid, the default does not.
    let rs = s.d.join("rootstore");
    let c = run(cowkit()
        .args(["image", "create", "mine", "--from"])
        .arg(s.user.join("evil.rpm"))
        .arg("--store")
        .arg(&rs));
    assert!(c.ok, "{}", c.stderr);
    let (r, m) = root_mounts(&rs, "mine", &s.mnt, &["--trusted"]);
    assert!(r.ok, "{}", r.stderr);
    let opts = mount_options(&s.mnt);
    assert!(
        !opts.iter().any(|o| o == "nosuid" || o == "nodev"),
        "{opts:?}"
    );
    let id = as_nobody(&s.d, "mnt/rootsh", &["-u"]);
    assert_eq!(
        String::from_utf8_lossy(&id.stdout).trim(),
        "0",
        "{}",
        text(&id)
    );
    drop(m);
    let (r, _m) = root_mounts(&rs, "mine", &s.mnt, &[]);
    assert!(r.ok, "{}", r.stderr);
    let opts = mount_options(&s.mnt);
    assert!(
        opts.iter().any(|o| o == "nosuid") && opts.iter().any(|o| o == "nodev"),
        "{opts:?}"
    );
}

/// The second attack: nobody replaces `STORE/objects` with a
/// symlink to `/` and points one redirect at a root-only host file. The
/// objects layer is opened without following links: the mount is refused,
/// naming `objects`, and nobody reads nothing of the host.
#[test]
fn objects_symlinked_to_root_reads_no_host_file() {
    if !as_root(
        "objects_symlinked_to_root_reads_no_host_file",
        "mounts, setpriv",
    ) {
        return;
    }
    let Some(s) = scene() else { return };
    // `/` in the issue; here the directory that holds root's file, as
    // `/tmp` may be another mount than `/` (overlayfs does not cross
    // mounts in a layer).
    rewrite_redirect(&s, MOTD, "/secret0");
    let link = format!(
        "mv store/objects store/objects.real && ln -s {} store/objects",
        s.d.display()
    );
    let o = as_nobody(&s.user, "sh", &["-ec", &link]);
    assert!(o.status.success(), "{}", text(&o));
    let (r, _m) = root_mounts(&s.store, "evil", &s.mnt, &[]);
    if r.ok {
        let got = nobody_reads(&s, "motd");
        assert!(
            got.as_deref() != Ok(SECRET),
            "nobody read root's 0600 file through the image"
        );
    }
    assert!(!r.ok, "a store whose objects is a symlink was mounted");
    assert!(
        r.stderr.contains("objects") && r.stderr.contains("symlink"),
        "{}",
        r.stderr
    );
}

/// Redirects cannot leave the objects layer: overlayfs resolves a
/// data-only layer's redirect beneath that layer, without symlinks and
/// without crossing mounts (`LOOKUP_BENEATH | LOOKUP_NO_SYMLINKS |
/// LOOKUP_NO_XDEV`). cowkit relies on that; this test holds the kernel to
/// it: a `..` chain and an absolute host path, both at root's 0600 file,
/// read nothing of it.
#[test]
fn redirects_stay_inside_the_objects() {
    if !as_root("redirects_stay_inside_the_objects", "mounts, setpriv") {
        return;
    }
    let Some(s) = scene() else { return };
    let secret = s.secret.to_str().unwrap().to_string();
    // objects → store → user → D: three `..` reach D/secret.
    rewrite_redirect(&s, MOTD, "/../../../secret");
    rewrite_redirect(&s, MOTD2, &secret);
    let (r, _m) = root_mounts(&s.store, "evil", &s.mnt, &[]);
    assert!(r.ok, "{}", r.stderr);
    for f in ["motd", "motd2"] {
        let got = nobody_reads(&s, f);
        assert!(
            got.is_err(),
            "a redirect out of the objects read something: {f}: {got:?}"
        );
        assert_ne!(got.as_deref(), Ok(SECRET), "{f}");
    }
    // As root too: the layer, not the reader's rights, stops it.
    assert!(std::fs::read(s.mnt.join("motd")).is_err());
}

/// Root does not write into a store another user owns, nor into one that
/// others can write: refused up front with the path, why and a hint.
#[test]
fn root_refuses_to_write_into_a_users_store() {
    if !as_root(
        "root_refuses_to_write_into_a_users_store",
        "mounts, setpriv",
    ) {
        return;
    }
    let Some(s) = scene() else { return };
    let tree = s.d.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("f"), b"root's file\n").unwrap();
    let before = sorted_names(&s.store.join("objects"));
    for args in [
        &["image", "create", "roots", "--from", tree.to_str().unwrap()][..],
        &["store", "import", tree.to_str().unwrap()][..],
        &["store", "gc"][..],
        &["image", "rm", "evil"][..],
    ] {
        let r = run(cowkit().args(args).arg("--store").arg(&s.store));
        assert!(!r.ok, "root wrote into nobody's store: {args:?}");
        assert!(
            r.stderr.contains("owned by") && r.stderr.contains("hint:"),
            "{args:?}: {}",
            r.stderr
        );
    }
    assert_eq!(sorted_names(&s.store.join("objects")), before);
    assert!(s.store.join("images/evil.erofs").exists());

    // A store root would make inside nobody's directory: nobody could
    // swap it for a symlink between root's steps. Refused, naming that
    // directory, and nothing is made.
    let r = run(cowkit()
        .args(["store", "import"])
        .arg(&tree)
        .arg("--store")
        .arg(s.user.join("roots")));
    assert!(!r.ok, "root made a store inside nobody's directory");
    assert!(
        r.stderr
            .contains(&format!("`{}` can be changed", s.user.display()))
            && r.stderr.contains("owned by"),
        "{}",
        r.stderr
    );
    assert!(!s.user.join("roots/objects").exists());

    // A store of root's that its group may write: refused too.
    let rs = s.d.join("grouped");
    let c = run(cowkit()
        .args(["store", "import"])
        .arg(&tree)
        .arg("--store")
        .arg(&rs));
    assert!(c.ok, "{}", c.stderr);
    sh("chmod 775 grouped/objects", &s.d);
    let r = run(cowkit()
        .args(["store", "import"])
        .arg(&tree)
        .arg("--store")
        .arg(&rs));
    assert!(!r.ok, "a group-writable objects directory was written into");
    assert!(
        r.stderr.contains("writable by its group") && r.stderr.contains("hint:"),
        "{}",
        r.stderr
    );
}

fn sorted_names(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    out.sort();
    out
}
