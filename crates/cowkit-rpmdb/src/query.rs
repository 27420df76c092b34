//! Queries of the installed packages and of rpm's order that the
//! transaction's triggers need: instances, every installed file, and the
//! order of a transaction one `rpm` command line cannot express.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use crate::{rpm_failed, Error, Plan, Result, Rpm};

/// The Python program of [`Rpm::order_elements`].
const ORDER_PY: &str = include_str!("order.py");

/// One element of a transaction as a resolver adds it to rpm's
/// transaction set ([`Rpm::order_elements`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Element {
    /// The package file as an install element (`rpmtsAddInstallElement`
    /// with `upgrade` 0): installed beside the installed versions of its
    /// name, nothing it obsoletes erased.
    Install(PathBuf),
    /// The package file as an upgrade element (`upgrade` 1): rpm adds the
    /// erasures of the installed versions of its name and of the installed
    /// packages it obsoletes, each depending on it.
    Upgrade(PathBuf),
    /// The installed package of this NEVRA as an erasure of its own
    /// (`rpmtsAddEraseElement`), depending on nothing unless an upgrade
    /// element adds the same erasure.
    Erase(String),
}

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
    /// Packages rpm leaves out as it adds them (another version of the
    /// same name, the same package again, an obsoleted one) are not in the
    /// plan's order, and rpm's words for them are in [`Plan::dropped`].
    pub fn order_mixed(&self, packages: &[(PathBuf, bool)]) -> Result<Plan> {
        let elements: Vec<Element> = packages
            .iter()
            .map(|(p, install)| match install {
                true => Element::Install(p.clone()),
                false => Element::Upgrade(p.clone()),
            })
            .collect();
        self.order_elements(&elements)
    }

    /// rpm's order of the transaction `elements` build, added in their
    /// order as a resolver adds them (see [`Element`]), asked of rpm's
    /// Python bindings as [`Rpm::order_mixed`] is.
    pub fn order_elements(&self, elements: &[Element]) -> Result<Plan> {
        let (python, mut c) = crate::python_with_rpm(ORDER_PY)?;
        c.env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .arg(&self.root)
            .arg(&self.dbpath);
        for e in elements {
            let (how, what): (&str, &std::ffi::OsStr) = match e {
                Element::Install(p) => ("i:", p.as_os_str()),
                Element::Upgrade(p) => ("u:", p.as_os_str()),
                Element::Erase(n) => ("e:", n.as_ref()),
            };
            let mut a = std::ffi::OsString::from(how);
            a.push(what);
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
        let pick = |added: bool| -> Vec<String> {
            v.iter()
                .filter(|(a, _)| *a == added)
                .map(|(_, n)| n.clone())
                .collect()
        };
        Ok(Plan {
            order: pick(true),
            erase: pick(false),
            dropped: crate::dropped(&String::from_utf8_lossy(&out.stderr)),
            elements: v,
        })
    }
}

/// The Python program of [`Rpm::record_file_states`].
const STATES_PY: &str = include_str!("states.py");

/// One installed file of a package that owns some asked path
/// ([`Rpm::owner_files`]).
#[derive(Clone, Debug)]
pub struct OwnedFile {
    /// The owning package's database instance.
    pub inst: u32,
    /// Its file digest algorithm (rpm's number; 1 when absent).
    pub algo: u32,
    /// The file.
    pub file: crate::InstalledFile,
}

impl Rpm {
    /// The installed files at `paths`, with every owning package's view
    /// of them (state, flags, mode, size, colour, digest, owner, link
    /// target, hardlink count), from one `rpm -qf`. Unowned paths are left
    /// out.
    pub fn owner_files(&self, paths: &[&str]) -> Result<Vec<OwnedFile>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: std::collections::HashSet<&str> = paths.iter().copied().collect();
        let mut c = self.command();
        c.args([
            "-qf",
            "--qf",
            "[%{=DBINSTANCE}\\t%{=FILEDIGESTALGO}\\t%{FILESTATES}\\t%{FILEFLAGS}\\t%{FILEMODES}\\t\
             %{FILESIZES}\\t%{FILECOLORS}\\t%{FILERDEVS}\\t%{FILEDEVICES}\\t%{FILEINODES}\\t\
             %{FILEDIGESTS}\\t%{FILEUSERNAME}\\t%{FILEGROUPNAME}\\t%{FILELINKTOS}\\t%{FILENAMES}\\n]",
        ])
        .args(paths);
        let out = self.run(c)?;
        let Ok(text) = std::str::from_utf8(&out.stdout) else {
            return Err(Error::NotUtf8Installed(vec![
                "(an owner of the transaction's files)".into(),
            ]));
        };
        const N: usize = 15;
        // Every file of every owner (rpm prints an owner once per path it
        // owns: each file is taken once), for the hardlink counts.
        let mut seen = std::collections::HashSet::new();
        let mut all: Vec<(u32, u32, crate::InstalledFile, u64, u64)> = Vec::new();
        for line in text.lines() {
            // "file X is not owned by any package" and the like.
            let f: Vec<&str> = line.splitn(N, '\t').collect();
            if f.len() != N {
                continue;
            }
            let bad = || Error::Answer {
                what: "-qf (owners' files)",
                why: format!("unexpected line `{line}`"),
            };
            let path = f[N - 1];
            // A link target with a tab in it would shift the fields.
            if !wanted.contains(path) && (f[N - 2].contains('\t') || path.contains('\t')) {
                return Err(bad());
            }
            let n = |s: &str| -> Result<u64> {
                if s == "(none)" {
                    Ok(0)
                } else {
                    s.parse().map_err(|_| bad())
                }
            };
            let inst = n(f[0])? as u32;
            if !seen.insert((inst, path.to_string())) {
                continue;
            }
            let algo = match f[1] {
                "(none)" => 1,
                a => a.parse().map_err(|_| bad())?,
            };
            all.push((
                inst,
                algo,
                crate::InstalledFile {
                    path: path.to_string(),
                    state: n(f[2])? as u32,
                    flags: n(f[3])? as u32,
                    mode: n(f[4])? as u32,
                    size: n(f[5])?,
                    color: n(f[6])? as u32,
                    rdev: n(f[7])? as u32,
                    digest: f[10].to_string(),
                    user: f[11].to_string(),
                    group: f[12].to_string(),
                    link: f[13].to_string(),
                    nlink: 1,
                },
                n(f[8])?,
                n(f[9])?,
            ));
        }
        let mut by_inst: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
        for (i, r) in all.iter().enumerate() {
            by_inst.entry(r.0).or_default().push(i);
        }
        for idx in by_inst.values() {
            let modes: Vec<u32> = idx.iter().map(|&i| all[i].2.mode).collect();
            let flags: Vec<u32> = idx.iter().map(|&i| all[i].2.flags).collect();
            let devs: Vec<u64> = idx.iter().map(|&i| all[i].3).collect();
            let inodes: Vec<u64> = idx.iter().map(|&i| all[i].4).collect();
            let counts = crate::installed::link_counts(&modes, &flags, &devs, &inodes);
            for (k, &i) in idx.iter().enumerate() {
                all[i].2.nlink = counts[k];
            }
        }
        Ok(all
            .into_iter()
            .filter(|r| wanted.contains(r.2.path.as_str()))
            .map(|(inst, algo, file, _, _)| OwnedFile { inst, algo, file })
            .collect())
    }

    /// Record the file states of packages registered header-only, which
    /// rpm leaves "normal": `packages` are (name, NEVRA, one state number
    /// per file); states 2 (not installed), 3 (net shared) and 4 (wrong
    /// color) are written, as rpm's own install records them. rpm's code
    /// does the writing (librpm's header rewrite, the one rpm uses to
    /// mark replaced files, under rpm's transaction lock), run by
    /// `COWKIT_PYTHON` or `/usr/bin/python3` with rpm's Python bindings.
    pub fn record_file_states(&self, packages: &[(String, String, Vec<u8>)]) -> Result<()> {
        self.write_file_states(packages, "234")
    }

    /// Put back the file states installed packages had before this
    /// transaction registered a package beside them: `packages` are (name,
    /// NEVRA, one state number per file, as read before); every state is
    /// written. rpm keeps an installed package whose erasure failed with
    /// its states untouched, while registering its replacement beside it
    /// (`rpm -i --replacefiles`) marks the files they share "replaced".
    pub fn restore_file_states(&self, packages: &[(String, String, Vec<u8>)]) -> Result<()> {
        self.write_file_states(packages, "012345")
    }

    /// [`Rpm::record_file_states`] and [`Rpm::restore_file_states`]: the
    /// states among `writable` (digits) are written.
    fn write_file_states(
        &self,
        packages: &[(String, String, Vec<u8>)],
        writable: &str,
    ) -> Result<()> {
        if packages.is_empty() {
            return Ok(());
        }
        use std::io::Write;
        let (python, mut c) = crate::python_with_rpm(STATES_PY)?;
        c.env("LC_ALL", "C")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .arg(&self.root)
            .arg(&self.dbpath)
            .arg(writable);
        let mut child = c.spawn().map_err(|source| Error::Spawn {
            program: python.clone().into(),
            source,
        })?;
        let mut input = String::new();
        for (name, nevra, states) in packages {
            let s: String = states.iter().map(|d| char::from(b'0' + d % 10)).collect();
            input.push_str(&format!("{name}\t{nevra}\t{s}\n"));
        }
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .map_err(|source| Error::Spawn {
                    program: python.clone().into(),
                    source,
                })?;
        }
        let out = child.wait_with_output().map_err(|source| Error::Spawn {
            program: python.into(),
            source,
        })?;
        if !out.status.success() {
            return Err(rpm_failed("python3 -c (file states)", &out));
        }
        Ok(())
    }

    /// What the host's rpm expands each of `names` (`%{?NAME}`) to, in
    /// one `rpm --eval`.
    pub fn host_macros(names: &[&str]) -> Result<Vec<String>> {
        Self::host_macros_defined(names, &[])
    }

    /// [`Rpm::host_macros`] with `defines` (`NAME`, `VALUE`) given to rpm
    /// first, as `--define 'NAME VALUE'` on its command line. The host's
    /// macros do not change while cowkit runs: each question is asked of
    /// rpm once per process (a recovery and the transaction after it ask
    /// the same).
    pub fn host_macros_defined(
        names: &[&str],
        defines: &[(String, String)],
    ) -> Result<Vec<String>> {
        type Question = (PathBuf, Vec<String>, Vec<(String, String)>);
        static ASKED: OnceLock<Mutex<HashMap<Question, Vec<String>>>> = OnceLock::new();
        let program = std::env::var_os("COWKIT_RPM").map_or_else(|| "rpm".into(), PathBuf::from);
        let question: Question = (
            program.clone(),
            names.iter().map(|n| n.to_string()).collect(),
            defines.to_vec(),
        );
        let asked = ASKED.get_or_init(Default::default);
        if let Some(v) = asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&question)
        {
            return Ok(v.clone());
        }
        let v = Self::ask_macros(program, names, defines)?;
        asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(question, v.clone());
        Ok(v)
    }

    /// One `rpm --eval` of `names` by `program`, after `defines`.
    fn ask_macros(
        program: PathBuf,
        names: &[&str],
        defines: &[(String, String)],
    ) -> Result<Vec<String>> {
        let mut c = Command::new(&program);
        c.env("LC_ALL", "C").stdin(Stdio::null());
        for (n, v) in defines {
            c.arg("--define").arg(format!("{n} {v}"));
        }
        for n in names {
            c.arg("--eval").arg(format!("%{{?{n}}}"));
        }
        let out = c
            .output()
            .map_err(|source| Error::Spawn { program, source })?;
        if !out.status.success() {
            return Err(rpm_failed("--eval", &out));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Vec<String> = text.lines().map(|l| l.trim().to_string()).collect();
        if v.len() != names.len() {
            return Err(Error::Answer {
                what: "--eval",
                why: format!("{} lines for {} macros", v.len(), names.len()),
            });
        }
        Ok(v)
    }
}
