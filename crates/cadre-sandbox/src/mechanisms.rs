//! Which of the sandbox's layers this machine enforces, for `cadre doctor` (S8).

use super::SandboxStatus;

/// One layer: whether it is active here, and what that means for a read-only child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mechanism {
    pub name: &'static str,
    pub active: bool,
    pub detail: String,
}

fn layer(name: &'static str, active: bool, on: &str, off: &str) -> Mechanism {
    Mechanism {
        name,
        active,
        detail: if active { on } else { off }.to_string(),
    }
}

/// The layers as the kernel's Landlock ABI and features decide them. Without Landlock no
/// layer matters: read-only roles' bash is refused outright.
pub fn mechanisms(status: &SandboxStatus) -> Vec<Mechanism> {
    let abi = match status {
        SandboxStatus::Enforced { abi } => *abi,
        SandboxStatus::Unavailable { .. } => 0,
    };
    let landlock = abi > 0;
    vec![
        layer(
            "filesystem",
            landlock,
            "Landlock: writes only in the task's scratch directory (and plans with allowPlanFiles)",
            "no usable Landlock: read-only roles' bash is refused",
        ),
        layer(
            "network (Landlock)",
            abi >= 4,
            "TCP bind/connect refused for read-only roles but research",
            "Landlock below ABI 4: TCP is refused by the system-call filter alone",
        ),
        layer(
            "signals and abstract sockets",
            abi >= 6,
            "Landlock scoping: no signal to cadre or any process outside the sandbox",
            "Landlock below ABI 6: a read-only command can signal processes of the same user",
        ),
        layer(
            "system-call filter",
            landlock && seccomp_available(),
            "seccomp: no chmod/chown/utimes/xattr/inode flags, no prlimit/renice/affinity of \
             other processes, no namespaces or io_uring, no sockets without the network",
            "no seccomp: read-only roles' bash is refused",
        ),
        layer(
            "capabilities",
            landlock,
            "all dropped before the command runs (root's included)",
            "not applicable",
        ),
        layer(
            "writing children",
            abi >= 6 && seccomp_available(),
            "their bash writes only the project, its TMPDIR and subagents.writableRoots (git's config and hooks, .cadre/.pi/.claude/.mcp.json read-only), and cannot signal, trace, limit or renice processes outside it (cadre included)",
            "Landlock below ABI 6: writing children's bash can signal the user's processes; limits and priority of others are still refused by the filter",
        ),
        layer(
            "process containment",
            subreaper_available(),
            "a child's bash ends everything it started (setsid, nohup, double forks) with the call",
            "no child subreaper: only the command's process group is ended",
        ),
    ]
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointers; it answers the calling thread's mode, or fails
    // with EINVAL where the kernel has no seccomp.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

#[cfg(not(target_os = "linux"))]
fn seccomp_available() -> bool {
    false
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn subreaper_available() -> bool {
    let mut flag: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int through the pointer, which is valid.
    unsafe {
        libc::prctl(
            libc::PR_GET_CHILD_SUBREAPER,
            &mut flag as *mut libc::c_int,
            0,
            0,
            0,
        ) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn subreaper_available() -> bool {
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_layers_follow_the_abi() {
        let names = |m: &[Mechanism]| {
            m.iter()
                .filter(|m| m.active)
                .map(|m| m.name)
                .collect::<Vec<_>>()
        };
        let none = mechanisms(&SandboxStatus::Unavailable { reason: "x".into() });
        assert!(!names(&none).contains(&"filesystem"));
        let v3 = mechanisms(&SandboxStatus::Enforced { abi: 3 });
        assert!(names(&v3).contains(&"filesystem"));
        assert!(!names(&v3).contains(&"network (Landlock)"));
        let v6 = mechanisms(&SandboxStatus::Enforced { abi: 6 });
        assert!(names(&v6).contains(&"signals and abstract sockets"));
    }
}
