//! Listing a bucket's objects: V1 and V2 (versions: `versioning`).

use super::*;

/// One page of `bucket`'s objects after `after`: `max-keys` checked, an
/// empty delimiter taken as none.
async fn page(
    g: &S3Gateway,
    bucket: &str,
    prefix: &Option<String>,
    delimiter: &Option<String>,
    after: Option<String>,
    max_keys: Option<i32>,
) -> S3Result<Listing> {
    check_max("max-keys", max_keys)?;
    let q = list::Query {
        prefix: prefix.clone().unwrap_or_default(),
        delimiter: delimiter.clone().filter(|d| !d.is_empty()),
        after,
        max_keys: max_keys.unwrap_or(1000),
    };
    let bucket = bucket.to_string();
    g.run(move |s| list::list(s, &bucket, &q)).await
}

pub(super) async fn list_objects(
    g: &S3Gateway,
    req: S3Request<ListObjectsInput>,
) -> S3Result<S3Response<ListObjectsOutput>> {
    let i = req.input;
    let l = page(
        g,
        &i.bucket,
        &i.prefix,
        &i.delimiter,
        i.marker.clone().filter(|m| !m.is_empty()),
        i.max_keys,
    )
    .await?;
    let enc = list::Encoder::new(i.encoding_type.as_ref().map(|e| e.as_str()));
    let next_marker = l.truncated.then(|| l.last.clone()).flatten();
    Ok(S3Response::new(ListObjectsOutput {
        name: Some(i.bucket),
        prefix: i.prefix.map(|p| enc.enc(&p)),
        marker: i.marker.map(|m| enc.enc(&m)),
        max_keys: i.max_keys.or(Some(1000)),
        is_truncated: Some(l.truncated),
        next_marker: next_marker.map(|m| enc.enc(&m)),
        delimiter: i.delimiter.map(|d| enc.enc(&d)),
        encoding_type: i.encoding_type,
        contents: Some(l.objects(&enc)),
        common_prefixes: Some(l.prefixes(&enc)),
        ..Default::default()
    }))
}

pub(super) async fn list_objects_v2(
    g: &S3Gateway,
    req: S3Request<ListObjectsV2Input>,
) -> S3Result<S3Response<ListObjectsV2Output>> {
    let i = req.input;
    // A negative max-keys is refused before a bad token (`page` checks
    // it again).
    check_max("max-keys", i.max_keys)?;
    let token = match &i.continuation_token {
        Some(t) => Some(
            list::decode_token(t)
                .ok_or_else(|| s3_error!(InvalidArgument, "the continuation token is not valid"))?,
        ),
        None => None,
    };
    // Both given: listing starts after the later of the two.
    let after = token.max(i.start_after.clone().filter(|s| !s.is_empty()));
    let l = page(g, &i.bucket, &i.prefix, &i.delimiter, after, i.max_keys).await?;
    let enc = list::Encoder::new(i.encoding_type.as_ref().map(|e| e.as_str()));
    let contents = l.objects(&enc);
    let prefixes = l.prefixes(&enc);
    Ok(S3Response::new(ListObjectsV2Output {
        name: Some(i.bucket),
        prefix: i.prefix.map(|p| enc.enc(&p)),
        max_keys: i.max_keys.or(Some(1000)),
        key_count: Some((contents.len() + prefixes.len()) as i32),
        continuation_token: i.continuation_token,
        is_truncated: Some(l.truncated),
        next_continuation_token: if l.truncated {
            l.last.as_deref().map(list::encode_token)
        } else {
            None
        },
        delimiter: i.delimiter.map(|d| enc.enc(&d)),
        encoding_type: i.encoding_type,
        start_after: i.start_after.map(|s| enc.enc(&s)),
        contents: Some(contents),
        common_prefixes: Some(prefixes),
        ..Default::default()
    }))
}
