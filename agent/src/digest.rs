//! Content digests: the SHA-256 that travels with every uploaded file, so the
//! collector can refuse a corrupted one.
//!
//! A leaf module: it imports nothing from the crate.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// SHA-256 (hex) and length of a file, read in 1 MiB pieces.
pub fn sha256_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        len += n as u64;
    }
    Ok((len, hex::encode(h.finalize())))
}

/// A file's length and SHA-256 (hex), and the MD5 of each `part_size`
/// piece of it (what an S3 multipart upload sends as `Content-MD5`), in one read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartDigests {
    /// Bytes.
    pub len: u64,
    /// SHA-256 of the whole file, hex.
    pub sha256: String,
    /// The piece size the MD5s are for.
    pub part_size: u64,
    /// MD5 of each piece, in order (one for a file no larger than a piece,
    /// including an empty one).
    pub part_md5: Vec<[u8; 16]>,
}

/// [`PartDigests`] of the file at `path` for pieces of `part_size` bytes.
pub fn part_digests(path: &Path, part_size: u64) -> std::io::Result<PartDigests> {
    use md5::Md5;
    let part_size = part_size.max(1);
    let mut f = std::fs::File::open(path)?;
    let mut whole = Sha256::new();
    let mut part = Md5::new();
    let mut in_part = 0u64;
    let mut part_md5 = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        whole.update(&buf[..n]);
        len += n as u64;
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let take = rest.len().min((part_size - in_part) as usize);
            part.update(&rest[..take]);
            in_part += take as u64;
            rest = &rest[take..];
            if in_part == part_size {
                part_md5.push(part.finalize_reset().into());
                in_part = 0;
            }
        }
    }
    if in_part > 0 || part_md5.is_empty() {
        part_md5.push(part.finalize().into());
    }
    Ok(PartDigests {
        len,
        sha256: hex::encode(whole.finalize()),
        part_size,
        part_md5,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_of_abc() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        std::fs::write(&p, b"abc").expect("write");
        let (len, hex) = super::sha256_file(&p).expect("digest");
        assert_eq!(len, 3);
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn part_md5s_cover_the_file_in_pieces() {
        use md5::{Digest, Md5};
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let data: Vec<u8> = (0..2_500_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).expect("write");
        let d = super::part_digests(&p, 1_000_000).expect("digest");
        assert_eq!(d.len, 2_500_000);
        assert_eq!(d.sha256, super::sha256_file(&p).expect("sha").1);
        let want: Vec<[u8; 16]> = data
            .chunks(1_000_000)
            .map(|c| Md5::digest(c).into())
            .collect();
        assert_eq!(d.part_md5, want);
        let exact = super::part_digests(&p, 500_000).expect("digest");
        assert_eq!(exact.part_md5.len(), 5);
        std::fs::write(&p, b"").expect("write");
        let empty = super::part_digests(&p, 10).expect("digest");
        assert_eq!(empty.part_md5, vec![<[u8; 16]>::from(Md5::digest(b""))]);
    }
}
