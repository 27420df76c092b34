//! VersityGW's admin API, so that `versitygw admin --access AK --secret SK
//! --endpoint-url URL create-user|delete-user|update-user|list-users|
//! change-bucket-owner|list-buckets|create-bucket` works unchanged.
//!
//! Every call is a `PATCH` on the S3 endpoint, signed with SigV4 like an
//! S3 request (service `s3`), so s3s verifies its signature (the server's
//! custom route hands it here only after that) and its payload hash (while
//! the body is read, at most [`crate::limits::MAX_ADMIN_BODY`] bytes). Only
//! an `admin` account, the server's own key pair included, may call it;
//! anyone else gets `XAdminAccessDenied` (403). Bodies and answers are
//! VersityGW's XML documents (flat elements, as Go's `encoding/xml` writes
//! them); errors are S3 error documents with VersityGW's `XAdmin*` codes.
//!
//! | route | does |
//! |---|---|
//! | `PATCH /create-user` | body `<Account><Access>…<Secret>…<Role>…` (201) |
//! | `PATCH /update-user?access=AK` | body `<MutableProps>` with `Secret`, `Role`, ids |
//! | `PATCH /delete-user?access=AK` | removes the account |
//! | `PATCH /list-users` | `<ListUserAccountsResult><Accounts>…` (no secrets) |
//! | `PATCH /change-bucket-owner?bucket=B&owner=AK` | gives bucket B to AK |
//! | `PATCH /list-buckets` | `<ListBucketsResult><Buckets><Name>…<Owner>…` |
//! | `PATCH /B/create` | creates bucket B owned by header `x-vgw-owner`, with CreateBucket's ACL, ownership and object lock headers (201) |

use std::sync::Arc;

use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use crate::accounts::{Account, Accounts, Principal, Role, Update};
use crate::error::AccountsError;
use crate::store::Store;

/// Whether a request is for the admin API (S3 has no `PATCH`).
pub fn is_admin_request(method: &http::Method) -> bool {
    method == http::Method::PATCH
}

/// Whether the request is the admin API's CreateBucket (`PATCH /B/create`),
/// which takes CreateBucket's ACL, ownership and object lock headers.
pub fn is_admin_create_bucket(method: &http::Method, uri: &http::Uri) -> bool {
    is_admin_request(method)
        && uri
            .path()
            .strip_prefix('/')
            .and_then(|p| p.strip_suffix("/create"))
            .is_some_and(|b| !b.is_empty() && !b.contains('/'))
}

/// An admin API error: VersityGW's code, message and status.
pub fn admin_error(code: &str, message: &str, status: http::StatusCode) -> S3Error {
    let mut e = S3Error::with_message(
        S3ErrorCode::Custom(code.to_string().into()),
        message.to_string(),
    );
    e.set_status_code(status);
    e
}

/// VersityGW's admin API errors that always say the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminError {
    /// The caller is not an admin account.
    AccessDenied,
    /// No account has the access key named.
    UserNotFound,
    /// An account with the access key to create exists.
    UserExists,
    /// A role other than `user`, `admin` or `userplus`.
    InvalidRole,
    /// `?access=` is missing or empty.
    AccessMissing,
    /// The body's SHA-256 is not in `x-amz-content-sha256`.
    UnsignedBody,
    /// CreateBucket without an `x-vgw-owner`.
    OwnerMissing,
    /// A route the admin API does not have.
    NoSuchOperation,
}

impl AdminError {
    /// VersityGW's code, message and status.
    fn parts(self) -> (&'static str, &'static str, http::StatusCode) {
        use http::StatusCode as S;
        match self {
            AdminError::AccessDenied => (
                "XAdminAccessDenied",
                "Only admin users have access to this resource.",
                S::FORBIDDEN,
            ),
            AdminError::UserNotFound => (
                "XAdminUserNotFound",
                "No user exists with the provided access key ID.",
                S::NOT_FOUND,
            ),
            AdminError::UserExists => (
                "XAdminUserExists",
                "A user with the provided access key ID already exists.",
                S::CONFLICT,
            ),
            AdminError::InvalidRole => (
                "XAdminInvalidArgument",
                "User role has to be one of the following: 'user', 'admin', 'userplus'.",
                S::BAD_REQUEST,
            ),
            AdminError::AccessMissing => (
                "XAdminInvalidArgument",
                "User access key ID is missing.",
                S::NOT_FOUND,
            ),
            AdminError::UnsignedBody => (
                "XAdminInvalidRequest",
                "The admin API takes only a signed body: x-amz-content-sha256 must be the body's SHA-256 (not UNSIGNED-PAYLOAD, a streaming payload or missing).",
                S::BAD_REQUEST,
            ),
            AdminError::OwnerMissing => (
                "XAdminInvalidRequest",
                "The x-vgw-owner header specifying the new bucket owner access key id is either missing or empty",
                S::BAD_REQUEST,
            ),
            AdminError::NoSuchOperation => (
                "XAdminMethodNotSupported",
                "No such admin operation.",
                S::NOT_FOUND,
            ),
        }
    }
}

impl From<AdminError> for S3Error {
    fn from(e: AdminError) -> S3Error {
        let (code, message, status) = e.parts();
        admin_error(code, message, status)
    }
}

fn malformed_xml() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::MalformedXML,
        "The XML you provided was not well-formed or did not validate against our published schema.",
    )
}

/// The S3 error for a store error.
pub fn accounts_error(e: AccountsError) -> S3Error {
    match e {
        AccountsError::Exists { .. } => AdminError::UserExists.into(),
        AccountsError::NotFound { .. } => AdminError::UserNotFound.into(),
        AccountsError::Invalid(m) => {
            admin_error("XAdminInvalidArgument", &m, http::StatusCode::BAD_REQUEST)
        }
        e => {
            log::error!("accounts: {}", crate::error_chain(&e));
            S3Error::with_message(
                S3ErrorCode::InternalError,
                "internal error; see the server log",
            )
        }
    }
}

/// The root element's name and its children `(name, text)` of a flat XML
/// document (`<?xml …?>`, attributes and whitespace between elements
/// allowed; a child with children of its own, a comment or anything
/// unbalanced is `None`). Text is unescaped.
pub fn flat_xml(doc: &str) -> Option<(String, Vec<(String, String)>)> {
    let mut s = doc.trim();
    if s.starts_with("<?xml") {
        s = s[s.find("?>")? + 2..].trim_start();
    }
    let rest = s.strip_prefix('<')?;
    let end = rest.find('>')?;
    let head = &rest[..end];
    let root = head
        .split_whitespace()
        .next()?
        .trim_end_matches('/')
        .to_string();
    if root.is_empty() || root.starts_with(['!', '?', '/']) {
        return None;
    }
    if head.ends_with('/') {
        return rest[end + 1..]
            .trim()
            .is_empty()
            .then(|| (root, Vec::new()));
    }
    let mut body = rest[end + 1..]
        .trim_end()
        .strip_suffix(&format!("</{root}>"))?;
    let mut out = Vec::new();
    loop {
        body = body.trim_start();
        if body.is_empty() {
            return Some((root, out));
        }
        let r = body.strip_prefix('<')?;
        let close = r.find('>')?;
        let tag = &r[..close];
        if tag.starts_with(['!', '?', '/']) || tag.contains(char::is_whitespace) {
            return None;
        }
        if let Some(name) = tag.strip_suffix('/') {
            out.push((name.to_string(), String::new()));
            body = &r[close + 1..];
            continue;
        }
        let after = &r[close + 1..];
        let end_tag = format!("</{tag}>");
        let text_end = after.find(&end_tag)?;
        let text = &after[..text_end];
        if text.contains('<') {
            return None;
        }
        out.push((tag.to_string(), unescape(text)?));
        body = &after[text_end + end_tag.len()..];
    }
}

/// XML text with its five entities and character references decoded.
fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let r = &rest[at + 1..];
        let semi = r.find(';')?;
        let ent = &r[..semi];
        let c = match ent {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let n = match ent.strip_prefix("#x") {
                    Some(h) => u32::from_str_radix(h, 16).ok()?,
                    None => ent.strip_prefix('#')?.parse().ok()?,
                };
                char::from_u32(n)?
            }
        };
        out.push(c);
        rest = &r[semi + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// `s` escaped for XML text.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A number VersityGW writes for its ids (an empty element is 0).
fn id(v: &str) -> Option<i64> {
    if v.trim().is_empty() {
        return Some(0);
    }
    v.trim().parse().ok()
}

/// The account a `create-user` body describes.
pub fn parse_account(doc: &str) -> S3Result<Account> {
    let (_, fields) = flat_xml(doc).ok_or_else(malformed_xml)?;
    let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let role = Role::parse(get("Role").unwrap_or("")).ok_or(AdminError::InvalidRole)?;
    let num = |n: &str| id(get(n).unwrap_or("")).ok_or_else(malformed_xml);
    Ok(Account {
        access: get("Access").unwrap_or("").to_string(),
        secret: get("Secret").unwrap_or("").to_string(),
        role,
        user_id: num("UserID")?,
        group_id: num("GroupID")?,
        project_id: num("ProjectID")?,
    })
}

/// The changes an `update-user` body asks for (an empty `Role`: kept).
pub fn parse_update(doc: &str) -> S3Result<Update> {
    let (_, fields) = flat_xml(doc).ok_or_else(malformed_xml)?;
    let mut u = Update::default();
    for (k, v) in fields {
        match k.as_str() {
            "Secret" => u.secret = Some(v),
            "Role" if v.is_empty() => {}
            "Role" => u.role = Some(Role::parse(&v).ok_or(AdminError::InvalidRole)?),
            "UserID" => u.user_id = Some(id(&v).ok_or_else(malformed_xml)?),
            "GroupID" => u.group_id = Some(id(&v).ok_or_else(malformed_xml)?),
            "ProjectID" => u.project_id = Some(id(&v).ok_or_else(malformed_xml)?),
            _ => {}
        }
    }
    Ok(u)
}

/// `list-users`' document (VersityGW's shape; secrets left out).
pub fn users_document(accounts: &[Account]) -> String {
    let mut x = String::from("<ListUserAccountsResult>");
    for a in accounts {
        x.push_str(&format!(
            "<Accounts><Access>{}</Access><Role>{}</Role><UserID>{}</UserID>\
             <GroupID>{}</GroupID><ProjectID>{}</ProjectID></Accounts>",
            escape(&a.access),
            a.role.as_str(),
            a.user_id,
            a.group_id,
            a.project_id
        ));
    }
    x.push_str("</ListUserAccountsResult>");
    x
}

/// `list-buckets`' document: every bucket and its owner.
pub fn buckets_document(buckets: &[(String, String)]) -> String {
    let mut x = String::from("<ListBucketsResult>");
    for (name, owner) in buckets {
        x.push_str(&format!(
            "<Buckets><Name>{}</Name><Owner>{}</Owner></Buckets>",
            escape(name),
            escape(owner)
        ));
    }
    x.push_str("</ListBucketsResult>");
    x
}

/// The admin API over the store and the accounts.
#[derive(Debug, Clone)]
pub struct Admin {
    /// The accounts.
    pub accounts: Arc<Accounts>,
    /// The buckets.
    pub store: Arc<Store>,
    /// The server's region (for a create-bucket's location constraint).
    pub region: String,
}

/// The one query parameter `name` of `uri`.
fn query(uri: &http::Uri, name: &str) -> Option<String> {
    crate::text::query_pairs(uri.query().unwrap_or(""))
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

fn answer(status: http::StatusCode, xml: Option<String>) -> S3Response<s3s::Body> {
    let mut res = S3Response::new(xml.map_or_else(s3s::Body::empty, s3s::Body::from));
    res.status = Some(status);
    res.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    res
}

impl Admin {
    /// Only a signed admin may call the API, and only with its body
    /// covered by the signature: `x-amz-content-sha256` the body's SHA-256
    /// (s3s checks it as it reads the body), never `UNSIGNED-PAYLOAD`, a
    /// streaming marker, or left out (a presigned URL).
    pub fn check_access(
        &self,
        creds: Option<&s3s::auth::Credentials>,
        headers: &http::HeaderMap,
    ) -> S3Result<Principal> {
        let creds = creds.ok_or(AdminError::AccessDenied)?;
        let who = match self.accounts.principal(&creds.access_key) {
            Ok(Some(p)) if p.is_admin() => p,
            Ok(_) => return Err(AdminError::AccessDenied.into()),
            Err(e) => return Err(accounts_error(e)),
        };
        let hashed = headers
            .get("x-amz-content-sha256")
            .is_some_and(|v| v.len() == 64 && v.as_bytes().iter().all(u8::is_ascii_hexdigit));
        if !hashed {
            return Err(AdminError::UnsignedBody.into());
        }
        Ok(who)
    }

    /// Run one blocking step on tokio's blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Admin) -> S3Result<T> + Send + 'static,
    ) -> S3Result<T> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || f(&me))
            .await
            .map_err(crate::answer::internal)?
    }

    /// Answer one admin request (its signature verified, its caller an
    /// admin).
    pub async fn call(&self, req: S3Request<s3s::Body>) -> S3Result<S3Response<s3s::Body>> {
        let mut body = req.input;
        let doc = body
            .store_all_limited(crate::limits::MAX_ADMIN_BODY)
            .await
            .map_err(crate::answer::body_error)?;
        let doc = String::from_utf8(doc.to_vec()).map_err(|_| malformed_xml())?;
        let path = req.uri.path().trim_end_matches('/').to_string();
        let uri = req.uri.clone();
        let headers = req.headers.clone();
        self.blocking(move |a| a.route(&path, &uri, &headers, &doc))
            .await
    }

    fn route(
        &self,
        path: &str,
        uri: &http::Uri,
        headers: &http::HeaderMap,
        doc: &str,
    ) -> S3Result<S3Response<s3s::Body>> {
        use http::StatusCode as S;
        let access = || {
            query(uri, "access")
                .filter(|a| !a.is_empty())
                .ok_or(AdminError::AccessMissing)
        };
        let acc = &self.accounts;
        match path {
            "/create-user" => {
                acc.create(parse_account(doc)?).map_err(accounts_error)?;
                Ok(answer(S::CREATED, None))
            }
            "/update-user" => {
                let u = parse_update(doc)?;
                acc.update(&access()?, u).map_err(accounts_error)?;
                Ok(answer(S::OK, None))
            }
            "/delete-user" => {
                acc.delete(&access()?).map_err(accounts_error)?;
                Ok(answer(S::OK, None))
            }
            "/list-users" => {
                let list = acc.load().map_err(accounts_error)?;
                Ok(answer(S::OK, Some(users_document(&list))))
            }
            "/change-bucket-owner" => self.change_owner(uri),
            "/list-buckets" => self.list_buckets(),
            p => match p.strip_prefix('/').and_then(|p| p.strip_suffix("/create")) {
                Some(bucket) if !bucket.contains('/') => self.create_bucket(bucket, headers, doc),
                _ => Err(AdminError::NoSuchOperation.into()),
            },
        }
    }

    /// The root account's name for buckets without an owner.
    fn root_owner(&self) -> String {
        self.accounts
            .root_access()
            .unwrap_or("anonymous")
            .to_string()
    }

    /// `XAdminUserNotFound` unless an account has the access key `key`.
    fn known_user(&self, key: &str) -> S3Result<()> {
        match self.accounts.find(key).map_err(accounts_error)? {
            Some(_) => Ok(()),
            None => Err(AdminError::UserNotFound.into()),
        }
    }

    fn change_owner(&self, uri: &http::Uri) -> S3Result<S3Response<s3s::Body>> {
        let bucket = query(uri, "bucket").unwrap_or_default();
        let owner = query(uri, "owner").unwrap_or_default();
        self.known_user(&owner)?;
        crate::authz::set_bucket_owner(&self.store, &bucket, &owner)
            .map_err(crate::answer::to_s3_error)?;
        Ok(answer(http::StatusCode::OK, None))
    }

    fn list_buckets(&self) -> S3Result<S3Response<s3s::Body>> {
        let root = self.root_owner();
        let list: Vec<(String, String)> = self
            .store
            .list_buckets()
            .map_err(crate::answer::to_s3_error)?
            .into_iter()
            .map(|b| (b.name, b.owner.unwrap_or_else(|| root.clone())))
            .collect();
        Ok(answer(http::StatusCode::OK, Some(buckets_document(&list))))
    }

    fn create_bucket(
        &self,
        bucket: &str,
        headers: &http::HeaderMap,
        doc: &str,
    ) -> S3Result<S3Response<s3s::Body>> {
        let owner = headers
            .get("x-vgw-owner")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        if owner.is_empty() {
            return Err(AdminError::OwnerMissing.into());
        }
        self.known_user(&owner)?;
        let (rest, tags) =
            crate::tagging::take_create_bucket_tags(doc).map_err(crate::answer::to_s3_error)?;
        self.check_location(&rest)?;
        let tags = match tags {
            Some(pairs) => crate::tagging::check_bucket_set(
                pairs.iter().map(|(k, v)| (k.as_deref(), v.as_deref())),
            )
            .map_err(crate::answer::tag_error)?,
            None => Vec::new(),
        };
        let h = |k: &str| {
            headers
                .get(k)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .filter(|v| !v.is_empty())
        };
        let grants = crate::acl::GrantHeaders {
            full_control: h("x-amz-grant-full-control"),
            read: h("x-amz-grant-read"),
            read_acp: h("x-amz-grant-read-acp"),
            write: h("x-amz-grant-write"),
            write_acp: h("x-amz-grant-write-acp"),
        };
        let known = |k: &str| crate::authz::Accounts::exists(self.accounts.as_ref(), k);
        let (acl, ownership) = crate::authz::new_bucket_access(
            &owner,
            h("x-amz-acl").as_deref(),
            &grants,
            h("x-amz-object-ownership").as_deref(),
            &known,
        )?;
        let lock =
            h("x-amz-bucket-object-lock-enabled").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let root = self.root_owner();
        let recorded = (owner != root).then_some(owner.as_str());
        let made = |s: &Store| -> crate::Result<()> {
            s.create_bucket_owned(bucket, tags, recorded)?;
            crate::authz::init_bucket(s, bucket, &acl, ownership)?;
            if lock {
                crate::store::versions::enable_lock_on_new_bucket(s, bucket)?;
            }
            Ok(())
        };
        made(&self.store).map_err(crate::answer::to_s3_error)?;
        Ok(answer(http::StatusCode::CREATED, None))
    }

    /// A create-bucket document's location constraint must name this
    /// server's region (never `us-east-1`, as on S3).
    fn check_location(&self, doc: &str) -> S3Result<()> {
        let Some(at) = doc.find("<LocationConstraint>") else {
            return Ok(());
        };
        let v = &doc[at + "<LocationConstraint>".len()..];
        let v = v.split("</LocationConstraint>").next().unwrap_or("").trim();
        if v != self.region || v == "us-east-1" {
            let mut e = S3Error::with_message(
                S3ErrorCode::InvalidLocationConstraint,
                "The specified location-constraint is not valid",
            );
            e.set_status_code(http::StatusCode::BAD_REQUEST);
            return Err(e);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versitygw_create_user_body() {
        // What `versitygw admin create-user` sends (Go's encoding/xml).
        let doc = "<Account><Access>test-user-x</Access><Secret>s&amp;cret</Secret>\
            <Role>userplus</Role><UserID>3</UserID><GroupID>0</GroupID><ProjectID>0</ProjectID>\
            <SessionToken></SessionToken><IsSession>false</IsSession><Arn></Arn><RoleArn></RoleArn></Account>";
        let a = parse_account(doc).unwrap();
        assert_eq!(a.access, "test-user-x");
        assert_eq!(a.secret, "s&cret");
        assert_eq!(a.role, Role::UserPlus);
        assert_eq!(a.user_id, 3);
        let bad_role = doc.replace("userplus", "root");
        assert_eq!(
            parse_account(&bad_role).unwrap_err().code().as_str(),
            "XAdminInvalidArgument"
        );
        for bad in [
            "",
            "<Account>",
            "<Account><Access>a</Account>",
            "<A><B><C>x</C></B></A>",
            "junk",
        ] {
            assert_eq!(
                parse_account(bad).unwrap_err().code(),
                &S3ErrorCode::MalformedXML,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn versitygw_update_user_body() {
        let u = parse_update(
            "<?xml version=\"1.0\"?>\n<MutableProps xmlns=\"x\">\n  <Secret>new</Secret>\n  <Role></Role>\n  <UserID>7</UserID>\n</MutableProps>",
        )
        .unwrap();
        assert_eq!(u.secret.as_deref(), Some("new"));
        assert_eq!(u.role, None);
        assert_eq!(u.user_id, Some(7));
        assert_eq!(u.group_id, None);
        assert!(parse_update("<MutableProps><Role>boss</Role></MutableProps>").is_err());
        assert!(parse_update("<MutableProps/>").is_ok());
    }

    #[test]
    fn admin_documents() {
        let a = Account {
            access: "a<b".into(),
            secret: "never shown".into(),
            role: Role::User,
            user_id: 1,
            group_id: 2,
            project_id: 3,
        };
        let x = users_document(&[a]);
        assert_eq!(
            x,
            "<ListUserAccountsResult><Accounts><Access>a&lt;b</Access><Role>user</Role>\
             <UserID>1</UserID><GroupID>2</GroupID><ProjectID>3</ProjectID></Accounts>\
             </ListUserAccountsResult>"
        );
        assert!(!x.contains("never shown"));
        assert_eq!(
            buckets_document(&[("b".into(), "o".into())]),
            "<ListBucketsResult><Buckets><Name>b</Name><Owner>o</Owner></Buckets></ListBucketsResult>"
        );
        assert_eq!(unescape("&#65;&#x42;&lt;"), Some("AB<".into()));
        assert_eq!(unescape("&bogus;"), None);
    }
}
