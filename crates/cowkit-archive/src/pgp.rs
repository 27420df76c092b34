//! OpenPGP header signatures of RPM packages, checked before the payload.
//!
//! A [`Keyring`] holds the public keys the caller trusts, loaded from key
//! files ([`Keyring::load`]). [`Keyring::verify_header`] takes a
//! [`Package`] — whose headers have been read and digest-checked, and whose
//! payload has not been touched — and checks the header-only OpenPGP
//! signatures in its signature header against those keys.
//!
//! # Which signatures are checked
//!
//! - `RPMSIGTAG_OPENPGP` (rpm 6): every signature in it.
//! - `RPMSIGTAG_RSA` (268) and `RPMSIGTAG_DSA` (267): written by rpm 4.x
//!   (`DSA` also holds EdDSA and ECDSA signatures).
//!
//! All of them sign exactly the main header (intro, index and store), the
//! bytes from [`Package::header_offset`] to the end of [`Package::prefix`].
//! The package is accepted if **any** of them verifies with a key in the
//! keyring.
//!
//! The legacy header+payload signatures `RPMSIGTAG_PGP` (1002) and
//! `RPMSIGTAG_GPG` (1005) are ignored: they cover the payload too, so they
//! could only be checked after reading it, and the point here is to trust
//! nothing before the payload is read. Nothing is lost: the signed header
//! holds `PAYLOADDIGEST`, which [`Package::verify_payload`] checks while the
//! payload streams. A package carrying only those legacy signatures (rpm
//! older than 4.1, or some third-party signers) is reported as
//! [`Error::NoSignature`] with `legacy_only` set.
//!
//! Keys are matched by the signature's issuer fingerprint, and the
//! cryptography is rpm-rs's ([`rpm::signature::pgp::Verifier`], built on
//! rPGP). Key expiry and revocation are not checked.
//!
//! # Example
//!
//! ```no_run
//! use cowkit_archive::{pgp::Keyring, rpm::Package};
//!
//! let keys = Keyring::load("/etc/pki/rpm-gpg")?;
//! let mut file = std::io::BufReader::new(std::fs::File::open("pkg.rpm")?);
//! let pkg = Package::read(&mut file)?;
//! let signer = keys.verify_header(&pkg)?;
//! assert!(signer.fingerprint.is_some());
//! // ... only now read the payload from `file`.
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use rpm::signature::pgp::Verifier;
use rpm::signature::Verifying;
use rpm::IndexSignatureTag;

use crate::rpm::Package;

/// Key files larger than this are refused (real ones are a few KiB).
pub const MAX_KEY_FILE_BYTES: u64 = 16 << 20;

/// OpenPGP packet tags used here (RFC 9580 §5).
const TAG_SIGNATURE: u8 = 2;
const TAG_SECRET_KEY: u8 = 5;
const TAG_PUBLIC_KEY: u8 = 6;

/// What can go wrong loading keys or verifying a header signature.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A key file or directory could not be read.
    #[error("cannot read `{}`", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A key file is larger than [`MAX_KEY_FILE_BYTES`].
    #[error("`{}` is over {MAX_KEY_FILE_BYTES} bytes, far too large for an OpenPGP public key file; pass the key file itself", path.display())]
    KeyFileTooLarge {
        /// The file.
        path: PathBuf,
    },
    /// A key file holds neither an armored nor a binary public key.
    #[error("`{}` is not an OpenPGP public key: expected an ASCII-armored `-----BEGIN PGP PUBLIC KEY BLOCK-----` or a binary key as written by `gpg --export KEYID`", path.display())]
    NotAKey {
        /// The file.
        path: PathBuf,
    },
    /// A key file holds a secret key (or another armored block).
    #[error("`{}` holds {found}, not a public key; export the public key with `gpg --armor --export KEYID` and use that file", path.display())]
    NotAPublicKey {
        /// The file.
        path: PathBuf,
        /// What it holds, e.g. "a secret key".
        found: String,
    },
    /// A key file looks like a public key but cannot be loaded.
    #[error("cannot load the OpenPGP public key in `{}` (rpm-rs accepts RSA, EdDSA and ECDSA keys); export it again with `gpg --armor --export KEYID`", path.display())]
    BadKey {
        /// The file.
        path: PathBuf,
        /// rpm-rs's error.
        #[source]
        source: Box<rpm::Error>,
    },
    /// A key directory has no key files in it.
    #[error("`{}` has no key files (`*.asc`, `*.gpg`, `*.pub` or `RPM-GPG-KEY-*`)", dir.display())]
    NoKeyFiles {
        /// The directory.
        dir: PathBuf,
    },
    /// [`Keyring::verify_header`] was called on a keyring with no keys.
    #[error(
        "the keyring is empty, so no signature can be verified; load at least one public key file"
    )]
    EmptyKeyring,
    /// The package has no header-only signature.
    #[error("{}", if *legacy_only {
        "the package is signed only with legacy header+payload signatures (RPMSIGTAG_PGP/GPG), which cannot be checked before the payload is read; re-sign it with `rpmsign --addsign` from rpm 4.x or later"
    } else {
        "the package is not signed, but a signature is required; sign it with `rpmsign --addsign`, or do not require a key"
    })]
    NoSignature {
        /// The package has legacy header+payload signatures only.
        legacy_only: bool,
    },
    /// No signature was made by a key in the keyring.
    ///
    /// A signature that names no issuer fingerprint (made by GnuPG older
    /// than 2.1, or a v3 signature) is tried with every key, and one that
    /// fails with all of them is reported here too: rpm-rs cannot tell
    /// "wrong key" from "bad signature" without the fingerprint.
    #[error("the package is signed by key {key_id}, which is not in the keyring; if you trust that key, add its public key file (for a distribution, its `RPM-GPG-KEY-*` file)")]
    UnknownKey {
        /// The issuer key ID (16 hex digits) of each signature, comma-separated.
        key_id: String,
    },
    /// A signature was made by a key in the keyring but does not verify.
    #[error("the header signature by key {key_id} does not verify with the key in `{}`: the package was changed after it was signed, or is damaged; do not use it, fetch it again from its source", key_file.display())]
    BadSignature {
        /// The issuer key ID.
        key_id: String,
        /// The key file holding that key.
        key_file: PathBuf,
        /// rpm-rs's error.
        #[source]
        source: Box<rpm::Error>,
    },
    /// The key that made a signature is not marked for signing.
    #[error("key {key_id} in `{}` is not allowed to sign (its key flags lack \"sign\"), so its signature is not accepted", key_file.display())]
    KeyCannotSign {
        /// The issuer key ID.
        key_id: String,
        /// The key file holding that key.
        key_file: PathBuf,
    },
    /// A signature tag holds something that is not a usable signature.
    #[error("the {tag} signature cannot be used (malformed, or an unsupported algorithm); the package may be damaged")]
    MalformedSignature {
        /// Where it was found.
        tag: SignatureTag,
        /// rpm-rs's error.
        #[source]
        source: Box<rpm::Error>,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The signature-header tag a header signature was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignatureTag {
    /// `RPMSIGTAG_OPENPGP` (rpm 6): a list of base64 signatures.
    OpenPgp,
    /// `RPMSIGTAG_RSA` (268): an RSA signature of the header.
    Rsa,
    /// `RPMSIGTAG_DSA` (267): a DSA, EdDSA or ECDSA signature of the header.
    Dsa,
}

impl SignatureTag {
    /// The tag number.
    pub fn number(self) -> u32 {
        self.rpm_tag() as u32
    }

    fn rpm_tag(self) -> IndexSignatureTag {
        match self {
            SignatureTag::OpenPgp => IndexSignatureTag::RPMSIGTAG_OPENPGP,
            SignatureTag::Rsa => IndexSignatureTag::RPMSIGTAG_RSA,
            SignatureTag::Dsa => IndexSignatureTag::RPMSIGTAG_DSA,
        }
    }
}

impl fmt::Display for SignatureTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            SignatureTag::OpenPgp => "RPMSIGTAG_OPENPGP",
            SignatureTag::Rsa => "RPMSIGTAG_RSA",
            SignatureTag::Dsa => "RPMSIGTAG_DSA",
        };
        write!(f, "{name} ({})", self.number())
    }
}

/// The signature that verified, and the key that verified it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// Where the signature was found.
    pub tag: SignatureTag,
    /// The signing key's fingerprint (lower-case hex), from the signature's
    /// issuer fingerprint, which rpm-rs matched against the key; `None` for
    /// signatures that do not name it.
    pub fingerprint: Option<String>,
    /// The signing key's ID (16 lower-case hex digits), if the signature
    /// names it. Without a fingerprint it comes from a subpacket that the
    /// signature need not cover, so trust [`Verified::key_file`] instead.
    pub key_id: Option<String>,
    /// The key file that holds the key.
    pub key_file: PathBuf,
}

/// Trusted OpenPGP public keys, one rpm-rs verifier per key file so that
/// results can name the file.
#[derive(Clone, Debug, Default)]
pub struct Keyring {
    files: Vec<(PathBuf, Verifier)>,
}

impl Keyring {
    /// An empty keyring.
    pub fn new() -> Self {
        Self::default()
    }

    /// Load a key file, or every key file in a directory (see
    /// [`Keyring::add`]).
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let mut keyring = Self::new();
        keyring.add(path)?;
        Ok(keyring)
    }

    /// Add a key file, or every key file in a directory: regular files
    /// named `*.asc`, `*.gpg`, `*.pub` or `RPM-GPG-KEY-*`, not recursing.
    /// Each file may hold one or more public keys, ASCII-armored or binary
    /// (`gpg --export`). Any file that cannot be loaded is an error naming
    /// it, as is a directory with no key files. Returns the number of files
    /// added.
    pub fn add(&mut self, path: impl AsRef<Path>) -> Result<usize> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        if !std::fs::metadata(path).map_err(io)?.is_dir() {
            let verifier = load_file(path)?;
            self.files.push((path.to_owned(), verifier));
            return Ok(1);
        }
        let mut files = Vec::new();
        for entry in std::fs::read_dir(path).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let wanted = name.starts_with("RPM-GPG-KEY-")
                || [".asc", ".gpg", ".pub"].iter().any(|e| name.ends_with(e));
            let file = entry.path();
            // Follows symlinks, as /etc/pki/rpm-gpg often holds them.
            if wanted && std::fs::metadata(&file).is_ok_and(|m| m.is_file()) {
                files.push(file);
            }
        }
        if files.is_empty() {
            return Err(Error::NoKeyFiles {
                dir: path.to_owned(),
            });
        }
        files.sort();
        // All or nothing: a bad file leaves the keyring as it was.
        let loaded = files
            .into_iter()
            .map(|file| Ok((file.clone(), load_file(&file)?)))
            .collect::<Result<Vec<_>>>()?;
        let n = loaded.len();
        self.files.extend(loaded);
        Ok(n)
    }
    /// The key files loaded, in the order they are tried.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|(p, _)| p.as_path())
    }

    /// Number of key files loaded.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// No key file has been loaded.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Verify the header-only signatures of `pkg` (see the
    /// [module documentation](self) for which ones) against the keyring.
    /// Reads no payload byte: call it right after [`Package::read`].
    ///
    /// Succeeds if any signature verifies with any key. Otherwise the error
    /// is, in this order of precedence: [`Error::BadSignature`] (a trusted
    /// key's signature does not match the header), [`Error::KeyCannotSign`],
    /// [`Error::MalformedSignature`], [`Error::UnknownKey`]; or
    /// [`Error::NoSignature`] if there is none.
    pub fn verify_header(&self, pkg: &Package) -> Result<Verified> {
        if self.files.is_empty() {
            return Err(Error::EmptyKeyring);
        }
        let header = &pkg.prefix()[pkg.header_offset()..];
        let sigheader = &pkg.metadata().signature;
        let (signatures, mut failure) = header_signatures(pkg.metadata());
        if signatures.is_empty() && failure.is_none() {
            let legacy_only = sigheader.entry_is_present(IndexSignatureTag::RPMSIGTAG_PGP)
                || sigheader.entry_is_present(IndexSignatureTag::RPMSIGTAG_GPG);
            return Err(Error::NoSignature { legacy_only });
        }
        let mut unknown: Vec<String> = Vec::new();
        for (tag, signature) in &signatures {
            let issuer = issuer(signature);
            let key_id = issuer
                .key_id
                .clone()
                .unwrap_or_else(|| "(not named)".into());
            for (key_file, verifier) in &self.files {
                let error = match verifier.verify(header, &signature[..]) {
                    Ok(()) => {
                        return Ok(Verified {
                            tag: *tag,
                            fingerprint: issuer.fingerprint,
                            key_id: issuer.key_id,
                            key_file: key_file.clone(),
                        })
                    }
                    Err(rpm::Error::KeyNotFoundError { .. }) => continue,
                    Err(source @ rpm::Error::VerificationError { .. }) => Error::BadSignature {
                        key_id: key_id.clone(),
                        key_file: key_file.clone(),
                        source: Box::new(source),
                    },
                    Err(rpm::Error::KeyLacksSigningCapability { .. }) => Error::KeyCannotSign {
                        key_id: key_id.clone(),
                        key_file: key_file.clone(),
                    },
                    // Anything else is about the signature, not the key.
                    Err(source) => Error::MalformedSignature {
                        tag: *tag,
                        source: Box::new(source),
                    },
                };
                let malformed = matches!(error, Error::MalformedSignature { .. });
                if failure.as_ref().is_none_or(|f| rank(&error) < rank(f)) {
                    failure = Some(error);
                }
                if malformed {
                    break;
                }
            }
            if !unknown.contains(&key_id) {
                unknown.push(key_id);
            }
        }
        Err(failure.unwrap_or_else(|| Error::UnknownKey {
            key_id: unknown.join(", "),
        }))
    }
}

/// Load one key file into a verifier of its own.
fn load_file(path: &Path) -> Result<Verifier> {
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_KEY_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(Error::KeyFileTooLarge {
            path: path.to_owned(),
        });
    }
    let not_public = |found: &str| Error::NotAPublicKey {
        path: path.to_owned(),
        found: found.to_string(),
    };
    let blocks = if find(&bytes, ARMOR_BEGIN).is_some() {
        armored_blocks(&bytes).map_err(|found| not_public(&found))?
    } else {
        match packet(&bytes) {
            Some((TAG_PUBLIC_KEY, _)) => vec![Cow::Owned(armor_public_key(&bytes).into_bytes())],
            Some((TAG_SECRET_KEY, _)) => return Err(not_public("a secret key")),
            _ => {
                return Err(Error::NotAKey {
                    path: path.to_owned(),
                })
            }
        }
    };
    let mut verifier = Verifier::new();
    for block in &blocks {
        verifier
            .load_from_asc_bytes(block)
            .map_err(|source| Error::BadKey {
                path: path.to_owned(),
                source: Box::new(source),
            })?;
    }
    Ok(verifier)
}

const ARMOR_BEGIN: &[u8] = b"-----BEGIN PGP ";
const PUBLIC_BEGIN: &[u8] = b"-----BEGIN PGP PUBLIC KEY BLOCK-----";
const PUBLIC_END: &[u8] = b"-----END PGP PUBLIC KEY BLOCK-----";

/// Each armored public key block in `text`, as rpm-rs reads only the first
/// block it is given and key files often hold several (one per key). Text
/// around the blocks is ignored. Any other kind of armored block is an
/// error naming what it is.
fn armored_blocks(text: &[u8]) -> Result<Vec<Cow<'_, [u8]>>, String> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(at) = find(rest, ARMOR_BEGIN) {
        rest = &rest[at..];
        if !rest.starts_with(PUBLIC_BEGIN) {
            let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
            let line = String::from_utf8_lossy(line).trim_end().to_string();
            return Err(if line.contains("PRIVATE KEY") {
                "a secret key".to_string()
            } else {
                format!("`{line}`")
            });
        }
        // Up to the END line, or to the end of the text: a block without
        // one is left for rpm-rs to refuse.
        let end = find(rest, PUBLIC_END).map_or(rest.len(), |e| e + PUBLIC_END.len());
        blocks.push(Cow::Borrowed(&rest[..end]));
        rest = &rest[end..];
    }
    Ok(blocks)
}

/// Precedence of verification failures: lower is reported first.
fn rank(e: &Error) -> u8 {
    match e {
        Error::BadSignature { .. } => 0,
        Error::KeyCannotSign { .. } => 1,
        _ => 2,
    }
}

/// Header signatures and the tags they were found in.
type Signatures<'a> = Vec<(SignatureTag, Cow<'a, [u8]>)>;

/// The header-only signatures, without duplicates (rpm 6 copies one of
/// the `OPENPGP` signatures into the legacy tag), and the first tag that
/// could not be read.
fn header_signatures(md: &rpm::PackageMetadata) -> (Signatures<'_>, Option<Error>) {
    let sig = &md.signature;
    let mut found = Signatures::new();
    let mut failure = None;
    if sig.entry_is_present(IndexSignatureTag::RPMSIGTAG_OPENPGP) {
        // rpm-rs decodes the base64 list when the tag is present and well
        // typed (otherwise it returns the legacy tags, checked below).
        let decoded = sig
            .get_entry_data_as_string_array(IndexSignatureTag::RPMSIGTAG_OPENPGP)
            .and_then(|_| md.raw_signatures());
        match decoded {
            Ok(list) => found.extend(list.into_iter().map(|s| (SignatureTag::OpenPgp, s))),
            Err(source) => {
                failure = Some(Error::MalformedSignature {
                    tag: SignatureTag::OpenPgp,
                    source: Box::new(source),
                })
            }
        }
    }
    for tag in [SignatureTag::Rsa, SignatureTag::Dsa] {
        match sig.get_entry_data_as_binary(tag.rpm_tag()) {
            Ok(bytes) => {
                if !found.iter().any(|(_, s)| s[..] == *bytes) {
                    found.push((tag, Cow::Borrowed(bytes)));
                }
            }
            Err(rpm::Error::TagNotFound(_)) => {}
            Err(source) => {
                failure.get_or_insert(Error::MalformedSignature {
                    tag,
                    source: Box::new(source),
                });
            }
        }
    }
    (found, failure)
}

/// Who made a signature, as the signature packet says.
#[derive(Debug, Default, PartialEq, Eq)]
struct Issuer {
    key_id: Option<String>,
    fingerprint: Option<String>,
}

/// Read the issuer of an OpenPGP signature packet: the key ID of a v3
/// signature, or the Issuer Fingerprint (33) and Issuer Key ID (16)
/// subpackets of a v4 or v6 one. Only for messages: verification is
/// rpm-rs's. Never panics; unreadable input gives an empty `Issuer`.
fn issuer(signature: &[u8]) -> Issuer {
    let mut out = Issuer::default();
    let _ = read_issuer(signature, &mut out);
    if out.key_id.is_none() {
        // A v4 key ID is the fingerprint's last 8 bytes, a v6 one its first 8.
        out.key_id = out.fingerprint.as_ref().and_then(|f| match f.len() {
            40 => Some(f[24..].to_string()),
            64 => Some(f[..16].to_string()),
            _ => None,
        });
    }
    out
}

fn read_issuer(signature: &[u8], out: &mut Issuer) -> Option<()> {
    let (tag, body) = packet(signature)?;
    if tag != TAG_SIGNATURE {
        return None;
    }
    match *body.first()? {
        // version, hashed length (5), type, creation time, key ID
        2 | 3 => out.key_id = Some(hex::encode(body.get(7..15)?)),
        version @ (4 | 6) => {
            // version, type, public-key algorithm, hash algorithm, then the
            // hashed and unhashed subpacket areas, each after its length
            // (2 bytes in v4, 4 in v6).
            let width = if version == 4 { 2 } else { 4 };
            let mut rest = body.get(4..)?;
            for _ in 0..2 {
                let len = be(rest.get(..width)?);
                let area = rest.get(width..width.checked_add(len)?)?;
                read_subpackets(area, out);
                rest = &rest[width + len..];
            }
        }
        _ => return None,
    }
    Some(())
}

fn read_subpackets(mut area: &[u8], out: &mut Issuer) -> Option<()> {
    while let Some(&first) = area.first() {
        let (len, at): (usize, usize) = match first {
            0..=191 => (first as usize, 1),
            192..=254 => (
                ((first as usize - 192) << 8) + *area.get(1)? as usize + 192,
                2,
            ),
            255 => (be(area.get(1..5)?), 5),
        };
        let sub = area.get(at..at.checked_add(len)?)?;
        area = &area[at + len..];
        let (&kind, data) = sub.split_first()?;
        match kind & 0x7f {
            16 if data.len() == 8 => {
                out.key_id.get_or_insert_with(|| hex::encode(data));
            }
            33 => {
                if let Some((_, fpr)) = data.split_first() {
                    out.fingerprint.get_or_insert_with(|| hex::encode(fpr));
                }
            }
            _ => {}
        }
    }
    Some(())
}

/// The tag and body of the first OpenPGP packet in `bytes` (RFC 9580 §4.2;
/// partial lengths are not supported, as keys and signatures never use them).
fn packet(bytes: &[u8]) -> Option<(u8, &[u8])> {
    let (&first, rest) = bytes.split_first()?;
    if first & 0x80 == 0 {
        return None;
    }
    let (tag, len, at): (u8, usize, usize) = if first & 0x40 != 0 {
        let o = *rest.first()?;
        let (len, at) = match o {
            0..=191 => (o as usize, 1),
            192..=223 => (((o as usize - 192) << 8) + *rest.get(1)? as usize + 192, 2),
            255 => (be(rest.get(1..5)?), 5),
            _ => return None,
        };
        (first & 0x3f, len, at)
    } else {
        let (len, at) = match first & 3 {
            0 => (*rest.first()? as usize, 1),
            1 => (be(rest.get(..2)?), 2),
            2 => (be(rest.get(..4)?), 4),
            _ => (rest.len(), 0),
        };
        ((first >> 2) & 0x0f, len, at)
    };
    Some((tag, rest.get(at..at.checked_add(len)?)?))
}

/// A big-endian unsigned integer of up to 4 bytes.
fn be(bytes: &[u8]) -> usize {
    bytes.iter().fold(0, |n, &b| (n << 8) | b as usize)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Wrap binary key packets in ASCII armor, the only form rpm-rs loads. The
/// CRC-24 line is optional (RFC 9580 §6.1) and left out.
fn armor_public_key(binary: &[u8]) -> String {
    let mut out = String::from("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n");
    for line in binary.chunks(48) {
        out.push_str(&base64(line));
        out.push('\n');
    }
    out.push_str("-----END PGP PUBLIC KEY BLOCK-----\n");
    out
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain:?}");
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xfe]), "+//+");
    }

    /// A v4 signature packet with the given hashed and unhashed areas.
    fn v4_signature(hashed: &[u8], unhashed: &[u8]) -> Vec<u8> {
        let mut body = vec![4, 0x00, 1, 8];
        body.extend_from_slice(&(hashed.len() as u16).to_be_bytes());
        body.extend_from_slice(hashed);
        body.extend_from_slice(&(unhashed.len() as u16).to_be_bytes());
        body.extend_from_slice(unhashed);
        body.extend_from_slice(&[0xab, 0xcd, 0x00, 0x01, 0x00]); // left bits, MPI
        let mut packet = vec![0xc2, body.len() as u8];
        packet.extend(body);
        packet
    }

    #[test]
    fn issuer_is_read_from_fingerprint_and_key_id_subpackets() {
        let fpr: Vec<u8> = (1..=20).collect();
        let mut hashed = vec![22, 33, 4];
        hashed.extend_from_slice(&fpr);
        hashed.extend_from_slice(&[5, 2, 0, 0, 0, 0]); // creation time
        let unhashed = [9, 16, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4];
        let got = issuer(&v4_signature(&hashed, &unhashed));
        assert_eq!(got.fingerprint.as_deref(), Some(hex::encode(&fpr).as_str()));
        assert_eq!(got.key_id.as_deref(), Some("deadbeef01020304"));

        // Fingerprint only: the key ID is its last 8 bytes.
        let got = issuer(&v4_signature(&hashed, &[]));
        assert_eq!(got.key_id.as_deref(), Some(&hex::encode(&fpr)[24..]));
    }

    #[test]
    fn issuer_of_a_v3_signature_and_old_format_packet() {
        let body = [
            3, 5, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 8, 0xab, 0xcd,
        ];
        let mut packet = vec![0x88, body.len() as u8]; // old format, tag 2, 1-byte length
        packet.extend_from_slice(&body);
        assert_eq!(issuer(&packet).key_id.as_deref(), Some("0102030405060708"));
    }

    #[test]
    fn issuer_never_panics_on_truncated_or_hostile_input() {
        let fpr: Vec<u8> = (1..=20).collect();
        let mut hashed = vec![22, 33, 4];
        hashed.extend_from_slice(&fpr);
        let good = v4_signature(&hashed, &[9, 16, 1, 2, 3, 4, 5, 6, 7, 8]);
        for cut in 0..good.len() {
            let _ = issuer(&good[..cut]);
        }
        for i in 0..good.len() {
            for v in [0x00, 0xff, 0xc0, 0x80] {
                let mut bad = good.clone();
                bad[i] = v;
                let _ = issuer(&bad);
            }
        }
        assert_eq!(issuer(&[]), Issuer::default());
        assert_eq!(
            issuer(&[0xc2, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Issuer::default()
        );
    }

    #[test]
    fn packet_lengths_in_every_encoding() {
        let body = vec![7u8; 300];
        let mut two = vec![
            0xc6,
            192 + ((300 - 192) >> 8) as u8,
            ((300 - 192) & 0xff) as u8,
        ];
        two.extend_from_slice(&body);
        assert_eq!(packet(&two), Some((6, &body[..])));
        let mut five = vec![0xc6, 255, 0, 0, 1, 44];
        five.extend_from_slice(&body);
        assert_eq!(packet(&five), Some((6, &body[..])));
        let mut old = vec![0x99, 1, 44]; // old format, tag 6, 2-byte length
        old.extend_from_slice(&body);
        assert_eq!(packet(&old), Some((6, &body[..])));
        assert_eq!(packet(&old[..100]), None);
        assert_eq!(packet(b"-----BEGIN"), None);
    }
}
