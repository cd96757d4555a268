//! File names as the listing tools (`ls`, `find`, `grep`) print them.
//!
//! A repository's file names are written by whoever wrote the repository. A name holding a
//! newline would print as two lines of output — a hostile name like `x\nsrc/secret.rs` forges a
//! listing entry, and a longer one a fake grep match or a fake notice — and escape sequences or
//! bidirectional controls make a name look like another. Such a name is printed quoted the way
//! bash writes it (`$'x\nsrc/secret.rs'`): plainly not a literal name, one line, and usable
//! as written in a bash command. Every other name prints unchanged.

use std::borrow::Cow;
use std::fmt::Write;

use serde_json::json;

use crate::listing::Notice;

/// True for a character that must not appear raw in a printed name: control characters (C0,
/// DEL, C1, which includes NEL), the Unicode line and paragraph separators, and the
/// bidirectional controls that reorder how the text around them is displayed.
fn needs_quoting(c: char) -> bool {
    cadre_protocol::display::is_unshowable(c) || matches!(c, '\u{2028}' | '\u{2029}' | '\u{061C}')
}

/// True when `name` prints as something other than itself.
pub(crate) fn is_quoted(name: &str) -> bool {
    name.chars().any(needs_quoting)
}

/// `name` as the tools print it: unchanged, or in bash's ANSI-C quoting (`$'…'`) when it holds
/// a character that must not be printed raw.
pub(crate) fn shown(name: &str) -> Cow<'_, str> {
    if !is_quoted(name) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    out.push_str("$'");
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if needs_quoting(c) && u32::from(c) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if needs_quoting(c) => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    Cow::Owned(out)
}

/// Said once under a listing that shows a name quoted, so the model knows the quoted form is
/// not the name itself.
pub(crate) fn quoted_notice() -> Notice {
    Notice {
        text: "Names holding control characters are shown in bash's $'…' quoting".to_string(),
        key: "quotedNames",
        value: json!(true),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_are_untouched() {
        for name in [
            "main.rs",
            "src/a b.rs",
            "it's",
            "back\\slash",
            "é€",
            ".env",
            "",
        ] {
            assert!(
                matches!(shown(name), Cow::Borrowed(n) if n == name),
                "{name}"
            );
        }
    }

    #[test]
    fn control_characters_are_quoted_on_one_line() {
        assert_eq!(shown("x\nsrc/secret.rs"), "$'x\\nsrc/secret.rs'");
        assert_eq!(shown("a\tb\rc"), "$'a\\tb\\rc'");
        assert_eq!(shown("\u{1b}[31mred"), "$'\\x1b[31mred'");
        assert_eq!(shown("del\u{7f}"), "$'del\\x7f'");
        assert_eq!(shown("nel\u{85}"), "$'nel\\u0085'");
        assert_eq!(shown("ls\u{2028}x"), "$'ls\\u2028x'");
        assert_eq!(shown("abc\u{202E}txt.exe"), "$'abc\\u202etxt.exe'");
        // Inside the quotes, quote and backslash are escaped so the form reads back exactly.
        assert_eq!(shown("it's\n\\"), "$'it\\'s\\n\\\\'");
        for name in ["a\nb", "\u{0}", "x\u{2029}"] {
            assert!(!shown(name).contains(['\n', '\u{0}', '\u{2029}']));
        }
    }
}
