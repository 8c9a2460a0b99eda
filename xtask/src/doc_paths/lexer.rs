//! Source files read as `doc-paths` reads them: their comments, line by line, apart from their code.

/// Comment syntax of a source file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Lang {
    /// `//`, nested `/* */`, strings, raw strings, char literals.
    Rust,
    /// `//`, `/* */` (not nested), strings, char literals.
    C,
    /// `#` comments; triple-quoted strings count as comments (docstrings).
    Python,
}

/// The comment syntax of a file, by its extension; `None` for a file whose comments are not read.
pub(super) fn lang_of(path: &std::path::Path) -> Option<Lang> {
    match path.extension()?.to_str()? {
        "rs" => Some(Lang::Rust),
        "c" | "h" | "cc" | "cpp" | "hpp" => Some(Lang::C),
        "py" | "pyi" => Some(Lang::Python),
        _ => None,
    }
}

/// A source file split into its comments and its code.
pub(super) struct Lexed {
    /// The comment text of each line that has some, with its 1-based line number. Two comments on one
    /// line are joined by a space, so that their words stay apart.
    pub(super) comments: Vec<(usize, String)>,
    /// The code: everything but the comments and the literals (strings, characters), a space standing
    /// for each of those, so that the identifiers around them stay apart.
    pub(super) code: String,
}

/// `text` split into its comments and its code, by the comment syntax of `lang`.
pub(super) fn lex(text: &str, lang: Lang) -> Lexed {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Code,
        Line,
        /// Rust nests block comments; C does not (depth stays 1).
        Block(u32),
        /// A string closed by this quote (`"` or `'`); Python's end at the line's end too.
        Str(char),
        /// A Rust raw string closed by `"` and this many `#`.
        Raw(usize),
        /// A Python triple-quoted string closed by three of this quote.
        Triple(char),
    }
    let chars: Vec<char> = text.chars().collect();
    // The line of each character, so that skipping characters never miscounts lines.
    let line_of: Vec<usize> = chars
        .iter()
        .scan(1, |line, &c| {
            let this = *line;
            *line += usize::from(c == '\n');
            Some(this)
        })
        .collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let c_like = matches!(lang, Lang::Rust | Lang::C);
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut code = String::new();
    let mut push = |i: usize, c: char| {
        let line = line_of[i];
        match out.last_mut() {
            Some((l, s)) if *l == line => s.push(c),
            _ => out.push((line, c.to_string())),
        }
    };
    let mut state = S::Code;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match state {
            S::Code => {
                let raw = if lang == Lang::Rust && c == 'r' && raw_prefix(&chars, i) {
                    raw_hashes(&chars, i)
                } else {
                    None
                };
                if c_like && c == '/' && at(i + 1) == '/' {
                    state = S::Line;
                    push(i, ' ');
                    code.push(' ');
                    i += 1;
                } else if c_like && c == '/' && at(i + 1) == '*' {
                    state = S::Block(1);
                    push(i, ' ');
                    code.push(' ');
                    i += 1;
                } else if c_like && c == '"' {
                    state = S::Str(c);
                    code.push(' ');
                } else if c_like && c == '\'' {
                    // A char literal ('x', '\n', '\'', '"'); otherwise a lifetime or a label ('a).
                    if at(i + 1) == '\\' {
                        i += 3;
                        while i < chars.len() && chars[i] != '\'' && chars[i] != '\n' {
                            i += 1;
                        }
                    } else if at(i + 2) == '\'' {
                        i += 2;
                    }
                    code.push(' ');
                } else if let Some(hashes) = raw {
                    state = S::Raw(hashes);
                    code.push(' ');
                    i += hashes + 1;
                } else if lang == Lang::Python && c == '#' {
                    state = S::Line;
                    push(i, ' ');
                    code.push(' ');
                } else if lang == Lang::Python && (c == '"' || c == '\'') {
                    if at(i + 1) == c && at(i + 2) == c {
                        state = S::Triple(c);
                        push(i, ' ');
                        i += 2;
                    } else {
                        state = S::Str(c);
                    }
                    code.push(' ');
                } else {
                    code.push(c);
                }
            }
            S::Line => {
                if c == '\n' {
                    state = S::Code;
                } else {
                    push(i, c);
                }
            }
            S::Block(depth) => {
                if c == '*' && at(i + 1) == '/' {
                    state = if depth == 1 {
                        S::Code
                    } else {
                        S::Block(depth - 1)
                    };
                    push(i, ' ');
                    i += 1;
                } else if lang == Lang::Rust && c == '/' && at(i + 1) == '*' {
                    state = S::Block(depth + 1);
                    push(i, ' ');
                    i += 1;
                } else if c != '\n' {
                    push(i, c);
                }
            }
            S::Str(q) => {
                if c == '\\' {
                    i += 1;
                } else if c == q || (lang == Lang::Python && c == '\n') {
                    state = S::Code;
                }
            }
            S::Raw(hashes) => {
                if c == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    state = S::Code;
                    i += hashes;
                }
            }
            S::Triple(q) => {
                if c == q && at(i + 1) == q && at(i + 2) == q {
                    state = S::Code;
                    push(i, ' ');
                    i += 2;
                } else if c == '\\' {
                    i += 1;
                } else if c != '\n' {
                    push(i, c);
                }
            }
        }
        i += 1;
    }
    Lexed {
        comments: out,
        code,
    }
}

/// How many `#` the raw string that the `r` at `i` opens has (`r"` 0, `r#"` 1); `None` when no raw
/// string starts there (`r#ident`, a word that begins with `r`).
fn raw_hashes(chars: &[char], i: usize) -> Option<usize> {
    let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
    (chars.get(i + 1 + hashes) == Some(&'"')).then_some(hashes)
}

/// Whether the `r` at `i` starts a raw string's prefix (`r"`, `r#"`, `br"`): not the end of a longer
/// identifier.
fn raw_prefix(chars: &[char], i: usize) -> bool {
    let before = |k: usize| i.checked_sub(k).and_then(|j| chars.get(j)).copied();
    match before(1) {
        Some('b') => !before(2).is_some_and(is_ident),
        Some(c) => !is_ident(c),
        None => true,
    }
}

/// A character of a Rust, C or Python identifier.
pub(super) fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::super::names;
    use super::*;

    /// The names each comment line gives, for the lines that give some.
    fn found(text: &str, lang: Lang) -> Vec<(usize, Vec<String>)> {
        lex(text, lang)
            .comments
            .into_iter()
            .map(|(l, s)| (l, names(&s)))
            .filter(|(_, n)| !n.is_empty())
            .collect()
    }

    fn at(line: usize, names: &[&str]) -> (usize, Vec<String>) {
        (line, names.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn rust_comments_and_not_strings() {
        let src = "//! a.rs\nlet s = \"// no.rs\"; // c.rs\nlet c = '\"'; // d.rs\n\
                   let r = r#\"x \" // no.rs\"#; /* f.rs /* g.rs */ h.rs */ i\n\
                   fn f<'a>(x: &'a str) -> char { '\\'' } // j.rs\n\
                   let s = \"a\\\n // no.rs\"; /// k.rs\n";
        assert_eq!(
            found(src, Lang::Rust),
            [
                at(1, &["a.rs"]),
                at(2, &["c.rs"]),
                at(3, &["d.rs"]),
                at(4, &["f.rs", "g.rs", "h.rs"]),
                at(5, &["j.rs"]),
                at(7, &["k.rs"]),
            ]
        );
    }

    #[test]
    fn c_block_comments_do_not_nest_and_span_lines() {
        let src = "/* a.rs /* b.rs */ int x = 1; // c.rs\n\
                   char *s = \"/* no.rs */\"; /* d\n e.rs */ int y; /* f.rs */\n";
        assert_eq!(
            found(src, Lang::C),
            [at(1, &["a.rs", "b.rs", "c.rs"]), at(3, &["e.rs", "f.rs"])]
        );
    }

    #[test]
    fn python_comments_and_docstrings() {
        let src =
            "\"\"\"a.rs\nb.rs\"\"\"\nx = \"# no.rs\"  # c.rs\ny = 'it''s' + 'no.rs'\n'''d.rs'''\n";
        assert_eq!(
            found(src, Lang::Python),
            [
                at(1, &["a.rs"]),
                at(2, &["b.rs"]),
                at(3, &["c.rs"]),
                at(5, &["d.rs"])
            ]
        );
    }

    #[test]
    fn code_leaves_out_comments_and_literals() {
        let words = |text: &str, lang: Lang| -> Vec<String> {
            lex(text, lang)
                .code
                .split(|c: char| !is_ident(c))
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let rust =
            "mod kept; // gone\nlet s = \"gone\" + r#\"gone\"#; let c = 'x'; /* gone */ fn also<'a>() {}\n";
        assert_eq!(
            words(rust, Lang::Rust),
            ["mod", "kept", "let", "s", "let", "c", "fn", "also", "a"]
        );
        let python = "\"\"\"gone\"\"\"\nkept = 'gone'  # gone\n";
        assert_eq!(words(python, Lang::Python), ["kept"]);
    }
}
