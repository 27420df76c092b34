//! The plan of the downloads that dnf's Python wrapper writes after it
//! resolved the transaction (`COWKIT_DNF_PLAN`, see [`crate::order`]):
//! the packages in the order dnf adds them, where to fetch each, its size
//! and whole-file checksum from the repository's `primary.xml`, and each
//! repository's signature and timeout settings.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::{Error, Result};

/// The most a plan file may hold (a transaction of tens of thousands of
/// packages with a few mirrors each stays far below).
const MAX_PLAN_BYTES: u64 = 256 << 20;

/// What dnf wrote.
#[derive(Debug, Deserialize)]
pub struct Plan {
    /// Why cowkit cannot fetch the packages itself (then dnf downloaded
    /// them); empty: cowkit fetches.
    pub why: Vec<String>,
    /// The packages to install, in dnf's order.
    pub packages: Vec<PlannedPackage>,
    /// The repositories of these packages, by id.
    pub repos: BTreeMap<String, Repo>,
    /// dnf's `max_parallel_downloads`.
    pub max_parallel_downloads: usize,
    /// dnf's `retries`: failed attempts allowed in all (0: no limit).
    pub retries: u64,
    /// dnf5's transaction flags as it holds them (its configuration files
    /// and command line together); `None` from dnf 4's wrapper.
    #[serde(default)]
    pub tsflags: Option<Vec<String>>,
    /// dnf5's `keepcache` as it holds it; `None` from dnf 4's wrapper.
    #[serde(default)]
    pub keepcache: Option<bool>,
}

/// One package of the transaction.
#[derive(Clone, Debug, Deserialize)]
pub struct PlannedPackage {
    /// `name-[epoch:]version-release.arch` as dnf shows it.
    pub nevra: String,
    /// The header must say the same.
    pub name: String,
    /// Epoch (0 when none).
    pub epoch: u32,
    /// Version.
    pub version: String,
    /// Release.
    pub release: String,
    /// Architecture.
    pub arch: String,
    /// Size of the `.rpm` in bytes (`primary.xml`'s `<size package=…>`).
    pub size: u64,
    /// Checksum type (`sha256`, `sha512`) and lower-case hex value.
    pub checksum: (String, String),
    /// The repository id.
    pub repo: String,
    /// The package's URLs, one per mirror, in dnf's order.
    pub urls: Vec<String>,
    /// A local file (a `file://` repository, a package named on the
    /// command line) instead of URLs.
    pub local: Option<PathBuf>,
}

/// A repository's settings that the fetch honours.
#[derive(Clone, Debug, Deserialize)]
pub struct Repo {
    /// Whether its packages must be signed by one of `keys`.
    pub gpgcheck: bool,
    /// Its key files (`gpgkey`, `file://` URLs made paths).
    pub keys: Vec<PathBuf>,
    /// dnf's `timeout` in seconds: to connect, and the longest a transfer
    /// may stay below `minrate`.
    pub timeout: u64,
    /// dnf's `minrate` in bytes per second.
    pub minrate: u64,
}

impl Plan {
    /// The plan at `path`, if dnf wrote one (it writes none when nothing
    /// is downloaded, or when it is not dnf's own Python entry point).
    pub fn read(path: &Path) -> Result<Option<Plan>> {
        let io = |what, source| Error::Io {
            what,
            path: path.to_path_buf(),
            source,
        };
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io("open", e)),
        };
        let mut text = Vec::new();
        file.take(MAX_PLAN_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|e| io("read", e))?;
        if text.len() as u64 > MAX_PLAN_BYTES {
            return Err(Error::PlanTooLarge {
                path: path.to_path_buf(),
                max: MAX_PLAN_BYTES,
            });
        }
        let plan: Plan = serde_json::from_slice(&text).map_err(|source| Error::PlanJson {
            path: path.to_path_buf(),
            source,
        })?;
        plan.check()?;
        Ok(Some(plan))
    }

    /// What the rest of cowkit relies on: every package has a repository
    /// entry, a place to fetch it from and a hex checksum of its type.
    fn check(&self) -> Result<()> {
        for p in &self.packages {
            let (kind, hex) = &p.checksum;
            let len = match kind.as_str() {
                "sha256" => 64,
                "sha512" => 128,
                _ => 0,
            };
            let bad = if !self.why.is_empty() {
                None
            } else if !self.repos.contains_key(&p.repo) {
                Some("its repository is not in the plan".to_string())
            } else if p.urls.is_empty() && p.local.is_none() {
                Some("no URL to fetch it from".to_string())
            } else if len == 0 || hex.len() != len || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                Some(format!(
                    "its checksum `{kind}:{hex}` is not one cowkit checks"
                ))
            } else {
                None
            };
            if let Some(why) = bad {
                return Err(Error::PlanPackage {
                    nevra: p.nevra.clone(),
                    why,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan as the wrapper's `json.dump` writes it for a Fedora mirror.
    fn fedora(checksum: &str, repo: &str) -> String {
        format!(
            r#"{{"why": [], "packages": [{{"nevra": "bash-5.2.26-3.fc40.x86_64", "name": "bash", "epoch": 0, "version": "5.2.26", "release": "3.fc40", "arch": "x86_64", "size": 1875633, "checksum": ["sha256", "{checksum}"], "repo": "{repo}", "urls": ["https://dl.fedoraproject.org/pub/fedora/linux/releases/40/Everything/x86_64/os/Packages/b/bash-5.2.26-3.fc40.x86_64.rpm"], "local": null}}], "repos": {{"fedora": {{"gpgcheck": true, "keys": ["/etc/pki/rpm-gpg/RPM-GPG-KEY-fedora-40-x86_64"], "timeout": 30, "minrate": 1000}}}}, "max_parallel_downloads": 3, "retries": 10}}"#
        )
    }

    const SUM: &str = "3b1e4a4b1ee0e7fb2b1cdf00b9b2b1b5a3bc1e32f4e6c8a6d2d0c8b1f3a4e5d6";

    #[test]
    fn a_plan_in_the_wrappers_shape_is_read() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("plan");
        assert!(
            Plan::read(&path).unwrap().is_none(),
            "no plan: dnf wrote none"
        );
        std::fs::write(&path, fedora(SUM, "fedora")).unwrap();
        let plan = Plan::read(&path).unwrap().expect("a plan");
        assert_eq!(plan.packages.len(), 1);
        let p = &plan.packages[0];
        assert_eq!((p.name.as_str(), p.epoch, p.size), ("bash", 0, 1875633));
        assert_eq!(p.checksum, ("sha256".to_string(), SUM.to_string()));
        let repo = &plan.repos["fedora"];
        assert!(repo.gpgcheck);
        assert_eq!((repo.timeout, repo.minrate), (30, 1000));
        assert_eq!((plan.max_parallel_downloads, plan.retries), (3, 10));
    }

    #[test]
    fn a_plan_cowkit_cannot_follow_is_refused_naming_the_package() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("plan");
        for (text, says) in [
            (fedora(SUM, "updates"), "its repository is not in the plan"),
            (fedora("3b1e", "fedora"), "is not one cowkit checks"),
            (
                fedora(SUM, "fedora").replace("sha256", "md5"),
                "is not one cowkit checks",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = Plan::read(&path).unwrap_err();
            assert!(
                matches!(&e, Error::PlanPackage { nevra, .. } if nevra == "bash-5.2.26-3.fc40.x86_64"),
                "{e}"
            );
            assert!(e.to_string().contains(says), "{e}");
        }
        std::fs::write(&path, "{\"why\": [").unwrap();
        assert!(matches!(Plan::read(&path), Err(Error::PlanJson { path: p, .. }) if p == path));
    }
}
