//! Accounts other than the server's own key pair, with VersityGW's roles,
//! and who may do what.
//!
//! The store is one JSON file, `accounts.json`, in the served root's
//! private directory (`DIR/.cowkit-s3/`) or in a directory given with
//! `cowkit s3 serve --accounts-dir`:
//!
//! ```text
//! {"accounts":[{"access":"alice","secret":"…","role":"user","userID":0,"groupID":0,"projectID":0}]}
//! ```
//!
//! It is read anew for every lookup (every gateway of a fleet sees a change
//! at once), with a size bound, and refused when someone other than the
//! server's user and root can change it or its directory
//! ([`cowkit_fs::trust::others_can_change`]): whoever can write it can make
//! themselves an admin. Changes (the admin API, [`crate::admin`]) hold a
//! lock every gateway takes (`accounts.lock` beside the file), read the
//! file, and replace it by rename (mode 0600: it holds secrets).
//!
//! Roles, as VersityGW has them: `admin` may do everything, the admin API
//! included; `userplus` may create buckets and use the buckets it owns;
//! `user` may only use the buckets it owns. The server's own key pair
//! (`--access-key`) is the root account: an admin that is not in the file
//! and cannot be changed or removed through the API.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};

use crate::error::AccountsError;

/// The file's name in its directory.
pub const FILE: &str = "accounts.json";
/// The lock file beside it.
pub const LOCK: &str = "accounts.lock";
/// The largest store read (about 20,000 accounts).
pub const MAX_FILE: u64 = 4 << 20;
/// The longest access key.
pub const MAX_ACCESS: usize = 128;
/// The longest secret key.
pub const MAX_SECRET: usize = 256;

/// What an account may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything, the admin API included.
    Admin,
    /// The buckets it owns.
    User,
    /// The buckets it owns, and creating buckets.
    #[serde(rename = "userplus")]
    UserPlus,
}

impl Role {
    /// The role's name as VersityGW spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::User => "user",
            Role::UserPlus => "userplus",
        }
    }

    /// The role named `s` (`admin`, `user`, `userplus`).
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "admin" => Some(Role::Admin),
            "user" => Some(Role::User),
            "userplus" => Some(Role::UserPlus),
            _ => None,
        }
    }
}

/// One account of the store.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// The access key (the account's name).
    pub access: String,
    /// The secret key.
    pub secret: String,
    /// The role.
    pub role: Role,
    /// VersityGW's ids, kept and listed (cowkit does not use them).
    #[serde(rename = "userID", default)]
    pub user_id: i64,
    /// See `user_id`.
    #[serde(rename = "groupID", default)]
    pub group_id: i64,
    /// See `user_id`.
    #[serde(rename = "projectID", default)]
    pub project_id: i64,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("access", &self.access)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

/// The file's shape.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    accounts: Vec<Account>,
}

/// The fields an update changes (`None`: kept).
#[derive(Debug, Default, Clone)]
pub struct Update {
    /// A new secret key.
    pub secret: Option<String>,
    /// A new role.
    pub role: Option<Role>,
    /// New ids.
    pub user_id: Option<i64>,
    /// See `user_id`.
    pub group_id: Option<i64>,
    /// See `user_id`.
    pub project_id: Option<i64>,
}

type Result<T, E = AccountsError> = std::result::Result<T, E>;

/// Why `access` cannot be an access key (1 to 128 letters, digits and
/// `- _ . ~ + = @`: it appears in query strings and credential scopes),
/// if it cannot.
pub fn check_access(access: &str) -> Result<(), String> {
    if access.is_empty() || access.len() > MAX_ACCESS {
        return Err(format!(
            "an access key has 1 to {MAX_ACCESS} characters, not {}",
            access.len()
        ));
    }
    match access
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.~+=@".contains(*c)))
    {
        Some(c) => Err(format!(
            "an access key is made of letters, digits and - _ . ~ + = @, not {c:?}"
        )),
        None => Ok(()),
    }
}

/// Why `secret` cannot be a secret key (1 to 256 printable ASCII
/// characters, no space), if it cannot.
pub fn check_secret(secret: &str) -> Result<(), String> {
    if secret.is_empty() || secret.len() > MAX_SECRET {
        return Err(format!(
            "a secret key has 1 to {MAX_SECRET} characters, not {}",
            secret.len()
        ));
    }
    if !secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("a secret key is made of printable ASCII characters without spaces".into());
    }
    Ok(())
}

/// The accounts in `bytes` (the file `path`), each checked, no access key
/// twice.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Vec<Account>> {
    let corrupt = |why: String| AccountsError::Corrupt {
        path: path.to_path_buf(),
        why,
    };
    let file: StoreFile = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    let mut seen = std::collections::BTreeSet::new();
    for a in &file.accounts {
        check_access(&a.access).map_err(&corrupt)?;
        check_secret(&a.secret).map_err(|w| corrupt(format!("account `{}`: {w}", a.access)))?;
        if !seen.insert(a.access.as_str()) {
            return Err(corrupt(format!(
                "access key `{}` is listed twice",
                a.access
            )));
        }
    }
    Ok(file.accounts)
}

/// Who a request comes from, once its signature is verified: handed to
/// the gateway as a request extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The access key it signed with (`anonymous` for an unsigned request
    /// on an `--anonymous` server).
    pub access_key: String,
    /// Its role.
    pub role: Role,
}

impl Principal {
    /// Whether it may do everything.
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }
}

/// What a request does, as far as roles and bucket owners decide it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// ListBuckets (`GET /`): every account, each seeing its own buckets.
    ListBuckets,
    /// Anything on this bucket or its objects (CreateBucket too: which
    /// operation a request is, s3s says, see [`may_create_buckets`]), and
    /// on the source bucket of a copy when there is one.
    Bucket {
        /// The bucket named by the path.
        bucket: String,
        /// The bucket of `x-amz-copy-source`.
        source: Option<String>,
    },
    /// Another request on the service (`/` with another method): s3s
    /// answers it.
    Service,
}

/// The bucket of an `x-amz-copy-source` value (`bucket/key`, `/bucket/key`,
/// percent-encoded or not, maybe with `?versionId=`).
pub fn copy_source_bucket(v: &str) -> String {
    let v = v.trim_start_matches('/');
    let b = v.split(['/', '?']).next().unwrap_or("");
    crate::text::query_pairs(&format!("b={b}"))
        .pop()
        .map_or_else(String::new, |(_, v)| v)
}

/// Which buckets the request `method uri` (path-style) with `headers`
/// names (for `x-amz-expected-bucket-owner` and its source twin). Which
/// operation it is, and so what a role allows, is decided on the operation
/// s3s has parsed, never here.
pub fn target(method: &http::Method, uri: &http::Uri, headers: &http::HeaderMap) -> Target {
    let path = uri.path().trim_start_matches('/');
    let bucket = path.split_once('/').map_or(path, |(b, _)| b);
    if bucket.is_empty() {
        return if method == http::Method::GET {
            Target::ListBuckets
        } else {
            Target::Service
        };
    }
    let source = headers
        .get("x-amz-copy-source")
        .filter(|_| method == http::Method::PUT)
        .map(|v| copy_source_bucket(&String::from_utf8_lossy(v.as_bytes())))
        .filter(|b| !b.is_empty());
    Target::Bucket {
        bucket: bucket.to_string(),
        source,
    }
}

/// Whether `who`'s role lets it create buckets: an admin's and a
/// `userplus`'s does, a `user`'s does not (decided on the operation s3s
/// has parsed, [`crate::authz::Authz::check`], whatever the request's
/// shape). What an account may do in a bucket is the bucket's to say (its
/// owner, ACL and policy: [`crate::authz`]); the admin API is for admins
/// ([`crate::admin`]).
pub fn may_create_buckets(who: &Principal) -> bool {
    matches!(who.role, Role::Admin | Role::UserPlus)
}

/// The account store, and the server's own key pair (the root account).
pub struct Accounts {
    root: Option<(String, String)>,
    dir: OwnedFd,
    dir_path: PathBuf,
    fsync: bool,
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts")
            .field("root", &self.root.as_ref().map(|r| &r.0))
            .field("dir", &self.dir_path)
            .finish_non_exhaustive()
    }
}

/// The effective uid of this process.
fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// `fd` (shown as `path`) unless someone else can change it.
fn trusted(fd: impl AsFd, path: &Path) -> Result<()> {
    let st = rustix::fs::fstat(fd).map_err(|e| cowkit_fs::IoError::new("stat", path, e))?;
    match cowkit_fs::trust::others_can_change(&st, me()) {
        Some(why) => Err(AccountsError::Untrusted {
            path: path.to_path_buf(),
            why,
        }),
        None => Ok(()),
    }
}

impl Accounts {
    /// The store in the directory `dir` (opened, shown as `dir_path`);
    /// `root` is the server's key pair. Refused when someone else can
    /// change the directory, or the file in it.
    pub fn open_at(
        dir: OwnedFd,
        dir_path: &Path,
        root: Option<(String, String)>,
        fsync: bool,
    ) -> Result<Accounts> {
        trusted(&dir, dir_path)?;
        let a = Accounts {
            root,
            dir,
            dir_path: dir_path.to_path_buf(),
            fsync,
        };
        a.load()?;
        Ok(a)
    }

    /// The store in the directory `path` (made if missing), walked from `/`
    /// so that no directory on the way can be swapped by someone else.
    pub fn open_dir(path: &Path, root: Option<(String, String)>, fsync: bool) -> Result<Accounts> {
        let (fd, untrusted) =
            cowkit_fs::trust::open_dir_walked(path, Some(me()), true).map_err(|e| match e {
                cowkit_fs::trust::WalkError::Io(e) => e.into(),
                cowkit_fs::trust::WalkError::Untrusted { path, why } => {
                    AccountsError::Untrusted { path, why }
                }
            })?;
        if let Some((path, why)) = untrusted {
            return Err(AccountsError::Untrusted { path, why });
        }
        Accounts::open_at(fd, path, root, fsync)
    }

    /// The file's path.
    pub fn path(&self) -> PathBuf {
        self.dir_path.join(FILE)
    }

    /// The root account's access key, when the server has a key pair.
    pub fn root_access(&self) -> Option<&str> {
        self.root.as_ref().map(|r| r.0.as_str())
    }

    /// The accounts in the file (none when there is no file).
    pub fn load(&self) -> Result<Vec<Account>> {
        trusted(&self.dir, &self.dir_path)?;
        let path = self.path();
        let Some(f) = cowkit_fs::dir::open_read_opt(&self.dir, FILE, &path)? else {
            return Ok(Vec::new());
        };
        trusted(&f, &path)?;
        let mut buf = Vec::new();
        f.take(MAX_FILE + 1)
            .read_to_end(&mut buf)
            .map_err(|e| cowkit_fs::IoError::new("read", &path, e))?;
        if buf.len() as u64 > MAX_FILE {
            return Err(AccountsError::TooLarge {
                path,
                max: MAX_FILE,
            });
        }
        parse(&buf, &path)
    }

    /// The account signing with `access`, the root account included.
    pub fn find(&self, access: &str) -> Result<Option<Account>> {
        if let Some((ak, sk)) = &self.root {
            if ak == access {
                return Ok(Some(Account {
                    access: ak.clone(),
                    secret: sk.clone(),
                    role: Role::Admin,
                    user_id: 0,
                    group_id: 0,
                    project_id: 0,
                }));
            }
        }
        Ok(self.load()?.into_iter().find(|a| a.access == access))
    }

    /// The principal of `access` (`None`: no such account).
    pub fn principal(&self, access: &str) -> Result<Option<Principal>> {
        Ok(self.find(access)?.map(|a| Principal {
            access_key: a.access,
            role: a.role,
        }))
    }

    /// Add `acc`.
    pub fn create(&self, acc: Account) -> Result<()> {
        check_access(&acc.access).map_err(AccountsError::Invalid)?;
        check_secret(&acc.secret).map_err(AccountsError::Invalid)?;
        if self.root_access() == Some(acc.access.as_str()) {
            return Err(AccountsError::Exists { access: acc.access });
        }
        self.modify(|list| {
            if list.iter().any(|a| a.access == acc.access) {
                return Err(AccountsError::Exists { access: acc.access });
            }
            list.push(acc);
            Ok(())
        })
    }

    /// Remove the account `access` (its buckets keep it as their owner:
    /// only admins can use them until they are given to someone else).
    pub fn delete(&self, access: &str) -> Result<()> {
        self.modify(|list| {
            let before = list.len();
            list.retain(|a| a.access != access);
            if list.len() == before {
                return Err(AccountsError::NotFound {
                    access: access.to_string(),
                });
            }
            Ok(())
        })
    }

    /// Change the account `access`.
    pub fn update(&self, access: &str, u: Update) -> Result<()> {
        if let Some(s) = &u.secret {
            check_secret(s).map_err(AccountsError::Invalid)?;
        }
        self.modify(|list| {
            let a = list
                .iter_mut()
                .find(|a| a.access == access)
                .ok_or_else(|| AccountsError::NotFound {
                    access: access.to_string(),
                })?;
            if let Some(s) = u.secret {
                a.secret = s;
            }
            if let Some(r) = u.role {
                a.role = r;
            }
            a.user_id = u.user_id.unwrap_or(a.user_id);
            a.group_id = u.group_id.unwrap_or(a.group_id);
            a.project_id = u.project_id.unwrap_or(a.project_id);
            Ok(())
        })
    }

    /// Read, change and replace the file under the store's lock.
    fn modify(&self, f: impl FnOnce(&mut Vec<Account>) -> Result<()>) -> Result<()> {
        let _held = self.lock()?;
        let mut list = self.load()?;
        f(&mut list)?;
        let text = serde_json::to_vec_pretty(&StoreFile { accounts: list })
            .map_err(|e| AccountsError::Invalid(e.to_string()))?;
        let path = self.path();
        let mut nf = cowkit_fs::dir::NewFile::anonymous(self.dir.as_fd(), &self.dir_path, 0o600)?;
        nf.write_all(&text)?;
        if self.fsync {
            nf.sync()?;
        }
        nf.commit(self.dir.as_fd(), FILE, &path)?;
        if self.fsync {
            cowkit_fs::dir::sync_dir(&self.dir, &self.dir_path)?;
        }
        Ok(())
    }

    /// The store's lock (an OFD lock on `accounts.lock`; every gateway
    /// takes it to change the file).
    fn lock(&self) -> Result<File> {
        let path = self.dir_path.join(LOCK);
        let fd = rustix::fs::openat(
            &self.dir,
            LOCK,
            OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| cowkit_fs::IoError::new("open the lock file", &path, e))?;
        cowkit_fs::lock::write(&fd, 0, 1, true)
            .map_err(|e| cowkit_fs::IoError::new("lock", &path, e))?;
        Ok(File::from(fd))
    }
}

/// Authentication with the root key pair and the store's accounts: s3s
/// asks it for the secret key of the access key a request names.
#[derive(Debug, Clone)]
pub struct KeyAuth(pub std::sync::Arc<Accounts>);

#[async_trait::async_trait]
impl s3s::auth::S3Auth for KeyAuth {
    async fn get_secret_key(&self, access_key: &str) -> s3s::S3Result<s3s::auth::SecretKey> {
        match self.0.find(access_key) {
            Ok(Some(a)) => Ok(a.secret.into()),
            Ok(None) => Err(s3s::s3_error!(
                InvalidAccessKeyId,
                "The AWS access key Id you provided does not exist in our records."
            )),
            Err(e) => {
                log::error!("accounts: {}", crate::error_chain(&e));
                Err(s3s::s3_error!(
                    InternalError,
                    "the account store cannot be read; see the server log"
                ))
            }
        }
    }
}

#[cfg(test)]
#[path = "accounts_tests.rs"]
mod tests;
