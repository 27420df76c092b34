//! The dnf pipeline behind `cowkit dnf`, driven by [`driver::run`]: dnf
//! resolves (dnf 4, [`dnf4`]: its Python entry point wrapped to write its
//! transaction's order and the plan of its downloads, [`order`],
//! [`plan`]), cowkit fetches ([`fetch`]) and streams each package through
//! the confined transcoder into the cache ([`stream`]), or takes what dnf
//! downloaded into the cache ([`cached`]), and installs the entries as one
//! transaction ([`transaction`]). The pieces it is built from: the request
//! and its outcome ([`request`]), dnf's command line read ([`line`](mod@line)), dnf's
//! configuration ([`conf`]), the host's answers asked while dnf resolves
//! ([`ahead`]), the real dnf and the `dnf` shim ([`shim`]); dnf5 resolving through cowkit's libdnf5
//! plugin ([`dnf5`]). The library
//! never prints: progress and notes go through [`request::Events`], the
//! rest comes back as values or errors ([`Error`], [`RunError`]).

pub mod ahead;
pub mod cached;
pub mod conf;
pub mod dnf4;
pub mod dnf5;
pub mod driver;
pub mod error;
pub mod fetch;
pub mod line;
pub mod order;
pub mod plan;
pub mod request;
pub mod shim;
pub mod stream;
pub mod transaction;

pub use error::{Error, Result, RunError};
