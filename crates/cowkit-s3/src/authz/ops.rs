//! What each S3 operation asks of a bucket: the policy action, the ACL
//! permission, whether its resource is the object, and how an unsigned
//! request is answered (VersityGW's table).

use s3s::S3Error;

use super::{access_denied, s3_error, Ask};
use crate::acl::Permission;

/// What an operation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    /// s3s's name.
    pub name: &'static str,
    /// The policy action (`s3:GetObject`).
    pub action: &'static str,
    /// The ACL permission.
    pub permission: Permission,
    /// Whether the resource is `bucket/key` (else `bucket`).
    pub object: bool,
    /// Whether it is a bucket policy operation (a public policy answers
    /// these `MethodNotAllowed`, as VersityGW does).
    pub policy_op: bool,
    /// Whether it reads a copy source (checked as a GetObject of it).
    pub copies: bool,
    /// Whether its keys are in its body (DeleteObjects): authorised for
    /// every key of the bucket.
    pub every_key: bool,
}

const fn op(name: &'static str, action: &'static str, permission: Permission, object: bool) -> Op {
    Op {
        name,
        action,
        permission,
        object,
        policy_op: false,
        copies: false,
        every_key: false,
    }
}

/// The actions a public ACL grant serves to anonymous requests
/// (VersityGW's list): reads and writes of objects and listings.
const PUBLIC_BY_ACL: &[&str] = &[
    "s3:ListBucket",
    "s3:PutObject",
    "s3:ListBucketMultipartUploads",
    "s3:DeleteObject",
    "s3:ListBucketVersions",
    "s3:GetObject",
    "s3:GetObjectAttributes",
    "s3:GetObjectAcl",
];

use Permission::{Read, ReadAcp, Write, WriteAcp};

/// The operations the gateway serves (and those the suite calls), by s3s
/// name. `GetObjectVersion` is the read of a copy source with a version.
const OPS: &[Op] = &[
    op("ListBuckets", "s3:ListAllMyBuckets", Read, false),
    op("CreateBucket", "s3:CreateBucket", Write, false),
    op("HeadBucket", "s3:ListBucket", Read, false),
    op("GetBucketLocation", "s3:GetBucketLocation", Read, false),
    op("DeleteBucket", "s3:DeleteBucket", Write, false),
    op("ListObjects", "s3:ListBucket", Read, false),
    op("ListObjectsV2", "s3:ListBucket", Read, false),
    op("ListObjectVersions", "s3:ListBucketVersions", Read, false),
    op(
        "ListMultipartUploads",
        "s3:ListBucketMultipartUploads",
        Read,
        false,
    ),
    op("GetBucketTagging", "s3:GetBucketTagging", Read, false),
    op("PutBucketTagging", "s3:PutBucketTagging", Write, false),
    op("DeleteBucketTagging", "s3:PutBucketTagging", Write, false),
    op("GetBucketAcl", "s3:GetBucketAcl", ReadAcp, false),
    op("PutBucketAcl", "s3:PutBucketAcl", WriteAcp, false),
    Op {
        policy_op: true,
        ..op("GetBucketPolicy", "s3:GetBucketPolicy", Read, false)
    },
    Op {
        policy_op: true,
        ..op("PutBucketPolicy", "s3:PutBucketPolicy", Write, false)
    },
    Op {
        policy_op: true,
        ..op("DeleteBucketPolicy", "s3:DeleteBucketPolicy", Write, false)
    },
    op(
        "GetBucketPolicyStatus",
        "s3:GetBucketPolicyStatus",
        Read,
        false,
    ),
    op(
        "GetBucketOwnershipControls",
        "s3:GetBucketOwnershipControls",
        Read,
        false,
    ),
    op(
        "PutBucketOwnershipControls",
        "s3:PutBucketOwnershipControls",
        Write,
        false,
    ),
    op(
        "DeleteBucketOwnershipControls",
        "s3:PutBucketOwnershipControls",
        Write,
        false,
    ),
    op("GetBucketVersioning", "s3:GetBucketVersioning", Read, false),
    op(
        "PutBucketVersioning",
        "s3:PutBucketVersioning",
        Write,
        false,
    ),
    op(
        "GetObjectLockConfiguration",
        "s3:GetBucketObjectLockConfiguration",
        Read,
        false,
    ),
    op(
        "PutObjectLockConfiguration",
        "s3:PutBucketObjectLockConfiguration",
        Write,
        false,
    ),
    op("GetBucketCors", "s3:GetBucketCORS", Read, false),
    op("PutBucketCors", "s3:PutBucketCORS", Write, false),
    op("DeleteBucketCors", "s3:PutBucketCORS", Write, false),
    op("GetBucketWebsite", "s3:GetBucketWebsite", Read, false),
    op("PutBucketWebsite", "s3:PutBucketWebsite", Write, false),
    op(
        "DeleteBucketWebsite",
        "s3:DeleteBucketWebsite",
        Write,
        false,
    ),
    Op {
        every_key: true,
        ..op("DeleteObjects", "s3:DeleteObject", Write, false)
    },
    op("GetObject", "s3:GetObject", Read, true),
    op("GetObjectVersion", "s3:GetObjectVersion", Read, true),
    op("HeadObject", "s3:GetObject", Read, true),
    op("GetObjectAttributes", "s3:GetObjectAttributes", Read, true),
    op("PutObject", "s3:PutObject", Write, true),
    Op {
        copies: true,
        ..op("CopyObject", "s3:PutObject", Write, true)
    },
    op("DeleteObject", "s3:DeleteObject", Write, true),
    op("GetObjectTagging", "s3:GetObjectTagging", Read, true),
    op("PutObjectTagging", "s3:PutObjectTagging", Write, true),
    op("DeleteObjectTagging", "s3:DeleteObjectTagging", Write, true),
    op("GetObjectAcl", "s3:GetObjectAcl", ReadAcp, true),
    op("PutObjectAcl", "s3:PutObjectAcl", Write, true),
    op("GetObjectRetention", "s3:GetObjectRetention", Read, true),
    op("PutObjectRetention", "s3:PutObjectRetention", Write, true),
    op("GetObjectLegalHold", "s3:GetObjectLegalHold", Read, true),
    op("PutObjectLegalHold", "s3:PutObjectLegalHold", Write, true),
    op("RestoreObject", "s3:RestoreObject", Write, true),
    op("SelectObjectContent", "s3:GetObject", Read, true),
    op("CreateMultipartUpload", "s3:PutObject", Write, true),
    op("UploadPart", "s3:PutObject", Write, true),
    Op {
        copies: true,
        ..op("UploadPartCopy", "s3:PutObject", Write, true)
    },
    op("CompleteMultipartUpload", "s3:PutObject", Write, true),
    op(
        "AbortMultipartUpload",
        "s3:AbortMultipartUpload",
        Write,
        true,
    ),
    op("ListParts", "s3:ListMultipartUploadParts", Read, true),
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
        other => other,
    }
}

impl Op {
    /// Whether a public ACL grant may serve it to anonymous requests.
    pub fn public_by_acl(&self) -> bool {
        PUBLIC_BY_ACL.contains(&self.action)
    }

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
