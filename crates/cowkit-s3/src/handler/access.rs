//! Who may do what: every request is authenticated once (s3s checks the
//! signature against the accounts, [`Access::authenticate`] names the
//! principal and applies the role rules), then authorised once for the
//! operation s3s has parsed ([`Access::authorize`]: [`crate::authz`],
//! the bucket's ACL and policy). The principal goes on to the gateway as
//! [`Principal`] and [`crate::authz::Caller`] request extensions.
//!
//! Requests the `Detour` rewrites are authenticated by the first s3s
//! service (which checked the signature) and authorised by the second
//! one, the first to know the operation: the principal travels between
//! them as an [`Authenticated`] extension.

use std::sync::Arc;

use crate::accounts::{Accounts, Principal, Role, Target};
use crate::authz::Authz;
use crate::store::Store;

/// The access rules of one server.
#[derive(Debug, Clone)]
pub(super) struct Access {
    /// Unsigned requests act as the `anonymous` admin (`--anonymous`, or
    /// a server without credentials).
    pub(super) open: bool,
    /// The accounts (`None` without credentials: no one signs).
    pub(super) accounts: Option<Arc<Accounts>>,
    /// For the owners of buckets.
    pub(super) store: Arc<Store>,
    /// ACLs, ownership and policies.
    pub(super) authz: Arc<Authz>,
}

/// The principal of a request the `Detour` has authenticated, for the
/// second s3s service to authorise (a request extension).
#[derive(Debug, Clone)]
pub(super) struct Authenticated {
    who: Principal,
    signed: bool,
}

/// A refusal a request gets only once it is authorised (a request
/// extension): a copy source key with dot segments, so that a caller not
/// allowed to read what the key names is told only that.
#[derive(Debug, Clone)]
pub(super) struct RefuseOnceAuthorised(pub(super) crate::refusal::Refusal);

/// "Access Denied." with the full stop, as the conformance suite compares
/// it (the code and the 403 are S3's either way).
fn access_denied() -> s3s::S3Error {
    s3s::s3_error!(AccessDenied, "Access Denied.")
}

/// The principal of an unsigned request on a server that is not open: no
/// role of its own, only what buckets make public ([`crate::authz`]).
fn public() -> Principal {
    Principal {
        access_key: "anonymous".into(),
        role: Role::User,
    }
}

impl Access {
    /// Who signed the request (an unsigned one on an open server: the
    /// `anonymous` admin, as before there were accounts).
    fn principal(&self, creds: Option<&s3s::auth::Credentials>) -> s3s::S3Result<Principal> {
        let (Some(c), Some(a)) = (creds, &self.accounts) else {
            if creds.is_none() && !self.open {
                return Ok(public());
            }
            return Ok(Principal {
                access_key: "anonymous".into(),
                role: Role::Admin,
            });
        };
        match a.principal(&c.access_key) {
            Ok(Some(p)) => Ok(p),
            // Removed between the signature check and now.
            Ok(None) => Err(access_denied()),
            Err(e) => Err(crate::admin::accounts_error(e)),
        }
    }

    /// The requester, after the checks that do not depend on the
    /// operation: `x-amz-expected-bucket-owner` and
    /// `x-amz-source-expected-bucket-owner` name the bucket's owner.
    /// Whether it signed goes with it.
    pub(super) fn authenticate(
        &self,
        creds: Option<&s3s::auth::Credentials>,
        method: &http::Method,
        uri: &http::Uri,
        headers: &http::HeaderMap,
    ) -> s3s::S3Result<Authenticated> {
        let who = self.principal(creds)?;
        let root = self.authz.default_owner.as_str();
        // A bucket's owner; `None`: no such bucket.
        let owner_of = |b: &str| match self.store.bucket_owner(b) {
            Ok(o) => Some(o.unwrap_or_else(|| root.to_string())),
            Err(_) => None,
        };
        let target = crate::accounts::target(method, uri, headers);
        let (bucket, source) = match &target {
            Target::Bucket { bucket, source } => (Some(bucket.as_str()), source.as_deref()),
            _ => (None, None),
        };
        for (h, b) in [
            ("x-amz-expected-bucket-owner", bucket),
            ("x-amz-source-expected-bucket-owner", source),
        ] {
            let Some(v) = headers.get(h) else { continue };
            let owner = b
                .and_then(owner_of)
                .unwrap_or_else(|| who.access_key.clone());
            if v.as_bytes() != owner.as_bytes() {
                return Err(access_denied());
            }
        }
        // What the role allows is decided with the operation (authorize).
        let signed = creds.is_some();
        Ok(Authenticated { who, signed })
    }

    /// Authorise the operation for the authenticated principal (see
    /// [`crate::authz`]) and hand the gateway its [`Principal`] and
    /// [`crate::authz::Caller`].
    pub(super) async fn authorize(
        &self,
        Authenticated { who, signed }: Authenticated,
        cx: &mut s3s::access::S3AccessContext<'_>,
    ) -> s3s::S3Result<()> {
        if !who.is_admin() {
            let (bucket, key) = match cx.s3_path() {
                s3s::path::S3Path::Root => (String::new(), String::new()),
                s3s::path::S3Path::Bucket { bucket } => (bucket.to_string(), String::new()),
                s3s::path::S3Path::Object { bucket, key } => (bucket.to_string(), key.to_string()),
            };
            let op = cx.s3_op().name().to_string();
            let headers = cx.headers().clone();
            let query = cx.uri().query().map(str::to_string);
            let peer = cx.extensions_mut().get::<crate::authz::Peer>().map(|p| p.0);
            let (authz, who2) = (self.authz.clone(), who.clone());
            tokio::task::spawn_blocking(move || {
                let ask = crate::authz::Ask {
                    op: &op,
                    bucket: &bucket,
                    key: &key,
                    headers: &headers,
                    query: query.as_deref(),
                    peer,
                };
                authz.check(&who2, signed, &ask)
            })
            .await
            .map_err(crate::answer::internal)??;
        }
        if let Some(RefuseOnceAuthorised(r)) = cx.extensions_mut().remove() {
            return Err(crate::answer::refusal_error(r));
        }
        cx.extensions_mut().insert(crate::authz::Caller {
            principal: who.clone(),
            accounts: self.authz.accounts.clone(),
        });
        cx.extensions_mut().insert(who);
        Ok(())
    }
}

#[async_trait::async_trait]
impl s3s::access::S3Access for Access {
    async fn check(&self, cx: &mut s3s::access::S3AccessContext<'_>) -> s3s::S3Result<()> {
        let (method, uri, headers) = (cx.method().clone(), cx.uri().clone(), cx.headers().clone());
        let creds = cx.credentials().cloned();
        let who = self.authenticate(creds.as_ref(), &method, &uri, &headers)?;
        self.authorize(who, cx).await
    }
}

/// The access check of the second s3s service (behind the `Detour`): the
/// principal the `Detour` authenticated, authorised for the operation the
/// second service has parsed.
pub(super) struct DetourAccess(pub(super) Access);

#[async_trait::async_trait]
impl s3s::access::S3Access for DetourAccess {
    async fn check(&self, cx: &mut s3s::access::S3AccessContext<'_>) -> s3s::S3Result<()> {
        let Some(who) = cx.extensions_mut().remove::<Authenticated>() else {
            return Err(access_denied());
        };
        self.0.authorize(who, cx).await
    }
}

/// The second s3s service's "authentication": it never sees a signature
/// (the `Detour` took it off), but s3s runs access checks only for a
/// service that has one.
pub(super) struct NoKeys;

#[async_trait::async_trait]
impl s3s::auth::S3Auth for NoKeys {
    async fn get_secret_key(&self, _access_key: &str) -> s3s::S3Result<s3s::auth::SecretKey> {
        Err(access_denied())
    }
}
