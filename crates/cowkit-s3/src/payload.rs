//! The SHA-256 an unsigned request declares for its body
//! (`x-amz-content-sha256` other than S3's payload markers), checked as the
//! body streams into s3s.
//!
//! A signed request's hash is part of its signature and s3s checks it. An
//! unsigned one (what a public bucket takes) has no signature, but S3
//! still computes the body's hash and refuses the request when it differs
//! from the one declared (`XAmzContentSHA256Mismatch`), whatever the value
//! looks like. An empty body's hash is known before the body is read (the
//! prechecks compare it); any other body is hashed here, and a mismatch
//! fails the body at its end, before the gateway commits anything,
//! recording the refusal in a [`HashVerdict`]. The handler reads it once
//! the operation has failed and answers S3's refusal instead, whatever
//! error the operation met (`Handler::handle`).
//!
//! ```
//! use cowkit_s3::payload::{HashCheck, HashVerdict, Hashed};
//!
//! let v = HashVerdict::default();
//! let body = s3s::Body::from("abc".to_string());
//! let _body = Hashed::new(body, HashCheck::new("incorrect_hash"), v.clone());
//! assert!(v.get().is_none()); // nothing read yet
//! ```

use sha2::Digest as _;

/// A declared hash the body did not have: `(declared, computed)`, the
/// computed one in lowercase hex.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("The provided 'x-amz-content-sha256' header does not match what was computed.")]
pub struct Mismatch {
    /// What the client declared.
    pub declared: String,
    /// What the body hashed to.
    pub computed: String,
}

/// Where a [`Hashed`] body leaves its verdict (a request extension).
pub type HashVerdict = crate::inspect::Verdict<Mismatch>;

/// A body held to a declared SHA-256.
pub type Hashed = crate::inspect::Inspected<HashCheck>;

/// The SHA-256 of a body so far, and the one declared for it (compared
/// case-insensitively, as hex is).
pub struct HashCheck {
    hasher: sha2::Sha256,
    declared: String,
}

impl HashCheck {
    /// Check a body against `declared`.
    pub fn new(declared: &str) -> HashCheck {
        HashCheck {
            hasher: sha2::Sha256::new(),
            declared: declared.to_string(),
        }
    }
}

impl crate::inspect::Inspector for HashCheck {
    type Refusal = Mismatch;

    fn feed(&mut self, data: &[u8]) -> Result<(), Mismatch> {
        self.hasher.update(data);
        Ok(())
    }

    fn end(&mut self) -> Result<(), Mismatch> {
        let computed = hex::encode(std::mem::take(&mut self.hasher).finalize());
        if computed.eq_ignore_ascii_case(&self.declared) {
            return Ok(());
        }
        Err(Mismatch {
            declared: self.declared.clone(),
            computed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;

    async fn read(body: &str, declared: &str) -> (Result<Vec<u8>, String>, Option<Mismatch>) {
        let v = HashVerdict::default();
        let mut b = Box::pin(Hashed::new(
            s3s::Body::from(body.to_string()),
            HashCheck::new(declared),
            v.clone(),
        ));
        let mut out = Vec::new();
        let got = loop {
            match std::future::poll_fn(|cx| b.as_mut().poll_frame(cx)).await {
                None => break Ok(out),
                Some(Ok(f)) => out.extend_from_slice(f.data_ref().map_or(&[][..], |d| d)),
                Some(Err(e)) => break Err(e.to_string()),
            }
        };
        (got, v.get())
    }

    #[tokio::test]
    async fn unsigned_bodies_are_held_to_their_declared_hash() {
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(read("abc", abc).await, (Ok(b"abc".to_vec()), None));
        assert_eq!(
            read("abc", &abc.to_ascii_uppercase()).await.0,
            Ok(b"abc".to_vec())
        );
        let (got, verdict) = read("abc", "incorrect_hash").await;
        assert!(got.is_err());
        assert_eq!(
            verdict,
            Some(Mismatch {
                declared: "incorrect_hash".into(),
                computed: abc.into()
            })
        );
    }
}
