//! Descriptors a process was started with, beyond stdin, stdout and stderr, are never passed
//! on (S8): a descriptor cadre inherited — an IDE's log file, a make jobserver pipe, a file a
//! CI runner left open — would let a sandboxed command write through it, past Landlock, which
//! checks only `open()`.

/// Mark every descriptor from 3 up close-on-exec: `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`
/// where the kernel has it (5.11+), otherwise one `fcntl` per descriptor listed in
/// `/proc/self/fd`. Descriptors stay usable in this process; programs it executes get none.
#[allow(unsafe_code)]
pub fn close_inherited_on_exec() {
    #[cfg(target_os = "linux")]
    {
        const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
        // SAFETY: close_range takes integers and only changes descriptor flags.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            )
        };
        if rc == 0 {
            return;
        }
    }
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<libc::c_int> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd >= 3)
        .collect();
    for fd in fds {
        // SAFETY: fcntl on a descriptor number only reads and sets its flags; a number that
        // was the directory listing's own (now closed) descriptor fails harmlessly.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}
