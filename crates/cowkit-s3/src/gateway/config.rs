//! Bucket CORS rules, a [`Setting`] (checked by [`crate::cors`]): its Put
//! and its Delete, which answers 204 (Get is the gateway's). Their
//! documents reached s3s bounded and with their `Content-MD5` checked
//! ([`crate::config_doc`]).

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{S3Gateway, Setting};
use crate::answer::refusal_error;
use crate::respond::set_status;

/// The bucket's CORS rules.
pub(super) const CORS: Setting<CORSRules, CORSRules, GetBucketCorsOutput> = Setting {
    record: crate::cors::RECORD,
    read: crate::cors::serve::stored_rules,
    missing: no_such_configuration,
    answer: |rules| GetBucketCorsOutput {
        cors_rules: Some(rules),
    },
    stored: std::marker::PhantomData,
};

fn no_such_configuration() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NoSuchCORSConfiguration,
        "The CORS configuration does not exist",
    )
}

pub(super) async fn put_bucket_cors(
    g: &S3Gateway,
    req: S3Request<PutBucketCorsInput>,
) -> S3Result<S3Response<PutBucketCorsOutput>> {
    let i = req.input;
    g.bucket_exists(&i.bucket).await?;
    let rules = i.cors_configuration.cors_rules;
    crate::cors::check_rules(&rules).map_err(refusal_error)?;
    g.keep_setting(&CORS, i.bucket, Some(rules)).await?;
    Ok(S3Response::new(PutBucketCorsOutput::default()))
}

pub(super) async fn delete_bucket_cors(
    g: &S3Gateway,
    req: S3Request<DeleteBucketCorsInput>,
) -> S3Result<S3Response<DeleteBucketCorsOutput>> {
    let mut res = g.delete_setting(&CORS, req.input.bucket).await?;
    set_status(&mut res, http::StatusCode::NO_CONTENT);
    Ok(res)
}
