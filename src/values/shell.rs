//! Quoting for POSIX `sh`: the commands skill-lift prints for a person to paste, and the command
//! lines it hands to `sh -c`.

use std::borrow::Cow;
use std::path::Path;

/// `text` in single quotes for `sh` (a `'` inside becomes `'\''`), always quoted.
pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `text` as one shell word: unchanged when it holds only characters `sh` never treats
/// specially (letters, digits and `_ - . / : , + = @ %`), else [`shell_quote`]d.
pub(crate) fn shell_word(text: &str) -> Cow<'_, str> {
    let plain = !text.is_empty()
        && text.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '_' | '-' | '.' | '/' | ':' | ',' | '+' | '=' | '@' | '%')
        });
    if plain {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(shell_quote(text))
    }
}

/// A path as one shell word ([`shell_word`] of its lossy UTF-8 text).
pub(crate) fn shell_path(path: &Path) -> String {
    shell_word(&path.to_string_lossy()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_and_others_are_quoted_so_sh_reads_them_back() {
        assert_eq!(shell_word("skills/my-skill_2.0"), "skills/my-skill_2.0");
        assert_eq!(shell_word("my skill"), "'my skill'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        for text in ["my skill", "it's", "a\"b", "$(x)", "*", "tab\there", "ünï"] {
            let output = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_word(text)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(output.stdout).unwrap(), text);
        }
    }
}
