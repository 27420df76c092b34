//! Bucket operations: create (with its owner, ACL and ownership), head,
//! delete, list, location, tagging.

use super::*;

/// S3's ARN of a bucket (`x-amz-bucket-arn` on CreateBucket and
/// HeadBucket).
fn with_bucket_arn<T>(mut res: S3Response<T>, bucket: &str) -> S3Response<T> {
    if let Ok(v) = http::HeaderValue::from_str(&format!("arn:aws:s3:::{bucket}")) {
        res.headers.insert("x-amz-bucket-arn", v);
    }
    res
}

/// ListBuckets: the caller's buckets (an admin's: all), by name, paged by
/// `prefix`, `max-buckets` and `continuation-token`, each with its region.
pub(super) async fn list_buckets(
    g: &S3Gateway,
    req: S3Request<ListBucketsInput>,
) -> S3Result<S3Response<ListBucketsOutput>> {
    let owner = owner_of(&req);
    let max = crate::pages::max_buckets(req.input.max_buckets)?;
    let who = req.extensions.get::<crate::accounts::Principal>();
    // Without a principal (a server without credentials): everything.
    let mine = |o: &Option<String>| {
        who.is_none_or(|w| w.is_admin() || o.as_deref().unwrap_or(&g.root_owner) == w.access_key)
    };
    let all = g.run(|s| s.list_buckets()).await?;
    let visible: Vec<_> = all.into_iter().filter(|b| mine(&b.owner)).collect();
    let prefix = req.input.prefix.clone();
    let page = crate::pages::buckets_page(
        visible,
        |b| b.name.as_str(),
        prefix.as_deref().unwrap_or(""),
        req.input.continuation_token.as_deref(),
        max,
    );
    let buckets = page
        .buckets
        .into_iter()
        .map(|b| Bucket {
            name: Some(b.name),
            creation_date: Some(Timestamp::from(b.created)),
            bucket_region: Some(g.region.clone()),
        })
        .collect();
    Ok(S3Response::new(ListBucketsOutput {
        buckets: Some(buckets),
        owner: Some(owner),
        continuation_token: page.next,
        prefix,
    }))
}

pub(super) async fn create_bucket(
    g: &S3Gateway,
    req: S3Request<CreateBucketInput>,
) -> S3Result<S3Response<CreateBucketOutput>> {
    // A location constraint must name this server's region, and
    // us-east-1 is never named (as on S3).
    if let Some(lc) = req
        .input
        .create_bucket_configuration
        .as_ref()
        .and_then(|c| c.location_constraint.as_ref())
    {
        if lc.as_str() != g.region || lc.as_str() == "us-east-1" {
            let mut e = S3Error::with_message(
                S3ErrorCode::InvalidLocationConstraint,
                "The specified location-constraint is not valid",
            );
            e.set_status_code(hyper::StatusCode::BAD_REQUEST);
            return Err(e);
        }
    }
    let tags = match req.extensions.get::<CreateBucketTags>() {
        Some(CreateBucketTags(pairs)) => crate::tagging::check_bucket_set(
            pairs.iter().map(|(k, v)| (k.as_deref(), v.as_deref())),
        )
        .map_err(tag_error)?,
        None => Vec::new(),
    };
    let (acl, ownership) = super::access::new_bucket(&req.input, &crate::authz::Caller::of(&req))?;
    let lock = req.input.object_lock_enabled_for_bucket == Some(true);
    // Owned by the account that signed (the server's own key pair's
    // buckets record none).
    let who = owner_of(&req).id.unwrap_or_default();
    let b = req.input.bucket;
    let loc = format!("/{b}");
    let name = b.clone();
    let owner = (who != g.root_owner).then_some(who.clone());
    let root = g.root_owner.clone();
    g.run(move |s| {
        match s.create_bucket_owned(&b, tags, owner.as_deref()) {
            // S3: another account's bucket is BucketAlreadyExists.
            Err(crate::Error::BucketExists { .. })
                if s.bucket_owner(&b).ok().flatten().unwrap_or(root) != who =>
            {
                return Err(crate::Error::BucketTaken { bucket: b });
            }
            r => r?,
        }
        crate::authz::init_bucket(s, &b, &acl, ownership)?;
        if lock {
            crate::store::versions::enable_lock_on_new_bucket(s, &b)?;
        }
        Ok(())
    })
    .await?;
    Ok(with_bucket_arn(
        S3Response::new(CreateBucketOutput {
            location: Some(loc),
        }),
        &name,
    ))
}

pub(super) async fn head_bucket(
    g: &S3Gateway,
    req: S3Request<HeadBucketInput>,
) -> S3Result<S3Response<HeadBucketOutput>> {
    let b = req.input.bucket;
    let name = b.clone();
    g.run(move |s| s.head_bucket(&b)).await?;
    Ok(with_bucket_arn(
        S3Response::new(HeadBucketOutput {
            bucket_region: Some(g.region.clone()),
            ..Default::default()
        }),
        &name,
    ))
}

pub(super) async fn get_bucket_location(
    g: &S3Gateway,
    req: S3Request<GetBucketLocationInput>,
) -> S3Result<S3Response<GetBucketLocationOutput>> {
    let b = req.input.bucket;
    g.run(move |s| s.head_bucket(&b)).await?;
    // S3 reports us-east-1 as no constraint.
    let loc = (g.region != "us-east-1").then(|| BucketLocationConstraint::from(g.region.clone()));
    Ok(S3Response::new(GetBucketLocationOutput {
        location_constraint: loc,
    }))
}

pub(super) async fn delete_bucket(
    g: &S3Gateway,
    req: S3Request<DeleteBucketInput>,
) -> S3Result<S3Response<DeleteBucketOutput>> {
    let b = req.input.bucket;
    g.run(move |s| {
        // Older versions and delete markers keep a bucket, as on S3.
        if crate::store::versions::has_versions(s, &b)? {
            return Err(crate::error::VersionError::BucketHasVersions { bucket: b }.into());
        }
        s.delete_bucket(&b)?;
        crate::store::versions::forget_bucket(s, &b);
        Ok(())
    })
    .await?;
    Ok(S3Response::new(DeleteBucketOutput::default()))
}

pub(super) async fn put_bucket_tagging(
    g: &S3Gateway,
    req: S3Request<PutBucketTaggingInput>,
) -> S3Result<S3Response<PutBucketTaggingOutput>> {
    let i = req.input;
    let tags = crate::tagging::check_bucket_set(tag_pairs(&i.tagging)).map_err(tag_error)?;
    let b = i.bucket;
    g.run(move |s| s.set_bucket_tags(&b, tags)).await?;
    let mut res = S3Response::new(PutBucketTaggingOutput::default());
    set_status(&mut res, http::StatusCode::NO_CONTENT);
    Ok(res)
}

pub(super) async fn get_bucket_tagging(
    g: &S3Gateway,
    req: S3Request<GetBucketTaggingInput>,
) -> S3Result<S3Response<GetBucketTaggingOutput>> {
    let b = req.input.bucket;
    match g.run(move |s| s.bucket_tags(&b)).await? {
        Some(tags) => Ok(S3Response::new(GetBucketTaggingOutput {
            tag_set: tag_set_out(tags),
        })),
        None => Err(S3Error::with_message(
            S3ErrorCode::NoSuchTagSet,
            "The TagSet does not exist.",
        )),
    }
}

pub(super) async fn delete_bucket_tagging(
    g: &S3Gateway,
    req: S3Request<DeleteBucketTaggingInput>,
) -> S3Result<S3Response<DeleteBucketTaggingOutput>> {
    let b = req.input.bucket;
    g.run(move |s| s.set_bucket_tags(&b, Vec::new())).await?;
    Ok(S3Response::new(DeleteBucketTaggingOutput::default()))
}
