//! The system-call filter of the sandbox (S8): what Landlock does not cover.
//!
//! Landlock decides which files may be opened for writing; it does not see metadata calls on
//! files that may be read (`chmod`, `chown`, times, extended attributes, inode flags), calls
//! that act on other processes by pid (`prlimit`, `setpriority`, affinity, scheduling), or —
//! before ABI 4, and for families other than TCP always — the network. This filter refuses
//! those with `EPERM` (so tools fail with an ordinary "Operation not permitted"), inherited by
//! every process the command starts and impossible to lift (`no_new_privs` is set first).
//!
//! Calls on *the calling process itself* stay allowed (`ulimit`, `nice`, `taskset` of a new
//! command): pid 0 means "me", and Landlock's scoping keeps signals inside the sandbox.
//!
//! Trade-off, stated rather than hidden: metadata calls are refused in the scratch directory
//! too, since a filter cannot see paths. A read-only child cannot `chmod +x` a script it wrote
//! (it can still run it as `bash script.sh`).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// What the filter refuses beyond the fixed list: the network, unless the role may use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterOptions {
    /// Allow `socket()` (of every family). Off: no sockets at all (`socketpair` still works).
    pub network: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("this architecture ({0}) has no seccomp filter here")]
    Arch(&'static str),
    #[error("the system-call filter could not be built: {0}")]
    Build(String),
    #[error("the kernel refused the system-call filter: {0}")]
    Apply(String),
}

// Terminal injection: `TIOCSTI` pushes bytes into a terminal's input (typing commands into the
// user's shell), `TIOCLINUX` can too. Refused for writing children as well.
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541c;

/// The only ioctls a read-only command may make: queries of terminals, pipes and descriptors,
/// and of inode flags. Every other request is refused, because ioctls reach past Landlock and
/// the rest of this filter — device files (loop control, `/dev/userfaultfd`, `/dev/kvm`) and
/// file systems (btrfs subvolumes and snapshots, fscrypt policies, verity) act on a
/// descriptor opened for reading. The kernel compares the low 32 bits of the request.
const ALLOWED_IOCTLS: [u64; 14] = [
    0x5401,      // TCGETS
    0x802c_542a, // TCGETS2
    0x5413,      // TIOCGWINSZ
    0x540f,      // TIOCGPGRP
    0x5429,      // TIOCGSID
    0x541b,      // FIONREAD
    0x5421,      // FIONBIO
    0x5450,      // FIONCLEX
    0x5451,      // FIOCLEX
    0x5452,      // FIOASYNC
    0x8008_6601, // FS_IOC_GETFLAGS
    0x8004_6601, // FS_IOC32_GETFLAGS
    0x801c_581f, // FS_IOC_FSGETXATTR
    0x0000_0002, // FIGETBSZ
];

/// Socket types `socketpair` may not make: a datagram pair can `sendto` any pathname socket
/// (journald, `/dev/log`, a daemon's), which `socket()` being refused is meant to prevent.
const NON_STREAM_SOCKET_TYPES: [u64; 6] = [2, 3, 4, 5, 6, 10];

/// `clone` flags that make a new namespace: a user namespace would hand the command a root
/// of its own (and with it mounts over the files it reads).
const NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

/// Calls refused whatever their arguments.
fn always_denied() -> Vec<i64> {
    let mut calls = vec![
        // File metadata.
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        libc::SYS_fchmodat2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        SYS_SETXATTRAT,
        SYS_REMOVEXATTRAT,
        SYS_FILE_SETATTR,
        libc::SYS_mknodat,
        // Other processes' memory and files (Landlock already limits these to the sandbox's
        // own processes; refused outright as a second layer).
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_getfd,
        libc::SYS_kcmp,
        // io_uring performs socket, xattr and file operations without passing this filter.
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        // Namespaces, kernel keyrings, BPF and perf: nothing a read-only command needs.
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        // SysV IPC outlives the command and reaches the user's other segments, queues and
        // semaphores by id.
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_shmctl,
        libc::SYS_msgget,
        libc::SYS_msgsnd,
        libc::SYS_msgrcv,
        libc::SYS_msgctl,
        libc::SYS_semget,
        libc::SYS_semop,
        libc::SYS_semtimedop,
        libc::SYS_semctl,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
        libc::SYS_mknod,
    ]);
    calls
}

// Newer than some libc releases name: the numbers are the same on every architecture that
// uses the generic table (x86_64 included).
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;
// The new mount API (Linux 5.2+; `mount_setattr` 5.12), generic table numbers.
const SYS_OPEN_TREE: i64 = 428;
const SYS_MOVE_MOUNT: i64 = 429;
const SYS_FSOPEN: i64 = 430;
const SYS_FSCONFIG: i64 = 431;
const SYS_FSMOUNT: i64 = 432;
const SYS_FSPICK: i64 = 433;
const SYS_MOUNT_SETATTR: i64 = 442;
/// Linux 6.17: sets inode flags (immutable, append-only) and project ids by path.
const SYS_FILE_SETATTR: i64 = 469;

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, FilterError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
        .map_err(|e| FilterError::Build(e.to_string()))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, FilterError> {
    SeccompRule::new(conditions).map_err(|e| FilterError::Build(e.to_string()))
}

/// A rule that matches when argument `arg` (a pid or "who") is not 0, i.e. not the caller.
fn not_self(arg: u8) -> Result<SeccompRule, FilterError> {
    rule(vec![cond(arg, SeccompCmpOp::Ne, 0)?])
}

/// The rules: syscall number → the argument patterns that are refused (empty: always).
fn rules(options: FilterOptions) -> Result<BTreeMap<i64, Vec<SeccompRule>>, FilterError> {
    let mut map = process_rules()?;
    for call in always_denied() {
        map.insert(call, Vec::new());
    }
    let clones = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| rule(vec![cond(0, SeccompCmpOp::MaskedEq(flag), flag)?]))
        .collect::<Result<Vec<_>, _>>()?;
    map.insert(libc::SYS_clone, clones);
    // One rule whose conditions all hold — the request is none of the allowed ones — refuses.
    let not_allowed = ALLOWED_IOCTLS
        .iter()
        .map(|&request| cond(1, SeccompCmpOp::Ne, request))
        .collect::<Result<Vec<_>, _>>()?;
    map.insert(libc::SYS_ioctl, vec![rule(not_allowed)?]);
    // A lease makes every other opener of the file wait (up to lease-break-time, 45 s): a
    // read-only command could stall cadre's own edits of a project file.
    map.insert(
        libc::SYS_fcntl,
        vec![rule(vec![cond(
            1,
            SeccompCmpOp::Eq,
            libc::F_SETLEASE as u64,
        )?])?],
    );
    if !options.network {
        map.insert(libc::SYS_socket, Vec::new());
        let pairs = NON_STREAM_SOCKET_TYPES
            .iter()
            .map(|&t| rule(vec![cond(1, SeccompCmpOp::MaskedEq(0xf), t)?]))
            .collect::<Result<Vec<_>, _>>()?;
        map.insert(libc::SYS_socketpair, pairs);
    }
    Ok(map)
}

/// What a writing child may not do either: change another process's limits, priority,
/// affinity or scheduling.
fn process_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, FilterError> {
    let mut map: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // Limits, scheduling and affinity of another process: refused; of the caller: allowed.
    for call in [
        libc::SYS_prlimit64,
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
        libc::SYS_migrate_pages,
        libc::SYS_move_pages,
    ] {
        map.insert(call, vec![not_self(0)?]);
    }
    // setpriority(which, who, prio) and ioprio_set(which, who, prio): only "this process"
    // (PRIO_PROCESS = 0, IOPRIO_WHO_PROCESS = 1) with who = 0. `who = 0` with a group or user
    // `which` would mean the caller's whole group or user, cadre included.
    map.insert(
        libc::SYS_setpriority,
        vec![
            rule(vec![cond(0, SeccompCmpOp::Ne, libc::PRIO_PROCESS as u64)?])?,
            not_self(1)?,
        ],
    );
    map.insert(
        libc::SYS_ioprio_set,
        vec![rule(vec![cond(0, SeccompCmpOp::Ne, 1)?])?, not_self(1)?],
    );
    Ok(map)
}

fn arch() -> Result<TargetArch, FilterError> {
    std::env::consts::ARCH
        .try_into()
        .map_err(|_| FilterError::Arch(std::env::consts::ARCH))
}

/// The filter of a writing child (see `WRITER_ARG`): [`process_rules`], the
/// terminal-injection ioctls, packet and raw sockets (they read other processes' traffic:
/// a sibling's `Authorization` header to a plain-HTTP provider), device nodes, and mounts (its
/// read-only paths are mounts; an unmount would lift them). Other ioctls stay (a writer owns
/// its files).
fn writer_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, FilterError> {
    let mut map = process_rules()?;
    map.insert(
        libc::SYS_socket,
        vec![
            rule(vec![cond(0, SeccompCmpOp::Eq, libc::AF_PACKET as u64)?])?,
            rule(vec![cond(
                1,
                SeccompCmpOp::MaskedEq(0xf),
                libc::SOCK_RAW as u64,
            )?])?,
        ],
    );
    // Device nodes only: FIFOs and sockets in the project stay possible (`mkfifo` in a test).
    let devices = |arg: u8| -> Result<Vec<SeccompRule>, FilterError> {
        [libc::S_IFCHR, libc::S_IFBLK]
            .iter()
            .map(|&kind| {
                rule(vec![cond(
                    arg,
                    SeccompCmpOp::MaskedEq(libc::S_IFMT as u64),
                    kind as u64,
                )?])
            })
            .collect()
    };
    map.insert(libc::SYS_mknodat, devices(2)?);
    #[cfg(target_arch = "x86_64")]
    map.insert(libc::SYS_mknod, devices(1)?);
    for call in [
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        SYS_OPEN_TREE,
        SYS_MOVE_MOUNT,
        SYS_FSOPEN,
        SYS_FSCONFIG,
        SYS_FSMOUNT,
        SYS_FSPICK,
        SYS_MOUNT_SETATTR,
    ] {
        map.insert(call, Vec::new());
    }
    let ioctls = [TIOCSTI, TIOCLINUX]
        .iter()
        .map(|&request| rule(vec![cond(1, SeccompCmpOp::Eq, request)?]))
        .collect::<Result<Vec<_>, _>>()?;
    map.insert(libc::SYS_ioctl, ioctls);
    Ok(map)
}

/// Install the writer filter (and the x32 refusal) after setting `no_new_privs`.
pub fn apply_writer() -> Result<(), FilterError> {
    set_no_new_privs()?;
    let program = compile(writer_rules()?, libc::EPERM)?;
    seccompiler::apply_filter(&program).map_err(|e| FilterError::Apply(e.to_string()))?;
    #[cfg(target_arch = "x86_64")]
    seccompiler::apply_filter(&x32_refusal()).map_err(|e| FilterError::Apply(e.to_string()))?;
    Ok(())
}

#[allow(unsafe_code)]
fn set_no_new_privs() -> Result<(), FilterError> {
    // SAFETY: prctl with integer arguments; it only sets this thread's no_new_privs bit.
    let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(FilterError::Apply(
            std::io::Error::last_os_error().to_string(),
        ))
    }
}

/// One filter: `map`'s patterns answered `errno`, everything else allowed.
fn compile(map: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, FilterError> {
    let filter = SeccompFilter::new(
        map,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch()?,
    )
    .map_err(|e| FilterError::Build(e.to_string()))?;
    BpfProgram::try_from(filter).map_err(|e| FilterError::Build(e.to_string()))
}

/// Compile the two filters: the refusals (`EPERM`), and `clone3` answered `ENOSYS`, whose
/// flags live in memory a filter cannot read — C libraries fall back to `clone`, whose flags
/// the first filter checks.
pub fn build(options: FilterOptions) -> Result<[BpfProgram; 2], FilterError> {
    let refusals = compile(rules(options)?, libc::EPERM)?;
    let clone3 = compile(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        libc::ENOSYS,
    )?;
    Ok([refusals, clone3])
}

/// On x86_64, system calls of the x32 ABI carry the same architecture tag but their numbers
/// have bit 30 set, so a filter keyed on numbers would let `fchmodat` through as
/// `0x40000000 | fchmodat` on kernels with x32 enabled. This filter refuses every such call.
#[cfg(target_arch = "x86_64")]
fn x32_refusal() -> BpfProgram {
    use seccompiler::sock_filter;
    const LD_W_ABS: u16 = 0x20;
    const JMP_JGE_K: u16 = 0x35;
    const JMP_JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const ARCH_OFFSET: u32 = 4;
    const NR_OFFSET: u32 = 0;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    let stmt = |code, k| sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    vec![
        stmt(LD_W_ABS, ARCH_OFFSET),
        // Another architecture: the first filter kills the process; nothing to add here.
        sock_filter {
            code: JMP_JEQ_K,
            jt: 1,
            jf: 0,
            k: AUDIT_ARCH_X86_64,
        },
        stmt(RET_K, RET_ALLOW),
        stmt(LD_W_ABS, NR_OFFSET),
        sock_filter {
            code: JMP_JGE_K,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        stmt(RET_K, RET_ERRNO | libc::EPERM as u32),
        stmt(RET_K, RET_ALLOW),
    ]
}

/// Install the filters on the calling thread (and so on everything it executes). Needs
/// `no_new_privs` (set by the Landlock step) unless the caller has `CAP_SYS_ADMIN`.
pub fn apply(options: FilterOptions) -> Result<(), FilterError> {
    for program in build(options)? {
        seccompiler::apply_filter(&program).map_err(|e| FilterError::Apply(e.to_string()))?;
    }
    #[cfg(target_arch = "x86_64")]
    seccompiler::apply_filter(&x32_refusal()).map_err(|e| FilterError::Apply(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn both_filters_compile_with_and_without_network() {
        for network in [false, true] {
            let [refusals, clone3] = build(FilterOptions { network }).unwrap();
            assert!(!refusals.is_empty());
            assert!(!clone3.is_empty());
        }
        let without = build(FilterOptions { network: false }).unwrap();
        let with = build(FilterOptions { network: true }).unwrap();
        assert!(without[0].len() > with[0].len(), "socket() adds rules");
    }

    #[test]
    fn the_writer_filter_keeps_files_and_sockets_but_not_other_processes() {
        let map = writer_rules().unwrap();
        assert!(map.contains_key(&libc::SYS_prlimit64));
        assert!(map.contains_key(&libc::SYS_setpriority));
        assert!(!map.contains_key(&libc::SYS_fchmodat));
        // Sockets stay, but for packet and raw ones; mknod only for device nodes; no mounts.
        assert_eq!(map[&libc::SYS_socket].len(), 2);
        assert_eq!(map[&libc::SYS_mknodat].len(), 2);
        assert!(map[&libc::SYS_umount2].is_empty());
        assert_eq!(map[&libc::SYS_ioctl].len(), 2);
        assert!(compile(map, libc::EPERM).is_ok());
    }

    #[test]
    fn the_metadata_and_process_calls_are_listed() {
        let denied = always_denied();
        for call in [
            libc::SYS_fchmodat,
            libc::SYS_fchownat,
            libc::SYS_utimensat,
            libc::SYS_setxattr,
            libc::SYS_io_uring_setup,
        ] {
            assert!(denied.contains(&call));
        }
        let map = rules(FilterOptions { network: false }).unwrap();
        assert_eq!(map[&libc::SYS_prlimit64].len(), 1);
        assert_eq!(
            map[&libc::SYS_ioctl].len(),
            1,
            "one rule: none of the allowed"
        );
        assert_eq!(
            map[&libc::SYS_socketpair].len(),
            NON_STREAM_SOCKET_TYPES.len()
        );
        assert!(map.contains_key(&libc::SYS_shmget));
        assert!(map[&libc::SYS_socket].is_empty());
        assert!(
            !rules(FilterOptions { network: true })
                .unwrap()
                .contains_key(&libc::SYS_socket)
        );
    }
}
