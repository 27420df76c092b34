//! Request bodies into files: streamed on the blocking pool with their
//! MD5 and checksums, trailers checked; the write conditions checked
//! before.

use super::*;
use crate::checksum::UNSUPPORTED_ALGORITHM;

// What a request says about its checksums, checked as S3 checks them.

/// What a request says about its additional checksum.
#[derive(Debug, Default)]
pub(crate) struct WantChecksum {
    /// `x-amz-checksum-*` header: algorithm and value.
    pub value: Option<(Algorithm, String)>,
    /// `x-amz-sdk-checksum-algorithm`.
    pub sdk: Option<Algorithm>,
    /// The algorithm of `x-amz-trailer`.
    pub trailer: Option<Algorithm>,
}

impl WantChecksum {
    /// The algorithm the body's checksum is computed with.
    pub fn algorithm(&self) -> Option<Algorithm> {
        self.value
            .as_ref()
            .map(|v| v.0)
            .or(self.trailer)
            .or(self.sdk)
    }
}

/// The checksum headers of a request, checked as S3 checks them.
pub(crate) fn want_checksum(h: &http::HeaderMap) -> S3Result<WantChecksum> {
    want_checksum_of(h, false)
}

/// [`want_checksum`]; `composite` accepts `BASE64-N` values (the object
/// checksum a CompleteMultipartUpload may give).
pub(crate) fn want_checksum_of(h: &http::HeaderMap, composite: bool) -> S3Result<WantChecksum> {
    let hv = |k: &str| h.get(k).map(|v| v.to_str().unwrap_or("").to_string());
    let mut values = Vec::new();
    for a in crate::checksum::ALL {
        if let Some(v) = hv(&a.header()) {
            values.push((a, v));
        }
    }
    if values.len() > 1 {
        return Err(invalid_request(
            "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
        ));
    }
    let mut w = WantChecksum::default();
    if let Some((a, v)) = values.pop() {
        let bare = match v.rsplit_once('-') {
            Some((b, n)) if composite && n.parse::<u32>().is_ok() => b,
            _ => v.as_str(),
        };
        if crate::checksum::decode(a, bare).is_none() {
            return Err(invalid_request(format!(
                "Value for {} header is invalid.",
                a.header()
            )));
        }
        w.value = Some((a, v));
    }
    if let Some(t) = hv("x-amz-trailer") {
        let a = t
            .trim()
            .strip_prefix("x-amz-checksum-")
            .and_then(Algorithm::parse)
            .ok_or_else(|| {
                invalid_request("The value specified in the x-amz-trailer header is not supported")
            })?;
        w.trailer = Some(a);
    }
    // A checksum in a header and another in the trailer are two as well.
    if w.value.is_some() && w.trailer.is_some() {
        return Err(invalid_request(
            "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
        ));
    }
    if let Some(sdk) = hv("x-amz-sdk-checksum-algorithm") {
        let a = Algorithm::parse(&sdk).ok_or_else(|| invalid_request(UNSUPPORTED_ALGORITHM))?;
        if let Some((v, _)) = &w.value {
            if *v != a {
                return Err(invalid_request(
                    "Value for x-amz-sdk-checksum-algorithm header is invalid.",
                ));
            }
        }
        if let Some(t) = w.trailer {
            if t != a {
                return Err(invalid_request(
                    "Value for x-amz-sdk-checksum-algorithm header is invalid.",
                ));
            }
        }
        if w.value.is_none() && w.trailer.is_none() {
            return Err(invalid_request("x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found."));
        }
        w.sdk = Some(a);
    }
    Ok(w)
}

/// Check a received body's checksum against the header or the trailer.
pub(crate) fn verify_checksum(
    want: &WantChecksum,
    got: &Option<(Algorithm, String)>,
    trailers: Option<Trailers<'_>>,
) -> S3Result<()> {
    let Some((algo, value)) = got else {
        return Ok(());
    };
    let expected = match &want.value {
        Some((a, v)) if a == algo => Some(v.clone()),
        _ if want.trailer == Some(*algo) => {
            let t = trailers
                .and_then(|t| {
                    t.read(|h| {
                        h.get(algo.header())
                            .map(|v| v.to_str().unwrap_or("").to_string())
                    })
                })
                .flatten();
            match t {
                Some(v) if crate::checksum::decode(*algo, &v).is_none() => {
                    return Err(invalid_request(format!(
                        "Value for {} trailing header is invalid.",
                        algo.header()
                    )))
                }
                t => t,
            }
        }
        _ => None,
    };
    if let Some(e) = expected {
        if e.trim() != value {
            return Err(to_s3_error(Error::ChecksumMismatch {
                algorithm: algo.name(),
            }));
        }
    }
    Ok(())
}

/// A trailer `x-amz-trailer` declares must arrive, and one it does not
/// declare must not.
pub(crate) fn check_trailer<T>(want: &WantChecksum, req: &S3Request<T>) -> S3Result<()> {
    let malformed = || {
        S3Error::with_message(
            S3ErrorCode::Custom("MalformedTrailerError".into()),
            "The request contained trailing data that was not well-formed or did not conform to our published schema.",
        )
    };
    let trailers = trailing_of(req);
    if let Some(a) = want.trailer {
        let name = a.header();
        let arrived = trailers
            .and_then(|t| t.read(|h| h.contains_key(name.as_str())))
            .unwrap_or(false);
        if !arrived {
            return Err(with_status(malformed(), http::StatusCode::BAD_REQUEST));
        }
    }
    let undeclared = req.extensions.get::<UndeclaredTrailer>().is_some()
        && trailers
            .and_then(|t| t.read(|h| !h.is_empty()))
            .unwrap_or(false);
    if undeclared {
        return Err(with_status(malformed(), http::StatusCode::BAD_REQUEST));
    }
    Ok(())
}

/// What S3 checks of a body once it is in: its length against
/// `Content-Length`, the trailer, the checksum against the header or the
/// trailer.
pub(crate) fn check_received<T>(
    req: &S3Request<T>,
    want: &WantChecksum,
    got: &Received,
    content_length: Option<i64>,
) -> S3Result<()> {
    if let Some(len) = content_length {
        let size = got.size;
        if len as u64 != size {
            log::debug!("body: {size} bytes of {len}");
            return Err(s3_error!(
                IncompleteBody,
                "You did not provide the number of bytes specified by the Content-Length HTTP header"
            ));
        }
    }
    check_trailer(want, req)?;
    verify_checksum(want, &got.checksum, trailing_of(req))
}

/// [`crate::handler::leftover::drain`] for a body the request is refused
/// before reading.
pub(crate) async fn drain(body: Option<StreamingBlob>) {
    if let Some(body) = body {
        crate::handler::leftover::drain(body).await;
    }
}

/// A body as received.
pub(crate) struct Received {
    pub file: NewFile,
    pub md5: String,
    pub size: u64,
    pub checksum: Option<(Algorithm, String)>,
    /// CRC64NVME when asked for besides `checksum`.
    pub default_crc: Option<String>,
}

impl S3Gateway {
    /// Stream `body` into `file` on the blocking pool, computing its MD5.
    pub(super) async fn receive(
        &self,
        body: Option<StreamingBlob>,
        file: NewFile,
        content_md5: Option<&str>,
        sum: Option<Algorithm>,
        default_crc: bool,
    ) -> S3Result<Received> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(4);
        let writer = tokio::task::spawn_blocking(move || {
            let mut file = file;
            let mut h = md5::Md5::new();
            let mut c = sum.map(Hasher::new);
            // S3's default CRC64NVME, when another checksum is computed.
            let mut d = (default_crc && sum != Some(Algorithm::Crc64Nvme))
                .then(|| Hasher::new(Algorithm::Crc64Nvme));
            let mut n = 0u64;
            while let Some(chunk) = rx.blocking_recv() {
                h.update(&chunk);
                if let Some(c) = &mut c {
                    c.update(&chunk);
                }
                if let Some(d) = &mut d {
                    d.update(&chunk);
                }
                n += chunk.len() as u64;
                file.write_all(&chunk)?;
            }
            let c = c.map(|c| (c.algorithm(), crate::checksum::b64(&c.finish())));
            let d = d.map(|d| crate::checksum::b64(&d.finish()));
            Ok::<_, Error>(Received {
                file,
                md5: hex::encode(h.finalize()),
                size: n,
                checksum: c,
                default_crc: d,
            })
        });
        let mut failed = None;
        if let Some(mut body) = body {
            while let Some(chunk) = body.next().await {
                match chunk {
                    Ok(c) => {
                        if tx.send(c).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
        }
        drop(tx);
        let res = writer.await.map_err(internal)?.map_err(to_s3_error)?;
        if let Some(e) = failed {
            log::debug!("request body: {e}");
            return Err(s3_error!(
                IncompleteBody,
                "The request body terminated unexpectedly"
            ));
        }
        if let Some(want) = content_md5 {
            use crate::checksum::base64_lite::decode;
            let got = hex::decode(&res.md5).unwrap_or_default();
            if decode(want).as_deref() != Some(&got[..]) {
                return Err(to_s3_error(Error::BadDigest {
                    expected: want.to_string(),
                    actual: res.md5,
                }));
            }
        }
        Ok(res)
    }

    /// The object checksum recorded by a finished complete.
    pub(super) async fn completed_checksum(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
    ) -> Option<Checksum> {
        let (id, b, k) = (id.to_string(), bucket.to_string(), key.to_string());
        self.run(move |s| s.completed_record(&id, &b, &k))
            .await
            .ok()
            .flatten()
            .and_then(|r| r.checksum)
    }

    /// S3's conditional writes (see [`Conditions::write`]): checked
    /// before the body is received; a writer racing in between wins.
    pub(super) async fn check_write_conditions(
        &self,
        bucket: &str,
        key: &str,
        cond: Option<&Conditions>,
    ) -> S3Result<()> {
        let Some(cond) = cond.filter(|c| c.has_write()) else {
            return Ok(());
        };
        if cond.write(None) == WriteOutcome::NotImplemented {
            return Err(not_implemented_header());
        }
        let (b, k) = (bucket.to_string(), key.to_string());
        let cur = self.run(move |s| s.stat_object(&b, &k)).await?;
        write_outcome(cond.write(cur.as_ref().map(current)), bucket, key)
    }

    /// `x-amz-copy-source-if-*` on the source object: checked before the
    /// copy; a writer racing in between wins.
    pub(super) async fn check_copy_source(
        &self,
        cond: &Conditions,
        bucket: &str,
        key: &str,
    ) -> S3Result<()> {
        let (b, k) = (bucket.to_string(), key.to_string());
        let Some(info) = self.run(move |s| s.stat_object(&b, &k)).await? else {
            // The copy itself reports the missing source.
            return Ok(());
        };
        read_outcome(cond.copy_source(current(&info)))
    }
}
