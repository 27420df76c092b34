//! Bucket ACLs and object ownership: the owner and grants a bucket
//! carries (`meta/<bucket>/acl.json`), its object ownership setting
//! (`ownership.json`), how PutBucketAcl and CreateBucket describe them
//! (canned ACLs, `x-amz-grant-*` headers, an `AccessControlPolicy`
//! document), and which grant lets a requester do what ([`Acl::allows`]).
//!
//! Grantees are access keys (S3's canonical user ids are this gateway's
//! access keys, as VersityGW has them) and two groups: everyone
//! (`all-users`, S3's `AllUsers` URI) and every signed requester
//! (`authenticated-users`, S3's `AuthenticatedUsers`).
//!
//! ```
//! use cowkit_s3::acl::{Acl, GrantHeaders, Permission, Requester};
//! let acl = Acl::from_headers("owner", &GrantHeaders {
//!     read: Some("alice,bob".into()), ..Default::default()
//! }, &|k| k != "mallory").unwrap();
//! assert!(acl.allows(Requester::Key("alice"), Permission::Read));
//! assert!(!acl.allows(Requester::Key("alice"), Permission::Write));
//! assert!(acl.allows(Requester::Key("owner"), Permission::WriteAcp));
//! ```

use serde::{Deserialize, Serialize};

pub use crate::policy::Requester;

/// What a grant allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Permission {
    /// Everything below.
    #[serde(rename = "FULL_CONTROL")]
    FullControl,
    /// List the bucket, read its objects.
    #[serde(rename = "READ")]
    Read,
    /// Write and delete objects.
    #[serde(rename = "WRITE")]
    Write,
    /// Read the ACL.
    #[serde(rename = "READ_ACP")]
    ReadAcp,
    /// Replace the ACL.
    #[serde(rename = "WRITE_ACP")]
    WriteAcp,
}

impl Permission {
    /// S3's name.
    pub fn name(self) -> &'static str {
        match self {
            Permission::FullControl => "FULL_CONTROL",
            Permission::Read => "READ",
            Permission::Write => "WRITE",
            Permission::ReadAcp => "READ_ACP",
            Permission::WriteAcp => "WRITE_ACP",
        }
    }

    /// From S3's name.
    pub fn parse(s: &str) -> Option<Permission> {
        [
            Permission::FullControl,
            Permission::Read,
            Permission::Write,
            Permission::ReadAcp,
            Permission::WriteAcp,
        ]
        .into_iter()
        .find(|p| p.name() == s)
    }
}

/// Who a grant is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grantee {
    /// One access key.
    User(String),
    /// Everyone, anonymous requests too.
    AllUsers,
    /// Every signed request.
    AuthenticatedUsers,
}

/// The id GetBucketAcl gives the everyone group (VersityGW's).
pub const ALL_USERS_ID: &str = "all-users";
/// The id GetBucketAcl gives the signed-requesters group.
pub const AUTHENTICATED_USERS_ID: &str = "authenticated-users";
/// S3's URI of the everyone group.
pub const ALL_USERS_URI: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
/// S3's URI of the signed-requesters group.
pub const AUTHENTICATED_USERS_URI: &str =
    "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";

/// One grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// Who.
    pub grantee: Grantee,
    /// What.
    pub permission: Permission,
}

/// A bucket's owner and grants (the owner always has `FULL_CONTROL`,
/// listed first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acl {
    /// The owner's access key.
    pub owner: String,
    /// The grants, the owner's first.
    pub grants: Vec<Grant>,
}

/// Why an ACL is refused (S3's code, status and message are in
/// [`AclError::code`] and its text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// An `x-amz-acl` value S3 does not know for buckets.
    #[error("{0}")]
    InvalidCanned(String),
    /// A canned ACL that is S3's but not this gateway's.
    #[error("The canned ACL {0} is not supported by this gateway")]
    UnsupportedCanned(String),
    /// Both `x-amz-acl` and `x-amz-grant-*`.
    #[error("Specifying both Canned ACLs and Header Grants is not allowed.")]
    CannedAndGrants,
    /// A document beside headers.
    #[error("This request does not support content.")]
    UnexpectedContent,
    /// Neither a canned ACL, grants nor a document.
    #[error("Your request was missing a required header.")]
    MissingSecurityHeader,
    /// A document without an owner, or a grant of the wrong shape.
    #[error("The XML you provided was not well-formed or did not validate against our published schema.")]
    Malformed,
    /// An owner id that is not the bucket's owner, or a grantee that is no
    /// account of this gateway.
    #[error("Invalid id")]
    InvalidId,
    /// A grantee form this gateway does not take (`emailAddress`, a group
    /// other than AllUsers and AuthenticatedUsers).
    #[error("Grantee {0} is not supported by this gateway")]
    UnsupportedGrantee(String),
    /// Over [`MAX_GRANTS`] grants.
    #[error("An ACL may hold at most {MAX_GRANTS} grants")]
    TooManyGrants,
}

impl AclError {
    /// S3's error code.
    pub fn code(&self) -> &'static str {
        match self {
            AclError::InvalidCanned(_) | AclError::InvalidId | AclError::TooManyGrants => {
                "InvalidArgument"
            }
            AclError::UnsupportedCanned(_) | AclError::UnsupportedGrantee(_) => "NotImplemented",
            AclError::CannedAndGrants => "InvalidRequest",
            AclError::UnexpectedContent => "UnexpectedContent",
            AclError::MissingSecurityHeader => "MissingSecurityHeader",
            AclError::Malformed => "MalformedACLError",
        }
    }

    /// S3's status.
    pub fn status(&self) -> u16 {
        match self {
            AclError::MissingSecurityHeader => 404,
            AclError::UnsupportedCanned(_) | AclError::UnsupportedGrantee(_) => 501,
            _ => 400,
        }
    }
}

/// The most grants an ACL may hold (S3's limit is 100).
pub const MAX_GRANTS: usize = 100;

/// The `x-amz-grant-*` headers of a request.
#[derive(Debug, Clone, Default)]
pub struct GrantHeaders {
    /// `x-amz-grant-full-control`.
    pub full_control: Option<String>,
    /// `x-amz-grant-read`.
    pub read: Option<String>,
    /// `x-amz-grant-read-acp`.
    pub read_acp: Option<String>,
    /// `x-amz-grant-write`.
    pub write: Option<String>,
    /// `x-amz-grant-write-acp`.
    pub write_acp: Option<String>,
}

impl GrantHeaders {
    fn each(&self) -> [(Permission, Option<&str>); 5] {
        [
            (Permission::FullControl, self.full_control.as_deref()),
            (Permission::Read, self.read.as_deref()),
            (Permission::ReadAcp, self.read_acp.as_deref()),
            (Permission::Write, self.write.as_deref()),
            (Permission::WriteAcp, self.write_acp.as_deref()),
        ]
    }

    /// Whether any header is given (and not empty).
    pub fn any(&self) -> bool {
        self.each()
            .iter()
            .any(|(_, v)| v.is_some_and(|v| !v.is_empty()))
    }
}

/// One grantee of a header: S3's `id="KEY"`, `uri="..."` or
/// `emailAddress="..."`, or a bare access key (VersityGW's form).
pub fn parse_grantee(item: &str) -> Result<Grantee, AclError> {
    let item = item.trim();
    let Some((kind, value)) = item.split_once('=') else {
        return Ok(Grantee::User(item.to_string()));
    };
    let value = value.trim().trim_matches('"');
    match kind.trim().to_ascii_lowercase().as_str() {
        "id" => Ok(Grantee::User(value.to_string())),
        "uri" => group(value).ok_or_else(|| AclError::UnsupportedGrantee(item.to_string())),
        _ => Err(AclError::UnsupportedGrantee(item.to_string())),
    }
}

/// The group an S3 URI names.
fn group(uri: &str) -> Option<Grantee> {
    match uri {
        ALL_USERS_URI => Some(Grantee::AllUsers),
        AUTHENTICATED_USERS_URI => Some(Grantee::AuthenticatedUsers),
        _ => None,
    }
}

impl Acl {
    /// The owner alone, with `FULL_CONTROL`.
    pub fn private(owner: &str) -> Acl {
        Acl {
            owner: owner.to_string(),
            grants: vec![Grant {
                grantee: Grantee::User(owner.to_string()),
                permission: Permission::FullControl,
            }],
        }
    }

    /// A canned ACL for a bucket.
    pub fn canned(owner: &str, name: &str) -> Result<Acl, AclError> {
        let mut acl = Acl::private(owner);
        let extra: &[(Grantee, Permission)] = match name {
            "private" => &[],
            "public-read" => &[(Grantee::AllUsers, Permission::Read)],
            "public-read-write" => &[
                (Grantee::AllUsers, Permission::Read),
                (Grantee::AllUsers, Permission::Write),
            ],
            "authenticated-read" => &[(Grantee::AuthenticatedUsers, Permission::Read)],
            "aws-exec-read" | "log-delivery-write" => {
                return Err(AclError::UnsupportedCanned(name.to_string()))
            }
            _ => return Err(AclError::InvalidCanned(name.to_string())),
        };
        acl.grants.extend(extra.iter().map(|(g, p)| Grant {
            grantee: g.clone(),
            permission: *p,
        }));
        Ok(acl)
    }

    /// The grants of `x-amz-grant-*` headers (comma-separated grantees,
    /// each at most once per header), after the owner's; every access key
    /// must be `known`.
    pub fn from_headers(
        owner: &str,
        h: &GrantHeaders,
        known: &dyn Fn(&str) -> bool,
    ) -> Result<Acl, AclError> {
        let mut acl = Acl::private(owner);
        for (permission, value) in h.each() {
            let Some(value) = value.filter(|v| !v.is_empty()) else {
                continue;
            };
            let mut seen = Vec::new();
            for item in value.split(',') {
                let grantee = parse_grantee(item)?;
                if !seen.contains(&grantee) {
                    seen.push(grantee.clone());
                    acl.grants.push(Grant {
                        grantee,
                        permission,
                    });
                }
            }
        }
        acl.checked(known)
    }

    /// The grants of an `AccessControlPolicy` document (s3s has read it),
    /// checked as VersityGW checks them: every grant a known permission
    /// and a `CanonicalUser` with an id or a `Group`; an owner whose id is
    /// the bucket's owner.
    pub fn from_document(
        owner: &str,
        doc: &s3s::dto::AccessControlPolicy,
        known: &dyn Fn(&str) -> bool,
    ) -> Result<Acl, AclError> {
        let mut acl = Acl::private(owner);
        let grants = doc.grants.as_deref().unwrap_or_default();
        if grants.len() > MAX_GRANTS {
            return Err(AclError::TooManyGrants);
        }
        for g in grants {
            let permission = g
                .permission
                .as_ref()
                .and_then(|p| Permission::parse(p.as_str()))
                .ok_or(AclError::Malformed)?;
            let grantee = g.grantee.as_ref().ok_or(AclError::Malformed)?;
            let id = grantee.id.as_deref().filter(|i| !i.is_empty());
            let uri = grantee.uri.as_deref().filter(|u| !u.is_empty());
            let grantee = match (grantee.type_.as_str(), id, uri) {
                ("CanonicalUser", Some(id), _) => Grantee::User(id.to_string()),
                ("Group", Some(ALL_USERS_ID), _) => Grantee::AllUsers,
                ("Group", Some(AUTHENTICATED_USERS_ID), _) => Grantee::AuthenticatedUsers,
                ("Group", None, Some(u)) => {
                    group(u).ok_or_else(|| AclError::UnsupportedGrantee(u.to_string()))?
                }
                ("Group", Some(other), _) => {
                    return Err(AclError::UnsupportedGrantee(other.into()))
                }
                _ => return Err(AclError::Malformed),
            };
            acl.grants.push(Grant {
                grantee,
                permission,
            });
        }
        let doc_owner = doc.owner.as_ref().ok_or(AclError::Malformed)?;
        match doc_owner.id.as_deref() {
            None | Some("") => return Err(AclError::Malformed),
            Some(id) if id != owner => return Err(AclError::InvalidId),
            Some(_) => {}
        }
        acl.checked(known)
    }

    /// At most [`MAX_GRANTS`] grants, every user one a known account.
    pub fn checked(self, known: &dyn Fn(&str) -> bool) -> Result<Acl, AclError> {
        if self.grants.len() > MAX_GRANTS {
            return Err(AclError::TooManyGrants);
        }
        for g in &self.grants {
            if let Grantee::User(k) = &g.grantee {
                if k != &self.owner && !known(k) {
                    return Err(AclError::InvalidId);
                }
            }
        }
        Ok(self)
    }

    /// Whether a grant lets `who` do what `want` asks: a grant of `want`
    /// or `FULL_CONTROL` (which S3 defines as all four) to `who`, to
    /// everyone, or (for a signed request) to all authenticated users.
    pub fn allows(&self, who: Requester<'_>, want: Permission) -> bool {
        self.grants.iter().any(|g| {
            let fits = g.permission == want || g.permission == Permission::FullControl;
            fits && match (&g.grantee, who) {
                (Grantee::User(k), Requester::Key(me)) => k == me,
                (Grantee::AllUsers, _) => true,
                (Grantee::AuthenticatedUsers, Requester::Key(_)) => true,
                _ => false,
            }
        })
    }

    /// Whether everyone may do `want` (a public grant).
    pub fn is_public(&self, want: Permission) -> bool {
        self.allows(Requester::Anonymous, want)
    }

    /// The grants as s3s writes them (GetBucketAcl).
    pub fn to_s3s(&self) -> (s3s::dto::Owner, Vec<s3s::dto::Grant>) {
        let owner = s3s::dto::Owner {
            id: Some(self.owner.clone()),
            display_name: None,
        };
        let grants = self
            .grants
            .iter()
            .map(|g| {
                let (kind, id, uri) = match &g.grantee {
                    Grantee::User(k) => ("CanonicalUser", k.as_str(), None),
                    Grantee::AllUsers => ("Group", ALL_USERS_ID, Some(ALL_USERS_URI)),
                    Grantee::AuthenticatedUsers => (
                        "Group",
                        AUTHENTICATED_USERS_ID,
                        Some(AUTHENTICATED_USERS_URI),
                    ),
                };
                s3s::dto::Grant {
                    grantee: Some(s3s::dto::Grantee {
                        display_name: None,
                        email_address: None,
                        id: Some(id.to_string()),
                        type_: s3s::dto::Type::from(kind.to_string()),
                        uri: uri.map(str::to_string),
                    }),
                    permission: Some(s3s::dto::Permission::from(g.permission.name().to_string())),
                }
            })
            .collect();
        (owner, grants)
    }
}

/// A bucket's object ownership setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ownership {
    /// ACLs are disabled: only the owner's and the policy's say count.
    BucketOwnerEnforced,
    /// ACLs apply; objects belong to the bucket owner when written with
    /// `bucket-owner-full-control`.
    BucketOwnerPreferred,
    /// ACLs apply; objects belong to their writer.
    ObjectWriter,
}

impl Ownership {
    /// S3's name.
    pub fn name(self) -> &'static str {
        match self {
            Ownership::BucketOwnerEnforced => "BucketOwnerEnforced",
            Ownership::BucketOwnerPreferred => "BucketOwnerPreferred",
            Ownership::ObjectWriter => "ObjectWriter",
        }
    }

    /// From S3's name.
    pub fn parse(s: &str) -> Option<Ownership> {
        [
            Ownership::BucketOwnerEnforced,
            Ownership::BucketOwnerPreferred,
            Ownership::ObjectWriter,
        ]
        .into_iter()
        .find(|o| o.name() == s)
    }

    /// What CreateBucket sets, as S3 and VersityGW do: the header's value;
    /// without one, `BucketOwnerPreferred` for a `private` canned ACL and
    /// `BucketOwnerEnforced` (ACLs disabled) otherwise.
    pub fn for_new_bucket(header: Option<&str>, canned: Option<&str>) -> Option<Ownership> {
        match header.filter(|h| !h.is_empty()) {
            Some(h) => Ownership::parse(h),
            None if canned == Some("private") => Some(Ownership::BucketOwnerPreferred),
            None => Some(Ownership::BucketOwnerEnforced),
        }
    }
}

#[cfg(test)]
mod tests;
