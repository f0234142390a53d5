//! Command lines the way mrskew users type them: Getopt::Long habits
//! (unique prefixes such as `--alldep`, single-dash long options such as
//! `-where`, `--no` forms such as `--nohead`) and rc files (`--rc=p10.rc`),
//! expanded into canonical words for the argument parser: `--option=value`,
//! and `--flag` or `--noflag`.
//!
//! Why by hand: clap has no single-dash long options, `--no` prefixes or
//! option files, and rc files need multi-line quoted values, comments and
//! line numbers in error messages, which shell-word crates do not give.

use std::path::{Path, PathBuf};

use crate::error::SkewError;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Takes a value.
    Value,
    /// On/off; accepts `--no` forms.
    Flag,
    /// Accepted for mrskew compatibility, without effect.
    Ignored,
}

/// Canonical option names, their aliases and kinds.
const OPTIONS: &[(&str, &[&str], Kind)] = &[
    ("where", &["where0"], Kind::Value),
    ("where1", &[], Kind::Value),
    ("alldepths", &[], Kind::Flag),
    ("name", &[], Kind::Value),
    ("group", &[], Kind::Value),
    ("group-label", &["glabel", "gl"], Kind::Value),
    ("select", &[], Kind::Value),
    ("select-label", &["slabel"], Kind::Value),
    ("buckets", &[], Kind::Value),
    ("sort", &[], Kind::Value),
    ("top", &[], Kind::Value),
    ("rc", &[], Kind::Value),
    ("precision", &[], Kind::Value),
    ("gwidth", &[], Kind::Value),
    ("pfact", &[], Kind::Value),
    ("pform", &[], Kind::Value),
    ("plabel", &[], Kind::Value),
    ("timunit", &[], Kind::Value),
    ("cpuunit", &[], Kind::Value),
    ("trcunit", &[], Kind::Value),
    ("max-line", &[], Kind::Value),
    ("commas", &[], Kind::Flag),
    ("head", &[], Kind::Flag),
    ("foot", &[], Kind::Flag),
    ("dashes", &[], Kind::Flag),
    ("csv", &[], Kind::Flag),
    ("json", &[], Kind::Flag),
    ("output", &[], Kind::Value),
    ("separator", &[], Kind::Value),
    ("thinktime", &[], Kind::Value),
    ("depmin", &[], Kind::Value),
    ("init", &[], Kind::Value),
    ("unaccounted", &[], Kind::Flag),
    ("verbose", &[], Kind::Flag),
    ("jobs", &[], Kind::Value),
    ("listrc", &[], Kind::Flag),
    ("help", &[], Kind::Flag),
    ("version", &[], Kind::Flag),
    ("histogram", &[], Kind::Ignored),
    ("initrc", &[], Kind::Ignored),
];

/// The rc files every install has, so that `--rc=p10.rc` works anywhere.
/// They do what mrskew's rc files of the same names do;
/// where those use Perl `--init` code, these use tracelab's built-ins.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "p10.rc",
        "# Powers-of-ten histogram of call durations (mrskew's p10.rc).\n\
         --buckets=p10\n\
         --group-label='\"RANGE {min ≤ e < max}\"'\n\
         --sort=1na\n\
         --top=0\n",
    ),
    (
        "disk.rc",
        "# Histogram of read call durations for spinning disks: 0-5, 5-10, 10-15,\n\
         # 15-20, 20-25, 25-50, 50-100, 100-1,000 ms and above.\n\
         --name=read\n\
         --buckets=disk\n\
         --group-label='\"RANGE {min ≤ e < max}\"'\n\
         --sort=1na\n\
         --top=0\n",
    ),
    (
        "ssd.rc",
        "# Histogram of read call durations for solid-state storage: 0-15, 15-25,\n\
         # 25-50, 50-100, 100-500, 500-1,000, 1,000-10,000 µs and above.\n\
         --name=read\n\
         --buckets=ssd\n\
         --group-label='\"RANGE {min ≤ e < max}\"'\n\
         --sort=1na\n\
         --top=0\n",
    ),
    (
        "all.rc",
        "# Every call at every depth, by name.\n\
         --name=:all\n\
         --alldepths\n\
         --nohistogram\n\
         --sort=1na\n\
         --top=0\n",
    ),
    (
        "sqlid.rc",
        "# Time by statement: SQL id and the first 60 characters of its text, its\n\
         # white space runs (line ends too) made one space, as mrskew's sqlid.rc does;\n\
         # a statement whose text the trace lacks shows its #cursor:file once.\n\
         --group='$sqlid . ($sql eq $sqlid ? q{} : q{:} . substr(join(q{ }, split(q{ }, $sql)), 0, 60))'\n\
         --group-label='\"SQLID:SQL\"'\n",
    ),
    (
        "cull-snmfc.rc",
        "# Drop SQL*Net message from client calls of a second or more (think time).\n\
         --where1='($name =~ q{message from client} and $af < 1) or ! ( $name =~ q{message from client})'\n",
    ),
];

const MAX_RC_DEPTH: usize = 16;

fn usage(msg: impl Into<String>) -> SkewError {
    SkewError::Usage(msg.into())
}

/// Resolves an option name as Getopt::Long does: exact names and aliases
/// first, then `no`/`no-` forms of flags, then unique prefixes.
fn resolve(key: &str) -> Result<(&'static str, Kind, bool), SkewError> {
    let mut candidates: Vec<(&'static str, &'static str, Kind, bool)> = Vec::new();
    for &(name, aliases, kind) in OPTIONS {
        for spelled in std::iter::once(name).chain(aliases.iter().copied()) {
            candidates.push((spelled, name, kind, true));
        }
    }
    let negatable: Vec<_> = OPTIONS
        .iter()
        .filter(|(_, _, k)| *k != Kind::Value)
        .map(|&(n, _, k)| (n, k))
        .collect();
    let mut no_forms: Vec<(String, &'static str, Kind)> = Vec::new();
    for (n, k) in negatable {
        no_forms.push((format!("no{n}"), n, k));
        no_forms.push((format!("no-{n}"), n, k));
    }
    if let Some(&(_, name, kind, on)) = candidates.iter().find(|c| c.0 == key) {
        return Ok((name, kind, on));
    }
    if let Some((_, name, kind)) = no_forms.iter().find(|c| c.0 == key) {
        return Ok((name, *kind, false));
    }
    let mut hits: Vec<(&'static str, Kind, bool)> = candidates
        .iter()
        .filter(|c| c.0.starts_with(key))
        .map(|c| (c.1, c.2, true))
        .chain(
            no_forms
                .iter()
                .filter(|c| c.0.starts_with(key))
                .map(|c| (c.1, c.2, false)),
        )
        .collect();
    hits.sort_by_key(|h| (h.0, h.2));
    hits.dedup();
    match hits.len() {
        1 => Ok(hits[0]),
        0 => Err(usage(format!(
            "unknown option --{key} (see tracelab skew --help)"
        ))),
        _ => {
            let names: Vec<String> = hits
                .iter()
                .map(|(n, _, on)| {
                    if *on {
                        format!("--{n}")
                    } else {
                        format!("--no{n}")
                    }
                })
                .collect();
            Err(usage(format!(
                "option --{key} is ambiguous: it could be {}",
                names.join(", ")
            )))
        }
    }
}

fn parse_bool(opt: &str, v: &str) -> Result<bool, SkewError> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(usage(format!(
            "--{opt}={v}: expected 1 or 0 (or true/false)"
        ))),
    }
}

/// Looks like a long option written with one dash (`-where`, `-gl`)?
/// A lone `-` is standard input; `-h`, `-?` and `-V` are short options.
fn is_option(arg: &str) -> bool {
    arg.len() > 1 && arg.starts_with('-')
}

/// Expands `args` (the words after `tracelab skew`) into canonical words
/// `--name=value` and positional file names, splicing rc files in place.
pub fn expand(args: &[String]) -> Result<Vec<String>, SkewError> {
    let mut out = Vec::new();
    expand_into(args, &mut out, 0, None)?;
    Ok(out)
}

fn expand_into(
    args: &[String],
    out: &mut Vec<String>,
    depth: usize,
    from: Option<&str>,
) -> Result<(), SkewError> {
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            out.push("--".into());
            out.extend(args[i..].iter().cloned());
            return Ok(());
        }
        if !is_option(arg) {
            out.push(arg.clone());
            continue;
        }
        match arg.as_str() {
            "-h" | "-?" => {
                out.push("--help".into());
                continue;
            }
            "-V" => {
                out.push("--version".into());
                continue;
            }
            _ => {}
        }
        let body = arg.trim_start_matches('-');
        let (key, inline) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (body, None),
        };
        let (name, kind, on) = resolve(key).map_err(|e| match from {
            Some(f) => usage(format!("{f}: {e}")),
            None => e,
        })?;
        match kind {
            Kind::Ignored => {}
            // clap's own flags take no value.
            Kind::Flag if name == "help" || name == "version" => out.push(format!("--{name}")),
            Kind::Flag => {
                let v = match inline {
                    Some(v) => parse_bool(name, &v)? == on,
                    None => on,
                };
                // The argument parser's flags: `--X` and `--noX`.
                out.push(if v {
                    format!("--{name}")
                } else {
                    format!("--no{name}")
                });
            }
            Kind::Value => {
                if !on {
                    return Err(usage(format!(
                        "--{key}: --{name} takes a value and has no --no form"
                    )));
                }
                let value = match inline {
                    Some(v) => v,
                    None => {
                        let v = args
                            .get(i)
                            .ok_or_else(|| usage(format!("--{name} needs a value")))?;
                        i += 1;
                        v.clone()
                    }
                };
                match name {
                    "rc" => {
                        if depth >= MAX_RC_DEPTH {
                            return Err(usage(format!(
                                "--rc={value}: rc files nest more than {MAX_RC_DEPTH} deep (does one include itself?)"
                            )));
                        }
                        let (path, text) = load_rc(&value)?;
                        let words = words(&path, &text)?;
                        expand_into(&words, out, depth + 1, Some(&path))?;
                    }
                    "init" => return Err(refuse_init(&value, from)),
                    _ => out.push(format!("--{name}={value}")),
                }
            }
        }
    }
    Ok(())
}

fn refuse_init(code: &str, from: Option<&str>) -> SkewError {
    let whence = from.map_or(String::new(), |f| format!(" (in {f})"));
    let first = code
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    SkewError::InitRefused(format!(
        "--init{whence} runs arbitrary Perl code (here: `{first}` …), which tracelab does not embed.\n\
         What --init is usually for has a built-in:\n  \
         histograms (p10.rc, disk.rc, ssd.rc): --rc=p10.rc, --rc=disk.rc, --rc=ssd.rc, or --buckets=EDGE,EDGE,… in seconds\n  \
         per-call arithmetic, labels and filters: expressions in --where, --group, --select (sprintf, substr, lc, regexes, ?: …)\n  \
         time the trace leaves out: --unaccounted\n\
         See `tracelab skew --help` for the expression language."
    ))
}

/// Where rc files are looked for, in order: as named (relative to the
/// current directory), `~/.tracelab/rc/`, each directory of
/// `$TRACELAB_RCPATH` (colon-separated), then the built-ins.
fn load_rc(name: &str) -> Result<(String, String), SkewError> {
    let mut tried: Vec<PathBuf> = vec![PathBuf::from(name)];
    if !name.contains('/') {
        if let Some(home) = std::env::var_os("HOME") {
            tried.push(Path::new(&home).join(".tracelab").join("rc").join(name));
        }
        if let Some(rcpath) = std::env::var_os("TRACELAB_RCPATH") {
            for dir in std::env::split_paths(&rcpath) {
                tried.push(dir.join(name));
            }
        }
    }
    for p in &tried {
        if p.is_file() {
            let text = std::fs::read_to_string(p)
                .map_err(|e| usage(format!("--rc={name}: cannot read {}: {e}", p.display())))?;
            return Ok((p.display().to_string(), text));
        }
    }
    let bare = name.strip_suffix(".rc").unwrap_or(name);
    if let Some((n, text)) = BUILTIN
        .iter()
        .find(|(n, _)| n.strip_suffix(".rc") == Some(bare))
    {
        return Ok((format!("(built-in) {n}"), text.to_string()));
    }
    let builtins: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    Err(usage(format!(
        "--rc={name}: not found as named, in ~/.tracelab/rc, in $TRACELAB_RCPATH, or among the built-ins ({})",
        builtins.join(", ")
    )))
}

/// Splits rc text into words the way a shell would, without expanding
/// anything: whitespace separates, `'…'` and `"…"` quote (and may span
/// lines), `\` escapes, `#` at the start of a word comments to the end of
/// the line.
pub fn words(file: &str, text: &str) -> Result<Vec<String>, SkewError> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        match c {
            '\n' | ' ' | '\t' | '\r' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
                if c == '\n' {
                    line += 1;
                }
            }
            '#' if !in_word => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            '\'' | '"' => {
                in_word = true;
                let start = line;
                let mut closed = false;
                while let Some(q) = chars.next() {
                    if q == c {
                        closed = true;
                        break;
                    }
                    if q == '\n' {
                        line += 1;
                    }
                    if c == '"' && q == '\\' {
                        if let Some(&n @ ('"' | '\\')) = chars.peek() {
                            cur.push(n);
                            chars.next();
                            continue;
                        }
                    }
                    cur.push(q);
                }
                if !closed {
                    return Err(SkewError::Rc {
                        file: file.to_string(),
                        line: start,
                        message: format!("the {c} opened here is never closed"),
                    });
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => line += 1,
                    Some(n) => cur.push(n),
                    None => {}
                }
            }
            _ => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(args: &[&str]) -> Result<Vec<String>, SkewError> {
        expand(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn getopt_long_habits() {
        assert_eq!(
            ex(&[
                "-where=$af>1",
                "--alldep",
                "-gl=LINE:TEXT",
                "--nohead",
                "x.trc"
            ])
            .unwrap(),
            vec![
                "--where=$af>1",
                "--alldepths",
                "--group-label=LINE:TEXT",
                "--nohead",
                "x.trc"
            ]
        );
        assert_eq!(ex(&["--top", "5", "-"]).unwrap(), vec!["--top=5", "-"]);
        assert_eq!(ex(&["--no-dashes"]).unwrap(), vec!["--nodashes"]);
        assert_eq!(ex(&["--nohistogram"]).unwrap(), Vec::<String>::new());
        let e = ex(&["--g=x"]).unwrap_err().to_string();
        assert!(e.contains("ambiguous"), "{e}");
        let e = ex(&["--frobnicate"]).unwrap_err().to_string();
        assert!(e.contains("unknown option --frobnicate"), "{e}");
        assert!(ex(&["--where"])
            .unwrap_err()
            .to_string()
            .contains("needs a value"));
    }

    #[test]
    fn builtin_rc_expands_in_place_and_later_options_win() {
        let got = ex(&["--rc=p10.rc", "--top=3"]).unwrap();
        assert_eq!(
            got,
            vec![
                "--buckets=p10",
                "--group-label=\"RANGE {min ≤ e < max}\"",
                "--sort=1na",
                "--top=0",
                "--top=3"
            ]
        );
        assert_eq!(ex(&["--rc=all"]).unwrap()[0], "--name=:all");
    }

    #[test]
    fn rc_words_quotes_comments_and_errors() {
        let w = words(
            "t.rc",
            "# c\n--group='$a . q{:}'  --x=\"a\\\"b\"\n--init='\nmulti\n'\n",
        )
        .unwrap();
        assert_eq!(w, vec!["--group=$a . q{:}", "--x=a\"b", "--init=\nmulti\n"]);
        let e = words("t.rc", "\n--where='oops\n").unwrap_err().to_string();
        assert_eq!(e, "t.rc:2: the ' opened here is never closed");
    }

    #[test]
    fn init_is_refused_with_pointers_to_builtins() {
        let e = ex(&["--init=sub f { 1 }"]).unwrap_err().to_string();
        assert!(e.contains("--rc=p10.rc"), "{e}");
        assert!(e.contains("sub f { 1 }"), "{e}");
    }

    #[test]
    fn rc_files_nest_and_are_found_on_the_path_variable() {
        let dir = std::env::temp_dir().join(format!("tracelab-rc-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("outer.rc"), "--rc=inner.rc\n--top=7\n").unwrap();
        std::fs::write(dir.join("inner.rc"), "--sort=1a # trailing comment\n").unwrap();
        std::fs::write(dir.join("loop.rc"), "--rc=loop.rc\n").unwrap();
        std::env::set_var("TRACELAB_RCPATH", &dir);
        assert_eq!(
            ex(&["--rc=outer.rc"]).unwrap(),
            vec!["--sort=1a", "--top=7"]
        );
        assert!(ex(&["--rc=loop.rc"])
            .unwrap_err()
            .to_string()
            .contains("nest"));
        assert!(ex(&["--rc=nosuch.rc"])
            .unwrap_err()
            .to_string()
            .contains("built-ins"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
