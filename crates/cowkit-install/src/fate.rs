//! What happens to each file of a transaction, decided once, before
//! anything is touched, by rpm 4.18's rules (`lib/transaction.c`:
//! `skipInstallFiles`, `skipEraseFiles`, `checkInstalledFiles`,
//! `handleInstInstalledFile`, `handleColorConflict`,
//! `handleOverlappedFiles`; `lib/rpmfi.c`: `rpmfilesCompare`,
//! `rpmfilesDecideFate`, `rpmfilesConfigConflict`; `lib/fsm.c`: the file
//! state each action records). Placing and removing files then only
//! carries out these actions.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use cowkit_archive::files::{DigestAlgo, FileInfo, Kind};
use cowkit_fs::root::{RelPath, Root};
use cowkit_fs::IoError;
use cowkit_rpmdb::InstalledFile;

use crate::action::flag;
pub use crate::action::Action;
use crate::elem::{Elem, Erased};
use crate::pkg::Pkg;
use crate::Result;

/// The settings rpm's `skipInstallFiles` reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Policy {
    /// `--excludedocs` (`--nodocs`) or `%_excludedocs`.
    pub nodocs: bool,
    /// `--excludepath`, each without trailing `/`.
    pub exclude: Vec<String>,
    /// `%_install_langs` split on `:`; `None` for all.
    pub langs: Option<Vec<String>>,
    /// `%_netsharedpath` split on `:`.
    pub netshared: Vec<String>,
    /// `%_transaction_color`.
    pub color: u32,
    /// `%_prefer_color` (2 when unset).
    pub prefcolor: u32,
    /// `%_minimize_writes`: a file (not a config file, no hardlinks) that
    /// replaces an installed one with the same content, whose copy on disk
    /// has that content, is touched instead of written (rpm's `FA_TOUCH`).
    pub min_writes: bool,
    /// Macros given for the transaction (`--define 'NAME VALUE'`), each
    /// one [`define`] accepts: the policy was read with them, and rpm's
    /// check and registration get them too.
    pub defines: Vec<(String, String)>,
}

/// The macros a transaction may be given (`--define 'NAME VALUE'`) and
/// what each changes: only those whose every effect on an install cowkit
/// carries out as rpm does. rpm's other macros may change anything rpm
/// does (where files go, how scriptlets run, what is verified), which
/// cowkit cannot know.
pub const DEFINABLE: [&str; 6] = [
    "_transaction_color",
    "_prefer_color",
    "_netsharedpath",
    "_install_langs",
    "_excludedocs",
    "_minimize_writes",
];

/// `--define TEXT` as rpm reads it (`NAME VALUE`, split at the first
/// blank), when cowkit honours it exactly; otherwise why not, naming the
/// macro.
pub fn define(text: &str) -> std::result::Result<(String, String), String> {
    let text = text.trim_start();
    let (name, value) = match text.find([' ', '\t']) {
        Some(at) => (&text[..at], text[at..].trim()),
        None => (text, ""),
    };
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "--define `{text}`: `{name}` is not a macro name cowkit accepts (NAME VALUE, without `%` or options)"
        ));
    }
    if value.is_empty() {
        return Err(format!("--define `{text}`: no value for `{name}`"));
    }
    let number = || value.chars().all(|c| c.is_ascii_digit());
    match name {
        "_transaction_color" | "_prefer_color" if !number() => Err(format!(
            "--define `{text}`: `{name}` takes a number (rpm's colour bits)"
        )),
        "_minimize_writes" if !number() => {
            Err(format!("--define `{text}`: `{name}` takes a number"))
        }
        n if DEFINABLE.contains(&n) => Ok((name.to_string(), value.to_string())),
        _ => Err(format!(
            "--define `{text}`: cowkit does not know what `%{name}` changes in rpm's transaction, so it cannot honour it as rpm would (it honours {})",
            DEFINABLE.join(", ")
        )),
    }
}

impl Policy {
    /// The policy rpm on this host would follow, as its macros say
    /// (`%_transaction_color`, `%_prefer_color`, `%_excludedocs`,
    /// `%_install_langs`, `%_netsharedpath`; one `rpm --eval`), with
    /// `--excludedocs` (`nodocs`), `--excludepath`s (`exclude`) and an
    /// `%_install_langs` given instead of the host's (`langs`).
    pub fn from_host(nodocs: bool, exclude: Vec<String>, langs: Option<String>) -> Result<Policy> {
        Self::from_host_defined(nodocs, exclude, langs, Vec::new())
    }

    /// [`Policy::from_host`] with the macros `defines` (each one that
    /// [`define`] accepted) given to rpm as it reads the host's.
    pub fn from_host_defined(
        nodocs: bool,
        exclude: Vec<String>,
        langs: Option<String>,
        defines: Vec<(String, String)>,
    ) -> Result<Policy> {
        let m = cowkit_rpmdb::Rpm::host_macros_defined(
            &[
                "_transaction_color",
                "_prefer_color",
                "_excludedocs",
                "_install_langs",
                "_netsharedpath",
                "_minimize_writes",
            ],
            &defines,
        )?;
        let num = |s: &str| -> u32 {
            match s.chars().next() {
                Some('y' | 'Y') => 1,
                _ => s.parse().unwrap_or(0),
            }
        };
        let langs = langs.unwrap_or_else(|| m[3].clone());
        let langs: Vec<String> = langs
            .split(':')
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        Ok(Policy {
            nodocs: nodocs || num(&m[2]) != 0,
            exclude: exclude
                .into_iter()
                .map(|x| String::from_utf8_lossy(trim_slashes(x.as_bytes())).into_owned())
                .collect(),
            langs: (!langs.is_empty() && !langs.iter().any(|l| l == "all")).then_some(langs),
            netshared: m[4]
                .split(':')
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect(),
            color: num(&m[0]),
            prefcolor: match num(&m[1]) {
                0 => 2,
                c => c,
            },
            min_writes: num(&m[5]) != 0,
            defines,
        })
    }
}

/// One file's header facts, as `rpmfilesCompare` and the decisions see
/// them.
#[derive(Clone, Debug)]
struct Facts {
    path: Vec<u8>,
    mode: u32,
    flags: u32,
    size: u64,
    user: String,
    group: String,
    link: Option<Vec<u8>>,
    /// Hex.
    digest: Option<String>,
    algo: u32,
    rdev: u32,
    color: u32,
    state: u32,
    /// Hardlinks in its package, itself included (`rpmfilesFLinks`).
    nlink: u32,
}

fn new_facts(p: &Pkg, f: &FileInfo) -> Facts {
    let i = f.index as usize;
    Facts {
        path: f.path.as_bytes().to_vec(),
        mode: f.mode,
        flags: p.flags.get(i).copied().unwrap_or(0),
        size: f.size,
        user: f.user.clone(),
        group: f.group.clone(),
        link: f.link_target.as_ref().map(|l| l.as_bytes().to_vec()),
        digest: f.digest.as_deref().map(hex::encode),
        algo: p.files.algo.rpm_number(),
        rdev: f.rdev,
        color: p.colors.get(i).copied().unwrap_or(0),
        state: 0,
        nlink: p.files.link_set(f).len().max(1) as u32,
    }
}

fn old_facts(f: &InstalledFile, algo: u32) -> Facts {
    Facts {
        path: f.path.as_bytes().to_vec(),
        mode: f.mode,
        flags: f.flags,
        size: f.size,
        user: f.user.clone(),
        group: f.group.clone(),
        link: (!f.link.is_empty()).then(|| f.link.as_bytes().to_vec()),
        digest: (!f.digest.is_empty()).then(|| f.digest.to_ascii_lowercase()),
        algo,
        rdev: f.rdev,
        color: f.color,
        state: f.state,
        nlink: f.nlink,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum What {
    Dir,
    Link,
    Reg,
    Other,
}

fn what(mode: u32) -> What {
    match Kind::from_mode(mode) {
        Some(Kind::Directory) => What::Dir,
        Some(Kind::Symlink) => What::Link,
        Some(Kind::Regular) | None => What::Reg,
        Some(_) => What::Other,
    }
}

/// `rpmfilesCompare`: whether two files differ (true) as the headers say.
fn differ(a: &Facts, b: &Facts) -> bool {
    if a.flags & flag::GHOST != 0 || b.flags & flag::GHOST != 0 {
        return false;
    }
    let aw = what(a.mode);
    if !(aw == What::Link && what(b.mode) == What::Link) && a.mode != b.mode {
        return true;
    }
    if matches!(aw, What::Link | What::Reg) && a.size != b.size {
        return true;
    }
    if a.user != b.user || a.group != b.group {
        return true;
    }
    match aw {
        What::Link => a.link != b.link,
        What::Reg => match (&a.digest, &b.digest) {
            (None, None) => false,
            (Some(x), Some(y)) => a.algo != b.algo || x != y,
            _ => true,
        },
        What::Other => {
            let k = Kind::from_mode(a.mode);
            matches!(k, Some(Kind::CharDevice) | Some(Kind::BlockDevice)) && a.rdev != b.rdev
        }
        What::Dir => false,
    }
}

/// The root's files as the decisions look at them: never following a
/// final symlink, parents resolved inside the root.
struct Disk<'r> {
    root: &'r Root,
}

enum OnDisk {
    Missing,
    Is { what: What, size: u64 },
}

impl Disk<'_> {
    fn parent(&self, path: &[u8]) -> Result<Option<(OwnedFd, OsString, PathBuf)>> {
        let rel = RelPath::new(path)?;
        let Some((parent, name)) = rel.split() else {
            return Ok(None);
        };
        let host = self.root.display(&rel);
        match self.root.open_dir(&parent) {
            Ok(fd) => Ok(Some((fd, name.to_os_string(), host))),
            Err(e)
                if matches!(
                    cowkit_fs::error::errno_of(&e),
                    Some(rustix::io::Errno::NOENT) | Some(rustix::io::Errno::NOTDIR)
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn lstat(&self, path: &[u8]) -> Result<OnDisk> {
        let Some((dir, name, host)) = self.parent(path)? else {
            return Ok(OnDisk::Missing);
        };
        let st = cowkit_fs::dir::stat_at(&dir, &name)
            .map_err(|e| IoError::new("stat", host.clone(), e))?;
        Ok(match st {
            None => OnDisk::Missing,
            Some(st) => OnDisk::Is {
                what: what(st.st_mode),
                size: st.st_size as u64,
            },
        })
    }

    /// The digest (hex) of the regular file at `path` with rpm's
    /// algorithm `algo`; `None` when it cannot be read.
    fn digest(&self, path: &[u8], algo: u32) -> Result<Option<String>> {
        let Some(algo) = DigestAlgo::from_rpm(algo) else {
            return Ok(None);
        };
        let Some((dir, name, host)) = self.parent(path)? else {
            return Ok(None);
        };
        let Some(mut f) = cowkit_fs::dir::open_read_opt(dir.as_fd(), &name, &host)
            .ok()
            .flatten()
        else {
            return Ok(None);
        };
        let mut h = algo.hasher();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = f
                .read(&mut buf)
                .map_err(|e| IoError::new("read", host.clone(), e))?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        Ok(Some(hex::encode(h.finish())))
    }

    fn readlink(&self, path: &[u8]) -> Result<Option<Vec<u8>>> {
        let Some((dir, name, _)) = self.parent(path)? else {
            return Ok(None);
        };
        Ok(rustix::fs::readlinkat(&dir, name.as_os_str(), Vec::new())
            .ok()
            .map(|t| t.into_bytes()))
    }

    /// `rpmfilesConfigConflict`: whether the config file `f` exists on
    /// disk other than the package has it.
    fn config_conflict(&self, f: &Facts) -> Result<bool> {
        if f.flags & flag::CONFIG == 0 {
            return Ok(false);
        }
        let new = what(f.mode);
        if new != What::Link && new != What::Reg {
            return Ok(true);
        }
        let OnDisk::Is { what: disk, size } = self.lstat(&f.path)? else {
            return Ok(false);
        };
        if f.flags & flag::GHOST != 0 {
            return Ok(true);
        }
        if disk != new || size != f.size {
            return Ok(true);
        }
        if new == What::Reg {
            match self.digest(&f.path, f.algo)? {
                None => Ok(false),
                Some(d) => Ok(f.digest.as_ref() != Some(&d)),
            }
        } else {
            match self.readlink(&f.path)? {
                None => Ok(false),
                Some(t) => Ok(f.link.as_ref() != Some(&t)),
            }
        }
    }

    /// `rpmfileContentsEqual`: whether the file on disk at `new`'s path is
    /// the same type as `old` and `new` and has `new`'s content: for a
    /// regular file `old` and `new` have the same digest and the disk's
    /// is that digest too; for a symlink its target is `new`'s.
    fn contents_equal(&self, old: &Facts, new: &Facts) -> Result<bool> {
        let OnDisk::Is { what: disk, size } = self.lstat(&new.path)? else {
            return Ok(false);
        };
        if size != new.size || disk != what(new.mode) || disk != what(old.mode) {
            return Ok(false);
        }
        match disk {
            What::Reg => {
                if old.algo != new.algo || new.digest.is_none() || old.digest != new.digest {
                    return Ok(false);
                }
                Ok(self.digest(&new.path, new.algo)? == new.digest)
            }
            What::Link => Ok(new.link.is_some() && self.readlink(&new.path)? == new.link),
            _ => Ok(false),
        }
    }

    /// `rpmfilesDecideFate`: the action for the new file `new` that
    /// replaces the installed `old` (a config file on one side).
    fn decide_fate(&self, old: &Facts, new: &Facts, skip_missing: bool) -> Result<Action> {
        let save = if new.flags & flag::NOREPLACE != 0 {
            Action::AltName
        } else {
            Action::Save
        };
        if new.flags & flag::GHOST != 0 {
            return Ok(Action::Skip);
        }
        let OnDisk::Is { what: disk, .. } = self.lstat(&new.path)? else {
            if skip_missing && new.flags & flag::MISSINGOK != 0 {
                return Ok(Action::Skip);
            }
            return Ok(Action::Create);
        };
        let (db, nw) = (what(old.mode), what(new.mode));
        if db == What::Reg {
            let mut ondisk = None;
            if disk == What::Reg && nw == What::Reg {
                let Some(d) = self.digest(&new.path, new.algo)? else {
                    return Ok(Action::Create);
                };
                if new.digest.as_ref() == Some(&d) {
                    return Ok(Action::Touch);
                }
                ondisk = Some(d);
            }
            if disk == What::Reg {
                if old.algo != new.algo || nw != What::Reg || ondisk.is_none() {
                    match self.digest(&new.path, old.algo)? {
                        Some(d) => ondisk = Some(d),
                        None => return Ok(Action::Create),
                    }
                }
                if old.digest.is_some() && old.digest == ondisk {
                    return Ok(Action::Create);
                }
            }
            if new.flags & flag::CONFIG == 0 {
                return Ok(Action::Save);
            }
            if nw == What::Reg
                && old.algo == new.algo
                && old.digest.is_some()
                && old.digest == new.digest
            {
                return Ok(Action::Skip);
            }
            return Ok(save);
        }
        if db == What::Link {
            let mut ondisk = None;
            if disk == What::Link {
                match self.readlink(&new.path)? {
                    Some(t) => ondisk = Some(t),
                    None => return Ok(Action::Create),
                }
            }
            if disk == What::Link && nw == What::Link && new.link.is_some() && new.link == ondisk {
                return Ok(Action::Touch);
            }
            if disk == What::Link && old.link.is_some() && old.link == ondisk {
                return Ok(Action::Create);
            }
            if new.flags & flag::CONFIG == 0 {
                return Ok(Action::Save);
            }
            if nw == What::Link && old.link.is_some() && old.link == new.link {
                return Ok(Action::Skip);
            }
            return Ok(save);
        }
        Ok(Action::Create)
    }
}

/// An installed package that owns some of the transaction's paths and
/// is not erased by it: its instance and those files.
#[derive(Clone, Debug)]
pub(crate) struct Owner {
    pub(crate) inst: u32,
    pub(crate) algo: u32,
    pub(crate) files: Vec<InstalledFile>,
}

/// Every file's action: per package of the transaction (by index), per
/// header file; per erased package, per installed file.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fates {
    pub(crate) added: Vec<Vec<Action>>,
    pub(crate) erased: Vec<Vec<Action>>,
    /// New files (package, header index) skipped because the edited
    /// config file on disk is kept: the new version is the old one.
    pub(crate) kept: std::collections::HashSet<(usize, usize)>,
}

impl Fates {
    /// Whether any file of package `i` records a state other than normal.
    pub(crate) fn states_of(&self, i: usize) -> Vec<u8> {
        self.added[i].iter().map(|a| a.state()).collect()
    }
}

/// The transaction element of a record: a new package or an erased one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Add(usize),
    Erase(usize),
}

struct Decider<'a> {
    pkgs: &'a [Pkg],
    erased: &'a [Erased],
    policy: &'a Policy,
    disk: Disk<'a>,
    fates: Fates,
}

impl Decider<'_> {
    fn action(&self, s: Side, fx: usize) -> Action {
        match s {
            Side::Add(i) => self.fates.added[i][fx],
            Side::Erase(k) => self.fates.erased[k][fx],
        }
    }

    fn set(&mut self, s: Side, fx: usize, a: Action) {
        match s {
            Side::Add(i) => self.fates.added[i][fx] = a,
            Side::Erase(k) => self.fates.erased[k][fx] = a,
        }
    }

    fn facts(&self, s: Side, fx: usize) -> Facts {
        match s {
            Side::Add(i) => new_facts(&self.pkgs[i], &self.pkgs[i].files.files[fx]),
            Side::Erase(k) => {
                let o = &self.erased[k].installed;
                old_facts(&o.files[fx], o.digest_algo)
            }
        }
    }

    /// `--excludepath` and `skipInstallFiles` for package `i`.
    fn skip_install(&mut self, i: usize) {
        let p = &self.pkgs[i];
        let pol = self.policy;
        let files = &p.files.files;
        let mut acts = std::mem::take(&mut self.fates.added[i]);
        // Excluded paths first (rpm does it when the element is made).
        for f in files {
            if pol
                .exclude
                .iter()
                .any(|x| under_path(f.path.as_bytes(), x.as_bytes()))
            {
                acts[f.index as usize] = Action::SkipNState;
            }
        }
        // Directory of each file: its index among the header's distinct
        // parent directories.
        let dir_of = |f: &FileInfo| -> Vec<u8> {
            let b = f.path.as_bytes();
            let cut = b.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
            b[..cut].to_vec()
        };
        let mut count: HashMap<Vec<u8>, (i64, bool)> = HashMap::new();
        for f in files {
            let fx = f.index as usize;
            let d = count.entry(dir_of(f)).or_insert((0, false));
            d.0 += 1;
            if acts[fx].skipping() {
                d.0 -= 1;
                d.1 = true;
                continue;
            }
            let fl = p.flags.get(fx).copied().unwrap_or(0);
            let color = p.colors.get(fx).copied().unwrap_or(0);
            let skip = if pol.color != 0 && color != 0 && pol.color & color == 0 {
                Some(Action::SkipColor)
            } else if netshared(f.path.as_bytes(), &pol.netshared) {
                Some(Action::SkipNetShared)
            } else if fl & flag::LICENSE != 0 {
                None
            } else if !lang_ok(p.langs.get(fx).map(String::as_str), &pol.langs)
                || (pol.nodocs && fl & flag::DOC != 0)
            {
                Some(Action::SkipNState)
            } else {
                None
            };
            if let Some(a) = skip {
                d.0 -= 1;
                d.1 = true;
                acts[fx] = a;
            }
        }
        // Directories the package lists that were emptied: not installed
        // either (deepest first, as their parents' counts change).
        let mut dirs: Vec<Vec<u8>> = count
            .iter()
            .filter(|(_, (n, emptied))| *n == 0 && *emptied)
            .map(|(d, _)| d.clone())
            .collect();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
        let mut k = 0;
        while k < dirs.len() {
            let d = dirs[k].clone();
            k += 1;
            let want = &d[..d.len().saturating_sub(1)];
            let hit = files.iter().find(|f| {
                !acts[f.index as usize].skipping()
                    && f.kind == Kind::Directory
                    && f.path.as_bytes() == want
            });
            if let Some(f) = hit {
                acts[f.index as usize] = Action::SkipNState;
                let parent = dir_of(f);
                if let Some(c) = count.get_mut(&parent) {
                    c.0 -= 1;
                    c.1 = true;
                    if c.0 == 0 && !dirs.contains(&parent) {
                        dirs.push(parent);
                    }
                }
            }
        }
        self.fates.added[i] = acts;
    }

    /// `handleColorConflict`: `Ok(false)` when the colours resolve it.
    fn color_conflict(
        &mut self,
        s: Side,
        fx: usize,
        other: Option<(Side, usize)>,
        of: &Facts,
    ) -> bool {
        let tc = self.policy.color;
        if tc == 0 {
            return true;
        }
        let fcolor = self.facts(s, fx).color & tc;
        let ocolor = of.color & tc;
        if fcolor == 0 || ocolor == 0 || fcolor == ocolor {
            return true;
        }
        let pref = self.policy.prefcolor;
        if fcolor & pref != 0 {
            if let Some((os, ofx)) = other {
                if !self.action(s, fx).skipping() {
                    self.set(os, ofx, Action::SkipColor);
                }
            }
            self.set(s, fx, Action::Create);
            false
        } else if ocolor & pref != 0 {
            if let Some((os, ofx)) = other {
                if self.action(s, fx).skipping() {
                    self.set(os, ofx, Action::Create);
                }
            }
            self.set(s, fx, Action::SkipColor);
            false
        } else {
            true
        }
    }

    /// `handleInstInstalledFile` for the new file `fx` of package `i`
    /// and the installed `of`.
    fn inst_installed(&mut self, i: usize, fx: usize, of: &Facts, removed: bool) -> Result<()> {
        let s = Side::Add(i);
        if self.action(s, fx).skipping() || of.state == 2 {
            return Ok(());
        }
        let nf = self.facts(s, fx);
        let cfg = (of.flags | nf.flags) & flag::CONFIG != 0;
        if differ(of, &nf) && !removed {
            // Conflicts are rpm's check's to report (a file of a package
            // being erased conflicts only where the type cannot change,
            // which that check refuses); only the colour resolution
            // changes actions.
            self.color_conflict(s, fx, None, of);
        }
        if cfg {
            let a = self.disk.decide_fate(of, &nf, true)?;
            self.set(s, fx, a);
            let edited = a == Action::Skip
                && nf.flags & flag::GHOST == 0
                && matches!(self.disk.lstat(&nf.path)?, OnDisk::Is { .. });
            if edited {
                self.fates.kept.insert((i, fx));
            } else {
                self.fates.kept.remove(&(i, fx));
            }
        }
        // `%_minimize_writes`: a file already as the package has it is
        // only touched (rpm cannot touch hardlinked files).
        if self.policy.min_writes
            && !cfg
            && self.action(s, fx) == Action::Unknown
            && of.nlink == 1
            && nf.nlink == 1
            && self.disk.contents_equal(of, &nf)?
        {
            self.set(s, fx, Action::Touch);
        }
        Ok(())
    }

    /// `handleOverlappedFiles` for the element `s`, with `recs`: every
    /// path's records in element order.
    fn overlapped(&mut self, s: Side, recs: &HashMap<Vec<u8>, Vec<(Side, usize)>>) -> Result<()> {
        let n = match s {
            Side::Add(i) => self.pkgs[i].files.files.len(),
            Side::Erase(k) => self.erased[k].installed.files.len(),
        };
        for fx in 0..n {
            if self.action(s, fx).skipping() {
                continue;
            }
            let path: &[u8] = match s {
                Side::Add(i) => self.pkgs[i].files.files[fx].path.as_bytes(),
                Side::Erase(k) => self.erased[k].installed.files[fx].path.as_bytes(),
            };
            let Some(list) = recs.get(path) else {
                continue;
            };
            // The common case, cheaply: a new file nothing else has, and
            // no config file whose disk copy matters.
            if let Side::Add(i) = s {
                let cfg = self.pkgs[i]
                    .flags
                    .get(fx)
                    .is_some_and(|f| f & flag::CONFIG != 0);
                if list.len() == 1 && !cfg {
                    if self.action(s, fx) == Action::Unknown {
                        self.set(s, fx, Action::Create);
                    }
                    continue;
                }
            }
            let me = self.facts(s, fx);
            let j = list
                .iter()
                .position(|r| *r == (s, fx))
                .unwrap_or(list.len());
            let mut other = None;
            for &(os, ofx) in list[..j].iter().rev() {
                if matches!(s, Side::Add(_)) && !matches!(os, Side::Add(_)) {
                    continue;
                }
                if self.action(os, ofx) != Action::Unknown {
                    other = Some((os, ofx));
                    break;
                }
            }
            match s {
                Side::Add(_) => {
                    let Some((os, ofx)) = other else {
                        if self.action(s, fx) != Action::Unknown {
                            continue;
                        }
                        let a = if self.disk.config_conflict(&me)? {
                            if me.flags & flag::NOREPLACE != 0 {
                                Action::AltName
                            } else {
                                Action::Backup
                            }
                        } else {
                            Action::Create
                        };
                        self.set(s, fx, a);
                        continue;
                    };
                    let of = self.facts(os, ofx);
                    if differ(&of, &me) {
                        self.color_conflict(s, fx, Some((os, ofx)), &of);
                    } else {
                        let oa = self.action(os, ofx);
                        if oa != Action::Unknown && !oa.skipping() {
                            if of.flags & flag::GHOST == 0 {
                                self.set(s, fx, Action::Skip);
                            }
                        } else if oa == Action::SkipColor {
                            self.set(s, fx, Action::SkipColor);
                        }
                    }
                    if self.action(s, fx).skipping() {
                        continue;
                    }
                    if self.disk.config_conflict(&me)? {
                        let a = if me.flags & flag::NOREPLACE != 0 {
                            Action::AltName
                        } else {
                            Action::Skip
                        };
                        self.set(s, fx, a);
                    } else if self.action(s, fx) == Action::Unknown {
                        self.set(s, fx, Action::Create);
                    }
                }
                Side::Erase(_) => {
                    if let Some((os, ofx)) = other {
                        if self.action(os, ofx) != Action::Erase {
                            self.set(s, fx, Action::Skip);
                            continue;
                        }
                        self.set(os, ofx, Action::Skip);
                    }
                    if self.action(s, fx).skipping() {
                        continue;
                    }
                    if me.state != 0 {
                        self.set(s, fx, Action::Skip);
                        continue;
                    }
                    let a = if self.disk.config_conflict(&me)? {
                        Action::Save
                    } else {
                        Action::Erase
                    };
                    self.set(s, fx, a);
                }
            }
        }
        Ok(())
    }
}

/// Whether `path` is `prefix` or under it (`prefix` without a trailing
/// `/`; `/` or empty is everything).
fn under_path(path: &[u8], prefix: &[u8]) -> bool {
    let prefix = trim_slashes(prefix);
    if prefix.is_empty() {
        return true;
    }
    path.starts_with(prefix) && (path.len() == prefix.len() || path[prefix.len()] == b'/')
}

fn trim_slashes(p: &[u8]) -> &[u8] {
    let end = p.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    &p[..end]
}

/// rpm's `matchNetsharedpath`: the file or one of its directories is a
/// net shared path.
fn netshared(path: &[u8], paths: &[String]) -> bool {
    paths
        .iter()
        .any(|n| !n.is_empty() && under_path(path, n.as_bytes()))
}

/// Whether a file of the languages `flangs` (`|`-separated, empty: not
/// language specific) is installed with `%_install_langs` `langs`.
fn lang_ok(flangs: Option<&str>, langs: &Option<Vec<String>>) -> bool {
    let (Some(fl), Some(langs)) = (flangs, langs) else {
        return true;
    };
    if fl.is_empty() {
        return true;
    }
    langs.iter().any(|want| {
        fl.split('|')
            .any(|l| !l.is_empty() && want.as_bytes().starts_with(l.as_bytes()))
    })
}

/// Decide every file's action for a transaction: `elements` in rpm's
/// order, `owners` the installed packages (not erased) that own some of
/// its paths, in database order.
pub(crate) fn decide(
    root: &Root,
    pkgs: &[Pkg],
    elements: &[Elem],
    erased: &[Erased],
    owners: &[Owner],
    policy: &Policy,
) -> Result<Fates> {
    let mut d = Decider {
        pkgs,
        erased,
        policy,
        disk: Disk { root },
        fates: Fates {
            added: pkgs
                .iter()
                .map(|p| vec![Action::Unknown; p.files.files.len()])
                .collect(),
            erased: erased
                .iter()
                .map(|e| vec![Action::Unknown; e.installed.files.len()])
                .collect(),
            kept: Default::default(),
        },
    };
    let sides: Vec<Side> = elements
        .iter()
        .map(|e| match *e {
            Elem::Add(i) => Side::Add(i),
            Elem::Erase(k) => Side::Erase(k),
        })
        .collect();
    for &s in &sides {
        match s {
            Side::Add(i) => d.skip_install(i),
            Side::Erase(k) => {
                for (fx, f) in erased[k].installed.files.iter().enumerate() {
                    if netshared(f.path.as_bytes(), &policy.netshared) {
                        d.fates.erased[k][fx] = Action::SkipNetShared;
                    }
                }
            }
        }
    }
    // Every path's records, in element order (skipped files left out).
    let mut recs: HashMap<Vec<u8>, Vec<(Side, usize)>> = HashMap::new();
    for &s in &sides {
        match s {
            Side::Add(i) => {
                for f in &pkgs[i].files.files {
                    if !d.fates.added[i][f.index as usize].skipping() {
                        recs.entry(f.path.as_bytes().to_vec())
                            .or_default()
                            .push((s, f.index as usize));
                    }
                }
            }
            Side::Erase(k) => {
                for (fx, f) in erased[k].installed.files.iter().enumerate() {
                    if !d.fates.erased[k][fx].skipping() {
                        recs.entry(f.path.as_bytes().to_vec())
                            .or_default()
                            .push((s, fx));
                    }
                }
            }
        }
    }
    // The installed packages (erased ones and other owners) in database
    // order, against the transaction's files.
    let mut installed: Vec<(u32, Option<usize>, Option<&Owner>)> = erased
        .iter()
        .enumerate()
        .map(|(k, e)| (e.inst, Some(k), None))
        .chain(owners.iter().map(|o| (o.inst, None, Some(o))))
        .collect();
    installed.sort_by_key(|x| x.0);
    for (_, k, owner) in installed {
        let (files, algo) = match (k, owner) {
            (Some(k), _) => (&erased[k].installed.files, erased[k].installed.digest_algo),
            (None, Some(o)) => (&o.files, o.algo),
            _ => continue,
        };
        let being_removed = k.is_some();
        for f in files {
            let Some(list) = recs.get(f.path.as_bytes()) else {
                continue;
            };
            let of = old_facts(f, algo);
            for &(s, fx) in list.clone().iter() {
                match s {
                    Side::Add(i) => d.inst_installed(i, fx, &of, being_removed)?,
                    Side::Erase(_) if !being_removed && of.state == 0 => d.set(s, fx, Action::Skip),
                    Side::Erase(_) => {}
                }
            }
        }
    }
    for &s in &sides {
        d.overlapped(s, &recs)?;
    }
    Ok(d.fates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_languages() {
        assert!(under_path(b"/usr/share/doc/x", b"/usr/share/doc"));
        assert!(under_path(b"/usr/share/doc", b"/usr/share/doc/"));
        assert!(!under_path(b"/usr/share/docs", b"/usr/share/doc"));
        assert!(under_path(b"/anything", b"/"));
        let langs = Some(vec!["en".to_string(), "de_DE".to_string()]);
        assert!(lang_ok(Some(""), &langs));
        assert!(lang_ok(Some("de"), &langs));
        assert!(!lang_ok(Some("fr"), &langs));
        assert!(lang_ok(Some("fr|en"), &langs));
        assert!(lang_ok(Some("fr"), &None));
    }

    #[test]
    fn defines_honoured_or_refused_by_name() {
        let ok = |t: &str| define(t).unwrap();
        assert_eq!(
            ok("_transaction_color 2"),
            ("_transaction_color".into(), "2".into())
        );
        assert_eq!(
            ok("_netsharedpath /usr/share"),
            ("_netsharedpath".into(), "/usr/share".into())
        );
        assert_eq!(
            ok(" _install_langs\ten:de "),
            ("_install_langs".into(), "en:de".into())
        );
        assert_eq!(
            ok("_minimize_writes 0"),
            ("_minimize_writes".into(), "0".into())
        );
        assert_eq!(
            ok("_minimize_writes 1"),
            ("_minimize_writes".into(), "1".into())
        );
        let no = |t: &str| define(t).unwrap_err();
        assert!(no("_minimize_writes yes").contains("takes a number"));
        assert!(no("_transaction_color x").contains("takes a number"));
        let other = no("_dbpath /x");
        assert!(
            other.contains("%_dbpath") && other.contains("cannot honour"),
            "{other}"
        );
        assert!(no("%_transaction_color 2").contains("not a macro name"));
        assert!(no("f(x) body").contains("not a macro name"));
        assert!(no("_transaction_color").contains("no value"));
    }
}
