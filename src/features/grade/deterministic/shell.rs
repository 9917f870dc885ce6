//! A small, lexical reading of a shell command line: enough to tell which programs a command
//! runs, with which words, and where it redirects output — not a shell.
//!
//! The command is split into simple commands at `;`, `&&`, `||`, `|`, `&`, newlines, `(`, `)` and
//! backquotes; quotes are removed, backslash escapes honoured, comments dropped and here-document
//! bodies skipped (so a file written through `cat <<EOF` is not read as commands). The argument
//! of `sh -c`, `bash -c`, `zsh -c` and `eval` is parsed again and its simple commands appended.

/// Words that open a compound command or negate one; skipped before the program name.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "while", "until", "do", "!", "{", "}", "time",
];
/// Programs that run the program named after them (and their own options).
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "nohup", "command", "exec", "nice", "timeout", "stdbuf",
];
/// Wrapper options that take a value as the next word.
const WRAPPER_OPTIONS_WITH_VALUE: &[&str] = &["-u", "-g", "-n", "-s", "-k", "-C", "-D", "-h"];
/// Shells whose `-c` argument is itself a command line.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh"];
/// How deep `bash -c "bash -c '…'"` is followed.
const MAX_NESTING: usize = 3;

/// One redirection of a simple command (`> file`, `>> file`, `2>&1`, `<<EOF`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    /// The operator without its file-descriptor number: `>`, `>>`, `>|`, `>&`, `&>`, `&>>`,
    /// `<`, `<<`, `<<-`, `<<<`, `<&`, `<>`.
    pub operator: String,
    /// The word after the operator, quotes removed.
    pub target: String,
}

impl Redirect {
    /// Whether the redirection writes to its target (a file, not a file descriptor).
    pub(super) fn writes(&self) -> bool {
        match self.operator.as_str() {
            ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => true,
            ">&" => !self.target.chars().all(|c| c.is_ascii_digit()) && self.target != "-",
            _ => false,
        }
    }
}

/// One simple command: its words (quotes removed) and redirections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SimpleCommand {
    /// The words, program first (wrappers such as `sudo` included).
    pub words: Vec<String>,
    /// Its redirections, in order.
    pub redirects: Vec<Redirect>,
    /// Whether its standard input is the previous simple command's output (`a | b`).
    pub piped: bool,
}

impl SimpleCommand {
    /// The words from the program on: keywords, variable assignments and wrappers (`sudo`,
    /// `env`, `nohup`, `timeout 10`, …) with their options skipped. `command -v` is kept whole
    /// (a lookup, not a wrapper).
    pub(super) fn program_words(&self) -> &[String] {
        self.split_prefix().1
    }

    /// The program's base name (`/bin/rm` → `rm`), or `""` when there is none.
    pub(super) fn program(&self) -> &str {
        self.program_words()
            .first()
            .map(|word| word.rsplit('/').next().unwrap_or(word))
            .unwrap_or("")
    }

    /// Whether the command runs under `sudo` or `doas`.
    pub(super) fn elevated(&self) -> bool {
        self.split_prefix().0
    }

    fn split_prefix(&self) -> (bool, &[String]) {
        let mut elevated = false;
        let mut index = 0;
        let words = &self.words;
        while index < words.len() {
            let word = words[index].as_str();
            if KEYWORDS.contains(&word) || is_assignment(word) {
                index += 1;
                continue;
            }
            let base = word.rsplit('/').next().unwrap_or(word);
            if base == "command"
                && words
                    .get(index + 1)
                    .is_some_and(|next| next == "-v" || next == "-V")
            {
                break;
            }
            if !WRAPPERS.contains(&base) {
                break;
            }
            elevated |= base == "sudo" || base == "doas";
            index += 1;
            // The wrapper's options, assignments (`env A=1`) and, for `timeout`, the duration.
            let mut duration_pending = base == "timeout";
            while index < words.len() {
                let option = words[index].as_str();
                if option.starts_with('-') {
                    index += 1;
                    if WRAPPER_OPTIONS_WITH_VALUE.contains(&option) {
                        index += 1;
                    }
                } else if is_assignment(option) && base == "env" {
                    index += 1;
                } else if duration_pending {
                    duration_pending = false;
                    index += 1;
                } else {
                    break;
                }
            }
        }
        (elevated, &words[index.min(words.len())..])
    }
}

/// Whether a word is a variable assignment (`NAME=value`).
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Split a command line into its simple commands (see the module documentation).
pub(crate) fn parse(command: &str) -> Vec<SimpleCommand> {
    parse_nested(command, 0)
}

fn parse_nested(command: &str, depth: usize) -> Vec<SimpleCommand> {
    let mut parser = Parser::default();
    parser.run(command);
    let mut commands = parser.commands;
    if depth < MAX_NESTING {
        let mut nested = Vec::new();
        for simple in &commands {
            let words = simple.program_words();
            let program = simple.program();
            if SHELLS.contains(&program) {
                let flag = words.iter().skip(1).position(|word| {
                    word.starts_with('-') && !word.starts_with("--") && word.contains('c')
                });
                if let Some(argument) = flag.and_then(|position| words.get(position + 2)) {
                    nested.extend(parse_nested(argument, depth + 1));
                }
            } else if program == "eval" && words.len() > 1 {
                nested.extend(parse_nested(&words[1..].join(" "), depth + 1));
            }
        }
        commands.extend(nested);
    }
    commands
}

#[derive(Default)]
struct Parser {
    commands: Vec<SimpleCommand>,
    current: SimpleCommand,
    word: String,
    in_word: bool,
    pending_redirect: Option<String>,
    heredoc_delimiters: Vec<String>,
}

impl Parser {
    fn finish_word(&mut self) {
        if !self.in_word {
            return;
        }
        let word = std::mem::take(&mut self.word);
        self.in_word = false;
        match self.pending_redirect.take() {
            Some(operator) => {
                if operator == "<<" || operator == "<<-" {
                    self.heredoc_delimiters.push(word.clone());
                }
                self.current.redirects.push(Redirect {
                    operator,
                    target: word,
                });
            }
            None => self.current.words.push(word),
        }
    }

    fn finish_command(&mut self, next_piped: bool) {
        self.finish_word();
        self.pending_redirect = None;
        let finished = std::mem::take(&mut self.current);
        if !finished.words.is_empty() || !finished.redirects.is_empty() {
            self.commands.push(finished);
        }
        self.current.piped = next_piped;
    }

    fn run(&mut self, command: &str) {
        let chars: Vec<char> = command.chars().collect();
        let mut index = 0;
        while index < chars.len() {
            let c = chars[index];
            let next = chars.get(index + 1).copied();
            match c {
                '\\' => {
                    match next {
                        Some('\n') => {}
                        Some(escaped) => {
                            self.word.push(escaped);
                            self.in_word = true;
                        }
                        None => {}
                    }
                    index += 2;
                    continue;
                }
                '\'' => {
                    self.in_word = true;
                    index += 1;
                    while index < chars.len() && chars[index] != '\'' {
                        self.word.push(chars[index]);
                        index += 1;
                    }
                }
                '"' => {
                    self.in_word = true;
                    index += 1;
                    while index < chars.len() && chars[index] != '"' {
                        if chars[index] == '\\'
                            && let Some(&escaped) = chars.get(index + 1)
                            && matches!(escaped, '"' | '\\' | '$' | '`')
                        {
                            self.word.push(escaped);
                            index += 2;
                            continue;
                        }
                        self.word.push(chars[index]);
                        index += 1;
                    }
                }
                ' ' | '\t' | '\r' => self.finish_word(),
                '\n' => {
                    self.finish_command(false);
                    index = self.skip_heredoc_bodies(&chars, index + 1);
                    continue;
                }
                '#' if !self.in_word => {
                    while index < chars.len() && chars[index] != '\n' {
                        index += 1;
                    }
                    continue;
                }
                ';' => self.finish_command(false),
                '&' if next == Some('&') => {
                    self.finish_command(false);
                    index += 1;
                }
                '&' if next == Some('>') => {
                    self.finish_word();
                    let operator = if chars.get(index + 2) == Some(&'>') {
                        "&>>"
                    } else {
                        "&>"
                    };
                    index += operator.len() - 1;
                    self.pending_redirect = Some(operator.to_string());
                }
                '&' => self.finish_command(false),
                '|' if next == Some('|') => {
                    self.finish_command(false);
                    index += 1;
                }
                '|' => {
                    self.finish_command(true);
                    if next == Some('&') {
                        index += 1;
                    }
                }
                '(' | ')' | '`' => {
                    if self.in_word && self.word == "$" {
                        self.word.clear();
                        self.in_word = false;
                    }
                    self.finish_command(false);
                }
                '>' | '<' => {
                    if self.in_word && self.word.chars().all(|c| c.is_ascii_digit()) {
                        // A file-descriptor number (`2>`).
                        self.word.clear();
                        self.in_word = false;
                    }
                    self.finish_word();
                    let rest: String = chars[index..chars.len().min(index + 3)].iter().collect();
                    let operator = ["<<<", "<<-", ">>", ">|", ">&", "<<", "<&", "<>", ">", "<"]
                        .into_iter()
                        .find(|operator| rest.starts_with(operator))
                        .unwrap_or(">");
                    index += operator.len() - 1;
                    self.pending_redirect = Some(operator.to_string());
                }
                other => {
                    self.word.push(other);
                    self.in_word = true;
                }
            }
            index += 1;
        }
        self.finish_command(false);
    }

    /// After a newline: skip the bodies of pending here-documents, returning the next index.
    fn skip_heredoc_bodies(&mut self, chars: &[char], mut index: usize) -> usize {
        for delimiter in std::mem::take(&mut self.heredoc_delimiters) {
            loop {
                if index >= chars.len() {
                    return index;
                }
                let end = chars[index..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(chars.len(), |offset| index + offset);
                let line: String = chars[index..end].iter().collect();
                index = end + 1;
                if line.trim() == delimiter {
                    break;
                }
            }
        }
        index.min(chars.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &SimpleCommand) -> Vec<&str> {
        command.words.iter().map(String::as_str).collect()
    }

    #[test]
    fn splits_at_operators_and_removes_quotes() {
        let commands = parse("cd 'a b' && FOO=1 sudo -u root rm -rf \"/x\" | sh; echo $(which py)");
        assert_eq!(commands.len(), 5);
        assert_eq!(words(&commands[0]), ["cd", "a b"]);
        assert_eq!(commands[1].program(), "rm");
        assert!(commands[1].elevated());
        assert_eq!(commands[1].program_words(), ["rm", "-rf", "/x"]);
        assert!(commands[2].piped);
        assert_eq!(commands[2].program(), "sh");
        assert_eq!(words(&commands[3]), ["echo"]);
        assert_eq!(words(&commands[4]), ["which", "py"]);
    }

    #[test]
    fn redirects_and_heredocs() {
        let commands =
            parse("cat > /etc/out.txt <<'EOF'\nsudo rm -rf /\nEOF\npython x.py 2>&1 >> log.txt\n");
        assert_eq!(commands.len(), 2);
        assert_eq!(
            commands[0].redirects,
            vec![
                Redirect {
                    operator: ">".into(),
                    target: "/etc/out.txt".into()
                },
                Redirect {
                    operator: "<<".into(),
                    target: "EOF".into()
                }
            ]
        );
        assert_eq!(words(&commands[1]), ["python", "x.py"]);
        let writes: Vec<&str> = commands[1]
            .redirects
            .iter()
            .filter(|r| r.writes())
            .map(|r| r.target.as_str())
            .collect();
        assert_eq!(writes, ["log.txt"]);
    }

    #[test]
    fn shell_dash_c_is_parsed_again() {
        let commands = parse("bash -lc 'cd /w && timeout 10 rm -r /etc'");
        let programs: Vec<&str> = commands.iter().map(SimpleCommand::program).collect();
        assert_eq!(programs, ["bash", "cd", "rm"]);
        assert_eq!(commands[2].program_words(), ["rm", "-r", "/etc"]);
    }

    #[test]
    fn command_v_is_a_lookup_not_a_wrapper() {
        let commands = parse("command -v jq");
        assert_eq!(commands[0].program(), "command");
        let commands = parse("command ls -la");
        assert_eq!(commands[0].program(), "ls");
    }
}
