use super::*;

fn body(chunks: Vec<&'static [u8]>) -> BodyStream {
    Box::pin(futures_util::stream::iter(
        chunks.into_iter().map(|c| Ok(Bytes::from_static(c))),
    ))
}

/// A form of `fields` and a file, cut into chunks of `n` bytes.
fn form(fields: &[(&str, &str)], file: &[u8], n: usize) -> BodyStream {
    let mut b = Vec::new();
    for (k, v) in fields {
        b.extend_from_slice(
            format!("--XyZ\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n")
                .as_bytes(),
        );
    }
    b.extend_from_slice(
        b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\n",
    );
    b.extend_from_slice(file);
    b.extend_from_slice(b"\r\n--XyZ--\r\nafter the end");
    let chunks: Vec<Result<Bytes, s3s::StdError>> =
        b.chunks(n).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
    Box::pin(futures_util::stream::iter(chunks))
}

async fn file_of(mut b: BodyStream, range: (u64, u64)) -> (Fields, Result<Vec<u8>, FileError>) {
    let (fields, first) = read_fields(&mut b, "XyZ", LIMITS).await.unwrap();
    let mut f = FileBody::new(b, first, "XyZ", range);
    let verdict = f.verdict();
    let mut out = Vec::new();
    while let Some(c) = f.next().await {
        match c {
            Ok(c) => out.extend_from_slice(&c),
            Err(_) => {
                let v = *verdict.lock().unwrap();
                return (fields, Err(v.unwrap()));
            }
        }
    }
    (fields, Ok(out))
}

#[tokio::test]
async fn fields_and_file_in_any_chunking() {
    // A file holding the start of its boundary, but not all of it (a
    // sender picks a boundary its content does not hold, RFC 2046).
    let file = b"line one\r\n--XyY\r\n--X\r\n-\r";
    for n in [1, 2, 3, 7, 64, 4096] {
        let (fields, got) = file_of(
            form(&[("Key", "a/${filename}"), ("policy", "e30=")], file, n),
            (0, u64::MAX),
        )
        .await;
        assert_eq!(got.unwrap(), file, "chunks of {n}");
        assert_eq!(fields.get("key"), Some("a/${filename}"));
        assert_eq!(fields.get("policy"), Some("e30="));
        assert_eq!(fields.file_name.as_deref(), Some("a.txt"));
    }
}

#[tokio::test]
async fn content_length_range_is_counted() {
    let (_, got) = file_of(form(&[], b"0123456789", 3), (0, 5)).await;
    assert_eq!(got, Err(FileError::TooLarge { size: 10, max: 5 }));
    let (_, got) = file_of(form(&[], b"hi", 3), (100, 1024)).await;
    assert_eq!(got, Err(FileError::TooSmall { size: 2, min: 100 }));
    let (_, got) = file_of(form(&[], b"12345", 3), (5, 5)).await;
    assert_eq!(got.unwrap(), b"12345");
}

#[tokio::test]
async fn a_file_without_its_closing_boundary_fails() {
    let b = body(vec![
        b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n",
        b"data that never ends",
    ]);
    let mut b = b;
    let (_, first) = read_fields(&mut b, "XyZ", LIMITS).await.unwrap();
    let mut f = FileBody::new(b, first, "XyZ", (0, u64::MAX));
    let v = f.verdict();
    while let Some(Ok(_)) = f.next().await {}
    assert_eq!(*v.lock().unwrap(), Some(FileError::Unterminated));
}

async fn refusal(mut b: BodyStream) -> String {
    read_fields(&mut b, "XyZ", LIMITS)
        .await
        .unwrap_err()
        .code
        .to_string()
}

#[tokio::test]
async fn fields_are_bounded() {
    let big = "x".repeat(LIMITS.max_field + 1);
    let big: &'static str = Box::leak(big.into_boxed_str());
    assert_eq!(
        refusal(form(&[("policy", big)], b"", 4096)).await,
        "MaxPostPreDataLengthExceededError"
    );
    let names: Vec<String> = (0..=LIMITS.max_fields)
        .map(|i| format!("x-ignore-{i}"))
        .collect();
    let many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
    assert_eq!(
        refusal(form(&many, b"", 4096)).await,
        "MaxPostPreDataLengthExceededError"
    );
    // Headers that never end are bounded too.
    let endless: &'static [u8] = Box::leak(vec![b'a'; 1 << 20].into_boxed_slice());
    assert_eq!(
        refusal(body(vec![
            b"--XyZ\r\nContent-Disposition: form-data; name=\"k\"",
            endless
        ]))
        .await,
        "MaxPostPreDataLengthExceededError"
    );
}

#[tokio::test]
async fn malformed_forms_are_refused() {
    assert_eq!(
        refusal(body(vec![b"no boundary at all"])).await,
        "MalformedPOSTRequest"
    );
    // The form ends without a file.
    assert_eq!(refusal(form_without_file()).await, "InvalidArgument");
    assert_eq!(
        refusal(body(vec![
            b"--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--"
        ]))
        .await,
        "MalformedPOSTRequest"
    );
    assert_eq!(
        refusal(form(&[("key", "a"), ("KEY", "b")], b"", 4096)).await,
        "InvalidArgument"
    );
}

fn form_without_file() -> BodyStream {
    body(vec![
        b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--XyZ--\r\n",
    ])
}

#[test]
fn part_names_and_quoted_parameters() {
    assert_eq!(
        part_names("Content-Disposition: form-data; name=\"a;b\"; filename=\"x \\\"y\\\".txt\""),
        Some(("a;b".into(), Some("x \"y\".txt".into())))
    );
    assert_eq!(
        part_names("content-disposition: FORM-DATA; name=key"),
        Some(("key".into(), None))
    );
    assert_eq!(
        part_names("Content-Disposition: attachment; name=\"k\""),
        None
    );
}
