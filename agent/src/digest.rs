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
}
