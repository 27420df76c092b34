//! A package of a transaction, from its verified header: what the
//! transaction needs of it (names, scriptlets, triggers, provides, files).

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cowkit_archive::files::FileList;
use cowkit_fs::IoError;
use cowkit_rpmdb::triggers::{Dep, TriggerDef};
use rpm::IndexTag;

use crate::plan::{DbPkg, Sysusers};
use crate::scripts::{Phase, Scriptlet};
use crate::{Error, Result};

/// A package of the transaction, from its verified header.
pub(crate) struct Pkg {
    pub(crate) path: PathBuf,
    /// rpm's `%{SHA256HEADER}`, verified.
    pub(crate) digest: String,
    pub(crate) name: String,
    pub(crate) nevra: String,
    /// What it provides.
    pub(crate) provides: Vec<Dep>,
    pub(crate) scripts: Vec<Scriptlet>,
    /// Its triggers, all kinds.
    pub(crate) triggers: Vec<TriggerDef>,
    /// The names it obsoletes.
    pub(crate) obsoletes: Vec<String>,
    /// Its install prefixes (`PREFIXES`: cowkit does not relocate).
    pub(crate) prefixes: Vec<String>,
    pub(crate) files: FileList,
    /// rpm's file flags, by header index.
    pub(crate) flags: Vec<u32>,
    /// rpm's file colours (`FILECOLORS`: 1 ELF32, 2 ELF64), by header
    /// index; empty when the header has none.
    pub(crate) colors: Vec<u32>,
    /// The files' languages (`FILELANGS`, `|`-separated), by header
    /// index; empty when the header has none.
    pub(crate) langs: Vec<String>,
    /// The users and groups it provides as sysusers data (rpm 4.19 and
    /// later create them before its `%pre`), grouped by the file that
    /// provides them, in rpm's order ([`sysusers`]).
    pub(crate) sysusers: Vec<Sysusers>,
    /// The extents file as read for the check, kept open for the install
    /// (which then does not parse its header again); taken once.
    pub(crate) opened: Mutex<Option<cowkit_extents::open::ExtentsFile>>,
}

/// Packages of a transaction whose extents files stay open from the check
/// to the install: each holds its header in memory until placed.
pub(crate) const KEEP_OPEN: usize = 16;

impl Pkg {
    /// Read the package at `path`; an extents file is kept open when
    /// `keep_open`.
    pub(crate) fn read(path: &Path, keep_open: bool) -> Result<Pkg> {
        let io = |op, e| Error::from(IoError::new(op, path.to_path_buf(), e));
        let file = std::fs::File::open(path).map_err(|e| io("open", e))?;
        let pkg = if cowkit_extents::open::is_extents_file(&file).map_err(|e| io("read", e))? {
            let x = cowkit_extents::open::ExtentsFile::open(file, path)?;
            let mut pkg = Self::from_package(path, x.package(), x.files().clone())?;
            if keep_open {
                pkg.opened = Mutex::new(Some(x));
            }
            pkg
        } else {
            crate::check_not_truncated_extents(&file, path)?;
            let p = cowkit_archive::rpm::Package::read(&mut BufReader::new(file))?;
            let files = p.files()?;
            Self::from_package(path, &p, files)?
        };
        Ok(pkg)
    }

    fn from_package(path: &Path, p: &cowkit_archive::rpm::Package, files: FileList) -> Result<Pkg> {
        let m = p.metadata();
        let h = &m.header;
        let bad = |why: String| {
            Error::Package(cowkit_archive::rpm::Error::Parse(format!(
                "{}: {why}",
                path.display()
            )))
        };
        let name = m.get_name().map_err(|e| bad(e.to_string()))?.to_string();
        let version = m.get_version().map_err(|e| bad(e.to_string()))?;
        let release = m.get_release().map_err(|e| bad(e.to_string()))?;
        let arch = m.get_arch().unwrap_or("noarch");
        let nevra = match h.get_entry_data_as_u32(IndexTag::RPMTAG_EPOCH) {
            Ok(e) => format!("{name}-{e}:{version}-{release}.{arch}"),
            Err(_) => format!("{name}-{version}-{release}.{arch}"),
        };
        let scripts = [Phase::PreTrans, Phase::Pre, Phase::Post, Phase::PostTrans]
            .into_iter()
            .filter_map(|ph| Scriptlet::of_header(h, ph))
            .collect();
        let view = HeaderTags(h);
        let triggers = cowkit_rpmdb::triggers::triggers(&view);
        let provides = cowkit_rpmdb::triggers::provides(&view);
        let prefixes = h
            .get_entry_data_as_string_array(IndexTag::RPMTAG_PREFIXES)
            .map(|v| v.into_iter().map(str::to_string).collect())
            .unwrap_or_default();
        let obsoletes = h
            .get_entry_data_as_string_array(IndexTag::RPMTAG_OBSOLETENAME)
            .map(|v| v.into_iter().map(str::to_string).collect())
            .unwrap_or_default();
        let flags = if h.entry_is_present(IndexTag::RPMTAG_FILEFLAGS) {
            h.get_entry_data_as_u32_array(IndexTag::RPMTAG_FILEFLAGS)
                .map_err(|e| bad(e.to_string()))?
        } else {
            Vec::new()
        };
        let colors = h
            .get_entry_data_as_u32_array(IndexTag::RPMTAG_FILECOLORS)
            .unwrap_or_default();
        let langs = h
            .get_entry_data_as_string_array(IndexTag::RPMTAG_FILELANGS)
            .map(|v| v.into_iter().map(str::to_string).collect())
            .unwrap_or_default();
        let sysusers = sysusers(h, &provides, &files);
        Ok(Pkg {
            sysusers,
            colors,
            langs,
            path: path.to_path_buf(),
            digest: p.header_digest().to_string(),
            name,
            nevra,
            provides,
            scripts,
            triggers,
            obsoletes,
            prefixes,
            files,
            flags,
            opened: Mutex::new(None),
        })
    }

    pub(crate) fn script(&self, phase: Phase) -> Option<&Scriptlet> {
        self.scripts.iter().find(|s| s.phase == phase)
    }
}

impl Pkg {
    /// Whether it has any trigger.
    pub(crate) fn has_triggers(&self) -> bool {
        !self.triggers.is_empty()
    }

    /// Its names as provided (for install-only checks).
    pub(crate) fn provides_name(&self, what: &str) -> bool {
        self.provides.iter().any(|p| p.name == what)
    }

    /// It as a database entry (instance given when added), its files
    /// counted installed as rpm records them after `actions` (when
    /// decided: "not installed" and "wrong color" files are not).
    pub(crate) fn db_pkg(&self, actions: Option<&[crate::action::Action]>) -> DbPkg {
        let installed = |fx: usize| {
            actions
                .and_then(|a| a.get(fx))
                .is_none_or(|a| matches!(a.state(), 0 | 3))
        };
        DbPkg {
            inst: 0,
            name: self.name.clone(),
            nevra: self.nevra.clone(),
            provides: self.provides.clone(),
            files: self
                .files
                .files
                .iter()
                .enumerate()
                .map(|(fx, f)| (f.path.as_bytes().to_vec(), installed(fx)))
                .collect(),
            triggers: self.triggers.clone(),
            prefixes: self.prefixes.clone(),
            sysusers: self.sysusers.clone(),
        }
    }
}

/// rpm 4.20's reading of a header's sysusers data (`runSysusers`,
/// `lib/psm.c`): every provide `rpmdsIsSysuser` takes (`user(…)`,
/// `group(…)` or `groupmember(…)` with `=` and a version that decodes as
/// base64) gives its decoded line, under the file whose dependency dictionary
/// (`FILEDEPENDSX`/`FILEDEPENDSN` into `DEPENDSDICT`) names that provide
/// (`findProviderFile`), else under none; sources in the order their first
/// line comes.
fn sysusers(h: &rpm::Header<IndexTag>, provides: &[Dep], files: &FileList) -> Vec<Sysusers> {
    let mut out: Vec<Sysusers> = Vec::new();
    let dx = h
        .get_entry_data_as_u32_array(IndexTag::RPMTAG_FILEDEPENDSX)
        .unwrap_or_default();
    let dn = h
        .get_entry_data_as_u32_array(IndexTag::RPMTAG_FILEDEPENDSN)
        .unwrap_or_default();
    let dict = h
        .get_entry_data_as_u32_array(IndexTag::RPMTAG_DEPENDSDICT)
        .unwrap_or_default();
    for (px, d) in provides.iter().enumerate() {
        let Some(line) = sysuser_line(d) else {
            continue;
        };
        // The first file in header order that names the provide
        // (`findProviderFile`).
        let names = |hx: usize| {
            let (Some(&start), Some(&n)) = (dx.get(hx), dn.get(hx)) else {
                return false;
            };
            (start..start.saturating_add(n)).any(|k| {
                dict.get(k as usize).is_some_and(|&e| {
                    (e >> 24) & 0xff == u32::from(b'P') && (e & 0x00ff_ffff) as usize == px
                })
            })
        };
        let provider = files
            .files
            .iter()
            .filter(|f| names(f.index as usize))
            .min_by_key(|f| f.index);
        let file = provider.map_or_else(String::new, |f| {
            String::from_utf8_lossy(f.path.as_bytes()).into_owned()
        });
        match out.iter_mut().find(|s| s.file == file) {
            Some(s) => s.lines.push(line),
            None => out.push(Sysusers {
                file,
                lines: vec![line],
            }),
        }
    }
    out
}

/// rpm's `rpmdsIsSysuser` (`lib/rpmds.c`): a provide named `user(…)`,
/// `group(…)` or `groupmember(…)`, with `=`, whose version decodes as
/// base64 (`rpmBase64Decode`); the decoded `sysusers.d` line.
pub(crate) fn sysuser_line(d: &Dep) -> Option<String> {
    let named = d.name.starts_with("user(")
        || d.name.starts_with("group(")
        || d.name.starts_with("groupmember(");
    if !named || d.flags & 8 == 0 {
        return None;
    }
    let bytes = base64_decode(&d.version)?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// rpm's `rpmBase64Decode`: white space ignored; what is left must be
/// non-empty, a multiple of four long, base64 characters with at most two
/// `=` of padding at the end.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let t: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if t.is_empty() || !t.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(t.len() / 4 * 3);
    let last = t.len() / 4 - 1;
    for (k, q) in t.chunks(4).enumerate() {
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && k != last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad as u32;
        let b = n.to_be_bytes();
        out.extend_from_slice(&b[1..4 - pad]);
    }
    Some(out)
}

/// A package header's tags by their `rpm --xml` names.
struct HeaderTags<'a>(&'a rpm::Header<IndexTag>);

/// The tags [`cowkit_rpmdb::triggers`] reads.
fn tag(name: &str) -> Option<IndexTag> {
    use IndexTag::*;
    Some(match name {
        "Rpmversion" => RPMTAG_RPMVERSION,
        "Triggername" => RPMTAG_TRIGGERNAME,
        "Triggerversion" => RPMTAG_TRIGGERVERSION,
        "Triggerflags" => RPMTAG_TRIGGERFLAGS,
        "Triggerindex" => RPMTAG_TRIGGERINDEX,
        "Triggerscripts" => RPMTAG_TRIGGERSCRIPTS,
        "Triggerscriptprog" => RPMTAG_TRIGGERSCRIPTPROG,
        "Triggerscriptflags" => RPMTAG_TRIGGERSCRIPTFLAGS,
        "Filetriggername" => RPMTAG_FILETRIGGERNAME,
        "Filetriggerversion" => RPMTAG_FILETRIGGERVERSION,
        "Filetriggerflags" => RPMTAG_FILETRIGGERFLAGS,
        "Filetriggerindex" => RPMTAG_FILETRIGGERINDEX,
        "Filetriggerscripts" => RPMTAG_FILETRIGGERSCRIPTS,
        "Filetriggerscriptprog" => RPMTAG_FILETRIGGERSCRIPTPROG,
        "Filetriggerscriptflags" => RPMTAG_FILETRIGGERSCRIPTFLAGS,
        "Filetriggerpriorities" => RPMTAG_FILETRIGGERPRIORITIES,
        "Transfiletriggername" => RPMTAG_TRANSFILETRIGGERNAME,
        "Transfiletriggerversion" => RPMTAG_TRANSFILETRIGGERVERSION,
        "Transfiletriggerflags" => RPMTAG_TRANSFILETRIGGERFLAGS,
        "Transfiletriggerindex" => RPMTAG_TRANSFILETRIGGERINDEX,
        "Transfiletriggerscripts" => RPMTAG_TRANSFILETRIGGERSCRIPTS,
        "Transfiletriggerscriptprog" => RPMTAG_TRANSFILETRIGGERSCRIPTPROG,
        "Transfiletriggerscriptflags" => RPMTAG_TRANSFILETRIGGERSCRIPTFLAGS,
        "Transfiletriggerpriorities" => RPMTAG_TRANSFILETRIGGERPRIORITIES,
        "Providename" => RPMTAG_PROVIDENAME,
        "Provideflags" => RPMTAG_PROVIDEFLAGS,
        "Provideversion" => RPMTAG_PROVIDEVERSION,
        _ => return None,
    })
}

impl cowkit_rpmdb::triggers::Tags for HeaderTags<'_> {
    fn strings(&self, name: &str) -> Vec<String> {
        let Some(t) = tag(name) else {
            return Vec::new();
        };
        match self.0.get_entry_data_as_string_array(t) {
            Ok(v) => v.into_iter().map(str::to_string).collect(),
            Err(_) => self
                .0
                .get_entry_data_as_string(t)
                .map(|s| vec![s.to_string()])
                .unwrap_or_default(),
        }
    }

    fn ints(&self, name: &str) -> Vec<u64> {
        let Some(t) = tag(name) else {
            return Vec::new();
        };
        self.0
            .get_entry_data_as_u32_array(t)
            .map(|v| v.into_iter().map(u64::from).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provide(name: &str, flags: u32, version: &str) -> Dep {
        Dep {
            name: name.into(),
            flags,
            version: version.into(),
        }
    }

    #[test]
    fn sysusers_data_as_rpm_decodes_it() {
        // `u root 0 "Super User" /root` in base64, as rpmbuild writes it.
        let root = "dSByb290IDAgIlN1cGVyIFVzZXIiIC9yb290";
        assert_eq!(
            sysuser_line(&provide("user(root)", 8, root)).as_deref(),
            Some("u root 0 \"Super User\" /root")
        );
        assert_eq!(
            sysuser_line(&provide("group(g)", 8, "Zw==")).as_deref(),
            Some("g")
        );
        assert_eq!(
            sysuser_line(&provide("groupmember(a/b)", 8, "Zz0")),
            None,
            "not a multiple of four"
        );
        // Not `=`, another name, or no base64: no sysusers data.
        assert_eq!(sysuser_line(&provide("user(root)", 0, root)), None);
        assert_eq!(sysuser_line(&provide("bash", 8, root)), None);
        for v in ["", "1.0", "1.0-1", "abc", "Z===", "Zw==Zw=="] {
            assert_eq!(sysuser_line(&provide("user(x)", 8, v)), None, "{v}");
        }
    }
}
