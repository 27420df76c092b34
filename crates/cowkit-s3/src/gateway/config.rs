//! Bucket CORS rules kept as a bucket record (checked by [`crate::cors`]).
//! Their documents reached s3s bounded and with their `Content-MD5`
//! checked ([`crate::config_doc`]).

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::S3Gateway;
use crate::answer::refusal_error;
use crate::respond::set_status;

pub(super) async fn put_bucket_cors(
    g: &S3Gateway,
    req: S3Request<PutBucketCorsInput>,
) -> S3Result<S3Response<PutBucketCorsOutput>> {
    let i = req.input;
    g.bucket_exists(&i.bucket).await?;
    let rules = i.cors_configuration.cors_rules;
    crate::cors::check_rules(&rules).map_err(refusal_error)?;
    g.keep_record(i.bucket, crate::cors::RECORD, Some(rules))
        .await?;
    Ok(S3Response::new(PutBucketCorsOutput::default()))
}

/// The bucket's CORS rules (`None`: it has none); the bucket must exist.
pub(crate) fn cors_rules(s: &crate::store::Store, b: &str) -> crate::Result<Option<CORSRules>> {
    s.head_bucket(b)?;
    s.bucket_record(b, crate::cors::RECORD, crate::cors::MAX_RECORD)
}

fn no_such_configuration() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NoSuchCORSConfiguration,
        "The CORS configuration does not exist",
    )
}

pub(super) async fn get_bucket_cors(
    g: &S3Gateway,
    req: S3Request<GetBucketCorsInput>,
) -> S3Result<S3Response<GetBucketCorsOutput>> {
    let read = |s: &crate::store::Store, b: &str| {
        s.bucket_record(b, crate::cors::RECORD, crate::cors::MAX_RECORD)
    };
    let rules = g
        .read_record(req.input.bucket, read, no_such_configuration)
        .await?;
    Ok(S3Response::new(GetBucketCorsOutput {
        cors_rules: Some(rules),
    }))
}

pub(super) async fn delete_bucket_cors(
    g: &S3Gateway,
    req: S3Request<DeleteBucketCorsInput>,
) -> S3Result<S3Response<DeleteBucketCorsOutput>> {
    g.keep_record::<CORSRules>(req.input.bucket, crate::cors::RECORD, None)
        .await?;
    let mut res = S3Response::new(DeleteBucketCorsOutput::default());
    set_status(&mut res, http::StatusCode::NO_CONTENT);
    Ok(res)
}
