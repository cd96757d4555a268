//! Whose tasks are these: the owner recorded in a task record, and whether it still runs (O13).

use std::fs;

use cadre_protocol::TaskRecord;

/// Mark `record` as owned by the current process (pid and, where known, its start time).
pub fn claim_ownership(record: &mut TaskRecord) {
    // Read once per process: every task records the same owner, and reading `/proc` per task
    // costs an open, a read and a parse.
    static OWNER: std::sync::OnceLock<(u32, Option<u64>)> = std::sync::OnceLock::new();
    let (pid, start_time) = *OWNER.get_or_init(|| {
        let pid = std::process::id();
        (pid, process_start_time(pid))
    });
    record.owner_pid = Some(pid);
    record.owner_start_time = start_time;
}

/// Whether process `pid` is alive and, when `start_time` is given, is the same process that was
/// recorded (a pid reused by a later process has a different start time). Zombies count as dead.
#[cfg(target_os = "linux")]
pub fn pid_is_alive(pid: u32, start_time: Option<u64>) -> bool {
    if pid == 0 {
        return false;
    }
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(fields) = parse_stat(&stat) else {
        // The process exists but its stat is unreadable as expected: assume it lives rather than
        // fail a task that may still be running.
        return true;
    };
    if matches!(fields.state, 'Z' | 'X' | 'x') {
        return false;
    }
    match start_time {
        Some(expected) => fields.start_time == expected,
        None => true,
    }
}

/// Whether process `pid` is alive (`kill -0`); start times are not available here.
#[cfg(not(target_os = "linux"))]
pub fn pid_is_alive(pid: u32, _start_time: Option<u64>) -> bool {
    if pid == 0 {
        return false;
    }
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat).map(|f| f.start_time)
}

struct StatFields {
    state: char,
    start_time: u64,
}

/// Parse the state (field 3) and start time (field 22) of a `/proc/<pid>/stat` line. The command
/// name (field 2) is in parentheses and may itself contain spaces and parentheses, so fields are
/// counted from the last `)`.
fn parse_stat(stat: &str) -> Option<StatFields> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 was consumed; field 22 is 18 further on.
    let start_time = fields.nth(18)?.parse().ok()?;
    Some(StatFields { state, start_time })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::orchestrator::store::test_support::record;

    #[test]
    fn stat_lines_are_parsed_past_tricky_command_names() {
        let tail = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21";
        let line = format!("42 (we ird) (name)) {tail}");
        let f = parse_stat(&line).unwrap();
        assert_eq!(f.state, 'S');
        assert_eq!(f.start_time, 987654);
        assert!(parse_stat("42 no parens").is_none());
        assert!(parse_stat("42 (x) S 1 2").is_none());
        assert!(parse_stat("42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 nan").is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_current_process_is_alive_and_a_reaped_child_is_not() {
        let me = std::process::id();
        let start = process_start_time(me);
        assert!(start.is_some());
        assert!(pid_is_alive(me, None));
        assert!(pid_is_alive(me, start));
        assert!(!pid_is_alive(me, start.map(|t| t + 1)));
        assert!(!pid_is_alive(0, None));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        // Reaped; the pid is free (reuse within this test is vanishingly unlikely and would need
        // the same start time to count).
        assert!(!pid_is_alive(pid, None) || process_start_time(pid) != start);

        let mut r = record("mine");
        claim_ownership(&mut r);
        assert_eq!(r.owner_pid, Some(me));
        assert_eq!(r.owner_start_time, start);
    }
}
