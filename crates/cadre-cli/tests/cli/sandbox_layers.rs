//! S7/S8 at the tool level, through the real binary's `__sandbox-exec` and `__supervise`
//! entry points and the real kernel: what Landlock alone does not cover. A read-only command
//! cannot change metadata, act on other processes, open a socket (unless its role may), keep
//! a capability, get a writable rule through a link, make the inspect policy's git run a
//! program the repository names, or leave a process behind. Each attack has a control that
//! shows it works without the layer, so a broken shell cannot pass for a refusal.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cadre_tools::BashTool;
use cadre_tools::sandbox::{SandboxConfig, landlock_status};
use cadre_tools::shell_policy::ShellPolicy;
use serde_json::json;

use crate::harness::have;
use crate::sandbox::{Tree, text};

const CADRE: &str = env!("CARGO_BIN_EXE_cadre");

/// Skip (saying why) where the kernel sandbox cannot run at all.
fn enforced() -> bool {
    let status = landlock_status();
    if !status.is_enforced() {
        eprintln!(
            "SKIPPED: no usable Landlock here ({status}); the refusal path is tested in sandbox.rs"
        );
    }
    status.is_enforced()
}

/// Mode, owner, times and extended attributes of `path`: what a metadata attack changes.
fn metadata(path: &Path) -> (u32, u32, u32, i64, i64, Vec<u8>) {
    let m = std::fs::symlink_metadata(path).unwrap();
    (
        m.mode(),
        m.uid(),
        m.gid(),
        m.mtime(),
        m.mtime_nsec(),
        xattrs(path),
    )
}

#[allow(unsafe_code)]
fn xattrs(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: listxattr writes at most buf.len() bytes into buf.
    let n = unsafe { libc::llistxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(usize::try_from(n).unwrap_or(0));
    buf
}

fn sandboxed(tree: &Tree, network: bool) -> BashTool {
    BashTool::sandboxed(SandboxConfig {
        exe: PathBuf::from(CADRE),
        scratch_dir: tree.scratch.clone(),
        extra_writable: vec![],
        policy: ShellPolicy::Unrestricted,
        network,
    })
}

#[tokio::test]
async fn metadata_cannot_change_from_a_read_only_command() {
    if !enforced() {
        return;
    }
    let tree = Tree::new();
    let file = tree.repo.join("f");
    let tool = sandboxed(&tree, false);
    let before = metadata(&file);
    let mut attacks = vec![
        "chmod 777 f".to_string(),
        "chmod u+s f".into(),
        "touch -d 2000-01-01 f".into(),
        "touch -m f".into(),
        "chown 12345 f".into(),
        "chgrp 12345 f".into(),
    ];
    if have("python3") {
        attacks.push(r#"python3 -c 'import os; os.setxattr("f", "user.x", b"1")'"#.into());
        attacks.push(r#"python3 -c 'import os; os.utime("f", (0, 0))'"#.into());
        attacks.push(r#"python3 -c 'import os; os.chmod("f", 0o777)'"#.into());
        // fchmodat through the x32 system-call table (bit 30): refused, or absent here.
        #[cfg(target_arch = "x86_64")]
        attacks.push(
            r#"python3 -c 'import ctypes, sys; l = ctypes.CDLL(None); sys.exit(l.syscall(0x40000000 | 268, -100, b"f", 0o777) != 0)'"#
                .into(),
        );
    }
    if have("chattr") {
        attacks.push("chattr +i f".into());
    }
    if have("setfattr") {
        attacks.push("setfattr -n user.y -v 1 f".into());
    }
    for command in &attacks {
        let out = tree.run(&tool, command).await;
        assert!(out.is_error, "{command:?} succeeded: {}", text(&out));
        assert_eq!(metadata(&file), before, "{command:?} changed f's metadata");
    }
    // Inside the scratch directory too (a filter cannot see paths): stated in docs/security.md.
    let out = tree
        .run(&tool, "touch \"$TMPDIR/s\" && chmod +x \"$TMPDIR/s\"")
        .await;
    assert!(out.is_error, "{}", text(&out));
    // Control: the same commands work without the sandbox.
    let out = tree
        .run(&BashTool::new(), "chmod 600 f && touch -d 2000-01-01 f")
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_ne!(metadata(&file), before);
    println!("{} metadata attacks refused", attacks.len());
}

fn own_nofile_limit() -> (u64, u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    #[allow(unsafe_code)]
    // SAFETY: getrlimit writes one rlimit struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
    }
    (lim.rlim_cur, lim.rlim_max)
}

/// `$PPID` of the sandboxed bash is this test process (no supervisor is set here).
#[tokio::test]
async fn other_processes_cannot_be_limited_reniced_or_pinned() {
    if !enforced() {
        return;
    }
    let tree = Tree::new();
    let tool = sandboxed(&tree, false);
    let limit = own_nofile_limit();
    let mut attacks = vec![];
    if have("prlimit") {
        attacks.push("prlimit --pid $PPID --nofile=4:4".to_string());
        attacks.push("prlimit --pid $PPID --fsize=1:1".into());
    }
    if have("renice") {
        attacks.push("renice -n 19 -p $PPID".into());
        attacks.push("renice -n 19 -u $(id -u)".into());
        attacks.push("renice -n 19 -g $(ps -o pgid= $PPID 2>/dev/null || echo 0)".into());
    }
    if have("taskset") {
        attacks.push("taskset -p 1 $PPID".into());
    }
    if have("ionice") {
        attacks.push("ionice -c 3 -p $PPID".into());
    }
    if have("python3") {
        attacks.push(
            r#"python3 -c 'import os,resource; resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (4, 4))'"#
                .into(),
        );
        attacks.push(
            r#"python3 -c 'import os; os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)'"#.into(),
        );
    }
    if attacks.is_empty() {
        eprintln!("SKIPPED: neither prlimit, renice, taskset, ionice nor python3 is installed");
        return;
    }
    for command in &attacks {
        let out = tree.run(&tool, command).await;
        assert!(out.is_error, "{command:?} succeeded: {}", text(&out));
        assert_eq!(own_nofile_limit(), limit, "{command:?}");
    }
    // The command's own limits and priority stay its own to change.
    let out = tree
        .run(&tool, "ulimit -n 64 && ulimit -n && nice -n 5 true")
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(text(&out).trim(), "64");
    println!("{} attacks on other processes refused", attacks.len());
}

/// A listener that records whether anything connected within a short bound.
fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

fn connected(l: &TcpListener) -> bool {
    match l.accept() {
        Ok((mut stream, _)) => {
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            let mut buf = [0u8; 16];
            let _ = stream.read(&mut buf);
            true
        }
        Err(_) => false,
    }
}

#[tokio::test]
async fn no_network_unless_the_role_may_use_it() {
    if !enforced() {
        return;
    }
    let tree = Tree::new();
    let (l, port) = listener();
    let connect = format!("echo hi > /dev/tcp/127.0.0.1/{port}");
    let out = tree.run(&sandboxed(&tree, false), &connect).await;
    assert!(out.is_error, "{}", text(&out));
    assert!(!connected(&l), "a read-only command reached the listener");
    if have("python3") {
        let py = format!(
            "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'"
        );
        let out = tree.run(&sandboxed(&tree, false), &py).await;
        assert!(out.is_error, "{}", text(&out));
        let udp = "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)'";
        assert!(tree.run(&sandboxed(&tree, false), udp).await.is_error);
        let unix = "python3 -c 'import socket; socket.socket(socket.AF_UNIX)'";
        assert!(tree.run(&sandboxed(&tree, false), unix).await.is_error);
        assert!(!connected(&l));
    }
    // Control: a role with the network (research) reaches the same listener.
    let out = tree.run(&sandboxed(&tree, true), &connect).await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(connected(&l), "the network role could not connect");
}

#[tokio::test]
async fn no_capability_survives_into_the_command() {
    if !enforced() {
        return;
    }
    let tree = Tree::new();
    let out = tree
        .run(
            &sandboxed(&tree, false),
            "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status",
        )
        .await;
    assert!(!out.is_error, "{}", text(&out));
    for line in text(&out).lines() {
        let value = line.split_whitespace().nth(1).unwrap();
        assert_eq!(value, "0000000000000000", "{line}");
    }
    #[allow(unsafe_code)]
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    println!("capabilities checked (running as root: {root})");
}

#[tokio::test]
async fn a_writable_rule_is_never_made_through_a_link() {
    if !enforced() {
        return;
    }
    let tree = Tree::new();
    let outside = tree.root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir_all(tree.repo.join(".cadre")).unwrap();
    let plans = tree.repo.join(".cadre/plans");
    std::os::unix::fs::symlink(&outside, &plans).unwrap();
    let tool = BashTool::sandboxed(SandboxConfig {
        exe: PathBuf::from(CADRE),
        scratch_dir: tree.scratch.clone(),
        extra_writable: vec![plans],
        policy: ShellPolicy::Unrestricted,
        network: false,
    });
    let out = tree.run(&tool, "echo pwned > .cadre/plans/x").await;
    assert!(out.is_error, "{}", text(&out));
    assert!(text(&out).contains("symbolic link"), "{}", text(&out));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

/// The payload writes into the scratch directory — the one place it can — so running it shows.
#[tokio::test]
async fn inspect_git_runs_no_program_the_repository_configures() {
    if !enforced() || !have("git") {
        if !have("git") {
            eprintln!("SKIPPED: git is not installed");
        }
        return;
    }
    let tree = Tree::new();
    let payload = "sh -c 'echo ran >> \"$TMPDIR/ran\"; cat'";
    let config = |k: &str, v: &str| {
        let status = std::process::Command::new("git")
            .args(["config", k, v])
            .current_dir(&tree.repo)
            .status()
            .unwrap();
        assert!(status.success());
    };
    config("core.fsmonitor", payload);
    config("diff.evil.textconv", payload);
    config("filter.evil.clean", payload);
    std::fs::write(
        tree.repo.join(".gitattributes"),
        "* diff=evil filter=evil\n",
    )
    .unwrap();
    // An embedded bare-looking repository, as a repository can commit one.
    let evil = tree.repo.join("sub/evil.git");
    std::fs::create_dir_all(evil.join("objects")).unwrap();
    std::fs::create_dir_all(evil.join("refs/heads")).unwrap();
    std::fs::write(evil.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        evil.join("config"),
        format!("[core]\n\tbare = true\n\tfsmonitor = {payload}\n"),
    )
    .unwrap();
    let tool = BashTool::sandboxed(SandboxConfig {
        exe: PathBuf::from(CADRE),
        scratch_dir: tree.scratch.clone(),
        extra_writable: vec![],
        policy: ShellPolicy::Inspect,
        network: false,
    });
    for command in ["git status", "git diff", "git log -p -1", "git show HEAD"] {
        let out = tree.run(&tool, command).await;
        assert!(
            !tree.scratch.join("ran").exists(),
            "{command:?} ran the payload: {}",
            text(&out)
        );
    }
    // Inside the embedded directory git does not take it for a repository.
    let out = run_in(&tree, &tool, &evil, "git status").await;
    assert!(!tree.scratch.join("ran").exists(), "{}", out);
    // Control: the same repository runs the payload for an unhardened git.
    let unhardened = sandboxed(&tree, false);
    let _ = tree.run(&unhardened, "git status").await;
    assert!(
        tree.scratch.join("ran").exists(),
        "the control did not run the payload"
    );
}

async fn run_in(tree: &Tree, tool: &BashTool, cwd: &Path, command: &str) -> String {
    use cadre_tools::{Tool, ToolContext};
    let ctx = ToolContext {
        cwd: cwd.to_path_buf(),
        cancel: tokio_util::sync::CancellationToken::new(),
        updates: None,
        artifacts_dir: tree.artifacts.clone(),
    };
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        tool.execute(json!({ "command": command }), ctx),
    )
    .await
    .expect("bash call hung");
    text(&out)
}

/// Processes whose command line holds `marker`.
fn with_marker(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
        .collect()
}

/// Wait (bounded) for the marked processes to be gone; kill survivors so no test leaks them.
async fn gone(marker: &str) -> bool {
    for _ in 0..100 {
        if with_marker(marker).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for pid in with_marker(marker) {
        #[allow(unsafe_code)]
        // SAFETY: kill sends a signal to a pid just read from /proc.
        unsafe {
            libc::kill(i32::try_from(pid).unwrap(), libc::SIGKILL);
        }
    }
    false
}

#[tokio::test]
async fn nothing_a_child_command_starts_outlives_its_call() {
    let tree = Tree::new();
    let unique = format!("{}", std::process::id());
    let reaping = BashTool::new()
        .with_supervisor(PathBuf::from(CADRE))
        .with_reaping();
    let cases = [
        (
            "setsid",
            format!("setsid sleep 1000.{unique}1 & echo started"),
        ),
        (
            "nohup",
            format!("nohup sleep 1000.{unique}2 >/dev/null 2>&1 & echo started"),
        ),
        (
            "double fork",
            format!("( ( setsid sleep 1000.{unique}3 & ) & ) ; echo started"),
        ),
    ];
    for (i, (what, command)) in cases.iter().enumerate() {
        let marker = format!("1000.{unique}{}", i + 1);
        let out = tree.run(&reaping, command).await;
        assert!(text(&out).contains("started"), "{what}: {}", text(&out));
        assert!(gone(&marker).await, "{what}: a process outlived its call");
    }
    // On timeout too: the supervisor ends what left the group before the group is killed.
    let marker = format!("1000.{unique}9");
    let out = tree
        .run_with(
            &reaping,
            json!({"command": format!("setsid sleep {marker} & sleep 30"), "timeout": 1}),
        )
        .await;
    assert!(text(&out).contains("timed out"), "{}", text(&out));
    assert!(
        gone(&marker).await,
        "a setsid process outlived a timed-out call"
    );
    // Control: the root's bash keeps background jobs, as Pi's does.
    let marker = format!("1000.{unique}8");
    let root = BashTool::new().with_supervisor(PathBuf::from(CADRE));
    let _ = tree
        .run(&root, &format!("setsid sleep {marker} & echo started"))
        .await;
    assert!(
        !with_marker(&marker).is_empty(),
        "the control's job did not survive"
    );
    assert!(!gone_quickly(&marker), "cleanup");
}

/// Kill the control's process (it is meant to survive): true if it was already gone.
fn gone_quickly(marker: &str) -> bool {
    let pids = with_marker(marker);
    for pid in &pids {
        #[allow(unsafe_code)]
        // SAFETY: kill sends a signal to a pid just read from /proc.
        unsafe {
            libc::kill(i32::try_from(*pid).unwrap(), libc::SIGKILL);
        }
    }
    pids.is_empty()
}

/// A writing child's bash keeps files, the network and its own processes, but cannot signal,
/// limit or renice anything outside it — cadre included (here: this test process).
#[tokio::test]
async fn a_writing_childs_commands_cannot_act_on_processes_outside_them() {
    if !enforced() {
        return;
    }
    let tree = Tree::new();
    let me = std::process::id();
    let contained = BashTool::new()
        .with_supervisor(PathBuf::from(CADRE))
        .contained();
    let limit = own_nofile_limit();
    let mut attacks = vec![format!("kill -CONT {me}")];
    if have("prlimit") {
        attacks.push(format!("prlimit --pid {me} --nofile=4:4"));
    }
    if have("renice") {
        attacks.push(format!("renice -n 19 -p {me}"));
    }
    for command in &attacks {
        let out = tree.run(&contained, command).await;
        assert!(out.is_error, "{command:?} succeeded: {}", text(&out));
        assert_eq!(own_nofile_limit(), limit);
    }
    // As root it keeps owning files but loses what reaches the kernel (SYS_ADMIN, BPF, …).
    let out = tree.run(&contained, "grep CapEff /proc/self/status").await;
    let hex = text(&out)
        .split_whitespace()
        .nth(1)
        .unwrap_or("0")
        .to_string();
    let eff = u64::from_str_radix(&hex, 16).unwrap();
    for cap in [16, 17, 19, 21, 38, 39] {
        assert_eq!(eff & (1 << cap), 0, "capability {cap} kept: {hex}");
    }
    #[allow(unsafe_code)]
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert_ne!(eff & (1 << 1), 0, "root's DAC_OVERRIDE is kept: {hex}");
    }
    // The kernel's settings and files stay read-only to it, its own /proc entries included
    // (cadre's `oom_score_adj`, a cgroup's `cgroup.kill`, `core_pattern` are of that kind).
    let out = tree
        .run(
            &contained,
            "cat /proc/self/oom_score_adj && echo 0 > /proc/self/oom_score_adj",
        )
        .await;
    assert!(out.is_error, "{}", text(&out));
    assert!(text(&out).contains("Permission denied"), "{}", text(&out));
    // Its own work is untouched: files and metadata, its own jobs and limits.
    let out = tree
        .run(
            &contained,
            "echo x > f && chmod 600 f && echo y > /dev/null && echo z > \"$TMPDIR/t\"; sleep 30 & p=$!; kill $p; wait $p; ulimit -n 64; echo ok",
        )
        .await;
    assert!(text(&out).contains("ok"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(tree.repo.join("f")).unwrap(), "x\n");
    // Control: the same signal from an uncontained command reaches this process.
    let out = tree
        .run(
            &BashTool::new().with_supervisor(PathBuf::from(CADRE)),
            &format!("kill -CONT {me}"),
        )
        .await;
    assert!(!out.is_error, "{}", text(&out));
}

/// Ioctls reach past Landlock (device files, btrfs/fscrypt on a read-only descriptor): only
/// queries are allowed. SysV IPC and datagram socket pairs (which can `sendto` any pathname
/// socket) are refused; a stream pair, which reaches nothing, still works.
#[tokio::test]
async fn ioctls_sysv_ipc_and_datagram_pairs_are_refused() {
    if !enforced() {
        return;
    }
    if !have("python3") {
        eprintln!("SKIPPED: python3 is not installed");
        return;
    }
    let tree = Tree::new();
    let tool = sandboxed(&tree, false);
    let py = |code: &str| format!("python3 -c '{code}'");
    let mut attacks = vec![
        // FS_IOC_SETVERSION on a file opened for reading.
        py(
            "import fcntl, os; fd = os.open(\"f\", os.O_RDONLY); fcntl.ioctl(fd, 0x40087602, b\"\\0\" * 8)",
        ),
        // An unassigned request: refused by the allowlist, not by the driver.
        py("import fcntl, os; fd = os.open(\"f\", os.O_RDONLY); fcntl.ioctl(fd, 0x12345678, 0)"),
        // A lease stalls every other opener of the file (cadre's own edits) for up to 45 s.
        py(
            "import fcntl, os; fd = os.open(\"f\", os.O_RDONLY); fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)",
        ),
        py("import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)"),
        py("import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)"),
    ];
    if std::path::Path::new("/dev/loop-control").exists() {
        attacks.push(py(
            "import fcntl, os; fd = os.open(\"/dev/loop-control\", os.O_RDONLY); fcntl.ioctl(fd, 0x4C80, 200)",
        ));
    }
    if have("ipcmk") {
        attacks.push("ipcmk -M 4096".into());
        attacks.push("ipcmk -Q".into());
    }
    for command in &attacks {
        let out = tree.run(&tool, command).await;
        assert!(out.is_error, "{command:?} succeeded: {}", text(&out));
        assert!(
            text(&out).contains("not permitted") || text(&out).contains("PermissionError"),
            "{command:?} failed for another reason: {}",
            text(&out)
        );
    }
    assert!(!std::path::Path::new("/dev/loop200").exists());
    // Terminals cannot even be opened for reading: that alone reads another session's input.
    if std::path::Path::new("/dev/ptmx").exists() {
        let out = tree.run(&tool, &py("open(\"/dev/ptmx\", \"rb\")")).await;
        assert!(out.is_error, "{}", text(&out));
        assert!(text(&out).contains("PermissionError"), "{}", text(&out));
        let out = tree
            .run(&BashTool::new(), &py("open(\"/dev/ptmx\", \"rb\")"))
            .await;
        assert!(!out.is_error, "control: {}", text(&out));
    }
    // What tools ask of descriptors and terminals still works.
    let fine = [
        py("import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(b.recv(1))"),
        py(
            "import fcntl, os, termios; fd = os.open(\"f\", os.O_RDONLY); fcntl.ioctl(fd, termios.FIONCLEX)",
        ),
        "ls -l --color=always f && lsattr f 2>/dev/null || true".to_string(),
    ];
    for command in &fine {
        let out = tree.run(&tool, command).await;
        assert!(!out.is_error, "{command:?}: {}", text(&out));
    }
    // Control: an unsandboxed command gets past the allowlist to the file system's answer.
    let out = tree
        .run(
            &BashTool::new(),
            &py("import fcntl, os; fd = os.open(\"f\", os.O_RDONLY); fcntl.ioctl(fd, 0x12345678, 0)"),
        )
        .await;
    assert!(!text(&out).contains("not permitted"), "{}", text(&out));
}

/// A descriptor cadre inherited (an IDE's log, a jobserver pipe) reaches no command: a write
/// through it would pass Landlock, which checks only `open()`. Commands also run in a session
/// of their own, without cadre's controlling terminal.
#[test]
fn inherited_descriptors_and_the_terminal_reach_no_command() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let leak = dir.path().join("leak.txt");
    let file = std::fs::File::create(&leak).unwrap();
    let fd = file.as_raw_fd();
    let command = "echo pwned >&7; read -r _ _ _ _ pgrp sid _ < /proc/$$/stat; echo \"session $sid group $pgrp self $$\"";
    let mut cmd = std::process::Command::new(CADRE);
    cmd.args(["tool", "bash", &json!({ "command": command }).to_string()])
        .current_dir(dir.path())
        .env("CADRE_HOME", dir.path().join("home"));
    #[allow(unsafe_code)]
    // SAFETY: dup2 is async-signal-safe; it makes fd 7 a copy without close-on-exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(fd, 7) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Bad file descriptor"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(&leak).unwrap(),
        "",
        "written through fd 7"
    );
    // `session S group G self P`: the shell's session is its supervisor's own, not cadre's.
    let line = stdout.lines().find(|l| l.starts_with("session ")).unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        fields[1], fields[3],
        "session = group: a session of its own: {line}"
    );
    assert_ne!(fields[1], std::process::id().to_string());
}
