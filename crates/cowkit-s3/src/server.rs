//! The HTTP server: s3s on hyper, one task per connection, an access log
//! line per request, graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;

use std::sync::Arc;

use crate::error::{io, Result};
use crate::gateway::{S3Gateway, ACCESS_LOG};
use crate::precheck::{Prechecks, Refusal};
use crate::sendfile::SendfileIo;
use crate::store::{Options, Store};

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
    /// The region requests must be signed for (`us-east-1` by default).
    pub region: String,
    /// Storage options.
    pub store: Options,
}

/// The answer to a request refused by the prechecks.
fn refusal_response(r: &Refusal) -> s3s::HttpResponse {
    let mut res = hyper::Response::new(s3s::Body::from(r.to_xml()));
    *res.status_mut() = r.status;
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    res
}

/// An error document with S3's message for its code (s3s writes its own
/// words, or none; clients and conformance suites compare S3's).
fn standard_error(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    if res.status().as_u16() < 400 {
        return res;
    }
    let Some(body) = res.body().bytes() else {
        return res;
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        return res;
    };
    let between = |a: &str, b: &str| -> Option<(usize, usize)> {
        let s = text.find(a)? + a.len();
        let e = s + text[s..].find(b)?;
        Some((s, e))
    };
    let Some((cs, ce)) = between("<Code>", "</Code>") else {
        return res;
    };
    // Only codes s3s answers itself: the gateway's own errors carry their
    // messages already.
    use s3s::S3ErrorCode as C;
    let code = s3s::S3ErrorCode::from_bytes(&text.as_bytes()[cs..ce]).filter(|c| {
        matches!(
            c,
            C::SignatureDoesNotMatch
                | C::InvalidBucketName
                | C::MalformedXML
                | C::MethodNotAllowed
                | C::InvalidAccessKeyId
                | C::InvalidRange
        )
    });
    let Some(msg) = code.as_ref().and_then(crate::gateway::standard_message) else {
        return res;
    };
    let msg = crate::precheck::xml_escape(msg);
    let fixed = match between("<Message>", "</Message>") {
        Some((ms, me)) => format!("{}{msg}{}", &text[..ms], &text[me..]),
        None => {
            let at = ce + "</Code>".len();
            format!("{}<Message>{msg}</Message>{}", &text[..at], &text[at..])
        }
    };
    res.headers_mut().remove(http::header::CONTENT_LENGTH);
    *res.body_mut() = s3s::Body::from(fixed);
    res
}

/// A response whose body started before its result was known (the
/// keepalive of a slow CompleteMultipartUpload) gets its result's XML
/// declaration removed: s3s writes one before the whitespace and another
/// one with an error document, and a document has one.
fn one_declaration(res: s3s::HttpResponse) -> s3s::HttpResponse {
    let chunked = res
        .headers()
        .get(http::header::TRANSFER_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"));
    if !chunked {
        return res;
    }
    res.map(|inner| s3s::Body::http_body(OneDeclaration { inner, first: true }))
}

struct OneDeclaration {
    inner: s3s::Body,
    first: bool,
}

impl http_body::Body for OneDeclaration {
    type Data = bytes::Bytes;
    type Error = s3s::StdError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<std::result::Result<http_body::Frame<bytes::Bytes>, s3s::StdError>>>
    {
        let this = &mut *self;
        let frame = std::task::ready!(std::pin::Pin::new(&mut this.inner).poll_frame(cx));
        let Some(Ok(frame)) = frame else {
            return std::task::Poll::Ready(frame);
        };
        let frame = match frame.into_data() {
            Ok(data) if this.first => {
                this.first = false;
                http_body::Frame::data(data)
            }
            Ok(data) => http_body::Frame::data(strip_declaration(data)),
            Err(f) => f,
        };
        std::task::Poll::Ready(Some(Ok(frame)))
    }
}

/// `data` without a leading `<?xml …?>`.
fn strip_declaration(data: bytes::Bytes) -> bytes::Bytes {
    let start = data
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(data.len());
    if data[start..].starts_with(b"<?xml") {
        if let Some(end) = data[start..].windows(2).position(|w| w == b"?>") {
            return data.slice(start + end + 2..);
        }
    }
    data
}

/// Allows anonymous requests (`--anonymous`).
struct AllowAnonymous;

#[async_trait::async_trait]
impl s3s::access::S3Access for AllowAnonymous {
    async fn check(&self, _cx: &mut s3s::access::S3AccessContext<'_>) -> s3s::S3Result<()> {
        Ok(())
    }
}

/// Everything that answers one request: the prechecks, s3s with the
/// gateway, and the fixes applied to s3s's answers. [`Server`] feeds it
/// requests from its connections; tests and fuzz targets call
/// [`Handler::handle`] directly.
#[derive(Clone)]
pub struct Handler {
    service: s3s::service::S3Service,
    prechecks: Arc<Prechecks>,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handler")
            .field("region", &self.prechecks.region)
            .finish()
    }
}

impl Handler {
    /// Open the store at `cfg.root` and build the request handler
    /// (`cfg.listen` is not used).
    pub fn new(cfg: &Config) -> Result<Handler> {
        let store = Store::open(&cfg.root, cfg.store.clone())?;
        let mut b = S3ServiceBuilder::new(S3Gateway::new(store).with_region(&cfg.region));
        if let Some((ak, sk)) = &cfg.credentials {
            b.set_auth(SimpleAuth::from_single(ak.clone(), sk.clone()));
        }
        if cfg.anonymous {
            b.set_access(AllowAnonymous);
        }
        Ok(Handler {
            service: b.build(),
            prechecks: Arc::new(Prechecks {
                region: cfg.region.clone(),
                access_key: cfg.credentials.as_ref().map(|c| c.0.clone()),
            }),
        })
    }

    /// Answer one request (`peer` is for the access log).
    pub async fn handle(
        &self,
        mut req: s3s::HttpRequest,
        peer: SocketAddr,
    ) -> std::result::Result<s3s::HttpResponse, s3s::HttpError> {
        // S3 answers a malformed Range with the whole object (dropped here
        // unless it is signed: then s3s refuses it).
        if req
            .headers()
            .get(http::header::RANGE)
            .is_some_and(|r| crate::precheck::range_is_ignored(r.to_str().unwrap_or("")))
            && !crate::precheck::signs_header(req.uri(), req.headers(), "range")
        {
            req.headers_mut().remove(http::header::RANGE);
        }
        let refused = self
            .prechecks
            .check(req.method(), req.uri(), req.headers())
            .err();
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let query = req.uri().query().map(str::to_string);
        let t0 = Instant::now();
        let res = match refused {
            Some(r) => {
                // Read (up to 8 MiB of) the body first: an unread body
                // closes the connection under a client still sending it.
                let mut body = req.into_body();
                let mut n = 0usize;
                while let Some(Ok(chunk)) = futures_util::StreamExt::next(&mut body).await {
                    n += chunk.len();
                    if n > 8 << 20 {
                        break;
                    }
                }
                Ok(refusal_response(&r))
            }
            None => self.service.call(req).await,
        };
        let res = res.map(one_declaration).map(standard_error).map(|mut r| {
            // s3s answers HEAD with 200 whatever the output says.
            if method == http::Method::HEAD
                && r.status() == http::StatusCode::OK
                && r.headers().contains_key(http::header::CONTENT_RANGE)
            {
                *r.status_mut() = http::StatusCode::PARTIAL_CONTENT;
            }
            r
        });
        if let Ok(r) = &res {
            log::info!(target: ACCESS_LOG, "{}", serde_json::json!({
                "remote": peer.to_string(),
                "method": method.as_str(),
                "path": path,
                "query": query,
                "status": r.status().as_u16(),
                "ms": t0.elapsed().as_secs_f64() * 1e3,
            }));
        }
        res
    }
}

/// A bound, not yet running server.
pub struct Server {
    listener: TcpListener,
    handler: Handler,
    addr: SocketAddr,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

impl Server {
    /// Open the store and bind the listening socket.
    pub async fn bind(cfg: Config) -> Result<Server> {
        let handler = Handler::new(&cfg)?;
        let listener = TcpListener::bind(cfg.listen)
            .await
            .map_err(|e| io("listen on", cfg.listen.to_string(), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| io("listen on", cfg.listen.to_string(), e))?;
        Ok(Server {
            listener,
            handler,
            addr,
        })
    }

    /// The address actually bound (a port of 0 is chosen by the kernel).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serve until `shutdown` resolves, then stop accepting and wait up to
    /// `grace` for requests in flight.
    pub async fn run(self, shutdown: impl Future<Output = ()>, grace: Duration) -> Result<()> {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut conn = ConnBuilder::new(TokioExecutor::new());
        // Body frames queued as they are, never copied into hyper's own
        // buffer: the sendfile stand-ins depend on it (crate::sendfile).
        conn.http1().writev(true);
        tokio::pin!(shutdown);
        loop {
            let (sock, peer) = tokio::select! {
                r = self.listener.accept() => match r {
                    Ok(x) => x,
                    Err(e) => {
                        log::warn!("accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            // Responses are often written in two pieces (headers, then a
            // body or keepalive whitespace): Nagle would hold the second
            // one back for a delayed ACK (40 ms).
            let _ = sock.set_nodelay(true);
            let handler = self.handler.clone();
            let io = SendfileIo::new(sock);
            let splicer = io.splicer();
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let handler = handler.clone();
                    let mut req = req.map(s3s::Body::from);
                    // HTTP/1 only: HTTP/2 copies frames into its own
                    // buffers, where stand-ins would be sent as they are.
                    if req.version() <= http::Version::HTTP_11 {
                        req.extensions_mut().insert(splicer.clone());
                    }
                    async move { handler.handle(req, peer).await }
                });
            let c = conn.serve_connection(io, service).into_owned();
            let c = graceful.watch(c);
            tokio::spawn(async move {
                if let Err(e) = c.await {
                    log::debug!("connection from {peer}: {e}");
                }
            });
        }
        drop(self.listener);
        tokio::select! {
            () = graceful.shutdown() => {}
            () = tokio::time::sleep(grace) => log::warn!("shutdown: requests still running after {grace:?}, stopping anyway"),
        }
        Ok(())
    }
}
