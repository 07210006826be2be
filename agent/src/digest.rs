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
/// piece of it (what an S3 multipart upload sends as `Content-MD5`).
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

/// How many threads [`part_digests`] hashes with, at most: one for the
/// SHA-256 of the whole file (then MD5s), the others MD5s.
const HASH_THREADS: usize = 2;

/// [`PartDigests`] of the file at `path` for pieces of `part_size` bytes.
///
/// MD5 is the slow hash (about 430 MB/s on one core, against 1.1 GB/s for
/// SHA-256 with the CPU's SHA instructions), and one MD5 is a sequential
/// chain; but the pieces' MD5s are independent, so with AVX2 eight pieces of
/// the same length are hashed at once, one per 32-bit lane ([`lanes`]; the
/// MD5s of 1 GiB then take less time than its SHA-256). And with two cores
/// one thread computes the SHA-256 of the whole file while another computes
/// the MD5s: the file is read twice (from the page cache: a capture was just
/// written). A file of one piece is read once, in one thread, for both.
pub fn part_digests(path: &Path, part_size: u64) -> std::io::Result<PartDigests> {
    let part_size = part_size.max(1);
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let parts = len.div_ceil(part_size).max(1);
    if parts < 2 {
        return one_pass(f, part_size);
    }
    // Work: groups of up to eight whole pieces, then the shorter last piece.
    let whole = len / part_size;
    let mut work: Vec<Vec<u64>> = (0..whole)
        .collect::<Vec<_>>()
        .chunks(lanes::LANES)
        .map(<[u64]>::to_vec)
        .collect();
    if whole < parts {
        work.push(vec![whole]);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let md5s = || -> std::io::Result<Vec<(u64, [u8; 16])>> {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(group) = work.get(i) else {
                return Ok(done);
            };
            let piece_len = part_size.min(len - group[0] * part_size);
            let offsets: Vec<u64> = group.iter().map(|p| p * part_size).collect();
            let digests = lanes::md5_of_ranges(&f, &offsets, piece_len)?;
            done.extend(group.iter().copied().zip(digests));
        }
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(HASH_THREADS);
    let (sha256, mut pieces) = std::thread::scope(|s| {
        let helper = (threads > 1).then(|| s.spawn(md5s));
        let sha256 = sha256_of_range(&f, len)?;
        let mut pieces = md5s()?;
        if let Some(helper) = helper {
            match helper.join() {
                Ok(theirs) => pieces.extend(theirs?),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok::<_, std::io::Error>((sha256, pieces))
    })?;
    pieces.sort_unstable_by_key(|(i, _)| *i);
    debug_assert_eq!(pieces.len() as u64, parts);
    Ok(PartDigests {
        len,
        sha256,
        part_size,
        part_md5: pieces.into_iter().map(|(_, d)| d).collect(),
    })
}

/// `len` bytes of `f` from `offset` in 1 MiB reads; fails if the file is shorter.
fn read_range(
    f: &std::fs::File,
    offset: u64,
    len: u64,
    mut take: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 1 << 20];
    let mut at = offset;
    let end = offset + len;
    while at < end {
        let want = (end - at).min(buf.len() as u64) as usize;
        let n = f.read_at(&mut buf[..want], at)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file became shorter while it was hashed",
            ));
        }
        take(&buf[..n]);
        at += n as u64;
    }
    Ok(())
}

/// SHA-256 (hex) of the first `len` bytes of `f`.
fn sha256_of_range(f: &std::fs::File, len: u64) -> std::io::Result<String> {
    let mut h = Sha256::new();
    read_range(f, 0, len, |b| h.update(b))?;
    Ok(hex::encode(h.finalize()))
}

/// MD5 of `len` bytes of `f` from `offset`.
fn md5_of_range(f: &std::fs::File, offset: u64, len: u64) -> std::io::Result<[u8; 16]> {
    let mut h = md5::Md5::new();
    read_range(f, offset, len, |b| h.update(b))?;
    Ok(h.finalize().into())
}

/// [`part_digests`] in one thread and one read of the file.
fn one_pass(mut f: std::fs::File, part_size: u64) -> std::io::Result<PartDigests> {
    use md5::Md5;
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

/// MD5 of several byte ranges of the same length at once: with AVX2, eight
/// MD5 states side by side in the 32-bit lanes of four 256-bit registers, each
/// step of the 64 done for the eight ranges by one instruction sequence (MD5
/// is a chain of dependent steps, so one range leaves most of a core idle).
/// Without AVX2, or for a single range, md-5's one-at-a-time MD5.
mod lanes {
    use std::fs::File;

    /// Ranges hashed together.
    pub const LANES: usize = 8;
    /// Bytes read per range at a time (a multiple of 64).
    const CHUNK: usize = 256 << 10;

    /// MD5 of the `len` bytes at each offset of `offsets` (at most [`LANES`]) in `f`.
    pub fn md5_of_ranges(f: &File, offsets: &[u64], len: u64) -> std::io::Result<Vec<[u8; 16]>> {
        assert!(offsets.len() <= LANES, "at most {LANES} ranges at once");
        #[cfg(target_arch = "x86_64")]
        if offsets.len() > 1 && std::arch::is_x86_feature_detected!("avx2") {
            return lockstep(f, offsets, len);
        }
        offsets
            .iter()
            .map(|&o| super::md5_of_range(f, o, len))
            .collect()
    }

    /// The ranges in lockstep, 64-byte block by block; the tails padded as MD5
    /// pads (all the same length, so the same number of final blocks).
    #[cfg(target_arch = "x86_64")]
    fn lockstep(f: &File, offsets: &[u64], len: u64) -> std::io::Result<Vec<[u8; 16]>> {
        let k = offsets.len();
        let mut state = [
            [0x6745_2301u32; LANES],
            [0xefcd_ab89; LANES],
            [0x98ba_dcfe; LANES],
            [0x1032_5476; LANES],
        ];
        let mut bufs = vec![vec![0u8; CHUNK]; k];
        let blocks_len = len - len % 64;
        let mut at = 0u64;
        while at < blocks_len {
            let n = (blocks_len - at).min(CHUNK as u64) as usize;
            for (buf, &o) in bufs.iter_mut().zip(offsets) {
                read_exact_at(f, &mut buf[..n], o + at)?;
            }
            compress(&mut state, &bufs, n / 64);
            at += n as u64;
        }
        // The tails: the last len % 64 bytes, 0x80, zeros, the length in bits.
        let tail = (len % 64) as usize;
        let padded = if tail < 56 { 64 } else { 128 };
        for (buf, &o) in bufs.iter_mut().zip(offsets) {
            read_exact_at(f, &mut buf[..tail], o + blocks_len)?;
            buf[tail..padded].fill(0);
            buf[tail] = 0x80;
            buf[padded - 8..padded].copy_from_slice(&(len.wrapping_mul(8)).to_le_bytes());
        }
        compress(&mut state, &bufs, padded / 64);
        Ok((0..k)
            .map(|l| {
                let mut d = [0u8; 16];
                for (w, s) in d.chunks_exact_mut(4).zip(&state) {
                    w.copy_from_slice(&s[l].to_le_bytes());
                }
                d
            })
            .collect())
    }

    #[cfg(target_arch = "x86_64")]
    fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        f.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                std::io::Error::new(e.kind(), "the file became shorter while it was hashed")
            } else {
                e
            }
        })
    }

    /// `blocks` 64-byte blocks of each buffer of `bufs` (at most [`LANES`],
    /// each at least that long) into the lanes of `state` (a, b, c, d).
    #[cfg(target_arch = "x86_64")]
    fn compress(state: &mut [[u32; LANES]; 4], bufs: &[Vec<u8>], blocks: usize) {
        assert!(!bufs.is_empty() && bufs.len() <= LANES);
        assert!(bufs.iter().all(|b| b.len() >= blocks * 64));
        // Idle lanes hash the first buffer again; their states are not read.
        let lanes: [&[u8]; LANES] =
            std::array::from_fn(|l| bufs.get(l).unwrap_or(&bufs[0]).as_slice());
        // SAFETY: `lockstep` is only called once AVX2 was detected; every lane
        // holds `blocks` whole blocks (asserted above).
        unsafe { avx2::compress(state, &lanes, blocks) }
    }

    #[cfg(target_arch = "x86_64")]
    mod avx2 {
        use std::arch::x86_64::*;

        use super::LANES;

        /// The additive constants, floor(abs(sin(i + 1)) × 2^32).
        const K: [u32; 64] = [
            0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
            0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
            0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
            0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
            0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
            0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
            0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
            0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
            0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
            0xeb86d391,
        ];
        /// The rotations of each round's four steps.
        const S: [[u32; 4]; 4] = [
            [7, 12, 17, 22],
            [5, 9, 14, 20],
            [4, 11, 16, 23],
            [6, 10, 15, 21],
        ];

        #[inline(always)]
        unsafe fn rotl(x: __m256i, s: u32) -> __m256i {
            let l = _mm256_set1_epi32(s as i32);
            let r = _mm256_set1_epi32(32 - s as i32);
            _mm256_or_si256(_mm256_sllv_epi32(x, l), _mm256_srlv_epi32(x, r))
        }

        /// See [`super::compress`].
        #[target_feature(enable = "avx2")]
        pub unsafe fn compress(
            state: &mut [[u32; LANES]; 4],
            lanes: &[&[u8]; LANES],
            blocks: usize,
        ) {
            let load = |s: &[u32; LANES]| _mm256_loadu_si256(s.as_ptr().cast());
            let (mut a, mut b, mut c, mut d) = (
                load(&state[0]),
                load(&state[1]),
                load(&state[2]),
                load(&state[3]),
            );
            let ones = _mm256_set1_epi32(-1);
            for block in 0..blocks {
                let base = block * 64;
                let m: [__m256i; 16] = std::array::from_fn(|j| {
                    let w = |l: usize| {
                        let at = base + j * 4;
                        let bytes: [u8; 4] = lanes[l][at..at + 4].try_into().expect("4 bytes");
                        u32::from_le_bytes(bytes) as i32
                    };
                    _mm256_setr_epi32(w(0), w(1), w(2), w(3), w(4), w(5), w(6), w(7))
                });
                let (aa, bb, cc, dd) = (a, b, c, d);
                for i in 0..64 {
                    let (f, g) = match i / 16 {
                        0 => (
                            _mm256_xor_si256(d, _mm256_and_si256(b, _mm256_xor_si256(c, d))),
                            i,
                        ),
                        1 => (
                            _mm256_xor_si256(c, _mm256_and_si256(d, _mm256_xor_si256(b, c))),
                            (5 * i + 1) % 16,
                        ),
                        2 => (
                            _mm256_xor_si256(_mm256_xor_si256(b, c), d),
                            (3 * i + 5) % 16,
                        ),
                        _ => (
                            _mm256_xor_si256(c, _mm256_or_si256(b, _mm256_xor_si256(d, ones))),
                            (7 * i) % 16,
                        ),
                    };
                    let sum = _mm256_add_epi32(
                        _mm256_add_epi32(a, f),
                        _mm256_add_epi32(_mm256_set1_epi32(K[i] as i32), m[g]),
                    );
                    let next = _mm256_add_epi32(b, rotl(sum, S[i / 16][i % 4]));
                    a = d;
                    d = c;
                    c = b;
                    b = next;
                }
                a = _mm256_add_epi32(a, aa);
                b = _mm256_add_epi32(b, bb);
                c = _mm256_add_epi32(c, cc);
                d = _mm256_add_epi32(d, dd);
            }
            for (s, v) in state.iter_mut().zip([a, b, c, d]) {
                _mm256_storeu_si256(s.as_mut_ptr().cast(), v);
            }
        }
    }
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
    fn md5s_of_ranges_side_by_side_match_one_at_a_time() {
        use md5::{Digest, Md5};
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let data: Vec<u8> = (0..3_000_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        std::fs::write(&p, &data).expect("write");
        let f = std::fs::File::open(&p).expect("open");
        // Tails of every kind (none, short, 55/56 bytes: one or two padding
        // blocks), and longer than one read; one to eight ranges.
        for len in [1u64, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 300_017] {
            for k in 1..=super::lanes::LANES {
                let offsets: Vec<u64> = (0..k as u64).map(|i| i * 333_331 + i % 3).collect();
                let got = super::lanes::md5_of_ranges(&f, &offsets, len).expect("md5s");
                let want: Vec<[u8; 16]> = offsets
                    .iter()
                    .map(|&o| Md5::digest(&data[o as usize..(o + len) as usize]).into())
                    .collect();
                assert_eq!(got, want, "{k} ranges of {len} bytes");
            }
        }
        let short = super::lanes::md5_of_ranges(&f, &[0, 2_999_000], 2000);
        assert!(short.is_err(), "a range past the end is an error");
    }

    #[test]
    fn many_pieces_are_hashed_in_groups_like_in_one_pass() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let data: Vec<u8> = (0..1_234_567u32).map(|i| (i * 7 % 253) as u8).collect();
        std::fs::write(&p, &data).expect("write");
        // 19 pieces and a short one: groups of 8, 8, 3, and the last piece.
        for piece in [61_728u64, 64_000, 1_234_567, 1_234_566] {
            let d = super::part_digests(&p, piece).expect("digest");
            let one = std::fs::File::open(&p).expect("open");
            assert_eq!(d, super::one_pass(one, piece).expect("digest"), "{piece}");
        }
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
        let one = std::fs::File::open(&p).expect("open");
        assert_eq!(
            super::one_pass(one, 1_000_000).expect("digest"),
            d,
            "two threads and one pass agree"
        );
        let exact = super::part_digests(&p, 500_000).expect("digest");
        assert_eq!(exact.part_md5.len(), 5);
        std::fs::write(&p, b"").expect("write");
        let empty = super::part_digests(&p, 10).expect("digest");
        assert_eq!(empty.part_md5, vec![<[u8; 16]>::from(Md5::digest(b""))]);
    }
}
