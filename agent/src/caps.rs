//! Capabilities: tripcap is capability-aware, so it can run as an ordinary user from a
//! binary with *permitted* file capabilities (`setcap cap_net_raw,cap_net_admin,cap_ipc_lock+p`).
//!
//! Why `+p` and not `+ep`: a binary whose file capabilities carry the effective bit is
//! "capability-dumb", and the kernel refuses to run it at all (`Operation not permitted`)
//! when the bounding set lacks one of them, as in a container started without
//! `--cap-add NET_ADMIN`. With `+p` the kernel grants what the bounding set allows and
//! [`raise_permitted`] makes those effective at start, before any thread exists: every
//! thread (capture, the RDMA sniffer's verbs calls) inherits them. What is missing shows
//! up where it is needed, as the capture's own permission error.

use std::io;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn get() -> io::Result<[Data; 2]> {
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget(2) with a v3 header writes two Data structs into `data`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(data)
}

/// Makes every permitted capability effective; returns whether anything changed. A
/// process with no permitted capabilities (the usual unprivileged case) or with all of
/// them effective already (root) is left as it is.
pub fn raise_permitted() -> io::Result<bool> {
    let mut data = get()?;
    if data.iter().all(|d| d.effective == d.permitted) {
        return Ok(false);
    }
    for d in &mut data {
        d.effective = d.permitted;
    }
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    // SAFETY: capset(2) with a v3 header reads two Data structs from `data`.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

/// The (effective, permitted) capability bits (bit n = capability n).
#[cfg(test)]
fn current() -> io::Result<(u64, u64)> {
    let data = get()?;
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok((
        join(data[0].effective, data[1].effective),
        join(data[0].permitted, data[1].permitted),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_raising_every_permitted_capability_is_effective() {
        raise_permitted().expect("capset");
        let (effective, permitted) = current().expect("capget");
        assert_eq!(effective, permitted);
        // Nothing left to raise: a second call changes nothing.
        assert!(!raise_permitted().expect("capset"));
    }
}
