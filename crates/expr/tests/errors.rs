//! Compile errors: what they say, where the caret goes, and that
//! unsupported Perl is refused by name rather than misread.

mod common;

use common::*;

/// The error's message, and the column (1-based) its caret points at.
fn err_at(src: &str) -> (String, usize) {
    let e = compile_err(src);
    (e.message.clone(), e.column())
}

#[test]
fn incomplete_expressions() {
    let e = compile_err("$af <");
    assert!(e.message.contains("expression ended"), "{}", e.message);
    assert_eq!(e.position, 5);
    assert_eq!(e.to_string(), format!("{}\n  $af <\n       ^", e.message));

    let e = compile_err("(1");
    assert_eq!(
        e.message,
        "expected ')' to close the '(' opened at column 1"
    );
    assert_eq!(e.position, 2);
    assert_eq!(
        e.to_string(),
        "expected ')' to close the '(' opened at column 1\n  (1\n    ^"
    );

    let e = compile_err("lc(1");
    assert!(
        e.message.contains("close the '(' of lc at column 3"),
        "{}",
        e.message
    );

    let (m, col) = err_at("$af ? 1");
    assert!(m.contains("expected ':' for the '?' at column 5"), "{m}");
    assert_eq!(col, 8);

    let (m, _) = err_at("");
    assert_eq!(m, "empty expression");
    let (m, _) = err_at("   ");
    assert_eq!(m, "empty expression");
}

#[test]
fn unknown_variables_point_at_the_variable() {
    let e = compile_err("$nosuch");
    assert_eq!(e.message, "unknown variable $nosuch");
    assert_eq!(e.position, 0);
    assert_eq!(e.to_string(), "unknown variable $nosuch\n  $nosuch\n  ^");

    let e = compile_err("$af > 1 and $nosuch < 2");
    assert_eq!(e.message, "unknown variable $nosuch");
    assert_eq!(e.position, 12);

    let e = compile_err("qq{$basename:$nosuch}");
    assert_eq!(e.message, "unknown variable $nosuch");
    assert_eq!(e.position, 13);

    let e = compile_err("\"@nosuch\"");
    assert!(
        e.message.starts_with("unknown array @nosuch"),
        "{}",
        e.message
    );
    assert_eq!(e.position, 1);

    let (m, _) = err_at("$nosuch[0]");
    assert_eq!(m, "unknown array @nosuch");
    let (m, _) = err_at("scalar(@nosuch)");
    assert_eq!(m, "unknown array @nosuch");
    let (m, col) = err_at("$nam =~ /^$nosuch/");
    assert_eq!(m, "unknown variable $nosuch");
    assert_eq!(col, 11);
}

#[test]
fn unsupported_perl_is_named() {
    let cases: &[(&str, &str, usize)] = &[
        ("sub f {}", "sub definitions", 0),
        ("$x = 1", "assignment ('=')", 3),
        ("$x == 1", "unknown variable $x", 0),
        ("$af = 1", "assignment ('=')", 4),
        ("$af += 1", "assignment ('+=')", 4),
        ("$af .= 'x'", "assignment ('.=')", 4),
        ("$af x= 2", "assignment ('x=')", 4),
        ("my $x", "variable declarations", 0),
        ("our $x", "variable declarations", 0),
        ("local $x", "variable declarations", 0),
        ("BEGIN { 1 }", "BEGIN/END blocks", 0),
        ("END { print 1 }", "BEGIN/END blocks", 0),
        ("use POSIX", "loading modules", 0),
        ("$nam =~ s/a/b/", "s/// (substitution)", 8),
        ("$nam =~ tr/a/b/", "tr/// (transliteration)", 8),
        ("$nam =~ y/a/b/", "y/// (transliteration)", 8),
        ("%h", "hashes", 0),
        ("$af{x}", "hash element $af{...}", 0),
        ("$calls{$nam}", "hash element $calls{...}", 0),
        ("\"$af{x}\"", "hash element $af{...} in a string", 1),
        ("$af->method", "method calls and dereferences", 3),
        ("$af; $dur", "several statements", 3),
        ("if ($af) { 1 }", "statements ('if')", 0),
        ("label(1)", "unknown function 'label'", 0),
        ("f($ssqlid,$sqlid)", "unknown function 'f'", 0),
        ("getGrpName($nam,$r)", "unknown function 'getGrpName'", 0),
        ("1 .. 5", "range operator", 2),
        ("$af++", "'++' and '--'", 3),
        ("\\$af", "references", 0),
        ("[1, 2]", "array references", 0),
        ("{ a => 1 }", "blocks and anonymous hashes", 0),
        ("&f", "calling subs with &", 0),
        ("${ \\ $af }", "dereferencing with ${...}", 0),
        ("@{$x}", "array dereferences", 0),
        ("$main::af", "package variables", 0),
        ("POSIX::floor($af)", "package-qualified names", 0),
        ("$&", "special variable $&", 0),
        ("$0", "special variable $0", 0),
        ("print $af", "the Perl built-in 'print'", 0),
        ("-e $file", "file test operators", 0),
        ("`ls`", "backticks", 0),
        ("$nam =~ /(a)\\1/", "backreference", 8),
        ("$nam =~ /a(?=b)/", "lookahead", 8),
        ("$nam =~ /a/e", "s/// substitution", 11),
        ("$nam =~ /a/z", "unknown regex modifier /z", 11),
        ("$nam =~ /[a/", "unterminated character class", 8),
        ("$nam =~ q{(}", "invalid regex", 8),
        ("1 <=> 2 <=> 3", "cannot be chained", 8),
        ("1.2.3", "version strings", 0),
        ("019", "illegal octal digit '9'", 2),
        ("undef $af", "undef EXPR", 0),
        ("'abc", "unterminated string", 0),
        ("q{abc", "unterminated string", 0),
        ("\"$af", "unterminated string", 0),
        ("$nam =~ /abc", "unterminated", 8),
        ("lc", "not enough arguments for lc", 0),
        ("substr($nam)", "not enough arguments for substr", 0),
        ("lc($nam, 1)", "too many arguments for lc", 0),
        ("split /,/", "split needs a string", 9),
        ("/abc/", "a pattern needs a target", 0),
        ("1 2", "unexpected the number 2", 2),
        ("$af $dur", "unexpected $dur", 4),
        ("1)", "unmatched ')'", 1),
        ("1 : 2", "':' without a matching '?'", 2),
        ("é", "unexpected character 'é'", 0),
        ("\"\\N{LATIN SMALL LETTER A}\"", "named characters", 1),
        ("\"${ $af }\"", "expressions in strings", 1),
        ("$nam =~ /\\G/", "\\G anchor", 8),
    ];
    for (src, want, pos) in cases {
        let e = compile_err(src);
        assert!(
            e.message.contains(want),
            "{src:?}: message {:?} should contain {want:?}",
            e.message
        );
        assert_eq!(e.position, *pos, "{src:?}: position ({})", e.message);
    }
    // Every refusal of Perl we do not support says so in the same words.
    for src in [
        "sub f {}",
        "$af = 1",
        "my $x",
        "BEGIN { 1 }",
        "$nam =~ s/a/b/",
        "%h",
        "$af->m",
        "$af; 1",
    ] {
        let m = compile_err(src).message;
        assert!(
            m.contains("not supported by tracelab's expression language")
                || m.contains("tracelab's expression language evaluates one expression"),
            "{src}: {m}"
        );
    }
}

#[test]
fn caret_display_on_multi_line_and_unicode_sources() {
    let e = compile_err("$af > 1\n  and $nosuch");
    assert_eq!(
        e.to_string(),
        "unknown variable $nosuch\n    and $nosuch\n        ^"
    );
    let e = compile_err("'é' . $nosuch");
    assert_eq!(e.column(), 7);
    assert_eq!(
        e.to_string(),
        "unknown variable $nosuch\n  'é' . $nosuch\n        ^"
    );
    let e = compile_err("\t$nosuch");
    assert_eq!(
        e.to_string(),
        "unknown variable $nosuch\n  \t$nosuch\n  \t^"
    );
    assert_eq!(e.source_text, "\t$nosuch");
}

#[test]
fn evaluation_errors_are_errors_not_panics() {
    let rec = Record::default().num("dep", 0.0).str("nam", "x");
    for src in [
        "1/$dep",
        "5 % $dep",
        "sqrt(-1 - $dep)",
        "log($dep)",
        "sprintf('%c', 9**9**9 + $dep)",
        "'x' x (1e12 + $dep)",
        "$nam =~ ($nam . '(')",
    ] {
        let p = compile(src);
        assert!(p.eval(&rec).is_err(), "{src}");
        assert!(p.eval_bool(&rec).is_err(), "{src}");
        assert!(p.eval_num(&rec).is_err(), "{src}");
    }
}
