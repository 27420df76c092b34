//! The `s3s::S3` implementation: S3 requests mapped onto [`Store`]. Every
//! filesystem call runs on tokio's blocking pool.
//!
//! The `impl S3` at the end is the route table: one line an operation, to
//! its function in `bucket`, `access` (ACLs, ownership, policies), `config`
//! (CORS), `website`, `object`, `listing`, `upload` or `versioning` (bodies
//! come in through `receive`); the Get and Delete of a bucket `Setting`
//! (policy, ownership controls, CORS rules, website) are the same for all,
//! `get_setting` and `delete_setting`. Reading a request's input is
//! [`crate::request`]'s, its checksum headers [`crate::checksum`]'s;
//! errors are made by [`crate::error`], and what s3s cannot write into a
//! response is asked of [`crate::respond`].

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;
use md5::Digest;
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response, S3Result, S3};

use crate::answer::{
    chunk_refusal, internal, invalid_request, not_implemented_header, read_outcome, tag_error,
    to_s3_error, with_status, write_outcome,
};
use crate::checksum::{Algorithm, Checksum, Hasher, Type};
use crate::conditions::{Conditions, Current, WriteOutcome};
use crate::error::Error;
use crate::fsutil::NewFile;
use crate::list::{self, Listing};
use crate::multipart::{Completed, PartFiles, Prepared};
use crate::pages::{parts_page, uploads_page, PartsPage, UploadsPage, UploadsQuery};
use crate::request::{
    check_max, check_part_number, check_version_id, checksum_algorithm, checksum_type,
    complete_parts, copy_source, copy_source_version, epoch_seconds, header_tags, metadata_of,
    mp_object_size, object_attributes, parse_copy_range, replaced_tags, replaces_metadata,
    stored_headers, upload_checksum, PartList,
};
use crate::respond::{add_xml_checksum, add_xml_element, set_status};
use crate::store::Store;
use receive::{check_received, drain, want_checksum, want_checksum_of};

/// Set the `checksum_*` fields and `checksum_type` of an output.
macro_rules! put_checksum {
    ($out:expr, $c:expr) => {
        if let Some(c) = $c {
            put_checksum_value!($out, c);
            $out.checksum_type = Some(ChecksumType::from(c.kind.name().to_string()));
        }
    };
}

/// Set the `checksum_*` field of an output (or a part) for `c`.
macro_rules! put_checksum_value {
    ($out:expr, $c:expr) => {
        let v = Some($c.value.clone());
        match $c.algorithm {
            Algorithm::Crc32 => $out.checksum_crc32 = v,
            Algorithm::Crc32c => $out.checksum_crc32c = v,
            Algorithm::Crc64Nvme => $out.checksum_crc64nvme = v,
            Algorithm::Sha1 => $out.checksum_sha1 = v,
            Algorithm::Sha256 => $out.checksum_sha256 = v,
            // Not in s3s' DTOs: see `with_checksum_header`.
            _ => {}
        }
    };
}

mod access;
mod bucket;
mod config;
mod listing;
mod object;
mod receive;
mod upload;
mod versioning;
mod website;

/// Log target of the structured access log (one JSON object per line).
pub const ACCESS_LOG: &str = "cowkit_s3::access";

/// The gateway: an [`S3`] implementation on a [`Store`].
#[derive(Debug, Clone)]
pub struct S3Gateway {
    store: Arc<Store>,
    /// The region buckets are in (`us-east-1` unless set).
    region: String,
    /// The owner of buckets that have none recorded: the server's access
    /// key (`anonymous` without one).
    root_owner: String,
}

/// The owner S3 reports: the access key the request was signed with.
fn owner_of<T>(req: &S3Request<T>) -> Owner {
    // The authenticated principal (the second s3s service behind the
    // handler's detour sees no credentials, only this).
    let id = match req.extensions.get::<crate::accounts::Principal>() {
        Some(p) => p.access_key.clone(),
        None => req
            .credentials
            .as_ref()
            .map(|c| c.access_key.clone())
            .unwrap_or_else(|| "anonymous".into()),
    };
    Owner {
        display_name: Some(id.clone()),
        id: Some(id),
    }
}

/// The content type of a directory object put without one.
pub const DIRECTORY_CONTENT_TYPE: &str = "application/x-directory";

/// A request's conditional headers: handed over by the server (which takes
/// them off before s3s parses them), or as s3s let them through.
fn conditions_of<T>(req: &S3Request<T>) -> Option<Conditions> {
    req.extensions
        .get::<Conditions>()
        .cloned()
        .or_else(|| Conditions::from_headers(&req.headers))
}

/// A request's streaming trailer: s3s's (handed over as an extension by
/// the detour, see [`crate::handler`]), or the handler's own for an
/// unsigned body it decoded ([`crate::unchunk`]).
#[derive(Clone, Copy)]
pub(crate) enum Trailers<'a> {
    /// s3s decoded the body.
    S3s(&'a s3s::TrailingHeaders),
    /// The handler did.
    Decoded(&'a crate::unchunk::DecodedTrailers),
}

impl Trailers<'_> {
    /// `f` of the trailer (`None` until the body has ended).
    pub(crate) fn read<R>(&self, f: impl FnOnce(&http::HeaderMap) -> R) -> Option<R> {
        match self {
            Trailers::S3s(t) => t.read(f),
            Trailers::Decoded(t) => t.read(f),
        }
    }
}

fn trailing_of<T>(req: &S3Request<T>) -> Option<Trailers<'_>> {
    req.trailing_headers
        .as_ref()
        .or_else(|| req.extensions.get::<s3s::TrailingHeaders>())
        .map(Trailers::S3s)
        .or_else(|| {
            req.extensions
                .get::<crate::unchunk::DecodedTrailers>()
                .map(Trailers::Decoded)
        })
}

/// Marks a request whose aws-chunked body came without `x-amz-trailer`
/// (the server adds one for s3s and takes it off again): a trailer in
/// its body was not declared.
#[derive(Debug, Clone, Copy)]
pub struct UndeclaredTrailer;

/// Part checksums a CompleteMultipartUpload document gave for algorithms
/// s3s 0.14 cannot parse there (the server took them out of it).
#[derive(Debug, Clone)]
pub struct PartChecksums(pub Vec<crate::checksum::PartChecksum>);

/// The `<Tags>` of a CreateBucket document (the server took them out of
/// it: s3s 0.14 has no field for them).
#[derive(Debug, Clone)]
pub struct CreateBucketTags(pub crate::tagging::TagPairs);

/// A tag set as s3s read it: (key, value) pairs, either missing.
fn tag_pairs(t: &Tagging) -> impl Iterator<Item = (Option<&str>, Option<&str>)> {
    t.tag_set
        .iter()
        .map(|t| (t.key.as_deref(), t.value.as_deref()))
}

/// Tags as s3s writes them.
fn tag_set_out(tags: Vec<crate::tagging::Tag>) -> TagSet {
    tags.into_iter()
        .map(|t| Tag {
            key: Some(t.key),
            value: Some(t.value),
        })
        .collect()
}

/// What conditions compare an object with.
fn current(info: &crate::store::ObjectInfo) -> Current<'_> {
    Current {
        etag: &info.meta.etag,
        mtime: info.mtime,
        size: info.meta.size,
    }
}

/// An ETag as s3s writes it (quoted).
fn etag(s: &str) -> ETag {
    ETag::Strong(s.to_string())
}

/// User metadata as s3s writes it.
fn metadata_out(m: &BTreeMap<String, String>) -> Option<Metadata> {
    (!m.is_empty()).then(|| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// A line of the access log.
fn access(v: serde_json::Value) {
    log::info!(target: ACCESS_LOG, "{v}");
}

/// A response, with the checksum header s3s has no field for
/// (`x-amz-checksum-sha512`, `-md5`, `-xxhash*`).
fn with_checksum_header<T>(out: T, c: Option<&Checksum>) -> S3Response<T> {
    let mut res = S3Response::new(out);
    if let Some(c) = c.filter(|c| !c.algorithm.in_s3s()) {
        if let (Ok(k), Ok(v)) = (
            http::HeaderName::from_bytes(c.algorithm.header().as_bytes()),
            http::HeaderValue::from_str(&c.value),
        ) {
            res.headers.insert(k, v);
            res.headers.insert(
                "x-amz-checksum-type",
                http::HeaderValue::from_static(c.kind.name()),
            );
        }
    }
    res
}

impl S3Gateway {
    /// A gateway on `store`.
    pub fn new(store: Store) -> Self {
        S3Gateway {
            store: Arc::new(store),
            region: "us-east-1".into(),
            root_owner: "anonymous".into(),
        }
    }

    /// The owner of buckets without one recorded (the server's access key).
    pub fn with_root_owner(mut self, owner: &str) -> Self {
        self.root_owner = owner.to_string();
        self
    }

    /// The region buckets report (`GetBucketLocation`, `HeadBucket`).
    pub fn with_region(mut self, region: &str) -> Self {
        self.region = region.to_string();
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    async fn run<T, F>(&self, f: F) -> S3Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> crate::Result<T> + Send + 'static,
    {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(internal)?
            .map_err(to_s3_error)
    }

    /// `NoSuchBucket` unless bucket `b` exists: a bucket setting names a
    /// missing bucket before a malformed document, as S3 does.
    async fn bucket_exists(&self, b: &str) -> S3Result<()> {
        let b = b.to_string();
        self.run(move |s| s.head_bucket(&b)).await
    }

    /// Keep `value` as the bucket record `name` of bucket `b` (a
    /// [`Setting`], or the bucket's ACL); `None` drops it.
    async fn keep_record<T>(&self, b: String, name: &'static str, value: Option<T>) -> S3Result<()>
    where
        T: serde::Serialize + Send + 'static,
    {
        self.run(move |s| s.set_bucket_record(&b, name, value.as_ref()))
            .await
    }

    /// Keep `value` as bucket `b`'s `setting`; `None` drops it.
    async fn keep_setting<S, V, G>(
        &self,
        setting: &Setting<S, V, G>,
        b: String,
        value: Option<S>,
    ) -> S3Result<()>
    where
        S: serde::Serialize + Send + 'static,
    {
        self.keep_record(b, setting.record, value).await
    }

    /// A Get of bucket `b`'s `setting`: the bucket must exist, and
    /// `setting.missing()` answers when it has none.
    async fn get_setting<S, V, G>(
        &self,
        setting: &Setting<S, V, G>,
        b: String,
    ) -> S3Result<S3Response<G>>
    where
        V: Send + 'static,
    {
        let read = setting.read;
        let value = self
            .run(move |s| {
                s.head_bucket(&b)?;
                read(s, &b)
            })
            .await?
            .ok_or_else(setting.missing)?;
        Ok(S3Response::new((setting.answer)(value)))
    }

    /// A Delete of bucket `b`'s `setting`: its record dropped, and S3's
    /// empty answer.
    async fn delete_setting<S, V, G, O>(
        &self,
        setting: &Setting<S, V, G>,
        b: String,
    ) -> S3Result<S3Response<O>>
    where
        S: serde::Serialize + Send + 'static,
        O: Default,
    {
        self.keep_setting(setting, b, None).await?;
        Ok(S3Response::new(O::default()))
    }
}

/// A bucket setting kept whole as one bucket record, stored as `S`, read
/// back as `V` and answered to a Get as `G`: the bucket's policy, ownership
/// controls, CORS rules or website. Put checks it its own way; Get and
/// Delete are the same for all ([`S3Gateway::get_setting`],
/// [`S3Gateway::delete_setting`]). (The ACL is a record too, but every
/// bucket has one.)
struct Setting<S, V, G> {
    /// The record's name.
    record: &'static str,
    /// Bucket `b`'s setting (`None`: it has none).
    read: fn(&Store, &str) -> crate::Result<Option<V>>,
    /// S3's answer to a Get on a bucket without one.
    missing: fn() -> S3Error,
    /// The Get's answer.
    answer: fn(V) -> G,
    /// What is stored.
    stored: std::marker::PhantomData<fn(S)>,
}

#[async_trait::async_trait]
impl S3 for S3Gateway {
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        bucket::list_buckets(self, req).await
    }

    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        bucket::create_bucket(self, req).await
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        bucket::head_bucket(self, req).await
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        bucket::get_bucket_location(self, req).await
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        bucket::delete_bucket(self, req).await
    }

    async fn put_bucket_tagging(
        &self,
        req: S3Request<PutBucketTaggingInput>,
    ) -> S3Result<S3Response<PutBucketTaggingOutput>> {
        bucket::put_bucket_tagging(self, req).await
    }

    async fn get_bucket_tagging(
        &self,
        req: S3Request<GetBucketTaggingInput>,
    ) -> S3Result<S3Response<GetBucketTaggingOutput>> {
        bucket::get_bucket_tagging(self, req).await
    }

    async fn delete_bucket_tagging(
        &self,
        req: S3Request<DeleteBucketTaggingInput>,
    ) -> S3Result<S3Response<DeleteBucketTaggingOutput>> {
        bucket::delete_bucket_tagging(self, req).await
    }

    async fn get_bucket_acl(
        &self,
        req: S3Request<GetBucketAclInput>,
    ) -> S3Result<S3Response<GetBucketAclOutput>> {
        access::get_bucket_acl(self, req).await
    }

    async fn put_bucket_acl(
        &self,
        req: S3Request<PutBucketAclInput>,
    ) -> S3Result<S3Response<PutBucketAclOutput>> {
        access::put_bucket_acl(self, req).await
    }

    async fn get_bucket_policy(
        &self,
        req: S3Request<GetBucketPolicyInput>,
    ) -> S3Result<S3Response<GetBucketPolicyOutput>> {
        self.get_setting(&access::POLICY, req.input.bucket).await
    }

    async fn put_bucket_policy(
        &self,
        req: S3Request<PutBucketPolicyInput>,
    ) -> S3Result<S3Response<PutBucketPolicyOutput>> {
        access::put_bucket_policy(self, req).await
    }

    async fn delete_bucket_policy(
        &self,
        req: S3Request<DeleteBucketPolicyInput>,
    ) -> S3Result<S3Response<DeleteBucketPolicyOutput>> {
        self.delete_setting(&access::POLICY, req.input.bucket).await
    }

    async fn get_bucket_ownership_controls(
        &self,
        req: S3Request<GetBucketOwnershipControlsInput>,
    ) -> S3Result<S3Response<GetBucketOwnershipControlsOutput>> {
        self.get_setting(&access::OWNERSHIP, req.input.bucket).await
    }

    async fn put_bucket_ownership_controls(
        &self,
        req: S3Request<PutBucketOwnershipControlsInput>,
    ) -> S3Result<S3Response<PutBucketOwnershipControlsOutput>> {
        access::put_bucket_ownership_controls(self, req).await
    }

    async fn delete_bucket_ownership_controls(
        &self,
        req: S3Request<DeleteBucketOwnershipControlsInput>,
    ) -> S3Result<S3Response<DeleteBucketOwnershipControlsOutput>> {
        self.delete_setting(&access::OWNERSHIP, req.input.bucket)
            .await
    }

    async fn put_bucket_website(
        &self,
        req: S3Request<PutBucketWebsiteInput>,
    ) -> S3Result<S3Response<PutBucketWebsiteOutput>> {
        website::put_bucket_website(self, req).await
    }

    async fn get_bucket_website(
        &self,
        req: S3Request<GetBucketWebsiteInput>,
    ) -> S3Result<S3Response<GetBucketWebsiteOutput>> {
        self.get_setting(&website::WEBSITE, req.input.bucket).await
    }

    async fn delete_bucket_website(
        &self,
        req: S3Request<DeleteBucketWebsiteInput>,
    ) -> S3Result<S3Response<DeleteBucketWebsiteOutput>> {
        self.delete_setting(&website::WEBSITE, req.input.bucket)
            .await
    }

    async fn restore_object(
        &self,
        _req: S3Request<RestoreObjectInput>,
    ) -> S3Result<S3Response<RestoreObjectOutput>> {
        // Every object is STANDARD here: nothing is archived to restore.
        Err(access::not_implemented())
    }

    async fn get_object_acl(
        &self,
        _req: S3Request<GetObjectAclInput>,
    ) -> S3Result<S3Response<GetObjectAclOutput>> {
        Err(access::not_implemented())
    }

    async fn put_object_acl(
        &self,
        _req: S3Request<PutObjectAclInput>,
    ) -> S3Result<S3Response<PutObjectAclOutput>> {
        Err(access::not_implemented())
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        object::put_object(self, req).await
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        object::get_object(self, req).await
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        object::head_object(self, req).await
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        object::delete_object(self, req).await
    }

    async fn get_object_attributes(
        &self,
        req: S3Request<GetObjectAttributesInput>,
    ) -> S3Result<S3Response<GetObjectAttributesOutput>> {
        object::get_object_attributes(self, req).await
    }

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        object::copy_object(self, req).await
    }

    async fn put_object_tagging(
        &self,
        req: S3Request<PutObjectTaggingInput>,
    ) -> S3Result<S3Response<PutObjectTaggingOutput>> {
        object::put_object_tagging(self, req).await
    }

    async fn get_object_tagging(
        &self,
        req: S3Request<GetObjectTaggingInput>,
    ) -> S3Result<S3Response<GetObjectTaggingOutput>> {
        object::get_object_tagging(self, req).await
    }

    async fn delete_object_tagging(
        &self,
        req: S3Request<DeleteObjectTaggingInput>,
    ) -> S3Result<S3Response<DeleteObjectTaggingOutput>> {
        object::delete_object_tagging(self, req).await
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        object::delete_objects(self, req).await
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        listing::list_objects(self, req).await
    }

    async fn list_object_versions(
        &self,
        req: S3Request<ListObjectVersionsInput>,
    ) -> S3Result<S3Response<ListObjectVersionsOutput>> {
        versioning::list_object_versions(self, req).await
    }

    async fn put_bucket_versioning(
        &self,
        req: S3Request<PutBucketVersioningInput>,
    ) -> S3Result<S3Response<PutBucketVersioningOutput>> {
        versioning::put_bucket_versioning(self, req).await
    }

    async fn get_bucket_versioning(
        &self,
        req: S3Request<GetBucketVersioningInput>,
    ) -> S3Result<S3Response<GetBucketVersioningOutput>> {
        versioning::get_bucket_versioning(self, req).await
    }

    async fn put_object_lock_configuration(
        &self,
        req: S3Request<PutObjectLockConfigurationInput>,
    ) -> S3Result<S3Response<PutObjectLockConfigurationOutput>> {
        versioning::put_object_lock_configuration(self, req).await
    }

    async fn get_object_lock_configuration(
        &self,
        req: S3Request<GetObjectLockConfigurationInput>,
    ) -> S3Result<S3Response<GetObjectLockConfigurationOutput>> {
        versioning::get_object_lock_configuration(self, req).await
    }

    async fn put_object_retention(
        &self,
        req: S3Request<PutObjectRetentionInput>,
    ) -> S3Result<S3Response<PutObjectRetentionOutput>> {
        versioning::put_object_retention(self, req).await
    }

    async fn get_object_retention(
        &self,
        req: S3Request<GetObjectRetentionInput>,
    ) -> S3Result<S3Response<GetObjectRetentionOutput>> {
        versioning::get_object_retention(self, req).await
    }

    async fn put_object_legal_hold(
        &self,
        req: S3Request<PutObjectLegalHoldInput>,
    ) -> S3Result<S3Response<PutObjectLegalHoldOutput>> {
        versioning::put_object_legal_hold(self, req).await
    }

    async fn get_object_legal_hold(
        &self,
        req: S3Request<GetObjectLegalHoldInput>,
    ) -> S3Result<S3Response<GetObjectLegalHoldOutput>> {
        versioning::get_object_legal_hold(self, req).await
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        listing::list_objects_v2(self, req).await
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        upload::create_multipart_upload(self, req).await
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        upload::upload_part(self, req).await
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        upload::upload_part_copy(self, req).await
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        upload::list_parts(self, req).await
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        upload::list_multipart_uploads(self, req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        upload::abort_multipart_upload(self, req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        upload::complete_multipart_upload(self, req).await
    }

    async fn put_bucket_cors(
        &self,
        req: S3Request<PutBucketCorsInput>,
    ) -> S3Result<S3Response<PutBucketCorsOutput>> {
        config::put_bucket_cors(self, req).await
    }

    async fn get_bucket_cors(
        &self,
        req: S3Request<GetBucketCorsInput>,
    ) -> S3Result<S3Response<GetBucketCorsOutput>> {
        self.get_setting(&config::CORS, req.input.bucket).await
    }

    async fn delete_bucket_cors(
        &self,
        req: S3Request<DeleteBucketCorsInput>,
    ) -> S3Result<S3Response<DeleteBucketCorsOutput>> {
        config::delete_bucket_cors(self, req).await
    }
}
