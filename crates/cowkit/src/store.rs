//! `cowkit store` and `cowkit image`: the content store and read-only
//! images over it (`cowkit_store`).

use std::path::PathBuf;
use std::process::ExitCode;

use cowkit_store::{image, tree, Store};
use serde::Serialize;

use crate::output::{print_json, CliError};

/// The default store: `/var/lib/cowkit/store` for root, else
/// `$XDG_DATA_HOME/cowkit/store` (`~/.local/share/cowkit/store`).
fn default_store() -> PathBuf {
    if rustix::process::geteuid().is_root() {
        return PathBuf::from("/var/lib/cowkit/store");
    }
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("cowkit/store")
}

/// The store option shared by the subcommands.
#[derive(clap::Args)]
pub struct StoreArg {
    /// The store directory [default: /var/lib/cowkit/store as root,
    /// ~/.local/share/cowkit/store otherwise]. Put it on the filesystem
    /// of the trees it imports: objects are then clones.
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
}

impl StoreArg {
    fn open(&self) -> Result<Store, CliError> {
        let dir = self.store.clone().unwrap_or_else(default_store);
        Store::open(&dir)
            .map_err(|e| with_hint(format!("cannot open the store `{}`", dir.display()), e))
    }

    /// The store, to read (mount) only: one that others can change is
    /// opened too.
    fn open_read(&self) -> Result<Store, CliError> {
        let dir = self.store.clone().unwrap_or_else(default_store);
        Store::open_read(&dir)
            .map_err(|e| with_hint(format!("cannot open the store `{}`", dir.display()), e))
    }
}

/// `e` in `context`, with [`untrusted_hint`]'s hint if it has one.
fn with_hint(context: impl std::fmt::Display, e: cowkit_store::Error) -> CliError {
    let hint = untrusted_hint(&e);
    let err = CliError::new(context, e);
    match hint {
        Some(h) => err.hint(h),
        None => err,
    }
}

/// The hint for a store or image someone else can change, or a symlink
/// inside a store.
fn untrusted_hint(e: &cowkit_store::Error) -> Option<String> {
    match e {
        cowkit_store::Error::Untrusted { why, .. } if why.contains("owned by") => Some(
            "run it as the store's owner (e.g. `runuser -u OWNER -- cowkit …`), or use a store of your own; root does not write into, or mount trusted, what another user can change".into(),
        ),
        cowkit_store::Error::Untrusted { path, .. } => Some(format!(
            "make it writable by its owner only (`chmod go-w {}`), or use another store",
            path.display()
        )),
        cowkit_store::Error::Symlink(_) => Some(
            "a store's directories and images must be what they are named, not symlinks; use the store's real directory".into(),
        ),
        _ => None,
    }
}

/// How sources are read.
#[derive(clap::Args)]
pub struct SourceArgs {
    /// Hash every file, trusting no digest the store recorded for an
    /// unchanged source file (`STORE/digests`).
    #[arg(long)]
    rehash: bool,
    /// Resolve package owner and group names with this root's
    /// `/etc/passwd` and `/etc/group`.
    #[arg(long, value_name = "DIR", default_value = "/")]
    owners_from: PathBuf,
}

/// Read the sources into one tree of entries, importing their files:
/// one directory, or packages (an `.rpm` is transcoded first, in the
/// confined worker, into a temporary `.rpme` in the store's directory so
/// that its objects are clones of it).
fn read_sources(
    store: &mut Store,
    srcs: &[PathBuf],
    args: &SourceArgs,
) -> Result<(Vec<cowkit_store::tree::Entry>, cowkit_store::Summary), CliError> {
    store.trust_digest_cache(!args.rehash);
    if let [one] = srcs {
        if one.is_dir() {
            return tree::read_tree(store, one)
                .map_err(|e| CliError::new(format!("cannot import `{}`", one.display()), e));
        }
    }
    if let Some(d) = srcs.iter().find(|p| p.is_dir()) {
        return Err(CliError::msg(format!(
            "`{}` is a directory: give one directory, or packages",
            d.display()
        )));
    }
    let root = cowkit_fs::root::Root::open(&args.owners_from)
        .map_err(|e| CliError::new(format!("cannot open `{}`", args.owners_from.display()), e))?;
    let owners = cowkit_install::owners::Owners::load(&root);
    let ids = |u: &str, g: &str| (owners.uid(u), owners.gid(g));
    let tmp = tempfile::Builder::new()
        .prefix(".ck-import-")
        .tempdir_in(store.dir())
        .map_err(|e| {
            CliError::new(
                format!("cannot create a directory in `{}`", store.dir().display()),
                e,
            )
        })?;
    let mut trees = Vec::new();
    let mut sum = cowkit_store::Summary::default();
    for (i, p) in srcs.iter().enumerate() {
        let ctx = || format!("cannot import `{}`", p.display());
        let file = std::fs::File::open(p).map_err(|e| CliError::new(ctx(), e))?;
        let is_rpme =
            cowkit_extents::open::is_extents_file(&file).map_err(|e| CliError::new(ctx(), e))?;
        let (file, path) = if is_rpme {
            (file, p.clone())
        } else {
            let out = tmp.path().join(format!("{i}.rpme"));
            // Aligned to the store's blocks: its objects are clones.
            let block = std::fs::File::open(store.dir())
                .ok()
                .and_then(|d| cowkit_fs::align::block_size(&d).ok())
                .unwrap_or(4096) as u32;
            crate::transcode::transcode_aligned(p, &out, block)?;
            let f = std::fs::File::open(&out).map_err(|e| CliError::new(ctx(), e))?;
            (f, out)
        };
        let x = cowkit_extents::open::ExtentsFile::open(file, &path)
            .map_err(|e| CliError::new(ctx(), e))?;
        let (entries, s) = cowkit_store::package::read_package(store, &x, &ids)
            .map_err(|e| CliError::new(ctx(), e))?;
        sum.add(&s);
        trees.push(entries);
    }
    for w in owners.warnings() {
        eprintln!("cowkit: warning: {w}");
    }
    let entries = cowkit_store::package::merge(trees)
        .map_err(|e| CliError::new("cannot put the packages in one tree", e))?;
    Ok((entries, sum))
}

/// `cowkit store ...`
#[derive(clap::Subcommand)]
pub enum StoreCmd {
    /// Import a directory tree's files as objects (clones where the
    /// filesystem allows).
    Import {
        /// A directory tree, or packages (`.rpm`, `.rpme`).
        #[arg(required = true)]
        src: Vec<PathBuf>,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        store: StoreArg,
        /// Print a JSON summary.
        #[arg(long)]
        json: bool,
    },
    /// Remove the objects no image refers to (waits for no one: refused
    /// while another process uses the store).
    Gc {
        #[command(flatten)]
        store: StoreArg,
        /// Print a JSON summary.
        #[arg(long)]
        json: bool,
    },
    /// Re-hash every object and report the damaged ones.
    Fsck {
        #[command(flatten)]
        store: StoreArg,
        /// Print a JSON summary.
        #[arg(long)]
        json: bool,
    },
}

/// How an image is kept.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum FormatArg {
    /// One EROFS file.
    Erofs,
    /// A directory.
    Dir,
}

/// `cowkit image ...`
#[derive(clap::Subcommand)]
pub enum ImageCmd {
    /// Import a tree and write an image of it.
    Create {
        /// The image's name.
        name: String,
        /// A directory tree, or packages (`.rpm`, `.rpme`; repeat
        /// `--from` for several: one tree of all their files).
        #[arg(long, required = true)]
        from: Vec<PathBuf>,
        #[command(flatten)]
        sources: SourceArgs,
        /// `erofs`: one file (the default); `dir`: a directory.
        #[arg(long, value_enum, default_value_t = FormatArg::Erofs)]
        format: FormatArg,
        /// The per-file fingerprint xattr of EROFS images (for page cache
        /// sharing with `-o inode_share` on Linux 7.0), named as
        /// `mkfs.erofs --xattr-inode-digest=X` names it.
        #[arg(long, value_name = "NAME", default_value = cowkit_store::erofs::FINGERPRINT_XATTR)]
        fingerprint_xattr: String,
        /// Write no fingerprint xattrs.
        #[arg(long, conflicts_with = "fingerprint_xattr")]
        no_fingerprints: bool,
        /// Enable fs-verity on the image's objects and record their
        /// digests: the image is then mounted with `verity=require`, and a
        /// damaged or replaced object fails to read (EIO). Needs a store
        /// filesystem with fs-verity (Btrfs, ext4 with `-O verity`).
        #[arg(long)]
        verity: bool,
        #[command(flatten)]
        store: StoreArg,
        /// Print a JSON summary.
        #[arg(long)]
        json: bool,
    },
    /// Mount an image read-only (overlayfs over the store's objects),
    /// `nosuid,nodev` unless `--trusted`.
    Mount {
        /// The image's name.
        name: String,
        /// Where.
        dir: PathBuf,
        /// Honour setuid/setgid bits, file capabilities and device nodes in
        /// the image (no `nosuid,nodev`). Refused unless only you and root
        /// can change the store, its `objects` and `images` and the image.
        #[arg(long)]
        trusted: bool,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Remove an image (its objects stay until `cowkit store gc`).
    Rm {
        /// The image's name.
        name: String,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Unmount an image.
    Umount {
        /// Where it is mounted.
        dir: PathBuf,
    },
}

#[derive(Serialize)]
struct ImportReport<'a> {
    store: &'a std::path::Path,
    image: Option<&'a std::path::Path>,
    entries: usize,
    #[serde(flatten)]
    summary: &'a cowkit_store::Summary,
}

fn say_import(r: &ImportReport<'_>, json: bool, quiet: bool) {
    if json {
        print_json(r);
    } else if !quiet {
        let s = r.summary;
        let by: Vec<String> = s
            .bytes_by_method
            .iter()
            .map(|(m, b)| format!("{} {m}", crate::output::human_bytes(*b)))
            .collect();
        eprintln!(
            "{} entries, {} files: {} new objects ({}), {} already in the store `{}`{}",
            r.entries,
            s.files,
            s.objects_new,
            if by.is_empty() {
                "no bytes".to_string()
            } else {
                by.join(", ")
            },
            s.objects_reused,
            r.store.display(),
            r.image
                .map(|i| format!("; image `{}`", i.display()))
                .unwrap_or_default()
        );
    }
}

pub fn run_store(cmd: StoreCmd, quiet: bool) -> Result<ExitCode, CliError> {
    match cmd {
        StoreCmd::Import {
            src,
            sources,
            store,
            json,
        } => {
            let mut store = store.open()?;
            let (entries, summary) = read_sources(&mut store, &src, &sources)?;
            say_import(
                &ImportReport {
                    store: store.dir(),
                    image: None,
                    entries: entries.len(),
                    summary: &summary,
                },
                json,
                quiet,
            );
            Ok(ExitCode::SUCCESS)
        }
        StoreCmd::Gc { store, json } => {
            let dir = store.store.clone().unwrap_or_else(default_store);
            let st = Store::open_exclusive(&dir).map_err(|e| {
                with_hint(format!("cannot collect garbage in `{}`", dir.display()), e)
            })?;
            let g = st
                .gc()
                .map_err(|e| CliError::new("cannot collect garbage", e))?;
            if json {
                print_json(&g);
            } else if !quiet {
                eprintln!(
                    "{} objects removed ({}), {} kept",
                    g.removed,
                    crate::output::human_bytes(g.bytes),
                    g.kept
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        StoreCmd::Fsck { store, json } => {
            let store = store.open()?;
            let f = store
                .fsck()
                .map_err(|e| CliError::new("cannot check the store", e))?;
            if json {
                print_json(&f);
            } else {
                for (o, why) in &f.damaged {
                    eprintln!("damaged: objects/{o}: {why}");
                }
                for (image, path, o) in &f.missing {
                    let what = if path.starts_with('/') {
                        format!("`{path}`")
                    } else {
                        "a file".to_string()
                    };
                    eprintln!("missing: objects/{o}, which {what} of the image `{image}` needs");
                }
                if !quiet {
                    eprintln!(
                        "{} objects checked ({}), {} damaged, {} missing",
                        f.checked,
                        crate::output::human_bytes(f.bytes),
                        f.damaged.len(),
                        f.missing.len()
                    );
                }
            }
            Ok(if f.damaged.is_empty() && f.missing.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

pub fn run_image(cmd: ImageCmd, quiet: bool) -> Result<ExitCode, CliError> {
    match cmd {
        ImageCmd::Create {
            name,
            from,
            format,
            fingerprint_xattr,
            no_fingerprints,
            verity,
            sources,
            store,
            json,
        } => {
            let mut store = store.open()?;
            let ctx = || format!("cannot create the image `{name}`");
            let (entries, summary) = read_sources(&mut store, &from, &sources)?;
            let verity = if verity {
                image::verity_digests(&store, &entries).map_err(|e| {
                    CliError::new(ctx(), e).hint("leave out --verity, or put the store on Btrfs or on ext4 made with -O verity")
                })?
            } else {
                Default::default()
            };
            let dir = match format {
                FormatArg::Erofs => {
                    let opts = cowkit_store::erofs::Options {
                        fingerprint: (!no_fingerprints).then_some(fingerprint_xattr),
                        verity,
                    };
                    image::create_erofs(&store, &name, &entries, &opts)
                }
                FormatArg::Dir => image::create(&store, &name, &entries, &verity),
            }
            .map_err(|e| with_hint(ctx(), e))?;
            say_import(
                &ImportReport {
                    store: store.dir(),
                    image: Some(&dir),
                    entries: entries.len(),
                    summary: &summary,
                },
                json,
                quiet,
            );
            Ok(ExitCode::SUCCESS)
        }
        ImageCmd::Mount {
            name,
            dir,
            trusted,
            store,
        } => {
            let store = store.open_read()?;
            image::mount(&store, &name, &dir, trusted).map_err(|e| {
                let hint = untrusted_hint(&e).unwrap_or_else(|| "images are mounted from descriptors: overlayfs data-only layers from an EROFS file-backed mount need Linux 6.15 or newer, as root".into());
                CliError::new(format!("cannot mount the image `{name}`"), e).hint(hint)
            })?;
            Ok(ExitCode::SUCCESS)
        }
        ImageCmd::Rm { name, store } => {
            let store = store.open()?;
            image::remove(&store, &name)
                .map_err(|e| with_hint(format!("cannot remove the image `{name}`"), e))?;
            Ok(ExitCode::SUCCESS)
        }
        ImageCmd::Umount { dir } => {
            image::umount(&dir)
                .map_err(|e| CliError::new(format!("cannot unmount `{}`", dir.display()), e))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
