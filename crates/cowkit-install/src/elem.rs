//! The elements of a transaction, in rpm's order: a package to install,
//! or an installed package the transaction erases.

use cowkit_rpmdb::Installed;

use crate::pkg::Pkg;
use crate::plan::{plain, Db, DbFile};
use crate::scripts::{Phase, Scriptlet};

/// One element of the transaction, in rpm's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    /// Install the package (index into the transaction's packages).
    Add(usize),
    /// Erase an installed package (index into [`Erased`]s).
    Erase(usize),
}

/// An installed package the transaction erases.
#[derive(Clone, Debug)]
pub(crate) struct Erased {
    pub(crate) installed: Installed,
    /// Its database instance.
    pub(crate) inst: u32,
    /// The new package that replaces it (same name) or obsoletes it.
    pub(crate) by: usize,
    /// rpm's erasure depends on `by` (`rpmteDependsOn`): the old version an
    /// upgrade element replaces or obsoletes, as `rpm -U` adds it. `false`
    /// for an erasure the resolver adds on its own (dnf5's erasure of what
    /// a newly installed package obsoletes): rpm runs it whether or not
    /// `by` fails, and it counts as no update of `by`.
    pub(crate) tied: bool,
}

impl Erased {
    /// Its installed files that no new package of the transaction keeps:
    /// what its erasure removes (rpm skips the others).
    pub(crate) fn gone(&self, pkgs: &[Pkg]) -> Vec<DbFile> {
        self.installed
            .files
            .iter()
            .filter(|f| f.state == 0 || f.state == 3)
            .filter(|f| pkgs.iter().all(|p| p.files.find(&f.path).is_none()))
            .map(|f| (f.path.as_bytes().to_vec(), true))
            .collect()
    }

    /// Its `%preuntrans` or `%postuntrans` as rpm 4.20 runs it
    /// (`runTransScripts` over the erased elements; `$1` from `rpmpsmNew`:
    /// the installed instances of its name, for `%preuntrans` less one
    /// unless the erasure depends on an install, [`Erased::tied`]).
    pub(crate) fn untrans(&self, phase: Phase, db: &Db) -> Option<crate::plan::Run> {
        let o = &self.installed;
        let s = match phase {
            Phase::PreUnTrans => o.preuntrans.as_ref(),
            _ => o.postuntrans.as_ref(),
        }?;
        let less = i64::from(phase == Phase::PreUnTrans && !self.tied);
        Some(plain(
            &o.nevra,
            &o.prefixes,
            &Scriptlet::of_installed(s, phase),
            db.count(&o.name) - less,
        ))
    }

    /// Its `%preun` and `%postun`.
    pub(crate) fn scripts(&self) -> Vec<Scriptlet> {
        let o = &self.installed;
        [(&o.preun, Phase::PreUn), (&o.postun, Phase::PostUn)]
            .into_iter()
            .filter_map(|(s, ph)| s.as_ref().map(|s| Scriptlet::of_installed(s, ph)))
            .collect()
    }
}
