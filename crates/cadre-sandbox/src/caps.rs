//! Dropping every capability before the sandboxed command runs (S8).
//!
//! Root is the usual user in containers and CI. Landlock binds root too, but capabilities
//! reach past it in other ways (`CAP_SYS_ADMIN` mounts, `CAP_SYS_RESOURCE` raises limits,
//! `CAP_NET_RAW`, `CAP_SYS_PTRACE`, `CAP_CHOWN`/`CAP_FOWNER` on files it does not own). So
//! the sandbox empties the bounding set (no later `execve` can regain a capability, even of
//! a setuid-root or file-capability binary: `no_new_privs` stops those as well), sets the
//! secure bits that stop uid 0 from receiving capabilities on exec, and clears the effective,
//! permitted, inheritable and ambient sets. Uid 0 stays uid 0 — the owner of root's files —
//! which is why the system-call filter also refuses `chmod`/`chown` on them.

use std::io;

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit capability sets in two 32-bit words.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
/// More than any kernel defines (40 today); `PR_CAPBSET_DROP` answers `EINVAL` past the last.
const MAX_CAPS: libc::c_ulong = 64;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Whether the calling thread holds any effective or permitted capability.
#[allow(unsafe_code)]
fn holds_capabilities() -> io::Result<bool> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two CapData structs (the version-3 layout) into `data`, which is
    // exactly that size; `header` is a valid, initialised version-3 header.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(data.iter().any(|d| d.effective != 0 || d.permitted != 0))
}

/// Drop every capability for good. A process without any is left as it is (nothing to drop,
/// and setting secure bits would need the capability it lacks).
#[allow(unsafe_code)]
pub fn drop_all() -> io::Result<()> {
    if !holds_capabilities()? {
        return Ok(());
    }
    // SAFETY: prctl with these integer options reads and changes only this thread's
    // credentials; no pointers are passed.
    unsafe {
        let bits = SECBIT_NOROOT
            | SECBIT_NOROOT_LOCKED
            | SECBIT_NO_SETUID_FIXUP
            | SECBIT_NO_SETUID_FIXUP_LOCKED
            | SECBIT_NO_CAP_AMBIENT_RAISE
            | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        if libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        for cap in 0..MAX_CAPS {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return Err(e);
            }
        }
        let clear = libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong;
        if libc::prctl(libc::PR_CAP_AMBIENT, clear, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: capset reads two CapData structs from `data` (all zero: no capabilities) and a
    // valid version-3 header.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if holds_capabilities()? {
        return Err(io::Error::other(
            "capabilities are still held after dropping them",
        ));
    }
    Ok(())
}

/// Capabilities a writing child's command loses even as root: they reach the kernel itself —
/// modules, BPF programs and probes, raw I/O, mounts and namespaces, the clock, reboot,
/// auditing and MAC policy, limits and priorities beyond its own, ptrace of any process, raw
/// and packet sockets, device nodes, file capabilities — and none is needed to edit a project. Everything else (owning and writing files) stays.
const KERNEL_CAPS: [libc::c_ulong; 23] = [
    9,  // LINUX_IMMUTABLE
    12, // NET_ADMIN
    13, // NET_RAW: packet sockets read every interface's traffic, a sibling's headers too
    27, // MKNOD: a device node made in the project opens the device it names
    31, // SETFCAP: file capabilities set on a project binary the user later runs
    16, // SYS_MODULE
    17, // SYS_RAWIO
    19, // SYS_PTRACE
    20, // SYS_PACCT
    21, // SYS_ADMIN
    22, // SYS_BOOT
    23, // SYS_NICE
    24, // SYS_RESOURCE
    25, // SYS_TIME
    29, // AUDIT_WRITE
    30, // AUDIT_CONTROL
    32, // MAC_OVERRIDE
    33, // MAC_ADMIN
    34, // SYSLOG
    35, // WAKE_ALARM
    38, // PERFMON
    39, // BPF
    40, // CHECKPOINT_RESTORE
];

/// Drop [`KERNEL_CAPS`] for good: from the bounding set (no later exec regains them) and from
/// the effective, permitted, inheritable and ambient sets. Nothing to do without them.
#[allow(unsafe_code)]
pub fn drop_kernel_caps() -> io::Result<()> {
    if !holds_capabilities()? {
        return Ok(());
    }
    for cap in KERNEL_CAPS {
        // SAFETY: integer prctl calls that only lower this thread's capabilities; EINVAL
        // means the kernel does not know this capability, which is then not held either.
        unsafe {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINVAL) {
                    return Err(e);
                }
            }
            let lower = libc::PR_CAP_AMBIENT_LOWER as libc::c_ulong;
            libc::prctl(libc::PR_CAP_AMBIENT, lower, cap, 0, 0);
        }
    }
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two version-3 CapData structs into `data`.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    for cap in KERNEL_CAPS {
        let (word, bit) = ((cap / 32) as usize, 1u32 << (cap % 32));
        data[word].effective &= !bit;
        data[word].permitted &= !bit;
        data[word].inheritable &= !bit;
    }
    // SAFETY: capset reads the header and two CapData structs, only lowering capabilities.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
