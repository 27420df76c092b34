//! The dnf pipeline behind `cowkit dnf`: dnf resolves (its Python entry
//! point wrapped to write its transaction's order and the plan of its
//! downloads, [`order`], [`plan`]), cowkit fetches ([`fetch`]) and streams each package through the confined
//! transcoder into the cache ([`stream`]), and the
//! pieces the command is built from: dnf's configuration ([`conf`]), the
//! real dnf and the `dnf` shim ([`shim`]); dnf5 resolves through cowkit's
//! libdnf5 plugin ([`dnf5`]). The library never prints: what
//! the caller shows comes back as values or errors ([`Error`]).

pub mod conf;
pub mod dnf5;
pub mod error;
pub mod fetch;
pub mod order;
pub mod plan;
pub mod shim;
pub mod stream;

pub use error::{Error, Result};
