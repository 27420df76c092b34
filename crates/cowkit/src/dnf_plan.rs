//! The plan of the downloads that dnf's Python wrapper writes after it
//! resolved the transaction (`COWKIT_DNF_PLAN`, see [`crate::dnf_order`]):
//! the packages in the order dnf adds them, where to fetch each, its size
//! and whole-file checksum from the repository's `primary.xml`, and each
//! repository's signature and timeout settings.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::output::CliError;

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
    pub fn read(path: &Path) -> Result<Option<Plan>, CliError> {
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(CliError::new(
                    format!("cannot open `{}`", path.display()),
                    e,
                ))
            }
        };
        let mut text = Vec::new();
        file.take(MAX_PLAN_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|e| CliError::new(format!("cannot read `{}`", path.display()), e))?;
        if text.len() as u64 > MAX_PLAN_BYTES {
            return Err(CliError::msg(format!(
                "dnf's download plan `{}` is over {MAX_PLAN_BYTES} bytes",
                path.display()
            )));
        }
        let plan: Plan = serde_json::from_slice(&text)
            .map_err(|e| CliError::new("cannot read dnf's download plan", e))?;
        plan.check()?;
        Ok(Some(plan))
    }

    /// What the rest of cowkit relies on: every package has a repository
    /// entry, a place to fetch it from and a hex checksum of its type.
    fn check(&self) -> Result<(), CliError> {
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
                return Err(CliError::msg(format!(
                    "dnf's download plan for `{}`: {why}",
                    p.nevra
                )));
            }
        }
        Ok(())
    }
}
