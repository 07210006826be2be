//! A netdev's driver statistics, as `ethtool -S` prints them, read with the `SIOCETHTOOL`
//! ioctl (`ETHTOOL_GSSET_INFO`, `ETHTOOL_GSTRINGS`, `ETHTOOL_GSTATS`; none needs a
//! capability).
//!
//! Why: some discard counters live only here. mlx5 counts the packets the physical port
//! dropped (`rx_discards_phy`: no receive buffer, PFC or buffer thresholds) in its ethtool
//! statistics, not under sysfs; a capture on `mlx5_X` that missed those packets must say so.
//!
//! The ioctl reads the kernel this process runs on, in its network namespace: there is no
//! fake tree for it (tests use a veth pair, whose driver has statistics).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;
/// More than any driver reports (mlx5 has about a thousand with many queues); a bound on
/// what a broken driver could make us allocate.
const MAX_STATS: usize = 1 << 16;

/// `struct ifreq` with the `ifr_data` member of its union (40 bytes on 64-bit Linux).
#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 24 - std::mem::size_of::<*mut libc::c_void>()],
}

/// `struct ethtool_sset_info` asking for one set.
#[repr(C)]
struct SsetInfo {
    cmd: u32,
    reserved: u32,
    sset_mask: u64,
    data: [u32; 1],
}

/// Every statistic of `netdev`, in the driver's order: (`rx_discards_phy`, 12). A netdev
/// whose driver has no statistics (loopback) gives an empty list.
pub fn stats(netdev: &str) -> io::Result<Vec<(String, u64)>> {
    let sock = socket()?;
    let n = count(&sock, netdev)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let names = strings(&sock, netdev, n)?;
    let values = values(&sock, netdev, n)?;
    Ok(names.into_iter().zip(values).collect())
}

/// The statistics of `netdev` whose names are in `wanted`: what `ethtool -S` shows for
/// them. Missing names are absent from the result.
pub fn stats_named(netdev: &str, wanted: &[&str]) -> io::Result<Vec<(String, u64)>> {
    Ok(stats(netdev)?
        .into_iter()
        .filter(|(name, _)| wanted.contains(&name.as_str()))
        .collect())
}

fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned by the OwnedFd from here on.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `SIOCETHTOOL` on `netdev` with `data` as the command buffer.
fn ioctl(sock: &OwnedFd, netdev: &str, data: *mut libc::c_void) -> io::Result<()> {
    let bytes = netdev.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{netdev}` is not an interface name"),
        ));
    }
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data,
        _pad: [0; 24 - std::mem::size_of::<*mut libc::c_void>()],
    };
    for (d, &s) in req.name.iter_mut().zip(bytes) {
        *d = s as libc::c_char;
    }
    // SAFETY: req is a valid ifreq whose data points at a buffer the caller sized for the
    // command it holds; the kernel writes at most that command's documented length.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// How many statistics the driver has (0 when it has none or no ethtool support).
fn count(sock: &OwnedFd, netdev: &str) -> io::Result<usize> {
    let mut info = SsetInfo {
        cmd: ETHTOOL_GSSET_INFO,
        reserved: 0,
        sset_mask: 1 << ETH_SS_STATS,
        data: [0],
    };
    match ioctl(sock, netdev, (&mut info as *mut SsetInfo).cast()) {
        Ok(()) => {}
        // No ethtool operations at all (loopback, some virtual devices).
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return Ok(0),
        Err(e) => return Err(e),
    }
    if info.sset_mask & (1 << ETH_SS_STATS) == 0 {
        return Ok(0);
    }
    let n = info.data[0] as usize;
    if n > MAX_STATS {
        return Err(io::Error::other(format!(
            "{netdev}: the driver reports {n} statistics, more than {MAX_STATS}"
        )));
    }
    Ok(n)
}

fn strings(sock: &OwnedFd, netdev: &str, n: usize) -> io::Result<Vec<String>> {
    // struct ethtool_gstrings { u32 cmd, string_set, len; u8 data[]; } in u32 words.
    let mut buf = vec![0u32; 3 + (n * ETH_GSTRING_LEN).div_ceil(4)];
    buf[0] = ETHTOOL_GSTRINGS;
    buf[1] = ETH_SS_STATS;
    buf[2] = n as u32;
    ioctl(sock, netdev, buf.as_mut_ptr().cast())?;
    let got = (buf[2] as usize).min(n);
    let bytes: Vec<u8> = buf[3..].iter().flat_map(|w| w.to_ne_bytes()).collect();
    Ok(bytes
        .chunks(ETH_GSTRING_LEN)
        .take(got)
        .map(|s| {
            let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
            String::from_utf8_lossy(&s[..end]).into_owned()
        })
        .collect())
}

fn values(sock: &OwnedFd, netdev: &str, n: usize) -> io::Result<Vec<u64>> {
    // struct ethtool_stats { u32 cmd, n_stats; u64 data[]; }: the two u32s fill word 0.
    let mut buf = vec![0u64; 1 + n];
    let header = (u64::from(n as u32) << 32) | u64::from(ETHTOOL_GSTATS);
    buf[0] = if cfg!(target_endian = "little") {
        header
    } else {
        header.rotate_left(32)
    };
    ioctl(sock, netdev, buf.as_mut_ptr().cast())?;
    let [cmd_and_n, data @ ..] = buf.as_slice() else {
        return Ok(Vec::new());
    };
    let got = if cfg!(target_endian = "little") {
        (cmd_and_n >> 32) as usize
    } else {
        (cmd_and_n & 0xffff_ffff) as usize
    };
    Ok(data[..got.min(n)].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_no_statistics_and_bad_names_are_errors() {
        assert_eq!(stats("lo").expect("lo answers"), Vec::new());
        let missing = stats("tripcap-none0").expect_err("no such interface");
        assert_eq!(missing.raw_os_error(), Some(libc::ENODEV), "{missing}");
        assert!(stats("").is_err());
        assert!(stats("a-name-far-too-long-for-ifnamsiz").is_err());
    }
}
