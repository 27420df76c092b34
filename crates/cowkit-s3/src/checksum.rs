//! S3's additional checksums (`x-amz-checksum-{crc32,crc32c,crc64nvme,sha1,sha256}`):
//! computed while a body is received, checked against what the client sent,
//! stored with the object or part, and combined for multipart uploads
//! (`COMPOSITE`: a checksum of the parts' checksums, `-N`; `FULL_OBJECT`:
//! the CRC of the whole object, combined from the parts' CRCs without
//! reading the data again).

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// A checksum algorithm S3 knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Algorithm {
    /// CRC-32 (ISO-HDLC, as zlib).
    #[serde(rename = "CRC32")]
    Crc32,
    /// CRC-32C (Castagnoli).
    #[serde(rename = "CRC32C")]
    Crc32c,
    /// CRC-64/NVME, S3's default.
    #[serde(rename = "CRC64NVME")]
    Crc64Nvme,
    /// SHA-1.
    #[serde(rename = "SHA1")]
    Sha1,
    /// SHA-256.
    #[serde(rename = "SHA256")]
    Sha256,
    /// SHA-512.
    #[serde(rename = "SHA512")]
    Sha512,
    /// MD5.
    #[serde(rename = "MD5")]
    Md5,
    /// XXH64 (seed 0).
    #[serde(rename = "XXHASH64")]
    Xxhash64,
    /// XXH3, 64 bits.
    #[serde(rename = "XXHASH3")]
    Xxhash3,
    /// XXH3, 128 bits.
    #[serde(rename = "XXHASH128")]
    Xxhash128,
}

/// Every algorithm, in S3's order.
pub const ALL: [Algorithm; 10] = [
    Algorithm::Crc32,
    Algorithm::Crc32c,
    Algorithm::Sha1,
    Algorithm::Sha256,
    Algorithm::Crc64Nvme,
    Algorithm::Sha512,
    Algorithm::Md5,
    Algorithm::Xxhash64,
    Algorithm::Xxhash3,
    Algorithm::Xxhash128,
];

impl Algorithm {
    /// From S3's name (`CRC32`, ..., any case).
    pub fn parse(s: &str) -> Option<Algorithm> {
        ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(s))
    }

    /// S3's name: `CRC32`, `CRC32C`, `CRC64NVME`, `SHA1`, `SHA256`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Crc32 => "CRC32",
            Algorithm::Crc32c => "CRC32C",
            Algorithm::Crc64Nvme => "CRC64NVME",
            Algorithm::Sha1 => "SHA1",
            Algorithm::Sha256 => "SHA256",
            Algorithm::Sha512 => "SHA512",
            Algorithm::Md5 => "MD5",
            Algorithm::Xxhash64 => "XXHASH64",
            Algorithm::Xxhash3 => "XXHASH3",
            Algorithm::Xxhash128 => "XXHASH128",
        }
    }

    /// The request and response header: `x-amz-checksum-crc32`, ...
    pub fn header(self) -> String {
        format!("x-amz-checksum-{}", self.name().to_ascii_lowercase())
    }

    /// Length of the binary digest.
    pub fn digest_len(self) -> usize {
        match self {
            Algorithm::Crc32 | Algorithm::Crc32c => 4,
            Algorithm::Crc64Nvme | Algorithm::Xxhash64 | Algorithm::Xxhash3 => 8,
            Algorithm::Md5 | Algorithm::Xxhash128 => 16,
            Algorithm::Sha1 => 20,
            Algorithm::Sha256 => 32,
            Algorithm::Sha512 => 64,
        }
    }

    /// Whether this is a CRC (which can be combined into a full-object
    /// checksum of a multipart upload).
    pub fn is_crc(self) -> bool {
        matches!(
            self,
            Algorithm::Crc32 | Algorithm::Crc32c | Algorithm::Crc64Nvme
        )
    }

    /// The checksum type a multipart upload gets when none is asked for.
    pub fn default_type(self) -> Type {
        match self {
            Algorithm::Crc64Nvme => Type::FullObject,
            _ => Type::Composite,
        }
    }

    /// Whether a multipart upload can use `t` with this algorithm.
    pub fn supports(self, t: Type) -> bool {
        match t {
            Type::FullObject => self.is_crc(),
            Type::Composite => self != Algorithm::Crc64Nvme,
        }
    }

    /// Whether s3s 0.14 knows the algorithm (its DTOs have fields for it);
    /// the others travel as raw headers only.
    pub fn in_s3s(self) -> bool {
        matches!(
            self,
            Algorithm::Crc32
                | Algorithm::Crc32c
                | Algorithm::Crc64Nvme
                | Algorithm::Sha1
                | Algorithm::Sha256
        )
    }

    fn crc(self) -> Option<crc_fast::CrcAlgorithm> {
        match self {
            Algorithm::Crc32 => Some(crc_fast::CrcAlgorithm::Crc32IsoHdlc),
            Algorithm::Crc32c => Some(crc_fast::CrcAlgorithm::Crc32Iscsi),
            Algorithm::Crc64Nvme => Some(crc_fast::CrcAlgorithm::Crc64Nvme),
            _ => None,
        }
    }
}

/// `FULL_OBJECT` or `COMPOSITE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Type {
    /// A checksum of the whole object's bytes.
    #[serde(rename = "FULL_OBJECT")]
    FullObject,
    /// A checksum of the parts' checksums, with `-N`.
    #[serde(rename = "COMPOSITE")]
    Composite,
}

impl Type {
    /// From S3's name.
    pub fn parse(s: &str) -> Option<Type> {
        [Type::FullObject, Type::Composite]
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
    }

    /// S3's name.
    pub fn name(self) -> &'static str {
        match self {
            Type::FullObject => "FULL_OBJECT",
            Type::Composite => "COMPOSITE",
        }
    }
}

/// A stored checksum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checksum {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Base64 of the digest; a composite one ends in `-N`.
    pub value: String,
    /// Full object or composite.
    #[serde(rename = "type")]
    pub kind: Type,
}

/// Base64 (standard alphabet, padded).
pub fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The digest in a checksum header, if it is well-formed base64 of the
/// algorithm's length.
pub fn decode(algo: Algorithm, value: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let v = base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .ok()?;
    (v.len() == algo.digest_len()).then_some(v)
}

/// One running checksum.
pub enum Hasher {
    /// A CRC.
    Crc(Algorithm, crc_fast::Digest),
    /// SHA-1.
    Sha1(sha1::Sha1),
    /// SHA-256.
    Sha256(sha2::Sha256),
    /// SHA-512.
    Sha512(sha2::Sha512),
    /// MD5.
    Md5(md5::Md5),
    /// XXH64.
    Xxh64(xxhash_rust::xxh64::Xxh64),
    /// XXH3 (64 or 128 bits).
    Xxh3(Algorithm, Box<xxhash_rust::xxh3::Xxh3>),
}

impl std::fmt::Debug for Hasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hasher({})", self.algorithm().name())
    }
}

impl Hasher {
    /// A new hasher.
    pub fn new(algo: Algorithm) -> Hasher {
        if let Some(c) = algo.crc() {
            return Hasher::Crc(algo, crc_fast::Digest::new(c));
        }
        match algo {
            Algorithm::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            Algorithm::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
            Algorithm::Md5 => Hasher::Md5(<md5::Md5 as md5::Digest>::new()),
            Algorithm::Xxhash64 => Hasher::Xxh64(xxhash_rust::xxh64::Xxh64::new(0)),
            Algorithm::Xxhash3 | Algorithm::Xxhash128 => {
                Hasher::Xxh3(algo, Box::new(xxhash_rust::xxh3::Xxh3::new()))
            }
            _ => Hasher::Sha256(sha2::Sha256::new()),
        }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Hasher::Crc(a, _) | Hasher::Xxh3(a, _) => *a,
            Hasher::Sha1(_) => Algorithm::Sha1,
            Hasher::Sha256(_) => Algorithm::Sha256,
            Hasher::Sha512(_) => Algorithm::Sha512,
            Hasher::Md5(_) => Algorithm::Md5,
            Hasher::Xxh64(_) => Algorithm::Xxhash64,
        }
    }

    /// Add bytes.
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Crc(_, d) => d.update(data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha512(h) => h.update(data),
            Hasher::Md5(h) => md5::Digest::update(h, data),
            Hasher::Xxh64(h) => h.update(data),
            Hasher::Xxh3(_, h) => h.update(data),
        }
    }

    /// The binary digest (integers big-endian, as S3 encodes them).
    pub fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Crc(a, d) => crc_bytes(a, d.finalize()),
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Sha512(h) => h.finalize().to_vec(),
            Hasher::Md5(h) => md5::Digest::finalize(h).to_vec(),
            Hasher::Xxh64(h) => h.digest().to_be_bytes().to_vec(),
            Hasher::Xxh3(Algorithm::Xxhash128, h) => h.digest128().to_be_bytes().to_vec(),
            Hasher::Xxh3(_, h) => h.digest().to_be_bytes().to_vec(),
        }
    }
}

fn crc_bytes(a: Algorithm, v: u64) -> Vec<u8> {
    if a.digest_len() == 4 {
        (v as u32).to_be_bytes().to_vec()
    } else {
        v.to_be_bytes().to_vec()
    }
}

/// The composite checksum of parts (their binary digests in order):
/// `base64(H(d1 || d2 || ...))-N`.
pub fn composite(algo: Algorithm, parts: &[Vec<u8>]) -> String {
    let mut h = Hasher::new(algo);
    for p in parts {
        h.update(p);
    }
    format!("{}-{}", b64(&h.finish()), parts.len())
}

/// The full-object CRC of parts given as (binary CRC, size), combined
/// without reading their data; `None` for a non-CRC algorithm.
pub fn full_object(algo: Algorithm, parts: &[(Vec<u8>, u64)]) -> Option<String> {
    let c = algo.crc()?;
    let shift = Shifter::new(algo)?;
    let mut acc: Option<u64> = None;
    for (d, size) in parts {
        let v = match d.len() {
            4 => u64::from(u32::from_be_bytes(d[..4].try_into().ok()?)),
            8 => u64::from_be_bytes(d[..8].try_into().ok()?),
            _ => return None,
        };
        acc = Some(match acc {
            None => v,
            Some(a) => shift.combine(a, v, *size),
        });
    }
    let acc = match acc {
        Some(a) => a,
        None => crc_fast::checksum(c, b""),
    };
    Some(b64(&crc_bytes(algo, acc)))
}

/// CRC combination in GF(2): `crc(A ‖ B)` from `crc(A)`, `crc(B)` and the
/// length of `B`, for the reflected CRCs S3 uses (initial value and final
/// XOR both all ones, so the combination is `crc(A)·x^(8·len B) + crc(B)`
/// modulo the polynomial). The powers `x^(2^k)` are computed once, so one
/// combination costs a few multiplications whatever the length (a
/// general-purpose combine squares a matrix per bit of the length, which
/// made an 820-part complete spend ~0.2 s here).
struct Shifter {
    /// The reflected polynomial.
    poly: u64,
    /// `x^0` in the reflected representation (the top bit of the width).
    one: u64,
    /// `x^(2^k)` modulo the polynomial, `k` = 0..67 (enough for any u64
    /// length in bits).
    powers: [u64; 68],
}

impl Shifter {
    fn new(algo: Algorithm) -> Option<Shifter> {
        let (poly, width) = match algo {
            Algorithm::Crc32 => (0xedb8_8320, 32),
            Algorithm::Crc32c => (0x82f6_3b78, 32),
            Algorithm::Crc64Nvme => (0x9a6c_9329_ac4b_c9b5, 64),
            _ => return None,
        };
        let one = 1u64 << (width - 1);
        let mut s = Shifter {
            poly,
            one,
            powers: [0; 68],
        };
        s.powers[0] = one >> 1; // x^1
        for k in 1..s.powers.len() {
            s.powers[k] = s.mul(s.powers[k - 1], s.powers[k - 1]);
        }
        Some(s)
    }

    /// `a·b` modulo the polynomial (reflected: the top bit is `x^0`).
    fn mul(&self, a: u64, mut b: u64) -> u64 {
        let mut p = 0;
        let mut m = self.one;
        while m != 0 {
            if a & m != 0 {
                p ^= b;
            }
            m >>= 1;
            b = if b & 1 != 0 {
                (b >> 1) ^ self.poly
            } else {
                b >> 1
            };
        }
        p
    }

    /// `crc(A ‖ B)` from `crc(A)`, `crc(B)` and `len_b` bytes.
    fn combine(&self, crc_a: u64, crc_b: u64, len_b: u64) -> u64 {
        // x^(8·len_b): the product of x^(2^k) over the set bits of
        // len_b·8, i.e. of len_b shifted by 3.
        let mut x = self.one;
        let mut n = len_b;
        let mut k = 3;
        while n != 0 {
            if n & 1 != 0 {
                x = self.mul(self.powers[k], x);
            }
            n >>= 1;
            k += 1;
        }
        self.mul(x, crc_a) ^ crc_b
    }
}

/// A part's checksum given in a CompleteMultipartUpload document for an
/// algorithm s3s 0.14 cannot parse there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartChecksum {
    /// The `<Part>` element it was in, counted from 1.
    pub part: usize,
    /// Its algorithm.
    pub algorithm: Algorithm,
    /// The value, as given.
    pub value: String,
}

/// Take the `<ChecksumSHA512>`, `<ChecksumMD5>` and `<ChecksumXXHASH*>`
/// elements out of the `<Part>` elements of a CompleteMultipartUpload
/// document (s3s 0.14 refuses the document with them): the document
/// without them, and what they held.
pub fn take_part_checksums(xml: &str) -> (String, Vec<PartChecksum>) {
    let tags: Vec<(Algorithm, String, String)> = ALL
        .into_iter()
        .filter(|a| !a.in_s3s())
        .map(|a| {
            (
                a,
                format!("<Checksum{}>", a.name()),
                format!("</Checksum{}>", a.name()),
            )
        })
        .collect();
    let mut out = String::with_capacity(xml.len());
    let mut found = Vec::new();
    let mut part = 0usize;
    let mut rest = xml;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if rest.starts_with("<Part>") || rest.starts_with("<Part ") {
            part += 1;
        } else if part > 0 {
            let hit = tags.iter().find_map(|(a, open, close)| {
                let body = rest.strip_prefix(open.as_str())?;
                let end = body.find(close.as_str())?;
                Some((*a, &body[..end], open.len() + end + close.len()))
            });
            if let Some((algorithm, value, len)) = hit {
                found.push(PartChecksum {
                    part,
                    algorithm,
                    value: value.trim().to_string(),
                });
                rest = &rest[len..];
                continue;
            }
        }
        out.push('<');
        rest = &rest[1..];
    }
    out.push_str(rest);
    (out, found)
}

/// Minimal base64 decoding for `Content-MD5`.
pub(crate) mod base64_lite {
    /// `s` decoded, stopping at the first `=`.
    pub fn decode(s: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut acc = 0u32;
        let mut bits = 0;
        for c in s.trim().bytes() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                b'=' => break,
                _ => return None,
            };
            acc = (acc << 6) | u32::from(v);
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        Some(out)
    }
}

/// S3's message for a checksum algorithm it does not know.
pub(crate) const UNSUPPORTED_ALGORITHM: &str = "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, MD5, SHA1, SHA256, SHA512, XXHASH128, XXHASH3, XXHASH64]";

#[cfg(test)]
mod tests {
    use super::*;

    fn one(a: Algorithm, data: &[u8]) -> Vec<u8> {
        let mut h = Hasher::new(a);
        h.update(data);
        h.finish()
    }

    #[test]
    fn known_values() {
        // "123456789" check values of each CRC.
        assert_eq!(hex::encode(one(Algorithm::Crc32, b"123456789")), "cbf43926");
        assert_eq!(
            hex::encode(one(Algorithm::Crc32c, b"123456789")),
            "e3069283"
        );
        assert_eq!(
            hex::encode(one(Algorithm::Crc64Nvme, b"123456789")),
            "ae8b14860a799888"
        );
        assert_eq!(
            b64(&one(Algorithm::Sha1, b"")),
            "2jmj7l5rSw0yVb/vlWAYkK/YBwk="
        );
    }

    #[test]
    fn crc_combination_equals_one_pass_and_crc_fast() {
        // Lengths around block and word boundaries, an empty part, and
        // the shape of the 820-part bench (5 MiB parts).
        let data: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for algo in [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme] {
            let c = algo.crc().unwrap();
            let shift = Shifter::new(algo).unwrap();
            for (a, b) in [
                (0, 0),
                (1, 0),
                (0, 1),
                (5, 7),
                (4096, 8192),
                (1, 65_535),
                (33_333, 36_667),
            ] {
                let (x, y) = (&data[..a], &data[a..a + b]);
                let got =
                    shift.combine(crc_fast::checksum(c, x), crc_fast::checksum(c, y), b as u64);
                assert_eq!(
                    got,
                    crc_fast::checksum(c, &data[..a + b]),
                    "{algo:?} {a}+{b}"
                );
            }
            let (a, b) = (crc_fast::checksum(c, b"abc"), crc_fast::checksum(c, b"def"));
            for len in [5u64 << 20, (5 << 20) + 1, u64::from(u32::MAX) + 7, 1 << 40] {
                assert_eq!(
                    shift.combine(a, b, len),
                    crc_fast::checksum_combine(c, a, b, len),
                    "{algo:?} {len}"
                );
            }
        }
    }

    #[test]
    fn full_object_combines_like_one_pass() {
        let a = vec![7u8; 5000];
        let b = vec![9u8; 1234];
        for algo in [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme] {
            let whole = [a.clone(), b.clone()].concat();
            let got = full_object(
                algo,
                &[
                    (one(algo, &a), a.len() as u64),
                    (one(algo, &b), b.len() as u64),
                ],
            )
            .unwrap();
            assert_eq!(got, b64(&one(algo, &whole)), "{algo:?}");
        }
    }

    #[test]
    fn part_checksums_taken_out_of_a_complete() {
        let xml = "<CompleteMultipartUpload><Part><ETag>\"a\"</ETag><PartNumber>1</PartNumber>\
                   <ChecksumSHA512>c2hh</ChecksumSHA512></Part><Part><PartNumber>2</PartNumber>\
                   <ChecksumXXHASH3> eHg= </ChecksumXXHASH3><ChecksumCRC32>Y3Jj</ChecksumCRC32>\
                   </Part></CompleteMultipartUpload>";
        let (left, found) = take_part_checksums(xml);
        assert!(
            !left.contains("SHA512") && !left.contains("XXHASH"),
            "{left}"
        );
        assert!(left.contains("<ChecksumCRC32>Y3Jj</ChecksumCRC32>"));
        assert!(left.contains("<PartNumber>2</PartNumber>"));
        assert_eq!(
            found,
            [
                PartChecksum {
                    part: 1,
                    algorithm: Algorithm::Sha512,
                    value: "c2hh".into()
                },
                PartChecksum {
                    part: 2,
                    algorithm: Algorithm::Xxhash3,
                    value: "eHg=".into()
                },
            ]
        );
        // Outside a part, or unterminated: left for the parser to refuse.
        let odd =
            "<CompleteMultipartUpload><ChecksumMD5>x</ChecksumMD5><Part><ChecksumMD5>y</Part>";
        let (left, found) = take_part_checksums(odd);
        assert_eq!(left, odd);
        assert!(found.is_empty());
    }
}
