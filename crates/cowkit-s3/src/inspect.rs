//! A request body read through an inspector on its way into s3s: every
//! data frame is shown to it, and so is the body's end. When the
//! inspector refuses, the body fails with that refusal, recorded in a
//! [`Verdict`] (a request extension) for the gateway to answer with
//! instead of the read error s3s reports. Used for the aws-chunked framing
//! ([`crate::chunked::Watch`]) and an unsigned body's declared SHA-256
//! ([`crate::payload::HashCheck`]).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;

/// What looks at a body's bytes as they pass.
pub trait Inspector: Send + Unpin + 'static {
    /// Why it fails a body.
    type Refusal: std::error::Error + Clone + Send + Sync + 'static;
    /// The next bytes of the body.
    fn feed(&mut self, data: &[u8]) -> Result<(), Self::Refusal>;
    /// The body ended here.
    fn end(&mut self) -> Result<(), Self::Refusal>;
}

/// Where an [`Inspected`] body leaves its refusal.
#[derive(Debug)]
pub struct Verdict<R>(Arc<Mutex<Option<R>>>);

impl<R> Clone for Verdict<R> {
    fn clone(&self) -> Self {
        Verdict(self.0.clone())
    }
}

impl<R> Default for Verdict<R> {
    fn default() -> Self {
        Verdict(Arc::new(Mutex::new(None)))
    }
}

impl<R: Clone> Verdict<R> {
    /// The refusal recorded, if the inspector failed the body.
    pub fn get(&self) -> Option<R> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, r: R) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    }
}

/// A body shown to an inspector; after its end or a refusal, what follows
/// passes unlooked-at.
pub struct Inspected<I: Inspector> {
    inner: s3s::Body,
    inspector: Option<I>,
    verdict: Verdict<I::Refusal>,
}

impl<I: Inspector> Inspected<I> {
    /// Show `inner` to `inspector`, recording a refusal in `verdict`.
    pub fn new(inner: s3s::Body, inspector: I, verdict: Verdict<I::Refusal>) -> Inspected<I> {
        Inspected {
            inner,
            inspector: Some(inspector),
            verdict,
        }
    }
}

impl<I: Inspector> http_body::Body for Inspected<I> {
    type Data = Bytes;
    type Error = s3s::StdError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, s3s::StdError>>> {
        let this = &mut *self;
        let frame = std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx));
        let Some(ins) = this.inspector.as_mut() else {
            return Poll::Ready(frame);
        };
        let checked = match &frame {
            Some(Ok(f)) => f.data_ref().map_or(Ok(()), |d| ins.feed(d)),
            Some(Err(_)) => Ok(()),
            None => {
                let r = ins.end();
                this.inspector = None;
                r
            }
        };
        if let Err(e) = checked {
            this.inspector = None;
            this.verdict.set(e.clone());
            return Poll::Ready(Some(Err(Box::new(e))));
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        // The end is shown to the inspector: it must be polled.
        self.inspector.is_none() && http_body::Body::is_end_stream(&self.inner)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::Body::size_hint(&self.inner)
    }
}
