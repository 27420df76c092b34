//! A request body read through an inspector on its way into s3s: every
//! data frame is shown to it, and so is the body's end. When the
//! inspector refuses, the body fails with that refusal, recorded in a
//! [`Verdict`] (a request extension) for the gateway to answer with
//! instead of the read error s3s reports. The inspector is one [`Tap`] on
//! a body; the other keeps what s3s leaves of a body unread
//! (`handler::leftover`). Used for the aws-chunked framing
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

/// A frame of a request body as it is polled (`None`: the body's end).
pub type Frame = Option<Result<http_body::Frame<Bytes>, s3s::StdError>>;

/// What a [`Tapped`] body shows its frames to, and hands what is left of it
/// when dropped before its end.
pub trait Tap: Send + Unpin + 'static {
    /// `frame` passes; an error fails the body there instead.
    fn frame(&mut self, _frame: &Frame) -> Result<(), s3s::StdError> {
        Ok(())
    }
    /// Whether the tap waits to be shown the body's end, so that the body
    /// must be polled to its `None` even when the bytes are all read.
    fn awaits_end(&self) -> bool {
        false
    }
    /// The body was dropped; `rest` is what was left of it unread.
    fn dropped(&mut self, _rest: s3s::Body) {}
}

/// A request body passed on with a [`Tap`] on it: every frame, and the
/// body itself when dropped, go by the tap.
pub struct Tapped<T: Tap> {
    inner: s3s::Body,
    tap: T,
}

impl<T: Tap> Tapped<T> {
    /// `inner` with `tap` on it.
    pub fn with_tap(inner: s3s::Body, tap: T) -> Tapped<T> {
        Tapped { inner, tap }
    }
}

impl<T: Tap> Drop for Tapped<T> {
    fn drop(&mut self) {
        let rest = std::mem::replace(&mut self.inner, s3s::Body::empty());
        self.tap.dropped(rest);
    }
}

impl<T: Tap> http_body::Body for Tapped<T> {
    type Data = Bytes;
    type Error = s3s::StdError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Frame> {
        let this = &mut *self;
        let frame = std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx));
        match this.tap.frame(&frame) {
            Ok(()) => Poll::Ready(frame),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        !self.tap.awaits_end() && http_body::Body::is_end_stream(&self.inner)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::Body::size_hint(&self.inner)
    }
}

/// An [`Inspector`] as a [`Tap`]; after the body's end or a refusal, what
/// follows passes unlooked-at.
pub struct Inspection<I: Inspector> {
    inspector: Option<I>,
    verdict: Verdict<I::Refusal>,
}

/// A body shown to an inspector.
pub type Inspected<I> = Tapped<Inspection<I>>;

impl<I: Inspector> Tapped<Inspection<I>> {
    /// Show `inner` to `inspector`, recording a refusal in `verdict`.
    pub fn new(inner: s3s::Body, inspector: I, verdict: Verdict<I::Refusal>) -> Inspected<I> {
        let inspection = Inspection {
            inspector: Some(inspector),
            verdict,
        };
        Tapped::with_tap(inner, inspection)
    }
}

impl<I: Inspector> Tap for Inspection<I> {
    fn frame(&mut self, frame: &Frame) -> Result<(), s3s::StdError> {
        let Some(ins) = self.inspector.as_mut() else {
            return Ok(());
        };
        let checked = match frame {
            Some(Ok(f)) => f.data_ref().map_or(Ok(()), |d| ins.feed(d)),
            Some(Err(_)) => Ok(()),
            None => {
                let r = ins.end();
                self.inspector = None;
                r
            }
        };
        checked.map_err(|e| {
            self.inspector = None;
            self.verdict.set(e.clone());
            Box::new(e) as s3s::StdError
        })
    }

    fn awaits_end(&self) -> bool {
        // The end is shown to the inspector: it must be polled.
        self.inspector.is_some()
    }
}
