//! What each S3 operation asks of a bucket: the policy actions, who may
//! be allowed them besides the bucket's owner, whether its resource is the
//! object, and how an unsigned request is answered; and which policy
//! actions an ACL permission grants, as AWS's "Mapping of ACL permissions
//! and access policy permissions" lists them ([`acl_permission`]).

use s3s::S3Error;

use super::{access_denied, s3_error, Ask};
use crate::acl::Permission;

/// Who, besides the bucket owner's account and admins, may be allowed an
/// operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grantable {
    /// Whoever a bucket policy statement or an ACL grant allows (ACLs
    /// only the actions [`acl_permission`] maps).
    Anyone,
    /// The bucket owner's account alone; the bucket policy can deny it
    /// (Put/DeleteBucketOwnershipControls).
    OwnerOnly,
    /// The bucket owner's account alone, which the bucket policy cannot
    /// lock out (Get/Put/DeleteBucketPolicy: S3 lets the owner's root
    /// account do these whatever the policy says).
    OwnerAlways,
}

/// What an operation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// s3s's name.
    pub name: &'static str,
    /// The policy action (`s3:GetObject`).
    pub action: &'static str,
    /// Who may be allowed it besides the owner.
    pub grantable: Grantable,
    /// Whether the resource is `bucket/key` (else `bucket`).
    pub object: bool,
    /// Whether it reads a copy source (checked as a GetObject of it).
    pub copies: bool,
    /// Whether its keys are in its body (DeleteObjects): authorised for
    /// every key of the bucket.
    pub every_key: bool,
}

const fn op(name: &'static str, action: &'static str, object: bool) -> Op {
    Op {
        name,
        action,
        grantable: Grantable::Anyone,
        object,
        copies: false,
        every_key: false,
    }
}

/// The ACL permission that grants `action`, per AWS's table (`None`: no
/// ACL grant allows it; only the owner, an admin or a policy statement).
/// A bucket's grants stand for its objects' too (the gateway keeps no
/// object ACLs: an object's ACL is its bucket's). The lock actions
/// (`s3:PutObjectRetention`, `s3:PutObjectLegalHold`,
/// `s3:BypassGovernanceRetention`), the bucket's configuration, its
/// policy, its ownership controls and `s3:DeleteBucket` are granted by no
/// ACL; nor are `s3:AbortMultipartUpload` and `s3:ListMultipartUploadParts`,
/// which S3 allows the bucket's owner and the upload's initiator
/// ([`crate::multipart::UploadRecord::initiator`]) and whoever a policy
/// allows them, not `WRITE` grantees.
pub fn acl_permission(action: &str) -> Option<Permission> {
    Some(match action {
        "s3:ListBucket"
        | "s3:ListBucketVersions"
        | "s3:ListBucketMultipartUploads"
        | "s3:GetObject"
        | "s3:GetObjectVersion"
        | "s3:GetObjectAttributes"
        | "s3:GetObjectVersionAttributes" => Permission::Read,
        "s3:PutObject" | "s3:DeleteObject" | "s3:DeleteObjectVersion" => Permission::Write,
        "s3:GetBucketAcl" | "s3:GetObjectAcl" | "s3:GetObjectVersionAcl" => Permission::ReadAcp,
        "s3:PutBucketAcl" | "s3:PutObjectAcl" | "s3:PutObjectVersionAcl" => Permission::WriteAcp,
        _ => return None,
    })
}

/// The operations the gateway serves (and those the suite calls), by s3s
/// name. `GetObjectVersion` is the read of a copy source with a version.
const OPS: &[Op] = &[
    op("ListBuckets", "s3:ListAllMyBuckets", false),
    op("CreateBucket", "s3:CreateBucket", false),
    op("HeadBucket", "s3:ListBucket", false),
    op("GetBucketLocation", "s3:GetBucketLocation", false),
    op("DeleteBucket", "s3:DeleteBucket", false),
    op("ListObjects", "s3:ListBucket", false),
    op("ListObjectsV2", "s3:ListBucket", false),
    op("ListObjectVersions", "s3:ListBucketVersions", false),
    op(
        "ListMultipartUploads",
        "s3:ListBucketMultipartUploads",
        false,
    ),
    op("GetBucketTagging", "s3:GetBucketTagging", false),
    op("PutBucketTagging", "s3:PutBucketTagging", false),
    op("DeleteBucketTagging", "s3:PutBucketTagging", false),
    op("GetBucketAcl", "s3:GetBucketAcl", false),
    op("PutBucketAcl", "s3:PutBucketAcl", false),
    Op {
        grantable: Grantable::OwnerAlways,
        ..op("GetBucketPolicy", "s3:GetBucketPolicy", false)
    },
    Op {
        grantable: Grantable::OwnerAlways,
        ..op("PutBucketPolicy", "s3:PutBucketPolicy", false)
    },
    Op {
        grantable: Grantable::OwnerAlways,
        ..op("DeleteBucketPolicy", "s3:DeleteBucketPolicy", false)
    },
    op("GetBucketPolicyStatus", "s3:GetBucketPolicyStatus", false),
    op(
        "GetBucketOwnershipControls",
        "s3:GetBucketOwnershipControls",
        false,
    ),
    Op {
        grantable: Grantable::OwnerOnly,
        ..op(
            "PutBucketOwnershipControls",
            "s3:PutBucketOwnershipControls",
            false,
        )
    },
    Op {
        grantable: Grantable::OwnerOnly,
        ..op(
            "DeleteBucketOwnershipControls",
            "s3:PutBucketOwnershipControls",
            false,
        )
    },
    op("GetBucketVersioning", "s3:GetBucketVersioning", false),
    op("PutBucketVersioning", "s3:PutBucketVersioning", false),
    op(
        "GetObjectLockConfiguration",
        "s3:GetBucketObjectLockConfiguration",
        false,
    ),
    op(
        "PutObjectLockConfiguration",
        "s3:PutBucketObjectLockConfiguration",
        false,
    ),
    op("GetBucketCors", "s3:GetBucketCORS", false),
    op("PutBucketCors", "s3:PutBucketCORS", false),
    op("DeleteBucketCors", "s3:PutBucketCORS", false),
    op("GetBucketWebsite", "s3:GetBucketWebsite", false),
    op("PutBucketWebsite", "s3:PutBucketWebsite", false),
    op("DeleteBucketWebsite", "s3:DeleteBucketWebsite", false),
    Op {
        every_key: true,
        ..op("DeleteObjects", "s3:DeleteObject", false)
    },
    op("GetObject", "s3:GetObject", true),
    op("GetObjectVersion", "s3:GetObjectVersion", true),
    op("HeadObject", "s3:GetObject", true),
    op("GetObjectAttributes", "s3:GetObjectAttributes", true),
    op("PutObject", "s3:PutObject", true),
    Op {
        copies: true,
        ..op("CopyObject", "s3:PutObject", true)
    },
    op("DeleteObject", "s3:DeleteObject", true),
    op("GetObjectTagging", "s3:GetObjectTagging", true),
    op("PutObjectTagging", "s3:PutObjectTagging", true),
    op("DeleteObjectTagging", "s3:DeleteObjectTagging", true),
    op("GetObjectAcl", "s3:GetObjectAcl", true),
    op("PutObjectAcl", "s3:PutObjectAcl", true),
    op("GetObjectRetention", "s3:GetObjectRetention", true),
    op("PutObjectRetention", "s3:PutObjectRetention", true),
    op("GetObjectLegalHold", "s3:GetObjectLegalHold", true),
    op("PutObjectLegalHold", "s3:PutObjectLegalHold", true),
    op("RestoreObject", "s3:RestoreObject", true),
    op("SelectObjectContent", "s3:GetObject", true),
    op("CreateMultipartUpload", "s3:PutObject", true),
    op("UploadPart", "s3:PutObject", true),
    Op {
        copies: true,
        ..op("UploadPartCopy", "s3:PutObject", true)
    },
    op("CompleteMultipartUpload", "s3:PutObject", true),
    op("AbortMultipartUpload", "s3:AbortMultipartUpload", true),
    op("ListParts", "s3:ListMultipartUploadParts", true),
];

/// The entry of an operation (`None`: not in the table).
pub fn operation(name: &str) -> Option<Op> {
    OPS.iter().find(|o| o.name == name).copied()
}

/// The version-specific action of an object action, for a request with
/// `versionId`.
fn versioned(action: &'static str) -> &'static str {
    match action {
        "s3:GetObject" => "s3:GetObjectVersion",
        "s3:DeleteObject" => "s3:DeleteObjectVersion",
        "s3:GetObjectAttributes" => "s3:GetObjectVersionAttributes",
        "s3:GetObjectTagging" => "s3:GetObjectVersionTagging",
        "s3:PutObjectTagging" => "s3:PutObjectVersionTagging",
        "s3:DeleteObjectTagging" => "s3:DeleteObjectVersionTagging",
        "s3:GetObjectAcl" => "s3:GetObjectVersionAcl",
        "s3:PutObjectAcl" => "s3:PutObjectVersionAcl",
        other => other,
    }
}

impl Op {
    /// The policy actions a request of this operation needs: its action
    /// (the version's, with `versionId`), and for writes of objects the
    /// tagging and object lock actions its headers ask for.
    pub fn actions(&self, ask: &Ask<'_>) -> Vec<&'static str> {
        let mut out = vec![if ask.param("versionId").is_some() {
            versioned(self.action)
        } else {
            self.action
        }];
        if matches!(
            self.name,
            "PutObject" | "CopyObject" | "CreateMultipartUpload"
        ) {
            if ask.header("x-amz-tagging").is_some() {
                out.push("s3:PutObjectTagging");
            }
            if ask.header("x-amz-object-lock-legal-hold").is_some() {
                out.push("s3:PutObjectLegalHold");
            }
            if ask.header("x-amz-object-lock-mode").is_some()
                || ask.header("x-amz-object-lock-retain-until-date").is_some()
            {
                out.push("s3:PutObjectRetention");
            }
        }
        out
    }

    /// The answer to an unsigned request that no bucket setting can allow.
    pub fn anonymous_refusal(&self) -> Option<S3Error> {
        let anon = |m: &str| s3_error("AccessDenied", 403, m);
        Some(match self.name {
            "ListBuckets" | "UploadPartCopy" | "DeleteObjects" => access_denied(),
            "GetBucketOwnershipControls" => {
                anon("s3:GetBucketOwnershipControls does not support Anonymous requests!")
            }
            "PutBucketOwnershipControls" | "DeleteBucketOwnershipControls" => {
                anon("s3:PutBucketOwnershipControls does not support Anonymous requests!")
            }
            "PutBucketAcl" | "PutObjectAcl" | "SelectObjectContent" | "CreateBucket" => {
                anon("Anonymous users cannot invoke this API. Please authenticate.")
            }
            "CopyObject" => anon("Anonymous users cannot copy objects. Please authenticate."),
            "CreateMultipartUpload" => {
                anon("Anonymous users cannot initiate multipart uploads. Please authenticate.")
            }
            _ => return None,
        })
    }
}
