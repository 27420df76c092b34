//! What a server is given: the directory, the address, the keys, the
//! options of the store and the limits ([`crate::server::Server::bind`]
//! takes it; the handler reads its part).

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::limits::Limits;
use crate::store::Options;

/// Everything `cowkit s3 serve` needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The directory served.
    pub root: PathBuf,
    /// Where to listen.
    pub listen: SocketAddr,
    /// Access key and secret key; requests must be signed with them.
    pub credentials: Option<(String, String)>,
    /// Allow unsigned requests.
    pub anonymous: bool,
    /// The directory of the account store ([`crate::accounts`]); `None`:
    /// `DIR/.cowkit-s3/`.
    pub accounts_dir: Option<PathBuf>,
    /// The region requests must be signed for (`us-east-1` by default).
    pub region: String,
    /// Storage options.
    pub store: Options,
    /// Send GET bodies with `sendfile` on HTTP/1 connections
    /// ([`crate::sendfile`]; `cowkit s3 serve` turns it on unless given
    /// `--no-sendfile`); otherwise the `pread` body ([`crate::body`]).
    pub sendfile: bool,
    /// Timeouts for peers that stop talking, and the connection caps
    /// ([`crate::limits`]).
    pub limits: Limits,
}
