//! The `encrypted_content` of Responses reasoning items: an opaque string the server can read
//! back, so a reasoning item a client returns on a later turn can be checked (and tests can see
//! which thought came back).
//!
//! Layout: `gAAAAAB` (the prefix the service's tokens carry), 16 hex digits of a keyed FNV-1a
//! check over the payload, then the payload `<item id>\0<summary text>` in hex. Any change to the
//! string fails the check. Stateless on purpose: a session continued against a new server (a
//! later test process) still verifies.

const PREFIX: &str = "gAAAAAB";
const KEY: &[u8] = b"cadre-testkit reasoning v1";

fn check(payload: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in KEY.iter().chain(payload) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The encrypted content issued for reasoning item `id` whose summary is `text`.
pub(crate) fn encrypt(id: &str, text: &str) -> String {
    let payload = format!("{id}\0{text}");
    let hex: String = payload.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{PREFIX}{:016x}{hex}", check(payload.as_bytes()))
}

/// `(item id, summary text)` if `content` is one this server issued, unchanged.
pub(crate) fn decrypt(content: &str) -> Option<(String, String)> {
    let rest = content.strip_prefix(PREFIX)?;
    let (mac, hex) = (rest.get(..16)?, rest.get(16..)?);
    let mac = u64::from_str_radix(mac, 16).ok()?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let payload: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    if check(&payload) != mac {
        return None;
    }
    let payload = String::from_utf8(payload).ok()?;
    let (id, text) = payload.split_once('\0')?;
    Some((id.to_string(), text.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_changes() {
        for text in ["", "plan: read a", "héllo ✓\nline\0two"] {
            let sealed = encrypt("rs_fake000001_00", text);
            assert!(sealed.starts_with("gAAAAAB"));
            let (id, back) = decrypt(&sealed).unwrap();
            assert_eq!(id, "rs_fake000001_00");
            // Everything after the first NUL belongs to the text.
            assert_eq!(back, text);
        }
        let sealed = encrypt("rs_1", "thought");
        assert_eq!(decrypt(&sealed[..sealed.len() - 2]), None);
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
        assert_eq!(decrypt(&String::from_utf8(tampered).unwrap()), None);
        for junk in [
            "",
            "gAAAAAB",
            "gAAAAABzz",
            "not it",
            "gAAAAAB0000000000000000ab",
        ] {
            assert_eq!(decrypt(junk), None, "{junk}");
        }
    }
}
