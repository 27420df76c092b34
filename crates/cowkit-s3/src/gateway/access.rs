//! Bucket ACLs, object ownership and bucket policies: Put/Get of a
//! bucket's ACL, Put/Get/Delete of its ownership controls and its policy
//! (the records are read and checked by [`crate::acl`], [`crate::policy`]
//! and [`crate::authz`]; who may call these is decided before, in
//! [`crate::authz`]).

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

/// The `x-amz-grant-*` headers of a request (s3s has read them).
fn grant_headers(
    full_control: &Option<String>,
    read: &Option<String>,
    read_acp: &Option<String>,
    write: &Option<String>,
    write_acp: &Option<String>,
) -> GrantHeaders {
    GrantHeaders {
        full_control: full_control.clone(),
        read: read.clone(),
        read_acp: read_acp.clone(),
        write: write.clone(),
        write_acp: write_acp.clone(),
    }
}

/// The ACL and ownership setting CreateBucket gives a new bucket (see
/// [`crate::authz::new_bucket_access`]): the caller owns it.
pub(super) fn new_bucket(
    i: &CreateBucketInput,
    caller: &Caller,
) -> S3Result<(Acl, Option<Ownership>)> {
    let canned = i.acl.as_ref().map(|a| a.as_str()).filter(|a| !a.is_empty());
    let grants = grant_headers(
        &i.grant_full_control,
        &i.grant_read,
        &i.grant_read_acp,
        &i.grant_write,
        &i.grant_write_acp,
    );
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
    let canned = i.acl.as_ref().map(|a| a.as_str()).filter(|a| !a.is_empty());
    let grants = grant_headers(
        &i.grant_full_control,
        &i.grant_read,
        &i.grant_read_acp,
        &i.grant_write,
        &i.grant_write_acp,
    );
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
    g.keep_record(b, crate::authz::POLICY_RECORD, Some(stored))
        .await?;
    Ok(S3Response::new(PutBucketPolicyOutput::default()))
}

pub(super) async fn get_bucket_policy(
    g: &S3Gateway,
    req: S3Request<GetBucketPolicyInput>,
) -> S3Result<S3Response<GetBucketPolicyOutput>> {
    let policy = g
        .read_record(
            req.input.bucket,
            crate::authz::bucket_policy,
            no_such_policy,
        )
        .await?;
    Ok(S3Response::new(GetBucketPolicyOutput {
        policy: Some(policy),
    }))
}

pub(super) async fn delete_bucket_policy(
    g: &S3Gateway,
    req: S3Request<DeleteBucketPolicyInput>,
) -> S3Result<S3Response<DeleteBucketPolicyOutput>> {
    g.keep_record::<StoredPolicy>(req.input.bucket, crate::authz::POLICY_RECORD, None)
        .await?;
    Ok(S3Response::new(DeleteBucketPolicyOutput::default()))
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
    g.keep_record(i.bucket, crate::authz::OWNERSHIP_RECORD, Some(stored))
        .await?;
    Ok(S3Response::new(PutBucketOwnershipControlsOutput::default()))
}

pub(super) async fn get_bucket_ownership_controls(
    g: &S3Gateway,
    req: S3Request<GetBucketOwnershipControlsInput>,
) -> S3Result<S3Response<GetBucketOwnershipControlsOutput>> {
    let o = g
        .read_record(
            req.input.bucket,
            crate::authz::bucket_ownership,
            no_such_ownership,
        )
        .await?;
    Ok(S3Response::new(GetBucketOwnershipControlsOutput {
        ownership_controls: Some(OwnershipControls {
            rules: vec![OwnershipControlsRule {
                object_ownership: ObjectOwnership::from(o.name().to_string()),
            }],
        }),
    }))
}

pub(super) async fn delete_bucket_ownership_controls(
    g: &S3Gateway,
    req: S3Request<DeleteBucketOwnershipControlsInput>,
) -> S3Result<S3Response<DeleteBucketOwnershipControlsOutput>> {
    g.keep_record::<StoredOwnership>(req.input.bucket, crate::authz::OWNERSHIP_RECORD, None)
        .await?;
    Ok(S3Response::new(
        DeleteBucketOwnershipControlsOutput::default(),
    ))
}
