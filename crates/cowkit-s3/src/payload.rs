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
//! recording the refusal in a [`HashVerdict`] the gateway reads when the
//! body fails.
//!
//! ```
//! use cowkit_s3::payload::{HashVerdict, Hashed};
//!
//! let v = HashVerdict::default();
//! let _body = Hashed::new(s3s::Body::from("abc".to_string()), "incorrect_hash", v.clone());
//! assert!(v.get().is_none()); // nothing read yet
//! ```

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
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

/// Where [`Hashed`] leaves its verdict (a request extension).
#[derive(Clone, Debug, Default)]
pub struct HashVerdict(Arc<Mutex<Option<Mismatch>>>);

impl HashVerdict {
    /// The mismatch recorded, if the body failed.
    pub fn get(&self) -> Option<Mismatch> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, m: Mismatch) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
    }
}

/// A body hashed as it passes, failed at its end when its SHA-256 is not
/// the declared one.
pub struct Hashed {
    inner: s3s::Body,
    hasher: Option<sha2::Sha256>,
    declared: String,
    verdict: HashVerdict,
}

impl Hashed {
    /// Hash `inner` against `declared` (compared case-insensitively, as
    /// hex is), recording a mismatch in `verdict`.
    pub fn new(inner: s3s::Body, declared: &str, verdict: HashVerdict) -> Hashed {
        Hashed {
            inner,
            hasher: Some(sha2::Sha256::new()),
            declared: declared.to_string(),
            verdict,
        }
    }
}

impl http_body::Body for Hashed {
    type Data = Bytes;
    type Error = s3s::StdError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, s3s::StdError>>> {
        let this = &mut *self;
        let frame = std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx));
        match (&frame, this.hasher.as_mut()) {
            (Some(Ok(f)), Some(h)) => {
                if let Some(d) = f.data_ref() {
                    h.update(d);
                }
            }
            (None, Some(_)) => {
                let computed = hex::encode(this.hasher.take().expect("checked").finalize());
                if !computed.eq_ignore_ascii_case(&this.declared) {
                    let m = Mismatch {
                        declared: this.declared.clone(),
                        computed,
                    };
                    this.verdict.set(m.clone());
                    return Poll::Ready(Some(Err(Box::new(m))));
                }
            }
            _ => {}
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        // The end is where the hash is compared: it must be polled.
        self.hasher.is_none() && http_body::Body::is_end_stream(&self.inner)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::Body::size_hint(&self.inner)
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
            declared,
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
    async fn issue_27_unsigned_bodies_are_held_to_their_declared_hash() {
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
