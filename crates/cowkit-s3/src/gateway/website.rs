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
    g.bucket_exists(&i.bucket).await?;
    let config = i.website_configuration;
    website::check(&config).map_err(website_error)?;
    g.keep_record(i.bucket, website::RECORD, Some(config))
        .await?;
    Ok(S3Response::new(PutBucketWebsiteOutput::default()))
}

pub(super) async fn get_bucket_website(
    g: &S3Gateway,
    req: S3Request<GetBucketWebsiteInput>,
) -> S3Result<S3Response<GetBucketWebsiteOutput>> {
    let read = |s: &Store, b: &str| {
        s.bucket_record::<WebsiteConfiguration>(b, website::RECORD, MAX_RECORD)
    };
    let config = g
        .read_record(req.input.bucket, read, no_such_configuration)
        .await?;
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
    g.keep_record::<WebsiteConfiguration>(req.input.bucket, website::RECORD, None)
        .await?;
    Ok(S3Response::new(DeleteBucketWebsiteOutput::default()))
}
