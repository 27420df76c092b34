//! Who may do what: every request is authorised here once, after s3s has
//! verified its signature and before the operation runs (`handler.rs`
//! calls [`Authz::check`] from its `S3Access`), as AWS defines it
//! (`docs/security.md`, "Who may do what", has the table):
//!
//! 1. An admin (the gateway's key pair, or an account with the admin
//!    role, see [`crate::accounts`]) may do everything.
//! 2. CreateBucket is the role's to decide (admin and `userplus`), on the
//!    operation s3s parsed; ListBuckets is every account's.
//! 3. The bucket policy operations are the bucket owner's alone, and its
//!    policy never locks the owner out of them; the ownership controls are
//!    the owner's alone.
//! 4. Any other request needs each of its policy actions ([`Op::actions`]:
//!    a write's lock and tagging headers ask for their own): a matching
//!    `Deny` in the bucket's policy refuses it (the owner too, with S3's
//!    "explicit deny" message); otherwise the owner may, and another
//!    principal what a matching `Allow` or an ACL grant gives it (AWS's
//!    mapping of ACL permissions to actions, [`acl_permission`]; no ACL
//!    grant under `BucketOwnerEnforced`).
//! 5. An unsigned request (on a server that is not `--anonymous`): the
//!    same with only `"Principal": "*"` statements and grants to everyone,
//!    and never the operations S3 refuses to anonymous callers.
//!
//! Bucket records are read anew for every request of a non-admin (so all
//! gateways of a fleet see a change at once); an admin's requests read
//! nothing.

use std::net::SocketAddr;
use std::sync::Arc;

use s3s::{S3Error, S3ErrorCode};
use serde::{Deserialize, Serialize};

use crate::acl::{Acl, Ownership};
use crate::policy::condition::Context;
use crate::policy::{Decision, Policy, Requester, ARN_PREFIX};
use crate::store::Store;

mod ops;

pub use ops::{acl_permission, operation, Grantable, Op};

pub use crate::accounts::Principal;

/// The accounts a policy or a grant may name.
pub trait Accounts: Send + Sync + std::fmt::Debug {
    /// Whether `access_key` names an account of this gateway.
    fn exists(&self, access_key: &str) -> bool;
}

/// The accounts of a gateway with one key pair: that key.
#[derive(Debug, Clone)]
pub struct OneKey(pub Option<String>);

impl Accounts for OneKey {
    fn exists(&self, access_key: &str) -> bool {
        self.0.as_deref() == Some(access_key)
    }
}

/// The gateway's accounts: its own key pair and those the admin API made
/// (an account file that does not read names none).
impl Accounts for crate::accounts::Accounts {
    fn exists(&self, access_key: &str) -> bool {
        self.root_access() == Some(access_key) || matches!(self.find(access_key), Ok(Some(_)))
    }
}

/// What the gateway's operations learn about the requester: a request
/// extension set when it was authorised.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Who.
    pub principal: Principal,
    /// The accounts grants and policies may name.
    pub accounts: Arc<dyn Accounts>,
}

impl Caller {
    /// The caller of a request (an admin named by its key, or `anonymous`,
    /// when nothing authorised it: a server without credentials).
    pub fn of<T>(req: &s3s::S3Request<T>) -> Caller {
        req.extensions.get::<Caller>().cloned().unwrap_or_else(|| {
            let key = req.credentials.as_ref().map(|c| c.access_key.clone());
            Caller {
                principal: Principal {
                    access_key: key.clone().unwrap_or_else(|| "anonymous".into()),
                    role: crate::accounts::Role::Admin,
                },
                accounts: Arc::new(OneKey(key)),
            }
        })
    }

    /// Whether `key` may be named by a grant or a policy.
    pub fn knows(&self, key: &str) -> bool {
        key == self.principal.access_key || self.accounts.exists(key)
    }
}

/// The peer of a request (a request extension the server sets), for
/// `aws:SourceIp`.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// The bucket's ACL record (`acl.json`).
pub const ACL_RECORD: &str = "acl.json";
/// The bucket's ownership record (`ownership.json`).
pub const OWNERSHIP_RECORD: &str = "ownership.json";
/// The bucket's policy record (`policy.json`).
pub const POLICY_RECORD: &str = "policy.json";

/// The longest ACL record read (100 grants of long keys fit many times).
const MAX_ACL_RECORD: u64 = 256 << 10;

/// A policy as stored: the document as the client sent it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredPolicy {
    /// The JSON text.
    pub policy: String,
}

/// A bucket's ownership setting as stored.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct StoredOwnership {
    /// The setting.
    pub ownership: Ownership,
}

/// The bucket's ACL; a bucket without one (made before ACLs, or by
/// another tool) is private. Its owner is always the store's
/// ([`Store::bucket_owner`]: the account that made it, or was given it;
/// `default_owner`, the server's key pair, when none is recorded).
pub fn bucket_acl(store: &Store, bucket: &str, default_owner: &str) -> crate::Result<Acl> {
    let owner = store
        .bucket_owner(bucket)?
        .unwrap_or_else(|| default_owner.to_string());
    let mut acl = store
        .bucket_record::<Acl>(bucket, ACL_RECORD, MAX_ACL_RECORD)?
        .unwrap_or_else(|| Acl::private(&owner));
    acl.owner = owner;
    Ok(acl)
}

/// The bucket's ownership setting (`None`: none set).
pub fn bucket_ownership(store: &Store, bucket: &str) -> crate::Result<Option<Ownership>> {
    Ok(store
        .bucket_record::<StoredOwnership>(bucket, OWNERSHIP_RECORD, 4096)?
        .map(|o| o.ownership))
}

/// The bucket's policy document (`None`: none).
pub fn bucket_policy(store: &Store, bucket: &str) -> crate::Result<Option<String>> {
    // JSON escaping at most doubles... sixfold a document's bytes.
    let max = (crate::policy::MAX_POLICY_BYTES as u64) * 6 + 64;
    Ok(store
        .bucket_record::<StoredPolicy>(bucket, POLICY_RECORD, max)?
        .map(|p| p.policy))
}

/// Record what a new bucket starts with: its ACL (the owner in it is
/// the store's, recorded when the bucket was made) and ownership setting, and no policy (one a racing PutBucketPolicy left
/// for an earlier bucket of the name is removed).
pub fn init_bucket(
    store: &Store,
    bucket: &str,
    acl: &Acl,
    ownership: Option<Ownership>,
) -> crate::Result<()> {
    store.set_bucket_record(bucket, ACL_RECORD, Some(acl))?;
    let o = ownership.map(|ownership| StoredOwnership { ownership });
    store.set_bucket_record(bucket, OWNERSHIP_RECORD, o.as_ref())?;
    store.set_bucket_record::<StoredPolicy>(bucket, POLICY_RECORD, None)
}

/// The ACL and ownership setting a new bucket of `owner` starts with: a
/// canned ACL or grants (not both); ownership from
/// `x-amz-object-ownership` (without it, `BucketOwnerEnforced` unless the
/// ACL is `private`), and no ACL but `private` under `BucketOwnerEnforced`.
/// `knows` says which access keys a grant may name.
pub fn new_bucket_access(
    owner: &str,
    canned: Option<&str>,
    grants: &crate::acl::GrantHeaders,
    ownership: Option<&str>,
    knows: &dyn Fn(&str) -> bool,
) -> Result<(Acl, Option<Ownership>), S3Error> {
    let acl_error = |e: crate::acl::AclError| s3_error(e.code(), e.status(), e.to_string());
    if canned.is_some() && grants.any() {
        return Err(acl_error(crate::acl::AclError::CannedAndGrants));
    }
    let ownership = Ownership::for_new_bucket(ownership, canned);
    if ownership == Some(Ownership::BucketOwnerEnforced)
        && (grants.any() || canned.is_some_and(|c| c != "private"))
    {
        return Err(s3_error(
            "InvalidBucketAclWithObjectOwnership",
            400,
            "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting",
        ));
    }
    let acl = match canned {
        Some(c) => Acl::canned(owner, c),
        None => Acl::from_headers(owner, grants, knows),
    }
    .map_err(acl_error)?;
    Ok((acl, ownership))
}

/// Whether `who` may override a GOVERNANCE retention on `bucket`/`key`.
/// Asked for with `x-amz-bypass-governance-retention` (`requested`:
/// DeleteObject, DeleteObjects, PutObjectRetention), an admin and the
/// bucket's owner (whose account holds every permission on its bucket)
/// always may, another principal when the bucket's policy allows it
/// `s3:BypassGovernanceRetention` (no ACL grants it). Replacing a locked
/// object by a write (PutObject, CopyObject, a complete, in a bucket
/// locked without versioning: no S3 write has the header) needs that
/// allowance from everyone, admins included, as VersityGW decides it.
/// Blocking: reads the owner and the policy.
pub fn may_bypass_governance(
    store: &Store,
    who: &Principal,
    bucket: &str,
    key: &str,
    requested: bool,
) -> crate::Result<bool> {
    if requested
        && (who.is_admin() || store.bucket_owner(bucket)?.as_deref() == Some(&who.access_key))
    {
        return Ok(true);
    }
    let Some(doc) = bucket_policy(store, bucket)? else {
        return Ok(false);
    };
    let Ok(p) = Policy::parse(&doc, bucket, &|_| true) else {
        return Ok(false);
    };
    let me = Requester::Key(&who.access_key);
    let resource = format!("{bucket}/{key}");
    let cx = Context::default();
    Ok(p.decide(me, "s3:BypassGovernanceRetention", &resource, &cx) == Decision::Allow)
}

/// Give the bucket to `owner` (the admin API's change of owner, as
/// VersityGW does it): recorded as its owner, with a private ACL and no
/// policy.
pub fn set_bucket_owner(store: &Store, bucket: &str, owner: &str) -> crate::Result<()> {
    store.set_bucket_owner(bucket, owner)?;
    store.set_bucket_record(bucket, ACL_RECORD, Some(&Acl::private(owner)))?;
    store.set_bucket_record::<StoredPolicy>(bucket, POLICY_RECORD, None)
}

/// An S3 error with its status.
pub fn s3_error(code: &str, status: u16, msg: impl Into<String>) -> S3Error {
    let c = S3ErrorCode::from_bytes(code.as_bytes())
        .unwrap_or_else(|| S3ErrorCode::Custom(code.to_string().into()));
    let mut e = S3Error::with_message(c, msg.into());
    if let Ok(s) = http::StatusCode::from_u16(status) {
        e.set_status_code(s);
    }
    e
}

/// S3's plain refusal ("Access Denied." with the full stop the VersityGW
/// suite compares).
pub fn access_denied() -> S3Error {
    s3_error("AccessDenied", 403, "Access Denied.")
}

/// The refusal of a matching `Deny` statement, in S3's words.
fn explicit_deny(who: &str, action: &str, resource: &str) -> S3Error {
    s3_error(
        "AccessDenied",
        403,
        format!(
            "User: {who} is not authorized to perform: {action} on resource: \"{ARN_PREFIX}{resource}\" with an explicit deny in a resource-based policy"
        ),
    )
}

/// What one request asks, as the authoriser needs it.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    /// s3s's operation name (`GetObject`).
    pub op: &'a str,
    /// The bucket (empty for the service).
    pub bucket: &'a str,
    /// The key (empty for a bucket).
    pub key: &'a str,
    /// The request's headers.
    pub headers: &'a http::HeaderMap,
    /// Its query.
    pub query: Option<&'a str>,
    /// Its peer.
    pub peer: Option<SocketAddr>,
}

impl Ask<'_> {
    fn param(&self, name: &str) -> Option<String> {
        crate::text::query_pairs(self.query.unwrap_or(""))
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The condition keys of the request.
    pub fn context(&self) -> Context {
        let mut cx = Context::default();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        cx.set("aws:CurrentTime", crate::policy::condition::rfc3339(now));
        cx.set("aws:EpochTime", now.to_string());
        cx.set("aws:SecureTransport", "false");
        if let Some(p) = self.peer {
            cx.set("aws:SourceIp", p.ip().to_canonical().to_string());
        }
        for (key, header) in [
            ("aws:UserAgent", "user-agent"),
            ("aws:Referer", "referer"),
            ("s3:x-amz-acl", "x-amz-acl"),
        ] {
            if let Some(v) = self.header(header).filter(|v| !v.is_empty()) {
                cx.set(key, v);
            }
        }
        for (key, param) in [
            ("s3:prefix", "prefix"),
            ("s3:delimiter", "delimiter"),
            ("s3:max-keys", "max-keys"),
            ("s3:VersionId", "versionId"),
        ] {
            if let Some(v) = self.param(param).filter(|v| !v.is_empty()) {
                cx.set(key, v);
            }
        }
        cx
    }

    /// The policy resource (`bucket` or `bucket/key`), the key's dot
    /// segments resolved ([`crate::names::lexical_key`]).
    fn resource(&self, object: bool) -> String {
        if object && !self.key.is_empty() {
            format!("{}/{}", self.bucket, crate::names::lexical_key(self.key))
        } else {
            self.bucket.to_string()
        }
    }
}

/// The authoriser: the store whose bucket records it reads, the key of
/// the bucket owner for buckets without a record, the accounts.
#[derive(Debug, Clone)]
pub struct Authz {
    /// The store.
    pub store: Arc<Store>,
    /// The owner of buckets without an ACL record (the admin key).
    pub default_owner: String,
    /// The accounts.
    pub accounts: Arc<dyn Accounts>,
}

/// What one bucket says about access.
struct Bucket {
    acl: Acl,
    ownership: Option<Ownership>,
    policy: Option<Policy>,
    /// A stored policy that no longer reads: nothing is allowed by it.
    broken_policy: bool,
}

impl Authz {
    /// The bucket's records (`None`: no such bucket).
    fn bucket(&self, bucket: &str) -> crate::Result<Option<Bucket>> {
        match self.store.head_bucket(bucket) {
            Ok(()) => {}
            Err(crate::Error::NoSuchBucket { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
        let acl = bucket_acl(&self.store, bucket, &self.default_owner)?;
        let ownership = bucket_ownership(&self.store, bucket)?;
        let (policy, broken_policy) = match bucket_policy(&self.store, bucket)? {
            None => (None, false),
            Some(doc) => match Policy::parse(&doc, bucket, &|_| true) {
                Ok(p) => (Some(p), false),
                Err(e) => {
                    log::warn!("bucket `{bucket}`: stored policy does not read: {e}");
                    (None, true)
                }
            },
        };
        Ok(Some(Bucket {
            acl,
            ownership,
            policy,
            broken_policy,
        }))
    }

    /// Authorise one request of `who` (blocking: reads bucket records).
    pub fn check(&self, who: &Principal, signed: bool, ask: &Ask<'_>) -> Result<(), S3Error> {
        if who.is_admin() {
            return Ok(());
        }
        let Some(op) = operation(ask.op) else {
            // An operation this table does not know is not served to
            // anyone but an admin.
            return Err(access_denied());
        };
        if !signed {
            return self.check_public(&op, ask);
        }
        match op.name {
            // Every account lists (its own buckets).
            "ListBuckets" => return Ok(()),
            // The role decides, on the operation s3s parsed (whatever
            // query or path shape the request had); an existing bucket's
            // name is the operation's to answer.
            "CreateBucket" if crate::accounts::may_create_buckets(who) => return Ok(()),
            "CreateBucket" => return Err(access_denied()),
            _ if ask.bucket.is_empty() => return Err(access_denied()),
            _ => {}
        }
        self.check_bucket(who, &op, ask, ask.bucket, ask.key)?;
        if op.copies {
            if let Some((b, k)) = ask.header("x-amz-copy-source").and_then(copy_source) {
                let src = operation(if k.1 { "GetObjectVersion" } else { "GetObject" })
                    .expect("GetObject is in the table");
                self.check_bucket(who, &src, ask, &b, &k.0)?;
            }
        }
        Ok(())
    }

    /// A signed non-admin request on `bucket`/`key`: see
    /// `docs/security.md`, "Who may do what".
    fn check_bucket(
        &self,
        who: &Principal,
        op: &Op,
        ask: &Ask<'_>,
        bucket: &str,
        key: &str,
    ) -> Result<(), S3Error> {
        let Some(b) = self.bucket(bucket).map_err(crate::answer::to_s3_error)? else {
            return Ok(()); // The operation answers NoSuchBucket.
        };
        let me = Requester::Key(&who.access_key);
        let owner = b.acl.owner == who.access_key;
        let ask = Ask {
            bucket,
            key,
            ..ask.clone()
        };
        match op.grantable {
            // The owner's account, whatever the policy says (so that a
            // policy can always be mended); another account the policy
            // allows is told S3's 405, any other 403.
            Grantable::OwnerAlways if owner => return Ok(()),
            Grantable::OwnerAlways => return Err(b.refuse_policy_op(me, op, &ask)),
            Grantable::OwnerOnly if !owner => return Err(access_denied()),
            Grantable::OwnerOnly | Grantable::Anyone => {}
        }
        if b.broken_policy {
            return Err(access_denied());
        }
        let cx = ask.context();
        let resource = ask.resource(op.object);
        // S3 lets an upload's initiator list its parts and abort it.
        let initiator = !owner && self.initiated(who, op, &ask);
        for action in op.actions(&ask) {
            // A matching Deny refuses, for the owner too; an Allow lets in.
            let decision = match &b.policy {
                None => Decision::NoMatch,
                Some(p) if op.every_key => {
                    if p.denies_anywhere(me, action) {
                        Decision::Deny
                    } else {
                        p.decide(me, action, &format!("{bucket}/*"), &cx)
                    }
                }
                Some(p) => p.decide(me, action, &resource, &cx),
            };
            match decision {
                Decision::Deny => return Err(explicit_deny(&who.access_key, action, &resource)),
                Decision::Allow => {}
                // Without a statement: the owner's account may (and an
                // upload's initiator what it may), others what an ACL
                // grant gives them (not under BucketOwnerEnforced, where
                // ACLs are disabled).
                Decision::NoMatch if owner || initiator || b.acl_grants(me, action) => {}
                Decision::NoMatch => return Err(access_denied()),
            }
        }
        Ok(())
    }

    /// Whether `who` started the upload an AbortMultipartUpload or
    /// ListParts names (its `uploadId` on this bucket and key, recorded
    /// with `who` as its initiator). Any other operation, or an upload
    /// that cannot be read: no.
    fn initiated(&self, who: &Principal, op: &Op, ask: &Ask<'_>) -> bool {
        if !matches!(op.name, "AbortMultipartUpload" | "ListParts") {
            return false;
        }
        let pairs = crate::text::query_pairs(ask.query.unwrap_or(""));
        let Some((_, id)) = pairs.iter().find(|(k, _)| k == "uploadId") else {
            return false;
        };
        self.store
            .upload_record(id, ask.bucket, ask.key)
            .is_ok_and(|r| r.initiator.as_deref() == Some(who.access_key.as_str()))
    }

    /// An unsigned request: what the bucket makes public (a policy
    /// statement for `"*"`, or a grant to everyone), for every action the
    /// request needs.
    fn check_public(&self, op: &Op, ask: &Ask<'_>) -> Result<(), S3Error> {
        if let Some(refusal) = op.anonymous_refusal() {
            return Err(refusal);
        }
        if ask.bucket.is_empty() {
            return Err(access_denied());
        }
        let Some(b) = self
            .bucket(ask.bucket)
            .map_err(crate::answer::to_s3_error)?
        else {
            return Err(access_denied());
        };
        match op.grantable {
            Grantable::OwnerAlways => {
                return Err(b.refuse_policy_op(Requester::Anonymous, op, ask))
            }
            Grantable::OwnerOnly => return Err(access_denied()),
            Grantable::Anyone => {}
        }
        if b.broken_policy {
            return Err(access_denied());
        }
        let cx = ask.context();
        let resource = ask.resource(op.object);
        for action in op.actions(ask) {
            let decision = match &b.policy {
                Some(p) => p.decide(Requester::Anonymous, action, &resource, &cx),
                None => Decision::NoMatch,
            };
            match decision {
                Decision::Deny => return Err(access_denied()),
                Decision::Allow => {}
                Decision::NoMatch if b.acl_grants(Requester::Anonymous, action) => {}
                Decision::NoMatch => return Err(access_denied()),
            }
        }
        public_overrides(op, ask)
    }
}

impl Bucket {
    /// Whether the bucket's ACL grants `who` the policy action `action`
    /// ([`ops::acl_permission`]); never under `BucketOwnerEnforced`.
    fn acl_grants(&self, who: Requester<'_>, action: &str) -> bool {
        self.ownership != Some(Ownership::BucketOwnerEnforced)
            && ops::acl_permission(action).is_some_and(|p| self.acl.allows(who, p))
    }

    /// S3's refusal of a bucket policy operation to someone other than
    /// the owner's account: `MethodNotAllowed` when the policy allows it
    /// the action (it has the permission, but is not the owner's),
    /// `AccessDenied` otherwise.
    fn refuse_policy_op(&self, who: Requester<'_>, op: &Op, ask: &Ask<'_>) -> S3Error {
        let allowed = self.policy.as_ref().is_some_and(|p| {
            p.decide(who, op.action, &ask.resource(false), &ask.context()) == Decision::Allow
        });
        if allowed {
            s3_error(
                "MethodNotAllowed",
                405,
                "The specified method is not allowed against this resource.",
            )
        } else {
            access_denied()
        }
    }
}

/// A public GetObject or HeadObject cannot ask for other response
/// headers (`response-*`), as S3 answers.
fn public_overrides(op: &Op, ask: &Ask<'_>) -> Result<(), S3Error> {
    let overrides = matches!(op.name, "GetObject" | "HeadObject")
        && crate::text::query_pairs(ask.query.unwrap_or(""))
            .iter()
            .any(|(k, _)| k.starts_with("response-"));
    if overrides {
        return Err(s3_error(
            "InvalidRequest",
            400,
            "Request specific response headers cannot be used for anonymous GET requests.",
        ));
    }
    Ok(())
}

/// `x-amz-copy-source` as (bucket, (key, names a version)), as s3s reads it.
fn copy_source(v: &str) -> Option<(String, (String, bool))> {
    match s3s::dto::CopySource::parse(v).ok()? {
        s3s::dto::CopySource::Bucket {
            bucket,
            key,
            version_id,
        } => Some((bucket.to_string(), (key.to_string(), version_id.is_some()))),
        _ => None,
    }
}

impl Policy {
    /// Whether a `Deny` statement for `who` and `action` exists, whatever
    /// its resources and conditions (DeleteObjects names its keys in its
    /// body, after authorisation: any such statement refuses it whole).
    pub fn denies_anywhere(&self, who: Requester<'_>, action: &str) -> bool {
        self.statements.iter().any(|st| {
            st.effect == crate::policy::Effect::Deny
                && match (&st.principals, who) {
                    (crate::policy::Principals::Everyone, _) => true,
                    (crate::policy::Principals::Keys(k), Requester::Key(me)) => k.contains(me),
                    _ => false,
                }
                && st
                    .actions
                    .iter()
                    .any(|a| crate::policy::wildcard_match(a, action))
        })
    }
}

#[cfg(test)]
mod tests;
