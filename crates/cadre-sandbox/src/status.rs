//! Whether this kernel can sandbox read-only roles.

use std::fmt;

/// Landlock ABI 3 (Linux 6.2) is the first that denies truncation; below it `truncate -s0 f`
/// would still destroy a file, so older kernels count as unavailable.
pub const MIN_LANDLOCK_ABI: i32 = 3;

/// What `cadre doctor` reports and what decides whether read-only roles may run bash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Landlock is usable: bash of read-only roles runs in the kernel sandbox.
    Enforced { abi: i32 },
    /// No usable Landlock: bash of read-only roles is refused, never run unsandboxed.
    Unavailable { reason: String },
}

impl SandboxStatus {
    pub fn is_enforced(&self) -> bool {
        matches!(self, SandboxStatus::Enforced { .. })
    }
}

impl fmt::Display for SandboxStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxStatus::Enforced { abi } => write!(f, "Landlock ABI {abi} (enforced)"),
            SandboxStatus::Unavailable { reason } => write!(f, "unavailable: {reason}"),
        }
    }
}

/// Ask the kernel which Landlock ABI it offers (one system call, nothing is restricted).
pub fn landlock_status() -> SandboxStatus {
    #[cfg(target_os = "linux")]
    {
        from_probe(probe_abi())
    }
    #[cfg(not(target_os = "linux"))]
    {
        SandboxStatus::Unavailable {
            reason: "Landlock is a Linux feature".into(),
        }
    }
}

/// `Ok(abi)` or `Err(errno)` of `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn probe_abi() -> Result<i32, i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the kernel only returns
    // the ABI version (or an error); no memory is read or written and no descriptor is created.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if ret < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(i32::try_from(ret).unwrap_or(i32::MAX))
    }
}

#[cfg(target_os = "linux")]
fn from_probe(probe: Result<i32, i32>) -> SandboxStatus {
    let reason = match probe {
        Ok(abi) if abi >= MIN_LANDLOCK_ABI => return SandboxStatus::Enforced { abi },
        Ok(abi) => format!(
            "the kernel offers Landlock ABI {abi}, but ABI {MIN_LANDLOCK_ABI} (Linux 6.2) is \
             needed to deny truncating files"
        ),
        Err(libc::EOPNOTSUPP) => {
            "Landlock is built into the kernel but not enabled (add `landlock` to the `lsm=` \
             boot parameter)"
                .into()
        }
        Err(libc::ENOSYS) => "the kernel has no Landlock support (Linux 5.13 or later)".into(),
        Err(errno) => format!(
            "probing Landlock failed: {}",
            std::io::Error::from_raw_os_error(errno)
        ),
    };
    SandboxStatus::Unavailable { reason }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn probe_results_map_to_statuses() {
        assert_eq!(from_probe(Ok(3)), SandboxStatus::Enforced { abi: 3 });
        assert_eq!(from_probe(Ok(7)), SandboxStatus::Enforced { abi: 7 });
        let unavailable = |p| match from_probe(p) {
            SandboxStatus::Unavailable { reason } => reason,
            other => panic!("{other:?}"),
        };
        assert!(unavailable(Ok(2)).contains("ABI 2"));
        assert!(unavailable(Ok(1)).contains("ABI 3"));
        assert!(unavailable(Err(libc::EOPNOTSUPP)).contains("not enabled"));
        assert!(unavailable(Err(libc::ENOSYS)).contains("no Landlock support"));
        assert!(unavailable(Err(libc::EPERM)).contains("probing Landlock failed"));
    }

    #[test]
    fn display() {
        assert_eq!(
            SandboxStatus::Enforced { abi: 4 }.to_string(),
            "Landlock ABI 4 (enforced)"
        );
        assert!(SandboxStatus::Enforced { abi: 4 }.is_enforced());
        let u = SandboxStatus::Unavailable { reason: "x".into() };
        assert_eq!(u.to_string(), "unavailable: x");
        assert!(!u.is_enforced());
    }

    #[test]
    fn probing_does_not_fail_outright() {
        // Whatever this kernel offers, the answer is one of the two states with a reason.
        match landlock_status() {
            SandboxStatus::Enforced { abi } => assert!(abi >= MIN_LANDLOCK_ABI),
            SandboxStatus::Unavailable { reason } => assert!(!reason.is_empty()),
        }
    }
}
