//! A secret given on the command line (`--api-key KEY`) leaves it once the arguments are
//! parsed: every process of the same user reads `/proc/<cadre>/cmdline`, the model's bash
//! commands included, so the key's bytes in the process's argument area are overwritten with
//! `x`, as the credentials of the environment block are (`harden.rs`). The parsed copy is what
//! the run uses.

/// Overwrite every occurrence of `secret` in this process's argument area. Returns whether the
/// area could be found (Linux, `/proc` mounted); elsewhere the key stays visible, as in Pi.
pub fn hide_in_cmdline(secret: &str) -> bool {
    if secret.is_empty() {
        return true;
    }
    #[cfg(target_os = "linux")]
    {
        let Some((start, end)) = argument_area() else {
            return false;
        };
        let needle = secret.as_bytes();
        let len = end - start;
        let mut at = 0;
        while at + needle.len() <= len {
            // SAFETY: `[start, end)` is this process's argument area as the kernel reports it
            // (fields 48 and 49 of /proc/self/stat): mapped for the life of the process and
            // writable (it is on the initial stack). No Rust reference points into it: std
            // keeps raw pointers and copies the strings out when asked, and no other thread
            // runs yet (this is called from `main` before the runtime starts). Every access
            // stays below `end`.
            #[allow(unsafe_code)]
            let matches = unsafe {
                std::slice::from_raw_parts((start + at) as *const u8, needle.len()) == needle
            };
            if matches {
                // SAFETY: as above; the bytes written are within the area.
                #[allow(unsafe_code)]
                unsafe {
                    std::ptr::write_bytes((start + at) as *mut u8, b'x', needle.len());
                }
                at += needle.len();
            } else {
                at += 1;
            }
        }
        true
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// `(arg_start, arg_end)` of this process, from `/proc/self/stat`.
#[cfg(target_os = "linux")]
fn argument_area() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_argument_area(&stat)
}

/// Fields 48 and 49 of a `/proc/<pid>/stat` line. The command name (field 2) is in
/// parentheses and may hold spaces or parentheses itself, so counting starts after the last `)`.
#[cfg(target_os = "linux")]
fn parse_argument_area(stat: &str) -> Option<(usize, usize)> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `fields[0]` is field 3 (the state).
    let start: usize = fields.get(48 - 3)?.parse().ok()?;
    let end: usize = fields.get(49 - 3)?.parse().ok()?;
    (start != 0 && end > start).then_some((start, end))
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_area_is_found_in_a_stat_line() {
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[48 - 3] = "1000".into();
        fields[49 - 3] = "1200".into();
        let line = format!("42 (we) (ird) {}", fields.join(" "));
        assert_eq!(parse_argument_area(&line), Some((1000, 1200)));
        assert_eq!(parse_argument_area("42 (x) R 1"), None);
        // This process has one.
        assert!(argument_area().is_some());
    }
}
