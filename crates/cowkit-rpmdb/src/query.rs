//! Queries of the installed packages and of rpm's order that the
//! transaction's triggers need: instances, every installed file, and the
//! order of a transaction one `rpm` command line cannot express.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::{rpm_failed, Error, Result, Rpm};

/// The Python program of [`Rpm::order_mixed`].
const ORDER_PY: &str = include_str!("order.py");

impl Rpm {
    /// Every installed package in database order: (instance, name,
    /// NEVRA). rpm numbers headers as it adds them; triggers are ordered
    /// by that number.
    pub fn instances(&self) -> Result<Vec<(u32, String, String)>> {
        let mut c = self.command();
        c.args(["-qa", "--qf", "%{DBINSTANCE}\\t%{NAME}\\t%{=NEVRA}\\n"]);
        let out = self.run(c)?;
        if !out.status.success() {
            return Err(rpm_failed("-qa (instances)", &out));
        }
        let mut v = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let f: Vec<&str> = line.splitn(3, '\t').collect();
            let bad = || Error::Answer {
                what: "-qa (instances)",
                why: format!("unexpected line `{line}`"),
            };
            let [i, name, nevra] = f[..] else {
                return Err(bad());
            };
            v.push((
                i.parse().map_err(|_| bad())?,
                name.to_string(),
                nevra.to_string(),
            ));
        }
        v.sort();
        Ok(v)
    }

    /// Every installed header: (instance, `%{SHA256HEADER}`, NEVRA), in
    /// instance order. A header without that digest (`gpg-pubkey`) has
    /// `(none)`, as rpm prints it.
    pub fn headers(&self) -> Result<Vec<(u32, String, String)>> {
        let mut c = self.command();
        c.args([
            "-qa",
            "--qf",
            "%{DBINSTANCE}\\t%{SHA256HEADER}\\t%{=NEVRA}\\n",
        ]);
        let out = self.run(c)?;
        if !out.status.success() {
            return Err(rpm_failed("-qa (headers)", &out));
        }
        let mut v = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let bad = || Error::Answer {
                what: "-qa (headers)",
                why: format!("unexpected line `{line}`"),
            };
            let f: Vec<&str> = line.splitn(3, '\t').collect();
            let [i, digest, nevra] = f[..] else {
                return Err(bad());
            };
            v.push((
                i.parse().map_err(|_| bad())?,
                digest.to_string(),
                nevra.to_string(),
            ));
        }
        v.sort();
        Ok(v)
    }

    /// Every installed file: (instance, rpm's file state, path), each
    /// package's in header order.
    pub fn all_files(&self) -> Result<Vec<(u32, u32, String)>> {
        let mut c = self.command();
        c.args([
            "-qa",
            "--qf",
            "[%{=DBINSTANCE}\\t%{FILESTATES}\\t%{FILENAMES}\\n]",
        ]);
        let out = self.run(c)?;
        if !out.status.success() {
            return Err(rpm_failed("-qa (files)", &out));
        }
        let Ok(text) = std::str::from_utf8(&out.stdout) else {
            return Err(Error::NotUtf8Installed(vec![
                "(a package of the root)".into()
            ]));
        };
        let mut v = Vec::new();
        for line in text.lines() {
            let f: Vec<&str> = line.splitn(3, '\t').collect();
            let bad = || Error::Answer {
                what: "-qa (files)",
                why: format!("unexpected line `{line}`"),
            };
            let [i, state, path] = f[..] else {
                return Err(bad());
            };
            v.push((
                i.parse().map_err(|_| bad())?,
                state.parse().map_err(|_| bad())?,
                path.to_string(),
            ));
        }
        Ok(v)
    }

    /// rpm's order of a transaction that installs some packages beside
    /// their installed versions (`true`: rpm's install element, as dnf adds
    /// install-only packages) and upgrades the others, which one `rpm`
    /// command line cannot express: asked of rpm's Python bindings (dnf's
    /// own way to build a transaction), `COWKIT_PYTHON` or
    /// `/usr/bin/python3`. Headers are not verified here (the check did).
    pub fn order_mixed(&self, packages: &[(PathBuf, bool)]) -> Result<Vec<(bool, String)>> {
        let python = std::env::var_os("COWKIT_PYTHON").unwrap_or_else(|| "/usr/bin/python3".into());
        let mut c = Command::new(&python);
        c.env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .args(["-I", "-c", ORDER_PY])
            .arg(&self.root)
            .arg(&self.dbpath);
        for (p, install) in packages {
            let mut a = std::ffi::OsString::from(if *install { "i:" } else { "u:" });
            a.push(p);
            c.arg(a);
        }
        let out = c.output().map_err(|source| Error::Spawn {
            program: python.into(),
            source,
        })?;
        if !out.status.success() {
            return Err(rpm_failed("python3 -c (rpm's order)", &out));
        }
        let mut v = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            match (line.strip_prefix('+'), line.strip_prefix('-')) {
                (Some(n), _) => v.push((true, n.to_string())),
                (_, Some(n)) => v.push((false, n.to_string())),
                _ => {
                    return Err(Error::Answer {
                        what: "python3 -c (rpm's order)",
                        why: format!("unexpected line `{line}`"),
                    })
                }
            }
        }
        Ok(v)
    }
}
