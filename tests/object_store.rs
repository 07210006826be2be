//! Object storage (S3) against a real Ceph RGW on 127.0.0.1
//! ([`common::rgw`]; `.ci/run` installs `ceph-mon ceph-osd radosgw ceph-common`).
//!
//! Every test that needs RGW goes in this binary: the cluster starts once per
//! test process and the tests here share it (each in its own bucket), so the
//! suite pays its start once; a test in another binary would start a second
//! cluster. A test that stops RGW takes it exclusively
//! ([`common::rgw::use_exclusively`]) so the others never see it down.
//!
//! The first tests check the fixture itself: what the tests of the upload rely
//! on (signatures checked, objects read back as stored, RGW stopped and started
//! again with its data).

mod common;

use std::net::TcpStream;

use common::rgw::{use_exclusively, use_shared};

/// `n` bytes that are not all alike (a pattern RGW could not pass by chance).
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
        .collect()
}

#[test]
fn an_object_put_with_curl_reads_back_byte_identical() {
    let rgw = use_shared();
    let bucket = rgw.fresh_bucket("roundtrip");
    let data = pattern(3 * 1024 * 1024 + 17, 7);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("object.bin");
    std::fs::write(&file, &data).expect("write the object");
    let put = rgw.curl(&[
        "-T",
        file.to_str().expect("UTF-8 path"),
        &rgw.url(&format!("{bucket}/dir/object.bin")),
    ]);
    assert_eq!(put.status, 200, "PUT: {}", put.text());
    let back = rgw.get_object(&bucket, "dir/object.bin");
    assert_eq!(back.len(), data.len());
    assert!(
        back == data,
        "the object read back differs from what was put"
    );

    let missing = rgw.curl(&[&rgw.url(&format!("{bucket}/no-such-key"))]);
    assert_eq!(missing.status, 404, "{}", missing.text());
    assert!(missing.text().contains("NoSuchKey"), "{}", missing.text());
}

#[test]
fn a_wrong_secret_or_an_unknown_key_is_refused() {
    let rgw = use_shared();
    let bucket = rgw.fresh_bucket("refused");
    rgw.put_object(&bucket, "k", b"secret data");
    let url = rgw.url(&format!("{bucket}/k"));

    let wrong_secret = rgw.curl_signed_by(&rgw.access_key, "not-the-secret-key", &[&url]);
    assert_eq!(wrong_secret.status, 403, "{}", wrong_secret.text());
    assert!(
        wrong_secret.text().contains("SignatureDoesNotMatch"),
        "{}",
        wrong_secret.text()
    );
    assert!(!wrong_secret.text().contains("secret data"));

    let unknown = rgw.curl_signed_by("NOSUCHACCESSKEY00000", &rgw.secret_key, &[&url]);
    assert_eq!(unknown.status, 403, "{}", unknown.text());
    assert!(
        unknown.text().contains("InvalidAccessKeyId"),
        "{}",
        unknown.text()
    );

    assert_eq!(rgw.get_object(&bucket, "k"), b"secret data");
}

#[test]
fn multipart_uploads_in_progress_are_listed() {
    let rgw = use_shared();
    let bucket = rgw.fresh_bucket("multipart");
    assert!(
        !rgw.multipart_uploads(&bucket).contains("<Upload>"),
        "a new bucket has no uploads in progress"
    );
    let started = rgw.curl(&[
        "-X",
        "POST",
        &rgw.url(&format!("{bucket}/big.pcap?uploads=")),
    ]);
    assert_eq!(started.status, 200, "{}", started.text());
    let text = started.text();
    let id = text
        .split("<UploadId>")
        .nth(1)
        .and_then(|t| t.split("</UploadId>").next())
        .expect("an UploadId in the answer");
    let listed = rgw.multipart_uploads(&bucket);
    assert!(listed.contains("<Key>big.pcap</Key>"), "{listed}");
    assert!(listed.contains(id), "{listed}");

    let aborted = rgw.curl(&[
        "-X",
        "DELETE",
        &rgw.url(&format!("{bucket}/big.pcap?uploadId={id}")),
    ]);
    assert_eq!(aborted.status, 204, "{}", aborted.text());
    assert!(!rgw.multipart_uploads(&bucket).contains("<Upload>"));
}

#[test]
fn rgw_stopped_refuses_connections_and_started_again_has_the_data() {
    let rgw = use_exclusively();
    let bucket = rgw.fresh_bucket("restart");
    let data = pattern(100_000, 3);
    rgw.put_object(&bucket, "kept", &data);

    rgw.stop_rgw();
    let refused = TcpStream::connect(("127.0.0.1", rgw.port()));
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused),
        "RGW's port still answers: {refused:?}"
    );
    let down = rgw.curl(&[&rgw.url(&format!("{bucket}/kept"))]);
    assert_eq!(
        down.status,
        0,
        "no HTTP answer while stopped: {}",
        down.text()
    );

    rgw.start_rgw();
    assert!(rgw.endpoint().ends_with(&format!(":{}", rgw.port())));
    assert!(
        rgw.get_object(&bucket, "kept") == data,
        "the object read back after the restart differs"
    );
}
