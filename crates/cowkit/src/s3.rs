//! `cowkit s3 serve`: the S3 gateway over a directory.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use cowkit_s3::limits::Limits;
use cowkit_s3::server::{Config, Server};
use cowkit_s3::store::Options;

use crate::output::CliError;

/// One compact JSON line on stdout, flushed (tests read it).
fn print_line(v: &serde_json::Value) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

/// Arguments of `cowkit s3`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Serve DIR over the S3 protocol: buckets are its subdirectories,
    /// objects plain files; multipart uploads complete by cloning blocks.
    Serve(ServeArgs),
}

/// Arguments of `cowkit s3 serve`.
#[derive(clap::Args)]
struct ServeArgs {
    /// The directory to serve (must exist).
    #[arg(long)]
    root: PathBuf,
    /// Address to listen on (port 0: any free port; see `--json`).
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: SocketAddr,
    /// Access key clients sign with (or env `COWKIT_S3_ACCESS_KEY`).
    #[arg(long, requires = "secret_key")]
    access_key: Option<String>,
    /// Secret key (or env `COWKIT_S3_SECRET_KEY`; the flag is visible to
    /// other users in `ps`, prefer the environment or a file).
    #[arg(long, requires = "access_key")]
    secret_key: Option<String>,
    /// A file whose first line is `ACCESS_KEY:SECRET_KEY`.
    #[arg(long, conflicts_with_all = ["access_key", "secret_key"])]
    credentials_file: Option<PathBuf>,
    /// Also accept unsigned requests (anyone who can connect can read and
    /// write everything).
    #[arg(long)]
    anonymous: bool,
    /// Keep the accounts (users besides the key pair above, with roles
    /// admin, user, userplus; managed with `versitygw admin`) in
    /// DIR/accounts.json instead of ROOT/.cowkit-s3/accounts.json. DIR and
    /// the file must not be writable by anyone but this user and root.
    #[arg(long, value_name = "DIR")]
    accounts_dir: Option<PathBuf>,
    /// The region clients sign requests for; requests signed for another
    /// region are refused.
    #[arg(long, default_value = "us-east-1")]
    region: String,
    /// Make data and directory entries durable (fsync) before answering.
    #[arg(long)]
    fsync: bool,
    /// Print `{"event":"listening",...}` as one JSON line on stdout once
    /// the socket is bound, and `{"event":"stopped"}` at exit.
    #[arg(long)]
    json: bool,
    /// Smallest size of every multipart part but the last (S3: 5 MiB).
    /// For tests that need many parts without gigabytes of data.
    #[arg(long, default_value_t = 5 << 20, hide_short_help = true)]
    min_part_size: u64,
    /// Keep part files after a complete (to inspect shared extents).
    #[arg(long, hide_short_help = true)]
    keep_parts: bool,
    /// Milliseconds a complete may run before its response starts and
    /// whitespace keeps the connection alive until the XML is ready.
    #[arg(long, default_value_t = 500, hide_short_help = true)]
    keepalive_after_ms: u64,
    /// Seconds between sweeps of what dead gateways on this root left
    /// (their temporary files, part files of completed uploads); 0: only
    /// at start.
    #[arg(long, default_value_t = 600, hide_short_help = true)]
    sweep_every: u64,
    /// Keep buckets made with object lock unversioned, as VersityGW serves
    /// them when it runs without versioning: a locked object cannot be
    /// overwritten or deleted, and PutObjectLockConfiguration works on any
    /// bucket. By default, as on S3, object lock turns versioning on (an
    /// overwrite or delete makes a new version; locked versions stay).
    #[arg(long, hide_short_help = true)]
    object_lock_without_versioning: bool,
    /// Send GET bodies through the gateway's memory (pread(2) and write)
    /// instead of by sendfile(2), the default on HTTP/1 connections (see
    /// docs/s3.md).
    #[arg(long, hide_short_help = true)]
    no_sendfile: bool,
    /// The default since 2026-11-23; kept so that scripts that asked for
    /// it keep working.
    #[arg(long, hide = true, conflicts_with = "no_sendfile")]
    sendfile: bool,
    /// Seconds a request head may take to arrive whole, from the
    /// connection's accept or the first byte after the previous response;
    /// then the connection is closed.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    header_timeout: u64,
    /// Seconds a keep-alive connection may stay idle between requests.
    #[arg(long, default_value_t = 75, value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout: u64,
    /// Seconds a request body may send nothing before the request fails
    /// and the connection is closed.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    body_timeout: u64,
    /// Seconds a client may leave a response unread before the connection
    /// is closed.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    send_timeout: u64,
    /// Connections open at once, from all clients [default: 1024, or what
    /// the open-file limit allows]. Over it, the connection longest
    /// without a request is closed to make room; with every one busy, the
    /// new one is refused (503).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: Option<u64>,
    /// Connections open at once from one client address (over it, that
    /// address's connection longest without a request makes room).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_ip: u64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    match args.command {
        Command::Serve(a) => serve(a),
    }
}

fn credentials(a: &ServeArgs) -> Result<Option<(String, String)>, CliError> {
    if let (Some(ak), Some(sk)) = (&a.access_key, &a.secret_key) {
        return Ok(Some((ak.clone(), sk.clone())));
    }
    if let Some(f) = &a.credentials_file {
        let text = std::fs::read_to_string(f)
            .map_err(|e| CliError::new(format!("cannot read `{}`", f.display()), e))?;
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or_default();
        return match line.split_once(':') {
            Some((ak, sk)) if !ak.is_empty() && !sk.is_empty() => {
                Ok(Some((ak.to_string(), sk.to_string())))
            }
            _ => Err(CliError::msg(format!(
                "`{}` does not start with a line `ACCESS_KEY:SECRET_KEY`",
                f.display()
            ))),
        };
    }
    match (
        std::env::var("COWKIT_S3_ACCESS_KEY"),
        std::env::var("COWKIT_S3_SECRET_KEY"),
    ) {
        (Ok(ak), Ok(sk)) if !ak.is_empty() && !sk.is_empty() => Ok(Some((ak, sk))),
        _ => Ok(None),
    }
}

/// The soft limit on open files (`None`: unlimited).
fn open_file_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// The timeouts and caps of `a`, with the open-file limit raised to the
/// hard limit: a `--max-connections` the limit cannot hold is refused
/// (the default is lowered to what it can hold).
fn limits(a: &ServeArgs) -> Result<Limits, CliError> {
    use cowkit_s3::limits::{connections_for, fds_needed};
    cowkit_fs::dir::raise_fd_limit();
    let nofile = open_file_limit().unwrap_or(u64::MAX);
    let fits = connections_for(nofile);
    let max_connections = match a.max_connections {
        Some(n) if fds_needed(n as usize) > nofile => {
            return Err(CliError::msg(format!(
                "--max-connections {n} needs {} open files; the limit is {nofile}",
                fds_needed(n as usize)
            ))
            .hint(format!(
                "raise the hard limit (`ulimit -Hn`, systemd `LimitNOFILE=`) or give \
                 --max-connections {fits} or fewer"
            )));
        }
        Some(n) => n as usize,
        None if fits == 0 => {
            return Err(CliError::msg(format!(
                "the open-file limit {nofile} leaves no room for connections"
            ))
            .hint(format!(
                "raise the hard limit to at least {}",
                fds_needed(16)
            )));
        }
        None => {
            let d = Limits::default().max_connections;
            if fits < d {
                log::warn!(
                    "the open-file limit {nofile} holds {fits} connections: serving at most that many"
                );
            }
            d.min(fits)
        }
    };
    Ok(Limits {
        header_timeout: Duration::from_secs(a.header_timeout),
        idle_timeout: Duration::from_secs(a.idle_timeout),
        body_timeout: Duration::from_secs(a.body_timeout),
        send_timeout: Duration::from_secs(a.send_timeout),
        max_connections,
        max_connections_per_ip: usize::try_from(a.max_connections_per_ip).unwrap_or(usize::MAX),
    })
}

fn serve(a: ServeArgs) -> Result<ExitCode, CliError> {
    let creds = credentials(&a)?;
    if creds.is_none() && !a.anonymous {
        return Err(
            CliError::msg("no credentials: every request would be refused").hint(
                "give --access-key/--secret-key, COWKIT_S3_ACCESS_KEY/COWKIT_S3_SECRET_KEY, \
             --credentials-file, or --anonymous to allow unsigned requests",
            ),
        );
    }
    if a.accounts_dir.is_some() && creds.is_none() {
        return Err(CliError::msg(
            "--accounts-dir needs credentials: accounts are managed by the admin key pair",
        )
        .hint("give --access-key/--secret-key (or the file or environment) as well"));
    }
    let limits = limits(&a)?;
    let cfg = Config {
        root: a.root.clone(),
        listen: a.listen,
        credentials: creds,
        anonymous: a.anonymous,
        accounts_dir: a.accounts_dir.clone(),
        region: a.region.clone(),
        sendfile: a.sendfile || !a.no_sendfile,
        limits: limits.clone(),
        store: Options {
            fsync: a.fsync,
            min_part_size: a.min_part_size,
            keep_parts: a.keep_parts,
            keepalive_after: Duration::from_millis(a.keepalive_after_ms),
            sweep_every: Duration::from_secs(a.sweep_every),
            object_lock_without_versioning: a.object_lock_without_versioning,
            ..Options::default()
        },
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new("cannot start the async runtime", e))?;
    rt.block_on(async move {
        let server = Server::bind(cfg).await.map_err(|e| {
            let hint = match &e {
                cowkit_s3::Error::Accounts(_) => {
                    "the account store and its directory must belong to this user or root \
                     and not be writable by group or others (chown, chmod go-w), \
                     or choose another with --accounts-dir"
                }
                _ => "--root must be an existing directory you can write to",
            };
            CliError::new(format!("cannot serve `{}`", a.root.display()), e).hint(hint)
        })?;
        let addr = server.local_addr();
        if a.json {
            print_line(&serde_json::json!({
                "event": "listening",
                "listen": addr.to_string(),
                "endpoint": format!("http://{addr}"),
                "root": a.root,
                "pid": std::process::id(),
                "fsync": a.fsync,
                "anonymous": a.anonymous,
                "min_part_size": a.min_part_size,
                "max_connections": limits.max_connections,
                "max_connections_per_ip": limits.max_connections_per_ip,
                "open_files": open_file_limit(),
            }));
        } else {
            println!(
                "serving `{}` on http://{addr} (SIGTERM or Ctrl-C stops)",
                a.root.display()
            );
        }
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("SIGTERM handler");
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            log::info!("shutting down: no new connections, waiting for requests in flight");
        };
        server
            .run(shutdown, Duration::from_secs(30))
            .await
            .map_err(|e| CliError::new("the server failed", e))?;
        if a.json {
            print_line(&serde_json::json!({"event": "stopped"}));
        }
        Ok(ExitCode::SUCCESS)
    })
}
