//! Bucket website configurations, a [`Setting`] kept in the bucket's
//! `website.json` record: its Put, checked by [`crate::website`] before it
//! is kept (Get and Delete are the gateway's; who may call these is
//! decided before, in [`crate::authz`]).

use super::Setting;
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

/// The bucket's website configuration.
pub(super) const WEBSITE: Setting<
    WebsiteConfiguration,
    WebsiteConfiguration,
    GetBucketWebsiteOutput,
> = Setting {
    record: website::RECORD,
    read: |s, b| s.bucket_record(b, website::RECORD, MAX_RECORD),
    missing: no_such_configuration,
    answer: |config| GetBucketWebsiteOutput {
        error_document: config.error_document,
        index_document: config.index_document,
        redirect_all_requests_to: config.redirect_all_requests_to,
        routing_rules: config.routing_rules,
    },
    stored: std::marker::PhantomData,
};

pub(super) async fn put_bucket_website(
    g: &S3Gateway,
    req: S3Request<PutBucketWebsiteInput>,
) -> S3Result<S3Response<PutBucketWebsiteOutput>> {
    let i = req.input;
    g.bucket_exists(&i.bucket).await?;
    let config = i.website_configuration;
    website::check(&config).map_err(website_error)?;
    g.keep_setting(&WEBSITE, i.bucket, Some(config)).await?;
    Ok(S3Response::new(PutBucketWebsiteOutput::default()))
}
