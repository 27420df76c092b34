//! Bucket website configurations: Put, Get and Delete of the bucket's
//! `website.json` record, checked by [`crate::website`] before it is kept
//! (who may call these is decided before, in [`crate::authz`]).

use super::*;
use crate::authz::s3_error;
use crate::website::{self, WebsiteError};

/// The longest website record read back (a body S3 takes, as JSON).
const MAX_RECORD: u64 = (website::MAX_BODY as u64) * 4;

fn website_error(e: WebsiteError) -> S3Error {
    s3_error(e.code(), 400, e.to_string())
}

fn no_such_configuration() -> S3Error {
    s3_error(
        "NoSuchWebsiteConfiguration",
        404,
        "The specified bucket does not have a website configuration",
    )
}

pub(super) async fn put_bucket_website(
    g: &S3Gateway,
    req: S3Request<PutBucketWebsiteInput>,
) -> S3Result<S3Response<PutBucketWebsiteOutput>> {
    let i = req.input;
    let b = i.bucket;
    {
        let b = b.clone();
        g.run(move |s| s.head_bucket(&b)).await?;
    }
    let config = i.website_configuration;
    website::check(&config).map_err(website_error)?;
    g.run(move |s| s.set_bucket_record(&b, website::RECORD, Some(&config)))
        .await?;
    Ok(S3Response::new(PutBucketWebsiteOutput::default()))
}

pub(super) async fn get_bucket_website(
    g: &S3Gateway,
    req: S3Request<GetBucketWebsiteInput>,
) -> S3Result<S3Response<GetBucketWebsiteOutput>> {
    let b = req.input.bucket;
    let config = g
        .run(move |s| {
            s.head_bucket(&b)?;
            s.bucket_record::<WebsiteConfiguration>(&b, website::RECORD, MAX_RECORD)
        })
        .await?
        .ok_or_else(no_such_configuration)?;
    Ok(S3Response::new(GetBucketWebsiteOutput {
        error_document: config.error_document,
        index_document: config.index_document,
        redirect_all_requests_to: config.redirect_all_requests_to,
        routing_rules: config.routing_rules,
    }))
}

pub(super) async fn delete_bucket_website(
    g: &S3Gateway,
    req: S3Request<DeleteBucketWebsiteInput>,
) -> S3Result<S3Response<DeleteBucketWebsiteOutput>> {
    let b = req.input.bucket;
    g.run(move |s| s.set_bucket_record::<WebsiteConfiguration>(&b, website::RECORD, None))
        .await?;
    Ok(S3Response::new(DeleteBucketWebsiteOutput::default()))
}
