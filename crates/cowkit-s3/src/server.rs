//! The HTTP server: s3s on hyper, one task per connection, an access log
//! line per request, graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use tokio::net::TcpListener;

use std::sync::Arc;

use crate::error::{io, Result};
use crate::limits::{admit, refuse, Answer, Guarded, Limits, Registry, Slot, Throttle, TimedBody};
use crate::sendfile::SendfileIo;
use crate::store::Store;

pub use crate::config::Config;
use crate::handler::Handler;

/// A bound, not yet running server.
pub struct Server {
    listener: TcpListener,
    handler: Handler,
    addr: SocketAddr,
    store: Arc<Store>,
    sendfile: bool,
    limits: Limits,
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
        let store = handler.store.clone();
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
            store,
            sendfile: cfg.sendfile,
            limits: cfg.limits,
        })
    }

    /// The address actually bound (a port of 0 is chosen by the kernel).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The future serving one admitted connection: hyper over its
    /// [`Guarded`] I/O, raced against its [`crate::limits::Conn::watch`].
    fn serve_connection(
        &self,
        conn: &ConnBuilder<TokioExecutor>,
        graceful: &hyper_util::server::graceful::GracefulShutdown,
        sock: tokio::net::TcpStream,
        peer: SocketAddr,
        slot: Slot,
    ) -> impl Future<Output = ()> + Send + 'static {
        let handler = self.handler.clone();
        let sendfile = self.sendfile;
        let limits = self.limits.clone();
        let io = SendfileIo::new(sock);
        let splicer = io.splicer();
        let state = slot.conn().clone();
        let io = Guarded::new(io, state.clone(), &limits);
        let l = limits.clone();
        let service =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let handler = handler.clone();
                let busy = state.busy();
                let mut req = req.map(|b| s3s::Body::http_body(TimedBody::new(b, &l)));
                // HTTP/1 only: HTTP/2 copies frames into its own
                // buffers, where stand-ins would be sent as they are.
                if sendfile && req.version() <= http::Version::HTTP_11 {
                    req.extensions_mut().insert(splicer.clone());
                }
                async move {
                    let res = handler.handle(req, peer).await?;
                    Ok::<_, s3s::HttpError>(res.map(|b| Answer::new(b, busy)))
                }
            });
        let c = graceful.watch(conn.serve_connection(io, service).into_owned());
        async move {
            tokio::select! {
                r = c => if let Err(e) = r {
                    log::debug!("connection from {peer}: {e}");
                },
                why = slot.conn().watch(&limits) => log::debug!("connection from {peer}: {why}"),
            }
            drop(slot);
        }
    }

    /// Serve until `shutdown` resolves, then stop accepting and wait up to
    /// `grace` for requests in flight.
    pub async fn run(self, shutdown: impl Future<Output = ()>, grace: Duration) -> Result<()> {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut conn = ConnBuilder::new(TokioExecutor::new());
        // Body frames queued as they are, never copied into hyper's own
        // buffer: the sendfile stand-ins depend on it (crate::sendfile).
        // Heads, idle connections and stalled peers are timed by
        // crate::limits (hyper's header timer also runs while a keep-alive
        // connection is idle, so it cannot tell the two apart).
        conn.http1().writev(true).header_read_timeout(None);
        // What other gateways on this root leave when they die is swept
        // by the survivors, not only at the next start.
        let every = self.store.options().sweep_every;
        let store = self.store.clone();
        let sweeper = (!every.is_zero()).then(|| {
            tokio::spawn(async move {
                let mut t = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                loop {
                    t.tick().await;
                    let s = store.clone();
                    match tokio::task::spawn_blocking(move || s.sweep()).await {
                        Ok(Err(e)) => log::warn!("sweep: {}", crate::error_chain(&e)),
                        Err(e) => log::warn!("sweep: {e}"),
                        Ok(Ok(_)) => {}
                    }
                }
            })
        });
        tokio::pin!(shutdown);
        let registry = Registry::new(&self.limits);
        let mut accept_errors = Throttle::default();
        let mut refusals = Throttle::default();
        loop {
            let (sock, peer) = tokio::select! {
                r = self.listener.accept() => match r {
                    Ok(x) => x,
                    Err(e) => {
                        // Out of descriptors (EMFILE, ENFILE) or memory:
                        // the backlog waits, the loop does not spin.
                        accept_errors.warn(|n| format!("accept: {e} ({n} times)"));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let Some(slot) = admit(&registry, peer).await else {
                refuse(sock);
                refusals.warn(|n| {
                    format!(
                        "refused {n} connection(s), the last from {peer}: all {} \
                         connections busy (--max-connections {}, --max-connections-per-ip {})",
                        registry.len(),
                        self.limits.max_connections,
                        self.limits.max_connections_per_ip
                    )
                });
                continue;
            };
            // Responses are often written in two pieces (headers, then a
            // body or keepalive whitespace): Nagle would hold the second
            // one back for a delayed ACK (40 ms).
            let _ = sock.set_nodelay(true);
            tokio::spawn(self.serve_connection(&conn, &graceful, sock, peer, slot));
        }
        drop(self.listener);
        if let Some(s) = sweeper {
            s.abort();
        }
        tokio::select! {
            () = graceful.shutdown() => {}
            () = tokio::time::sleep(grace) => log::warn!("shutdown: requests still running after {grace:?}, stopping anyway"),
        }
        Ok(())
    }
}
