//! The demo's package repository: six small packages built on the spot by
//! `rpmbuild` from the spec files embedded in the binary (`specs/`), then
//! indexed by `createrepo_c`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::output::CliError;

/// The embedded spec files, by package name. `demo-app` requires the rest
/// (through `demo-config`, `demo-data`, `demo-lib` and `demo-docs`, which
/// require `demo-filesystem`).
pub const SPECS: [(&str, &str); 6] = [
    (
        "demo-filesystem",
        include_str!("specs/demo-filesystem.spec"),
    ),
    ("demo-config", include_str!("specs/demo-config.spec")),
    ("demo-data", include_str!("specs/demo-data.spec")),
    ("demo-lib", include_str!("specs/demo-lib.spec")),
    ("demo-docs", include_str!("specs/demo-docs.spec")),
    ("demo-app", include_str!("specs/demo-app.spec")),
];

/// What `dnf install` is asked for: it pulls in the other packages.
pub const TOP: &str = "demo-app";

/// The payload compressor: zstd at level 3 (Fedora's packages use level
/// 19, which would make building the repository the slowest part of the
/// demo; installing decompresses at about the same speed).
const PAYLOAD: &str = "w3.zstdio";

/// The programs the package demo runs, with the Debian package of each.
pub const TOOLS: [(&str, &str); 4] = [
    ("rpmbuild", "rpm"),
    ("rpm", "rpm"),
    ("createrepo_c", "createrepo-c"),
    ("dnf", "dnf"),
];

/// The first of [`TOOLS`] not on `PATH`, with its Debian package.
pub fn missing_tool() -> Option<(&'static str, &'static str)> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    TOOLS
        .into_iter()
        .find(|(tool, _)| !std::env::split_paths(&path).any(|d| d.join(tool).is_file()))
}

/// Build every package (the `rpmbuild`s run at the same time) into
/// `work/repo` and index it; `home` is the `HOME` they run with. Returns
/// the repository directory.
pub fn build(work: &Path, home: &Path) -> Result<PathBuf, CliError> {
    let repo = work.join("repo");
    // The rpmbuilds run at once and each makes `_rpmdir` and its arch
    // directory (the specs are all `noarch`) when missing: made first,
    // they race for none (rpm 4.18 fails a build whose mkdir finds the
    // directory another build just made).
    mkdir(&repo.join("noarch"))?;
    let mut children = Vec::new();
    for (name, text) in SPECS {
        let top = work.join("rpmbuild").join(name);
        for sub in ["SPECS", "SOURCES", "BUILD", "BUILDROOT"] {
            mkdir(&top.join(sub))?;
        }
        let spec = top.join("SPECS").join(format!("{name}.spec"));
        std::fs::write(&spec, text)
            .map_err(|e| CliError::new(format!("cannot write `{}`", spec.display()), e))?;
        let child = Command::new("rpmbuild")
            .env("HOME", home)
            .arg("--define")
            .arg(format!("_topdir {}", top.display()))
            .arg("--define")
            .arg(format!("_rpmdir {}", repo.display()))
            .arg("--define")
            .arg(format!("_binary_payload {PAYLOAD}"))
            .args(["--quiet", "--nodeps", "-bb"])
            .arg(&spec)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| spawn_error("rpmbuild", e))?;
        children.push((name, child));
    }
    for (name, child) in children {
        let out = child
            .wait_with_output()
            .map_err(|e| CliError::new("cannot wait for rpmbuild", e))?;
        check(&out, &format!("rpmbuild of the demo package {name}"))?;
    }
    let out = Command::new("createrepo_c")
        .args(["--quiet", "--no-database"])
        .arg(&repo)
        .output()
        .map_err(|e| spawn_error("createrepo_c", e))?;
    check(&out, "createrepo_c of the demo repository")?;
    Ok(repo)
}

/// Make `dir` and its parents.
pub fn mkdir(dir: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::new(format!("cannot create `{}`", dir.display()), e))
}

/// The error of a program that could not be started, with the Debian
/// package that has it.
pub fn spawn_error(tool: &str, e: std::io::Error) -> CliError {
    let package = TOOLS
        .iter()
        .find(|(t, _)| *t == tool)
        .map_or("", |(_, p)| p);
    CliError::new(format!("cannot run `{tool}`"), e).hint(format!(
        "install it (Debian package `{package}`), or run `cowkit demo --no-packages`"
    ))
}

/// An error unless `out` is a success; the error shows its stderr.
pub fn check(out: &Output, what: &str) -> Result<(), CliError> {
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    Err(CliError::msg(format!(
        "{what} failed ({}):\n{}{}",
        out.status,
        stdout.trim_end(),
        stderr.trim_end()
    )))
}
