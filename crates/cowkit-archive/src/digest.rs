//! rpm's file digest algorithms (`FILEDIGESTALGO`) and a running digest
//! of one: below the header's file list (`files`) and the errors that
//! name an algorithm (`rpm`).

/// File digest algorithms (`FILEDIGESTALGO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DigestAlgo {
    /// MD5 (1), the default when the tag is absent.
    Md5,
    /// SHA-256 (8).
    Sha256,
    /// SHA-384 (9).
    Sha384,
    /// SHA-512 (10).
    Sha512,
}

impl DigestAlgo {
    /// The algorithm with rpm's number `n`.
    pub fn from_rpm(n: u32) -> Option<DigestAlgo> {
        Some(match n {
            1 => DigestAlgo::Md5,
            8 => DigestAlgo::Sha256,
            9 => DigestAlgo::Sha384,
            10 => DigestAlgo::Sha512,
            _ => return None,
        })
    }

    /// rpm's number for the algorithm.
    pub fn rpm_number(self) -> u32 {
        match self {
            DigestAlgo::Md5 => 1,
            DigestAlgo::Sha256 => 8,
            DigestAlgo::Sha384 => 9,
            DigestAlgo::Sha512 => 10,
        }
    }

    /// Digest length in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            DigestAlgo::Md5 => 16,
            DigestAlgo::Sha256 => 32,
            DigestAlgo::Sha384 => 48,
            DigestAlgo::Sha512 => 64,
        }
    }

    /// A fresh hasher.
    pub fn hasher(self) -> Hasher {
        use sha2::Digest;
        match self {
            DigestAlgo::Md5 => Hasher::Md5(md5::Md5::default()),
            DigestAlgo::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            DigestAlgo::Sha384 => Hasher::Sha384(sha2::Sha384::new()),
            DigestAlgo::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
        }
    }
}

impl std::fmt::Display for DigestAlgo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DigestAlgo::Md5 => "MD5",
            DigestAlgo::Sha256 => "SHA-256",
            DigestAlgo::Sha384 => "SHA-384",
            DigestAlgo::Sha512 => "SHA-512",
        })
    }
}

/// A running file digest.
#[derive(Clone)]
pub enum Hasher {
    /// MD5.
    Md5(md5::Md5),
    /// SHA-256.
    Sha256(sha2::Sha256),
    /// SHA-384.
    Sha384(sha2::Sha384),
    /// SHA-512.
    Sha512(sha2::Sha512),
}

impl Hasher {
    /// Hash `data`.
    pub fn update(&mut self, data: &[u8]) {
        use sha2::Digest;
        match self {
            Hasher::Md5(h) => md5::Digest::update(h, data),
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha384(h) => h.update(data),
            Hasher::Sha512(h) => h.update(data),
        }
    }

    /// The digest.
    pub fn finish(self) -> Vec<u8> {
        use sha2::Digest;
        match self {
            Hasher::Md5(h) => md5::Digest::finalize(h).to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Sha384(h) => h.finalize().to_vec(),
            Hasher::Sha512(h) => h.finalize().to_vec(),
        }
    }
}

impl std::fmt::Debug for Hasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hasher")
    }
}
