//! The HTTP server: s3s on hyper, one task per connection, an access log
//! line per request, graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;

use crate::error::{io, Result};
use crate::gateway::{S3Gateway, ACCESS_LOG};
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
    /// Storage options.
    pub store: Options,
}

/// Allows anonymous requests (`--anonymous`).
struct AllowAnonymous;

#[async_trait::async_trait]
impl s3s::access::S3Access for AllowAnonymous {
    async fn check(&self, _cx: &mut s3s::access::S3AccessContext<'_>) -> s3s::S3Result<()> {
        Ok(())
    }
}

/// A bound, not yet running server.
pub struct Server {
    listener: TcpListener,
    service: s3s::service::S3Service,
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
        let store = Store::open(&cfg.root, cfg.store.clone())?;
        let mut b = S3ServiceBuilder::new(S3Gateway::new(store));
        if let Some((ak, sk)) = &cfg.credentials {
            b.set_auth(SimpleAuth::from_single(ak.clone(), sk.clone()));
        }
        if cfg.anonymous {
            b.set_access(AllowAnonymous);
        }
        let listener = TcpListener::bind(cfg.listen)
            .await
            .map_err(|e| io("listen on", cfg.listen.to_string(), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| io("listen on", cfg.listen.to_string(), e))?;
        Ok(Server {
            listener,
            service: b.build(),
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
        let conn = ConnBuilder::new(TokioExecutor::new());
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
            let svc = self.service.clone();
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let svc = svc.clone();
                    let method = req.method().clone();
                    let path = req.uri().path().to_string();
                    let query = req.uri().query().map(str::to_string);
                    let t0 = Instant::now();
                    async move {
                        let res = hyper::service::Service::call(&svc, req).await;
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
                });
            let c = conn
                .serve_connection(TokioIo::new(sock), service)
                .into_owned();
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
