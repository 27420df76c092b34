//! What s3s leaves of a request body, read before the answer goes out.
//!
//! A request refused before its body is read (by authorisation, say) is
//! answered while the client may still be sending the body. hyper then
//! closes the connection rather than wait for the rest, and a client that
//! sends its headers and body apart (Go's SDK, under load) finds its next
//! request on that connection failing with a bare EOF, or sees a broken
//! pipe. S3 reads such a body and keeps the connection. The handler does
//! the same for bodies of a declared length up to [`MAX_LEFTOVER`]: it
//! hands s3s a [`Returned`] body, and whatever s3s drops unread comes back
//! through a [`Slot`] to be read (the server's per-read timeouts bound a
//! client that stops sending). Longer or unknown-length bodies are left to
//! hyper, which closes the connection.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::inspect::{Tap, Tapped};

/// The most bytes of a refused request's body read to keep its
/// connection.
pub(crate) const MAX_LEFTOVER: u64 = 1 << 20;

/// The most bytes of a refused request's body [`drain`] reads.
const MAX_DRAINED: usize = 8 << 20;

/// Read and drop (up to 8 MiB of) the body of a refused request: an unread
/// body makes hyper close the connection under a client still sending it,
/// and a client that reuses the connection fails its next request.
pub(crate) async fn drain<E>(mut body: impl futures_util::Stream<Item = Result<Bytes, E>> + Unpin) {
    let mut n = 0usize;
    while let Some(Ok(chunk)) = futures_util::StreamExt::next(&mut body).await {
        n += chunk.len();
        if n > MAX_DRAINED {
            break;
        }
    }
}

/// Where a [`Returned`] body puts what it was dropped with.
#[derive(Clone, Default)]
pub(crate) struct Slot(Arc<Mutex<Option<s3s::Body>>>);

impl Slot {
    /// The body s3s left unread, if any.
    pub(crate) fn take(&self) -> Option<s3s::Body> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl Tap for Slot {
    fn dropped(&mut self, rest: s3s::Body) {
        if !http_body::Body::is_end_stream(&rest) {
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(rest);
        }
    }
}

/// A request body that hands what is left of it to its [`Slot`] when
/// dropped before its end.
pub(crate) type Returned = Tapped<Slot>;

/// Whether a request declaring `content_length` has a body worth reading
/// to keep its connection.
pub(crate) fn worth_reading(content_length: Option<u64>) -> bool {
    content_length.is_some_and(|n| n > 0 && n <= MAX_LEFTOVER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_dropped_unread_comes_back() {
        let slot = Slot::default();
        drop(Returned::with_tap(
            s3s::Body::from("left".to_string()),
            slot.clone(),
        ));
        let back = slot.take().expect("returned");
        assert_eq!(http_body::Body::size_hint(&back).exact(), Some(4));
        // An empty body is at its end: nothing comes back.
        drop(Returned::with_tap(s3s::Body::empty(), slot.clone()));
        assert!(slot.take().is_none());
        assert!(worth_reading(Some(1)) && worth_reading(Some(MAX_LEFTOVER)));
        assert!(!worth_reading(None) && !worth_reading(Some(0)));
        assert!(!worth_reading(Some(MAX_LEFTOVER + 1)));
    }
}
