//! The saved full output of a bash command, capped in size.
//!
//! A command can print without end (`yes`, `cat /dev/zero`, a build stuck in a loop), and the
//! full output used to stream to the artifacts directory without limit: gigabytes in seconds.
//! The file now keeps at most `cap` bytes of output — the first half and the last half — with
//! one marker line between them saying how many bytes were dropped.
//!
//! Why head and tail rather than only the tail: the tool result already shows the tail (the last
//! 50 KiB), and the file is where a user goes for what the result left out. In a long build or
//! test log that is the beginning — the configuration, the first error that set off the others —
//! as much as the end, where the summary and the final failure are. Keeping both halves serves
//! either; the middle of a runaway output is the part least likely to matter.
//!
//! The head is written straight to the file. The tail is a ring in a second, already unlinked
//! file (so nothing is left behind if cadre dies), written with positioned writes; `finish`
//! appends the marker and the ring, oldest byte first. Memory stays at two 64 KiB buffers
//! however much the command prints, and disk use at about twice the cap while the command runs.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::truncate::format_size;

/// Default size cap of a saved full output (16 MiB): a long build log fits whole, a runaway
/// command costs no more disk than that.
pub const DEFAULT_FULL_OUTPUT_CAP: u64 = 16 * 1024 * 1024;

/// Writes are gathered to this size before they go to the file.
const BATCH: usize = 64 * 1024;

/// A full-output file being written.
pub struct FullOutput {
    path: PathBuf,
    head: BufWriter<File>,
    head_cap: u64,
    head_len: u64,
    head_last_byte: Option<u8>,
    tail_cap: u64,
    /// Created when the head is full.
    tail: Option<TailRing>,
}

/// What was saved, once the file is complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub path: PathBuf,
    /// Output bytes the file does not hold (0: it holds the whole output).
    pub dropped: u64,
    /// Output bytes the file holds from the start and from the end (without the marker).
    pub head: u64,
    pub tail: u64,
}

impl Saved {
    /// The sentence for the tool result that says where the output is and what it lacks.
    pub fn describe(&self) -> String {
        if self.dropped == 0 {
            format!("Full output: {}", self.path.display())
        } else {
            format!(
                "Full output (first {} and last {} kept, {} in the middle dropped): {}",
                format_size(self.head),
                format_size(self.tail),
                format_size(self.dropped),
                self.path.display()
            )
        }
    }
}

/// The line that replaces the dropped middle in the file.
pub fn dropped_marker(dropped: u64) -> String {
    format!("[… {dropped} bytes dropped …]\n")
}

/// All saved outputs together stay within this: a model that floods output call after call
/// fills at most this much of the disk, not 16 MiB per call without end.
pub const DIR_BUDGET: u64 = 256 * 1024 * 1024;

/// Whether `name` is a saved output's (`bash-<32 hex>.log`): nothing else in the directory is
/// ever removed.
fn is_saved_output(name: &str) -> bool {
    name.strip_prefix("bash-")
        .and_then(|rest| rest.strip_suffix(".log"))
        .is_some_and(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Remove the oldest saved outputs in `dir` until the rest take at most `budget` bytes. Runs
/// only when a command's output outgrows the tool result, so one directory listing then is
/// cheap; errors leave files in place (the next call tries again).
fn make_room(dir: &Path, budget: u64) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut saved: Vec<(std::time::SystemTime, u64, std::path::PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(is_saved_output))
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            Some((meta.modified().ok()?, meta.len(), e.path()))
        })
        .collect();
    let mut total: u64 = saved.iter().map(|(_, len, _)| len).sum();
    if total <= budget {
        return;
    }
    saved.sort();
    for (_, len, path) in saved {
        if total <= budget {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

impl FullOutput {
    /// Create a new, uniquely named file in `dir` (created if missing) that keeps at most `cap`
    /// bytes of output.
    pub fn create(dir: &Path, cap: u64) -> io::Result<Self> {
        fs::create_dir_all(dir)?;
        make_room(dir, DIR_BUDGET.saturating_sub(cap));
        let path = dir.join(format!("bash-{}.log", uuid::Uuid::new_v4().simple()));
        let file = File::options().write(true).create_new(true).open(&path)?;
        let head_cap = cap / 2;
        Ok(FullOutput {
            path,
            head: BufWriter::with_capacity(BATCH, file),
            head_cap,
            head_len: 0,
            head_last_byte: None,
            tail_cap: cap - head_cap,
            tail: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append output.
    pub fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        let room = usize::try_from(self.head_cap - self.head_len).unwrap_or(usize::MAX);
        if room > 0 && !data.is_empty() {
            let n = room.min(data.len());
            self.head.write_all(&data[..n])?;
            self.head_len += n as u64;
            self.head_last_byte = data[..n].last().copied();
            data = &data[n..];
        }
        if data.is_empty() {
            return Ok(());
        }
        let tail = match &mut self.tail {
            Some(tail) => tail,
            None => self
                .tail
                .insert(TailRing::create(&self.path, self.tail_cap)?),
        };
        tail.push(data)
    }

    /// Complete the file: the head, then (when output was dropped) the marker, then the tail.
    pub fn finish(self) -> io::Result<Saved> {
        let FullOutput {
            path,
            mut head,
            head_len,
            head_last_byte,
            tail,
            ..
        } = self;
        let mut dropped = 0;
        let mut tail_len = 0;
        if let Some(mut tail) = tail {
            tail.flush()?;
            dropped = tail.dropped();
            tail_len = tail.kept();
            if dropped > 0 {
                // The marker gets a line of its own even when the head stops mid-line.
                if head_last_byte.is_some_and(|b| b != b'\n') {
                    head.write_all(b"\n")?;
                }
                head.write_all(dropped_marker(dropped).as_bytes())?;
            }
            tail.copy_to(&mut head)?;
        }
        head.into_inner().map_err(|e| e.into_error())?;
        Ok(Saved {
            path,
            dropped,
            head: head_len,
            tail: tail_len,
        })
    }
}

/// The last `cap` bytes offered, in an unlinked file used as a ring buffer.
struct TailRing {
    file: File,
    cap: u64,
    /// Bytes offered to the ring so far, the pending ones excluded; `written % cap` is where
    /// the next byte goes.
    written: u64,
    pending: Vec<u8>,
}

impl TailRing {
    fn create(head_path: &Path, cap: u64) -> io::Result<Self> {
        let mut name = head_path.as_os_str().to_owned();
        name.push(".tail");
        let ring_path = PathBuf::from(name);
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&ring_path)?;
        // Only the open handle is needed: unlinked now, the file cannot outlive the call.
        fs::remove_file(&ring_path)?;
        Ok(TailRing {
            file,
            cap,
            written: 0,
            pending: Vec::new(),
        })
    }

    fn push(&mut self, data: &[u8]) -> io::Result<()> {
        if self.pending.len() + data.len() <= BATCH {
            self.pending.extend_from_slice(data);
            return Ok(());
        }
        self.flush()?;
        if data.len() >= BATCH {
            self.write_wrapped(data)
        } else {
            self.pending.extend_from_slice(data);
            Ok(())
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let result = self.write_wrapped(&pending);
        self.pending = pending;
        self.pending.clear();
        result
    }

    /// Write `data` at the ring's position, wrapping around; bytes that would be overwritten
    /// within this same write are skipped.
    fn write_wrapped(&mut self, mut data: &[u8]) -> io::Result<()> {
        let cap = usize::try_from(self.cap).unwrap_or(usize::MAX);
        if data.len() > cap {
            let skip = data.len() - cap;
            self.written += skip as u64;
            data = &data[skip..];
        }
        while !data.is_empty() {
            let offset = self.written % self.cap;
            let room = usize::try_from(self.cap - offset).unwrap_or(usize::MAX);
            let n = room.min(data.len());
            self.file.write_all_at(&data[..n], offset)?;
            self.written += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    fn kept(&self) -> u64 {
        self.written.min(self.cap)
    }

    fn dropped(&self) -> u64 {
        self.written - self.kept()
    }

    /// Copy the ring, oldest byte first, to `out` (after a `flush`).
    fn copy_to(&self, out: &mut impl Write) -> io::Result<()> {
        if self.cap == 0 {
            return Ok(());
        }
        let (first, second) = if self.written <= self.cap {
            ((0, self.written), (0, 0))
        } else {
            let start = self.written % self.cap;
            ((start, self.cap), (0, start))
        };
        let mut buf = vec![0u8; BATCH];
        for (mut from, to) in [first, second] {
            while from < to {
                let want = usize::try_from(to - from).unwrap_or(usize::MAX).min(BATCH);
                let n = self.file.read_at(&mut buf[..want], from)?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the saved output's tail is shorter than written",
                    ));
                }
                out.write_all(&buf[..n])?;
                from += n as u64;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_saved_outputs_go_when_the_directory_is_over_budget() {
        let dir = tempfile::tempdir().unwrap();
        let name = |i: u32| format!("bash-{i:032x}.log");
        for i in 0..4u32 {
            fs::write(dir.path().join(name(i)), vec![b'x'; 100]).unwrap();
            let t = std::time::SystemTime::UNIX_EPOCH
                + std::time::Duration::from_secs(1000 + u64::from(i));
            File::options()
                .write(true)
                .open(dir.path().join(name(i)))
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        fs::write(dir.path().join("notes.txt"), vec![b'x'; 1000]).unwrap();
        make_room(dir.path(), 250);
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, [name(2), name(3), "notes.txt".to_string()]);
        assert!(!is_saved_output("bash-xyz.log"));
    }

    /// The file `output` should leave with `cap`.
    fn expected(output: &[u8], cap: u64) -> Vec<u8> {
        let cap = cap as usize;
        if output.len() <= cap {
            return output.to_vec();
        }
        let head = &output[..cap / 2];
        let tail = &output[output.len() - (cap - cap / 2)..];
        let mut out = head.to_vec();
        if head.last().is_some_and(|&b| b != b'\n') {
            out.push(b'\n');
        }
        out.extend_from_slice(dropped_marker((output.len() - cap) as u64).as_bytes());
        out.extend_from_slice(tail);
        out
    }

    fn save(output: &[u8], cap: u64, chunk: usize) -> (Saved, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let mut full = FullOutput::create(dir.path(), cap).unwrap();
        for piece in output.chunks(chunk.max(1)) {
            full.write(piece).unwrap();
        }
        let saved = full.finish().unwrap();
        let content = fs::read(&saved.path).unwrap();
        // Only the log itself is left: the ring was unlinked when it was made.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        (saved, content)
    }

    #[test]
    fn output_within_the_cap_is_saved_whole() {
        let output: Vec<u8> = (0..1000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        for chunk in [1, 7, 4096, 100_000] {
            let (saved, content) = save(&output, 1 << 20, chunk);
            assert_eq!(content, output);
            assert_eq!(saved.dropped, 0);
            assert_eq!(saved.head + saved.tail, output.len() as u64);
            assert!(saved.describe().starts_with("Full output: "));
        }
        // Exactly the cap: the ring fills to the brim and nothing is dropped.
        let (saved, content) = save(&output, output.len() as u64, 100);
        assert_eq!(content, output);
        assert_eq!(saved.dropped, 0);
    }

    #[test]
    fn the_middle_is_dropped_and_said() {
        let output: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        for (cap, chunk) in [
            (1000, 1),
            (1000, 333),
            (4096, 65_536),
            (4097, 200_000),
            (10, 3),
        ] {
            let (saved, content) = save(&output, cap, chunk);
            assert_eq!(content, expected(&output, cap), "cap {cap} chunk {chunk}");
            assert_eq!(saved.dropped, output.len() as u64 - cap);
            assert_eq!(saved.head + saved.tail, cap);
            let marker = dropped_marker(saved.dropped);
            assert!(content.len() as u64 <= cap + 1 + marker.len() as u64);
            assert!(saved.describe().contains("in the middle dropped"));
        }
    }

    #[test]
    fn the_tail_keeps_its_order_across_many_wraps() {
        // Distinct bytes make any misplaced piece of the ring show.
        let output: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let (_, content) = save(&output, 100_003, 70_001);
        assert_eq!(content, expected(&output, 100_003));
    }

    #[test]
    fn a_zero_cap_keeps_only_the_marker() {
        let (saved, content) = save(b"abc\n", 0, 2);
        assert_eq!(saved.dropped, 4);
        assert_eq!(content, dropped_marker(4).as_bytes());
    }
}
