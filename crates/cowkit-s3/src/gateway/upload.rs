//! Multipart uploads: create, upload a part (or copy one), list parts and
//! uploads, abort, complete.

use super::*;

pub(super) async fn create_multipart_upload(
    g: &S3Gateway,
    req: S3Request<CreateMultipartUploadInput>,
) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
    let headers = stored_headers(&req.headers);
    let initiator = req
        .extensions
        .get::<crate::accounts::Principal>()
        .map(|p| p.access_key.clone());
    let i = req.input;
    let checksum = upload_checksum(i.checksum_algorithm.as_ref(), i.checksum_type.as_ref())?;
    let lock = super::versioning::LockHeaders::of(
        i.object_lock_mode.as_ref(),
        i.object_lock_retain_until_date.as_ref(),
        i.object_lock_legal_hold_status.as_ref(),
    );
    let mut new = crate::multipart::NewUpload {
        content_type: i.content_type,
        metadata: metadata_of(i.metadata),
        checksum,
        headers,
        tags: header_tags(i.tagging.as_deref())?,
        initiator,
        ..Default::default()
    };
    let (b, k) = (i.bucket.clone(), i.key.clone());
    let id = g
        .run(move |s| {
            s.head_bucket(&b)?;
            let mut m = crate::store::ObjectMeta::default();
            lock.apply(s, &b, &mut m, false)?;
            new.retention = m.retention;
            new.legal_hold = m.legal_hold;
            s.create_upload_with(&b, &k, new)
        })
        .await?;
    Ok(S3Response::new(CreateMultipartUploadOutput {
        bucket: Some(i.bucket),
        key: Some(i.key),
        upload_id: Some(id),
        checksum_algorithm: checksum.map(|c| ChecksumAlgorithm::from(c.0.name().to_string())),
        checksum_type: checksum.map(|c| ChecksumType::from(c.1.name().to_string())),
        ..Default::default()
    }))
}

pub(super) async fn upload_part(
    g: &S3Gateway,
    mut req: S3Request<UploadPartInput>,
) -> S3Result<S3Response<UploadPartOutput>> {
    let mut i = std::mem::take(&mut req.input);
    let body = i.body.take();
    let (id, b, k, n) = (
        i.upload_id.clone(),
        i.bucket.clone(),
        i.key.clone(),
        i.part_number,
    );
    let checked = async {
        let want = want_checksum(&req.headers)?;
        let (file, upload) = g
            .run(move |s| {
                let f = s.new_part_file(&id, &b, &k, n)?;
                Ok((f, s.upload_record(&id, &b, &k)?))
            })
            .await?;
        if let (Some((u, _)), Some(r)) = (upload.checksum, want.algorithm()) {
            if u != r {
                return Err(invalid_request(format!(
                    "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
                    u.name(),
                    r.name()
                )));
            }
        }
        Ok((want, file, upload))
    }
    .await;
    let (want, file, upload) = match checked {
        Ok(x) => x,
        Err(e) => {
            drain(body).await;
            return Err(e);
        }
    };
    let upload_algo = upload.checksum.map(|c| c.0);
    // Without an algorithm, parts get CRC64NVME: the complete combines
    // them into the object's default checksum, as S3 gives one.
    let algo = want
        .algorithm()
        .or(upload_algo)
        .or(Some(Algorithm::Crc64Nvme));
    let got = g
        .receive(
            body,
            file,
            i.content_md5.as_deref(),
            algo,
            upload_algo.is_none(),
        )
        .await
        .map_err(|e| chunk_refusal(&req.extensions, e))?;
    check_received(&req, &want, &got, i.content_length)?;
    let (file, md5) = (got.file, got.md5);
    // A composite upload needs each part's checksum from the client
    // (refused after the body is read, so the connection stays usable).
    if let (Some((u, Type::Composite)), None) = (upload.checksum, want.algorithm()) {
        return Err(invalid_request(format!(
            "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: null",
            u.name()
        )));
    }
    let checksum = got.checksum.map(|(algorithm, value)| Checksum {
        algorithm,
        value,
        kind: Type::FullObject,
    });
    let (id, b, k) = (i.upload_id, i.bucket, i.key);
    let sums = crate::multipart::PartSums {
        md5,
        checksum,
        crc64nvme: got.default_crc,
    };
    let rec = g
        .run(move |s| s.commit_part(&id, &b, &k, n, file, sums))
        .await?;
    let mut out = UploadPartOutput {
        e_tag: Some(etag(&rec.md5)),
        ..Default::default()
    };
    let shown = rec
        .checksum
        .as_ref()
        .filter(|_| upload_algo.is_some() || want.algorithm().is_some());
    if let Some(c) = shown {
        put_checksum_value!(out, c);
    }
    let mut res = with_checksum_header(out, shown);
    res.headers.remove("x-amz-checksum-type");
    Ok(res)
}

pub(super) async fn upload_part_copy(
    g: &S3Gateway,
    req: S3Request<UploadPartCopyInput>,
) -> S3Result<S3Response<UploadPartCopyOutput>> {
    let cond = conditions_of(&req);
    let i = req.input;
    let b = i.bucket.clone();
    g.run(move |s| s.head_bucket(&b)).await?;
    if !(1..=crate::multipart::MAX_PARTS).contains(&i.part_number) {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "Part number must be an integer between 1 and 10000, inclusive.",
        ));
    }
    let (sb, sk) = copy_source(&i.copy_source)?;
    let sv = copy_source_version(&i.copy_source);
    let shown_source = sv.clone();
    if let Some(c) = &cond {
        g.check_copy_source(c, &sb, &sk).await?;
    }
    let range = match &i.copy_source_range {
        Some(r) => Some(parse_copy_range(r)?),
        None => None,
    };
    let (id, b, k, n) = (
        i.upload_id.clone(),
        i.bucket.clone(),
        i.key.clone(),
        i.part_number,
    );
    let (rec, copied, rec_shown) = g
        .run(move |s| {
            let shown = s.upload_record(&id, &b, &k)?.checksum.is_some();
            let (rec, copied) = s.copy_part(&id, &b, &k, n, &sb, &sk, sv.as_deref(), range)?;
            Ok((rec, copied, shown))
        })
        .await?;
    access(serde_json::json!({
        "op": "UploadPartCopy", "bucket": i.bucket, "key": i.key, "upload_id": i.upload_id,
        "part": n, "size": rec.size, "method": copied.method.name(), "bytes": copied.bytes,
    }));
    let mut result = CopyPartResult {
        e_tag: Some(etag(&rec.md5)),
        last_modified: Some(Timestamp::from(std::time::SystemTime::now())),
        ..Default::default()
    };
    let shown = rec.checksum.as_ref().filter(|_| rec_shown);
    if let Some(c) = shown {
        put_checksum_value!(result, c);
    }
    let mut res = S3Response::new(UploadPartCopyOutput {
        copy_part_result: Some(result),
        copy_source_version_id: shown_source,
        ..Default::default()
    });
    add_xml_checksum(&mut res, "CopyPartResult", 1, shown);
    Ok(res)
}

pub(super) async fn list_parts(
    g: &S3Gateway,
    req: S3Request<ListPartsInput>,
) -> S3Result<S3Response<ListPartsOutput>> {
    let i = req.input;
    check_max("max-parts", i.max_parts)?;
    check_max("part-number-marker", i.part_number_marker)?;
    let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
    let (parts, upload) = g
        .run(move |s| Ok((s.list_parts(&id, &b, &k)?, s.upload_record(&id, &b, &k)?)))
        .await?;
    let PartsPage {
        parts: page,
        truncated,
        next,
        max,
    } = parts_page(parts, i.part_number_marker, i.max_parts);
    // No checksum asked for at the start: S3 says `null`.
    let none = || "null".to_string();
    let extra: Vec<Option<Checksum>> = page
        .iter()
        .map(|p| p.checksum.clone().filter(|_| upload.checksum.is_some()))
        .collect();
    let mut res = S3Response::new(ListPartsOutput {
        bucket: Some(i.bucket),
        key: Some(i.key),
        upload_id: Some(i.upload_id),
        max_parts: Some(max as i32),
        part_number_marker: i.part_number_marker,
        is_truncated: Some(truncated),
        next_part_number_marker: next,
        storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
        checksum_algorithm: Some(ChecksumAlgorithm::from(
            upload
                .checksum
                .map_or_else(none, |c| c.0.name().to_string()),
        )),
        checksum_type: Some(ChecksumType::from(
            upload
                .checksum
                .map_or_else(none, |c| c.1.name().to_string()),
        )),
        parts: Some(
            page.into_iter()
                .map(|p| {
                    let mut part = Part {
                        e_tag: Some(etag(&p.md5)),
                        part_number: Some(p.number),
                        size: Some(p.size as i64),
                        last_modified: Some(Timestamp::from(
                            std::time::SystemTime::UNIX_EPOCH
                                + std::time::Duration::from_secs(p.modified),
                        )),
                        ..Default::default()
                    };
                    if let Some(c) = p.checksum.as_ref().filter(|_| upload.checksum.is_some()) {
                        put_checksum_value!(part, c);
                    }
                    part
                })
                .collect(),
        ),
        ..Default::default()
    });
    for (n, c) in extra.iter().enumerate() {
        add_xml_checksum(&mut res, "Part", n + 1, c.as_ref());
    }
    Ok(res)
}

pub(super) async fn list_multipart_uploads(
    g: &S3Gateway,
    req: S3Request<ListMultipartUploadsInput>,
) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
    let owner = owner_of(&req);
    let i = req.input;
    check_max("max-uploads", i.max_uploads)?;
    let b = i.bucket.clone();
    let ups = g
        .run(move |s| {
            s.head_bucket(&b)?;
            s.list_uploads(&b)
        })
        .await?;
    let q = UploadsQuery {
        prefix: i.prefix.clone().unwrap_or_default(),
        delimiter: i.delimiter.clone().filter(|d| !d.is_empty()),
        key_marker: i.key_marker.clone().unwrap_or_default(),
        upload_id_marker: i.upload_id_marker.clone(),
        max_uploads: i.max_uploads,
    };
    let enc = list::Encoder::new(i.encoding_type.as_ref().map(|e| e.as_str()));
    let page = uploads_page(ups, &q)?;
    let next = page.next().cloned();
    let UploadsPage {
        uploads,
        prefixes,
        truncated,
        max,
        ..
    } = page;
    Ok(S3Response::new(ListMultipartUploadsOutput {
        bucket: Some(i.bucket),
        prefix: i.prefix.map(|p| enc.enc(&p)),
        delimiter: i.delimiter.map(|d| enc.enc(&d)),
        key_marker: i.key_marker.map(|m| enc.enc(&m)),
        upload_id_marker: i.upload_id_marker,
        max_uploads: Some(max as i32),
        is_truncated: Some(truncated),
        next_key_marker: next.as_ref().map(|l| enc.enc(&l.0)),
        next_upload_id_marker: next.map(|l| l.1),
        encoding_type: i.encoding_type,
        common_prefixes: Some(
            prefixes
                .into_iter()
                .map(|p| CommonPrefix {
                    prefix: Some(enc.enc(&p)),
                })
                .collect(),
        ),
        uploads: Some(
            uploads
                .into_iter()
                .map(|u| MultipartUpload {
                    key: Some(enc.enc(&u.key)),
                    upload_id: Some(u.id),
                    initiated: Some(Timestamp::from(u.initiated)),
                    storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
                    checksum_algorithm: u
                        .checksum
                        .map(|c| ChecksumAlgorithm::from(c.0.name().to_string())),
                    checksum_type: u
                        .checksum
                        .map(|c| ChecksumType::from(c.1.name().to_string())),
                    owner: Some(owner.clone()),
                    initiator: Some(Initiator {
                        display_name: owner.display_name.clone(),
                        id: owner.id.clone(),
                    }),
                })
                .collect(),
        ),
        ..Default::default()
    }))
}

pub(super) async fn abort_multipart_upload(
    g: &S3Gateway,
    req: S3Request<AbortMultipartUploadInput>,
) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
    let i = req.input;
    if let Some(t) = &i.if_match_initiated_time {
        let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
        let rec = g.run(move |s| s.upload_record(&id, &b, &k)).await?;
        let want = epoch_seconds(t);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        // A date in the future is ignored, as S3 does.
        if want <= now && want != rec.initiated {
            return Err(S3Error::with_message(
                S3ErrorCode::PreconditionFailed,
                "At least one of the pre-conditions you specified did not hold.",
            ));
        }
    }
    let (id, b, k) = (i.upload_id, i.bucket, i.key);
    g.run(move |s| s.abort_upload(&id, &b, &k)).await?;
    Ok(S3Response::new(AbortMultipartUploadOutput::default()))
}

pub(super) async fn complete_multipart_upload(
    g: &S3Gateway,
    req: S3Request<CompleteMultipartUploadInput>,
) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
    let want = want_checksum_of(&req.headers, true)?;
    let cond = conditions_of(&req);
    let host = req
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost")
        .to_string();
    let taken = req
        .extensions
        .get::<PartChecksums>()
        .map(|p| p.0.clone())
        .unwrap_or_default();
    let who = crate::authz::Caller::of(&req).principal;
    let (i, headers) = (req.input, req.headers);
    let kind = checksum_type(i.checksum_type.as_ref())?;
    let size = mp_object_size(&headers)?;
    let parts = i.multipart_upload.and_then(|m| m.parts).unwrap_or_default();
    let PartList {
        requested,
        checksums: part_sums,
    } = complete_parts(parts, &taken)?;
    let checks = crate::multipart::CompleteChecks {
        parts: part_sums,
        object: want.value.clone(),
        kind,
        size,
    };
    // Completes of one upload run one at a time, in every gateway on
    // this root (the store's upload lock, held by the plan); a second
    // one waits and then finds the first one's answer.
    let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
    // A retried complete gets the first one's answer, whatever the
    // object's state now.
    let retry = g
        .run(move |s| s.completed_record(&id, &b, &k))
        .await
        .ok()
        .flatten()
        .is_some();
    if !retry {
        g.check_write_conditions(&i.bucket, &i.key, cond.as_ref())
            .await?;
    }
    let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
    let prepared = g
        .run(move |s| s.complete_prepare_with(&id, &b, &k, requested, &checks))
        .await?;
    let plan = match prepared {
        Prepared::Done(r) => {
            access(serde_json::json!({
                "op": "CompleteMultipartUpload", "bucket": r.bucket, "key": r.key,
                "upload_id": i.upload_id, "retry": true, "etag": r.etag,
            }));
            let mut res = with_checksum_header(complete_output(&host, &r), r.checksum.as_ref());
            add_xml_checksum(
                &mut res,
                "CompleteMultipartUploadResult",
                1,
                r.checksum.as_ref(),
            );
            return Ok(res);
        }
        Prepared::Assemble(plan) => plan,
    };
    // Replacing an object under GOVERNANCE retention (a bucket locked
    // without versioning) needs the policy's allowance.
    let (b, k) = (i.bucket.clone(), i.key.clone());
    let bypass = g
        .run(move |s| crate::authz::may_bypass_governance(s, &who, &b, &k, false))
        .await?;
    let mut plan = plan;
    plan.bypass_governance(bypass);
    assemble(g, *plan, (i.upload_id, i.bucket, i.key), host).await
}

/// CompleteMultipartUpload's answer for the completed upload `r`.
fn complete_output(
    host: &str,
    r: &crate::multipart::CompletedRecord,
) -> CompleteMultipartUploadOutput {
    let mut out = CompleteMultipartUploadOutput {
        bucket: Some(r.bucket.clone()),
        key: Some(r.key.clone()),
        e_tag: Some(etag(&r.etag)),
        version_id: r.version_id.clone(),
        location: Some(format!(
            "http://{host}/{}/{}",
            r.bucket,
            list::Encoder::new(Some("url")).enc(&r.key)
        )),
        ..Default::default()
    };
    put_checksum!(out, r.checksum.as_ref());
    out
}

/// Assemble the object of a validated complete (`upload`: its id, bucket
/// and key) on the blocking pool and answer with it.
async fn assemble(
    g: &S3Gateway,
    plan: crate::multipart::Plan,
    upload: (String, String, String),
    host: String,
) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
    let (upload_id, bucket, key) = upload;
    // The plan (and its lock) goes with the work: a client that hangs
    // up does not release the lock while the assembly still runs.
    let store = g.store.clone();
    let mut work = tokio::task::spawn_blocking(move || store.complete_commit(plan));
    let (id, b, k) = (upload_id.clone(), bucket.clone(), key.clone());
    let store = g.store.clone();
    let finish = move |res: crate::Result<(Completed, Option<PartFiles>)>| -> S3Result<CompleteMultipartUploadOutput> {
        // A failure is logged with its S3 code: after the keepalive
        // started, the access log's status (200) cannot say it.
        let c = res.map_err(|e| {
            let err = to_s3_error(e);
            access(serde_json::json!({
                "op": "CompleteMultipartUpload", "bucket": b, "key": k,
                "upload_id": id, "error": err.code().as_str(),
                "status": err.status_code().map(|s| s.as_u16()),
            }));
            err
        })?;
        let (c, parts) = c;
        // The object is committed and recorded: the answer goes now, the
        // part files afterwards (a retried complete answers from the
        // record; a crash leaves them to the sweep).
        if let Some(parts) = parts {
            let (store, id) = (store.clone(), id.clone());
            tokio::task::spawn_blocking(move || {
                if let Err(e) = store.remove_part_files(parts) {
                    log::warn!("upload {id}: part files left for the sweep: {e}");
                }
            });
        }
        access(serde_json::json!({
            "op": "CompleteMultipartUpload", "bucket": c.record.bucket, "key": c.record.key,
            "upload_id": id, "parts": c.record.parts.len(), "size": c.record.size,
            "etag": c.record.etag, "bytes_cloned": c.bytes.cloned,
            "bytes_copied": c.bytes.copied, "bytes_written": c.bytes.written,
            "unaligned_parts": c.unaligned_parts, "ms": c.elapsed.as_secs_f64() * 1e3,
        }));
        Ok(complete_output(&host, &c.record))
    };
    // A complete that clones is done in milliseconds: answer it plainly
    // (an error keeps its HTTP status). One that copies may take long:
    // after `Options::keepalive_after` the response starts and s3s sends whitespace
    // until the XML is ready, as S3 does.
    if let Ok(res) = tokio::time::timeout(g.store.options().keepalive_after, &mut work).await {
        let out = finish(res.map_err(internal)?)?;
        // The record's checksum, for algorithms s3s has no field for.
        let extra = g.completed_checksum(&upload_id, &bucket, &key).await;
        let mut res = with_checksum_header(out, extra.as_ref());
        add_xml_checksum(&mut res, "CompleteMultipartUploadResult", 1, extra.as_ref());
        return Ok(res);
    }
    let fut = async move { finish(work.await.map_err(internal)?) };
    Ok(S3Response::new(CompleteMultipartUploadOutput {
        future: Some(Box::pin(fut)),
        ..Default::default()
    }))
}
