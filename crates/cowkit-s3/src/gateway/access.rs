//! Bucket ACLs, object ownership and bucket policies: Put/Get of a
//! bucket's ACL; its ownership controls and its policy, two [`Setting`]s,
//! and their Put (Get and Delete are the gateway's, the same for every
//! setting). The records are read and checked by [`crate::acl`],
//! [`crate::policy`] and [`crate::authz`]; who may call these is decided
//! before, in [`crate::authz`].

use super::Setting;
use super::*;
use crate::acl::{Acl, AclError, GrantHeaders, Ownership};
use crate::authz::{s3_error, Caller, StoredOwnership, StoredPolicy};

/// GetObjectAcl, PutObjectAcl and RestoreObject, once authorised: objects
/// have no ACLs of their own here and nothing is archived (as in
/// VersityGW's posix gateway, whose message this is); a grant that would
/// not be kept is refused rather than lost.
pub(super) fn not_implemented() -> S3Error {
    s3_error(
        "NotImplemented",
        501,
        "A header you provided implies functionality that is not implemented.",
    )
}

/// An ACL refusal as S3 answers it.
fn acl_error(e: AclError) -> S3Error {
    s3_error(e.code(), e.status(), e.to_string())
}

/// The ACL a CreateBucket or PutBucketAcl input asks for in its headers
/// (s3s has read them; the two inputs name them alike): the canned ACL of
/// `x-amz-acl` (empty as none), and the `x-amz-grant-*` headers.
macro_rules! acl_headers {
    ($i:expr) => {
        (
            $i.acl
                .as_ref()
                .map(|a| a.as_str())
                .filter(|a| !a.is_empty()),
            GrantHeaders {
                full_control: $i.grant_full_control.clone(),
                read: $i.grant_read.clone(),
                read_acp: $i.grant_read_acp.clone(),
                write: $i.grant_write.clone(),
                write_acp: $i.grant_write_acp.clone(),
            },
        )
    };
}

/// The ACL and ownership setting CreateBucket gives a new bucket (see
/// [`crate::authz::new_bucket_access`]): the caller owns it.
pub(super) fn new_bucket(
    i: &CreateBucketInput,
    caller: &Caller,
) -> S3Result<(Acl, Option<Ownership>)> {
    let (canned, grants) = acl_headers!(i);
    let header = i.object_ownership.as_ref().map(|o| o.as_str());
    crate::authz::new_bucket_access(
        &caller.principal.access_key,
        canned,
        &grants,
        header,
        &|k| caller.knows(k),
    )
}

pub(super) async fn put_bucket_acl(
    g: &S3Gateway,
    req: S3Request<PutBucketAclInput>,
) -> S3Result<S3Response<PutBucketAclOutput>> {
    let caller = Caller::of(&req);
    let i = req.input;
    let b = i.bucket.clone();
    let (owner, ownership) = {
        // A bucket without a recorded owner is the server's (never the
        // caller's: a user allowed PutBucketAcl by a policy does not own it).
        let (b, root) = (b.clone(), g.root_owner.clone());
        g.run(move |s| {
            s.head_bucket(&b)?;
            Ok((
                crate::authz::bucket_acl(s, &b, &root)?.owner,
                crate::authz::bucket_ownership(s, &b)?,
            ))
        })
        .await?
    };
    if ownership == Some(Ownership::BucketOwnerEnforced) {
        return Err(s3_error(
            "AccessControlListNotSupported",
            400,
            "The bucket does not allow ACLs.",
        ));
    }
    let (canned, grants) = acl_headers!(i);
    let acl = if let Some(doc) = &i.access_control_policy {
        let acl = Acl::from_document(&owner, doc, &|_| true).map_err(acl_error)?;
        if canned.is_some() || grants.any() {
            return Err(acl_error(AclError::UnexpectedContent));
        }
        acl.checked(&|k| caller.knows(k))
    } else if let Some(c) = canned {
        if grants.any() {
            return Err(acl_error(AclError::CannedAndGrants));
        }
        Acl::canned(&owner, c)
    } else if grants.any() {
        Acl::from_headers(&owner, &grants, &|k| caller.knows(k))
    } else {
        Err(AclError::MissingSecurityHeader)
    }
    .map_err(acl_error)?;
    g.keep_record(b, crate::authz::ACL_RECORD, Some(acl))
        .await?;
    Ok(S3Response::new(PutBucketAclOutput::default()))
}

pub(super) async fn get_bucket_acl(
    g: &S3Gateway,
    req: S3Request<GetBucketAclInput>,
) -> S3Result<S3Response<GetBucketAclOutput>> {
    let b = req.input.bucket;
    let root = g.root_owner.clone();
    let acl = g
        .run(move |s| {
            s.head_bucket(&b)?;
            crate::authz::bucket_acl(s, &b, &root)
        })
        .await?;
    let (owner, grants) = acl.to_s3s();
    Ok(S3Response::new(GetBucketAclOutput {
        grants: Some(grants),
        owner: Some(owner),
    }))
}

/// S3's answer to GetBucketPolicy on a bucket without a policy.
fn no_such_policy() -> S3Error {
    s3_error(
        "NoSuchBucketPolicy",
        404,
        "The bucket policy does not exist.",
    )
}

/// S3's answer to GetBucketOwnershipControls on a bucket without them.
fn no_such_ownership() -> S3Error {
    s3_error(
        "OwnershipControlsNotFoundError",
        404,
        "The bucket ownership controls were not found.",
    )
}

/// The bucket's policy, as the client sent it.
pub(super) const POLICY: Setting<StoredPolicy, String, GetBucketPolicyOutput> = Setting {
    record: crate::authz::POLICY_RECORD,
    read: crate::authz::bucket_policy,
    missing: no_such_policy,
    answer: |policy| GetBucketPolicyOutput {
        policy: Some(policy),
    },
    stored: std::marker::PhantomData,
};

/// The bucket's object ownership.
pub(super) const OWNERSHIP: Setting<StoredOwnership, Ownership, GetBucketOwnershipControlsOutput> =
    Setting {
        record: crate::authz::OWNERSHIP_RECORD,
        read: crate::authz::bucket_ownership,
        missing: no_such_ownership,
        answer: |o| GetBucketOwnershipControlsOutput {
            ownership_controls: Some(OwnershipControls {
                rules: vec![OwnershipControlsRule {
                    object_ownership: ObjectOwnership::from(o.name().to_string()),
                }],
            }),
        },
        stored: std::marker::PhantomData,
    };

pub(super) async fn put_bucket_policy(
    g: &S3Gateway,
    req: S3Request<PutBucketPolicyInput>,
) -> S3Result<S3Response<PutBucketPolicyOutput>> {
    let caller = Caller::of(&req);
    let i = req.input;
    let b = i.bucket;
    g.bucket_exists(&b).await?;
    crate::policy::Policy::parse(&i.policy, &b, &|k| caller.knows(k))
        .map_err(|e| s3_error("MalformedPolicy", 400, e.to_string()))?;
    let stored = StoredPolicy { policy: i.policy };
    g.keep_setting(&POLICY, b, Some(stored)).await?;
    Ok(S3Response::new(PutBucketPolicyOutput::default()))
}

pub(super) async fn put_bucket_ownership_controls(
    g: &S3Gateway,
    req: S3Request<PutBucketOwnershipControlsInput>,
) -> S3Result<S3Response<PutBucketOwnershipControlsOutput>> {
    let i = req.input;
    g.bucket_exists(&i.bucket).await?;
    let malformed = || {
        s3_error(
            "MalformedXML",
            400,
            "The XML you provided was not well-formed or did not validate against our published schema.",
        )
    };
    let [rule] = i.ownership_controls.rules.as_slice() else {
        return Err(malformed());
    };
    let ownership = Ownership::parse(rule.object_ownership.as_str()).ok_or_else(malformed)?;
    let stored = StoredOwnership { ownership };
    g.keep_setting(&OWNERSHIP, i.bucket, Some(stored)).await?;
    Ok(S3Response::new(PutBucketOwnershipControlsOutput::default()))
}
