//! What keeps peers that stop talking, and peers that only open
//! connections, from taking the gateway away from its clients (issue 25).
//!
//! Every connection is in one of three phases:
//!
//! - *head*: from its accept, or from the first byte after a response,
//!   until a request head is complete. It must be complete within
//!   [`Limits::header_timeout`], however slowly its bytes trickle in.
//! - *busy*: from a complete head until the response has been written (or
//!   abandoned). The server may take its time; the peer may not: a request
//!   body that sends nothing for [`Limits::body_timeout`] fails the request
//!   ([`TimedBody`]), and a response the peer stops reading for
//!   [`Limits::send_timeout`] ends the connection ([`Guarded`]).
//! - *idle*: a keep-alive connection between requests, closed after
//!   [`Limits::idle_timeout`].
//!
//! And every connection holds a slot of a [`Registry`], which caps them in
//! total and per client address. A connection over a cap takes the slot of
//! the connection that has been in the head or idle phase the longest (one
//! from its own address when that address is at its cap), once that one is
//! closed: open sockets never exceed the caps. Busy connections are never
//! taken. Only when every slot is busy is the new connection refused (a
//! `503` and a close). So idle sockets, half-sent
//! heads and trickled heads (what an unauthenticated peer can hold: its
//! requests are refused as soon as their heads are complete) give way to
//! clients with requests to make, and the gateway's open files stay
//! bounded by the caps.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};

/// Timeouts and connection caps of [`crate::server::Server`] (the
/// defaults are those of `cowkit s3 serve`; see `docs/s3.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The longest a request head may take, from the connection's accept
    /// or the first byte after the previous response.
    pub header_timeout: Duration,
    /// The longest a keep-alive connection stays open between requests.
    pub idle_timeout: Duration,
    /// The longest a request body may send nothing while the gateway
    /// waits for it.
    pub body_timeout: Duration,
    /// The longest a peer may leave a response unread (the socket's send
    /// buffer full).
    pub send_timeout: Duration,
    /// Connections open at once, from all clients.
    pub max_connections: usize,
    /// Connections open at once from one client address.
    pub max_connections_per_ip: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(75),
            body_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(60),
            max_connections: 1024,
            max_connections_per_ip: 256,
        }
    }
}

/// The longest PutBucketPolicy body taken (AWS's limit for a bucket
/// policy, 20 KB); a longer one is refused before it is read.
pub const MAX_POLICY_BODY: usize = crate::policy::MAX_POLICY_BYTES;

/// The longest PutBucketAcl body taken: 100 grants (S3's limit) with long
/// ids fit in a few KiB.
pub const MAX_ACL_BODY: usize = 64 << 10;
/// The largest body of an admin API request ([`crate::admin`]): its
/// documents are a few hundred bytes.
pub const MAX_ADMIN_BODY: usize = 64 << 10;

/// Open files kept for the gateway's own use whatever its connections
/// hold: standard streams, the listening socket, the runtime's epoll and
/// wake-up descriptors, the store's directories, sweeps.
pub const RESERVED_FDS: u64 = 64;

/// Open files one connection may hold at once: its socket and the files
/// of its request (a GET's object; a PUT's temporary file and the
/// directories it lands in).
pub const FDS_PER_CONNECTION: u64 = 4;

/// The most connections a process with `nofile` open files (its soft
/// limit) can hold without running out of descriptors.
pub fn connections_for(nofile: u64) -> usize {
    usize::try_from(nofile.saturating_sub(RESERVED_FDS) / FDS_PER_CONNECTION).unwrap_or(usize::MAX)
}

/// The open-file limit `max_connections` connections need.
pub fn fds_needed(max_connections: usize) -> u64 {
    (max_connections as u64)
        .saturating_mul(FDS_PER_CONNECTION)
        .saturating_add(RESERVED_FDS)
}

// ---- the registry of connections ---------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Busy,
    Idle,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    /// When the phase began.
    since: Instant,
    /// Requests being answered (more than one on HTTP/2).
    in_flight: usize,
    /// Its slot was given to a newer connection: close it.
    evicted: bool,
}

/// One connection's phase, shared by its I/O ([`Guarded`]), its requests
/// ([`Busy`]) and its [`Conn::watch`].
#[derive(Debug)]
pub struct Conn {
    id: u64,
    ip: IpAddr,
    state: Mutex<State>,
    /// Wakes [`Conn::watch`] when the phase changes or it is evicted.
    changed: Notify,
    /// Its [`Slot`] is dropped (the socket closed).
    gone: AtomicBool,
    closed: Notify,
}

impl Conn {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes arrived from the peer: an idle connection starts a head.
    fn received(&self) {
        let mut s = self.state();
        if s.phase == Phase::Idle {
            s.phase = Phase::Head;
            s.since = Instant::now();
            drop(s);
            self.changed.notify_one();
        }
    }

    /// A request head is complete: the connection is busy until the
    /// returned guard is dropped (with the response).
    pub fn busy(self: &Arc<Self>) -> Busy {
        let mut s = self.state();
        s.in_flight += 1;
        s.phase = Phase::Busy;
        Busy(self.clone())
    }

    /// Resolves when the connection must be closed: its head or idle
    /// phase ran out of time, or its slot went to a newer connection. The
    /// answer says which, for the log.
    pub async fn watch(&self, limits: &Limits) -> &'static str {
        loop {
            let (deadline, why) = {
                let s = self.state();
                if s.evicted {
                    return "closed to make room for a new connection";
                }
                match s.phase {
                    Phase::Head => (
                        Some(s.since + limits.header_timeout),
                        "no complete request head within the header timeout",
                    ),
                    Phase::Idle => (Some(s.since + limits.idle_timeout), "idle timeout"),
                    Phase::Busy => (None, ""),
                }
            };
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return why;
            }
            // Busy: nothing to time here (the body and the send timeouts
            // are the I/O's); woken when the phase changes.
            let wake = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                () = tokio::time::sleep_until(wake) => {}
                () = self.changed.notified() => {}
            }
        }
    }
}

/// A request being answered (see [`Conn::busy`]).
#[derive(Debug)]
pub struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut s = self.0.state();
        s.in_flight -= 1;
        if s.in_flight == 0 {
            s.phase = Phase::Idle;
            s.since = Instant::now();
            drop(s);
            self.0.changed.notify_one();
        }
    }
}

#[derive(Debug, Default)]
struct Slots {
    next_id: u64,
    conns: HashMap<u64, Arc<Conn>>,
    per_ip: HashMap<IpAddr, usize>,
}

impl Slots {
    fn remove(&mut self, id: u64) -> Option<Arc<Conn>> {
        let c = self.conns.remove(&id)?;
        if let Some(n) = self.per_ip.get_mut(&c.ip) {
            *n -= 1;
            if *n == 0 {
                self.per_ip.remove(&c.ip);
            }
        }
        Some(c)
    }

    /// A connection (from `ip` only, if given) that gives its slot
    /// away: one already closing, or else the one longest in its head or
    /// idle phase, told to close now. `None` when every one is busy.
    fn make_room(&mut self, ip: Option<IpAddr>) -> Option<Arc<Conn>> {
        let mine = |c: &&Arc<Conn>| ip.is_none_or(|ip| c.ip == ip);
        if let Some(c) = self.conns.values().filter(mine).find(|c| c.state().evicted) {
            return Some(c.clone());
        }
        let (_, id) = self
            .conns
            .values()
            .filter(mine)
            .filter_map(|c| {
                let s = c.state();
                (s.phase != Phase::Busy).then_some((s.since, c.id))
            })
            .min()?;
        let c = self.conns.get(&id)?.clone();
        c.state().evicted = true;
        c.changed.notify_one();
        Some(c)
    }
}

/// What [`Registry::admit`] says.
#[derive(Debug)]
pub enum Admission {
    /// The new connection's slot.
    Admitted(Slot),
    /// A connection is closing to make room: wait for it, then ask again
    /// (its descriptor is released when it is gone, so the open files
    /// stay within the caps).
    Closing(Closing),
    /// Every connection that could give way is busy.
    Refused,
}

/// A connection closing to make room (see [`Admission::Closing`]).
#[derive(Debug)]
pub struct Closing(Arc<Conn>);

impl Closing {
    /// Wait until the connection is gone, or `at_most`.
    pub async fn wait(self, at_most: Duration) {
        let gone = self.0.closed.notified();
        tokio::pin!(gone);
        gone.as_mut().enable();
        if !self.0.gone.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(at_most, gone).await;
        }
    }
}

/// The connections of one server, within [`Limits::max_connections`] and
/// [`Limits::max_connections_per_ip`] (see the module).
#[derive(Debug)]
pub struct Registry {
    max_total: usize,
    max_per_ip: usize,
    slots: Mutex<Slots>,
}

/// A connection's slot, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    registry: Arc<Registry>,
    conn: Arc<Conn>,
}

impl Slot {
    /// The connection's shared phase.
    pub fn conn(&self) -> &Arc<Conn> {
        &self.conn
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.registry.slots().remove(self.conn.id);
        self.conn.gone.store(true, Ordering::Release);
        self.conn.closed.notify_waiters();
    }
}

impl Registry {
    /// An empty registry with `limits`' caps (each at least 1).
    pub fn new(limits: &Limits) -> Arc<Registry> {
        Arc::new(Registry {
            max_total: limits.max_connections.max(1),
            max_per_ip: limits.max_connections_per_ip.max(1),
            slots: Mutex::default(),
        })
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connections holding a slot.
    pub fn len(&self) -> usize {
        self.slots().conns.len()
    }

    /// Whether no connection holds a slot.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A slot for a new connection from `ip`; over a cap, an older head
    /// or idle connection is told to close to make room (see the module).
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Admission {
        let mut slots = self.slots();
        let full_ip = slots.per_ip.get(&ip).copied().unwrap_or(0) >= self.max_per_ip;
        if full_ip || slots.conns.len() >= self.max_total {
            return match slots.make_room(full_ip.then_some(ip)) {
                Some(c) => Admission::Closing(Closing(c)),
                None => Admission::Refused,
            };
        }
        slots.next_id += 1;
        let conn = Arc::new(Conn {
            id: slots.next_id,
            ip,
            state: Mutex::new(State {
                phase: Phase::Head,
                since: Instant::now(),
                in_flight: 0,
                evicted: false,
            }),
            changed: Notify::new(),
            gone: AtomicBool::new(false),
            closed: Notify::new(),
        });
        slots.conns.insert(conn.id, conn.clone());
        *slots.per_ip.entry(ip).or_default() += 1;
        Admission::Admitted(Slot {
            registry: self.clone(),
            conn,
        })
    }
}

// ---- the connection's I/O and bodies -------------------------------------

/// A stall timer: armed when an operation is pending, cleared when it
/// makes progress; `Err(TimedOut)` once it has been pending for `limit`.
#[derive(Debug)]
struct Stall {
    limit: Duration,
    timer: Option<Pin<Box<Sleep>>>,
    what: &'static str,
}

impl Stall {
    fn new(limit: Duration, what: &'static str) -> Self {
        Stall {
            limit,
            timer: None,
            what,
        }
    }

    /// `p` as it is, but a `Pending` that has lasted `limit` an error.
    fn check<T>(&mut self, cx: &mut Context<'_>, p: Poll<T>) -> Poll<Result<T, std::io::Error>> {
        if let Poll::Ready(v) = p {
            self.timer = None;
            return Poll::Ready(Ok(v));
        }
        let limit = self.limit;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if timer.as_mut().poll(cx).is_ready() {
            self.timer = None;
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{} for {limit:?}", self.what),
            )));
        }
        Poll::Pending
    }
}

/// A connection's I/O: marks the phase when bytes arrive, and fails a
/// write, flush or shutdown the peer has left pending for
/// [`Limits::send_timeout`].
#[derive(Debug)]
pub struct Guarded<T> {
    io: T,
    conn: Arc<Conn>,
    stall: Stall,
}

impl<T> Guarded<T> {
    /// `io` of the connection `conn`.
    pub fn new(io: T, conn: Arc<Conn>, limits: &Limits) -> Self {
        Guarded {
            io,
            conn,
            stall: Stall::new(limits.send_timeout, "the client read nothing"),
        }
    }
}

fn flat<T>(p: Poll<Result<std::io::Result<T>, std::io::Error>>) -> Poll<std::io::Result<T>> {
    p.map(|r| r.and_then(|r| r))
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for Guarded<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        // Bytes, or the end of the stream: either way the peer spoke.
        if matches!(r, Poll::Ready(Ok(()))) {
            self.conn.received();
        }
        r
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for Guarded<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let p = Pin::new(&mut this.io).poll_write(cx, buf);
        flat(this.stall.check(cx, p))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let p = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        flat(this.stall.check(cx, p))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        let p = Pin::new(&mut this.io).poll_flush(cx);
        flat(this.stall.check(cx, p))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        let p = Pin::new(&mut this.io).poll_shutdown(cx);
        flat(this.stall.check(cx, p))
    }
}

/// A request body that fails once it has sent nothing for
/// [`Limits::body_timeout`] while read.
#[derive(Debug)]
pub struct TimedBody<B> {
    inner: B,
    stall: Stall,
}

impl<B> TimedBody<B> {
    /// `inner`, timed with `limits.body_timeout`.
    pub fn new(inner: B, limits: &Limits) -> Self {
        TimedBody {
            inner,
            stall: Stall::new(limits.body_timeout, "the request body sent nothing"),
        }
    }
}

impl<B> http_body::Body for TimedBody<B>
where
    B: http_body::Body<Data = bytes::Bytes> + Unpin,
    B::Error: Into<s3s::StdError>,
{
    type Data = bytes::Bytes;
    type Error = s3s::StdError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, s3s::StdError>>> {
        let this = &mut *self;
        let p = Pin::new(&mut this.inner).poll_frame(cx);
        match this.stall.check(cx, p) {
            Poll::Ready(Ok(f)) => Poll::Ready(f.map(|f| f.map_err(Into::into))),
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(Box::new(e)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A response body holding its request's [`Busy`] until it is written
/// (or abandoned).
#[derive(Debug)]
pub struct Answer<B> {
    inner: B,
    _busy: Busy,
}

impl<B> Answer<B> {
    /// `inner`, keeping `busy` alive as long as it is.
    pub fn new(inner: B, busy: Busy) -> Self {
        Answer { inner, _busy: busy }
    }
}

impl<B: http_body::Body + Unpin> http_body::Body for Answer<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

// ---- the accept loop's helpers ------------------------------------------

/// A warning at most every ten seconds, with the count of what it stands
/// for (a flood of refusals or accept errors is one line, not thousands).
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    last: Option<Instant>,
    count: u64,
}

impl Throttle {
    pub(crate) fn warn(&mut self, msg: impl FnOnce(u64) -> String) {
        self.count += 1;
        if self
            .last
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(10))
        {
            log::warn!("{}", msg(self.count));
            self.last = Some(Instant::now());
            self.count = 0;
        }
    }
}

/// A slot for a connection from `peer`, waiting for connections closing
/// to make room (a few times, briefly: they close as soon as their task
/// runs); `None` when every one that could is busy.
pub(crate) async fn admit(registry: &Arc<Registry>, peer: SocketAddr) -> Option<Slot> {
    for _ in 0..4 {
        match registry.admit(peer.ip()) {
            Admission::Admitted(s) => return Some(s),
            Admission::Refused => return None,
            Admission::Closing(c) => c.wait(Duration::from_millis(500)).await,
        }
    }
    None
}

/// Close a connection no slot could be found for, with a `503` it may
/// read if its socket takes it at once (the client retries later).
pub(crate) fn refuse(sock: tokio::net::TcpStream) {
    let _ = sock.try_write(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\
          Retry-After: 1\r\nConnection: close\r\n\r\n",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(total: usize, per_ip: usize) -> Arc<Registry> {
        Registry::new(&Limits {
            max_connections: total,
            max_connections_per_ip: per_ip,
            ..Limits::default()
        })
    }

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, n])
    }

    fn admitted(a: Admission) -> Slot {
        match a {
            Admission::Admitted(s) => s,
            other => panic!("not admitted: {other:?}"),
        }
    }

    fn closing(a: Admission) -> Arc<Conn> {
        match a {
            Admission::Closing(Closing(c)) => c,
            other => panic!("no connection closing: {other:?}"),
        }
    }

    /// Over the total cap, the connection longest without a request is
    /// told to close, and the newcomer admitted once it is gone; a busy
    /// one never gives way, and with every one busy the newcomer is
    /// refused.
    #[tokio::test(start_paused = true)]
    async fn the_oldest_waiting_connection_gives_way_never_a_busy_one() {
        let r = registry(3, 3);
        let a = admitted(r.admit(ip(2)));
        tokio::time::advance(Duration::from_secs(1)).await;
        let b = admitted(r.admit(ip(3)));
        let c = admitted(r.admit(ip(4)));
        let _busy = a.conn().busy();
        let victim = closing(r.admit(ip(1)));
        assert_eq!(victim.id, b.conn().id, "not the oldest waiting one");
        assert!(b.conn().state().evicted && !a.conn().state().evicted);
        // Asked again before it is gone: the same one, still closing.
        assert_eq!(closing(r.admit(ip(1))).id, b.conn().id);
        let wait = tokio::spawn(Closing(victim).wait(Duration::from_secs(3600)));
        drop(b);
        wait.await.unwrap();
        let d = admitted(r.admit(ip(1)));
        assert_eq!(r.len(), 3);
        let _bc = c.conn().busy();
        let _bd = d.conn().busy();
        assert!(matches!(r.admit(ip(5)), Admission::Refused));
        drop((_bc, c));
        assert!(matches!(r.admit(ip(5)), Admission::Admitted(_)));
    }

    /// An address at its cap gives way from its own connections: another
    /// address's are left alone.
    #[tokio::test(start_paused = true)]
    async fn an_address_at_its_cap_gives_way_from_its_own() {
        let r = registry(10, 2);
        let other = admitted(r.admit(ip(1)));
        tokio::time::advance(Duration::from_secs(1)).await;
        let x = admitted(r.admit(ip(2)));
        let y = admitted(r.admit(ip(2)));
        assert_eq!(closing(r.admit(ip(2))).id, x.conn().id);
        assert!(!other.conn().state().evicted && !y.conn().state().evicted);
        drop(x);
        let z = admitted(r.admit(ip(2)));
        let _b1 = y.conn().busy();
        let _b2 = z.conn().busy();
        assert!(matches!(r.admit(ip(2)), Admission::Refused));
        assert!(!other.conn().state().evicted);
    }

    /// The watch ends a head after the header timeout, an idle connection
    /// after the idle timeout, and never a busy one.
    #[tokio::test(start_paused = true)]
    async fn heads_and_idle_connections_time_out_busy_ones_do_not() {
        let limits = Limits {
            header_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(20),
            ..Limits::default()
        };
        let r = registry(10, 10);
        let s = admitted(r.admit(ip(1)));
        let t0 = Instant::now();
        let why = s.conn().watch(&limits).await;
        assert!(why.contains("head"), "{why}");
        assert_eq!(t0.elapsed(), Duration::from_secs(5));

        let s = admitted(r.admit(ip(1)));
        let busy = s.conn().busy();
        let conn = s.conn().clone();
        let l2 = limits.clone();
        let w = tokio::spawn(async move { (conn.watch(&l2).await, Instant::now()) });
        tokio::time::advance(Duration::from_secs(1000)).await;
        assert!(!w.is_finished(), "a busy connection timed out");
        let t1 = Instant::now();
        drop(busy);
        let (why, at) = w.await.unwrap();
        assert_eq!(why, "idle timeout");
        assert_eq!(at - t1, Duration::from_secs(20));
    }
}
