//! No input makes compilation or evaluation panic or overflow the stack.

mod common;

use common::*;
use proptest::prelude::*;
use tracelab_expr::Program;

/// Compiles `src` and, if it compiles, evaluates it every way on two
/// records. Errors are fine; panics are not.
fn exercise(src: &str) {
    if let Ok(p) = Program::compile(src, &MockScope) {
        for rec in [snmfc(), fetch()] {
            let _ = p.eval(&rec).map(|v| v.to_string());
            let _ = p.eval_bool(&rec);
            let _ = p.eval_num(&rec);
        }
        let _ = p.constant();
        let _ = p.variables();
    } else if let Err(e) = Program::compile(src, &MockScope) {
        // The error renders, and its position is inside the text.
        assert!(e.position <= src.len());
        let _ = e.to_string();
    }
}

const TOKENS: &[&str] = &[
    "$af",
    "$nam",
    "$text",
    "$bind[",
    "@bind",
    "$#bind",
    "$1",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "?",
    ":",
    "q{",
    "qq{",
    "qw(",
    "m{",
    "qr/",
    "\"",
    "'",
    "/",
    "=~",
    "!~",
    "0",
    "1",
    "2.5",
    "1e-6",
    "0x1f",
    "+",
    "-",
    "*",
    "**",
    "%",
    ".",
    "x",
    "<",
    "<=",
    "==",
    "!=",
    "<=>",
    "eq",
    "lt",
    "cmp",
    "&&",
    "||",
    "//",
    "!",
    "~",
    "and",
    "or",
    "not",
    "xor",
    ",",
    "=>",
    ";",
    "lc",
    "substr",
    "sprintf",
    "split",
    "join",
    "defined",
    "scalar",
    "reverse",
    "index",
    "basename",
    "undef",
    "'%5.2f'",
    "\"%s\"",
    "\\",
    "$",
    "@",
    "#",
    " ",
    "\n",
    "é",
    "\\Q",
    "\\E",
    "\\x{",
    "${",
    "->",
    "=",
    "++",
    "..",
    "\\1",
    "(?=",
    "[:alpha:]",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|v| v.concat())
}

fn spaced_token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|v| v.join(" "))
}

/// Well-formed expressions from a small grammar, so that evaluation (not
/// only parsing) meets odd combinations.
fn grammar() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "$af",
        "$nam",
        "$text",
        "$e",
        "$dep",
        "$line",
        "@bind",
        "$bind[1]",
        "$#bind",
        "$1",
        "0",
        "1",
        "-1",
        "2.5",
        "1e300",
        "'0'",
        "''",
        "'abc'",
        "\"$nam:$line\"",
        "q{x}",
        "undef",
        "9**9**9",
        "-9**9**9",
        "'nan'",
    ])
    .prop_map(str::to_string);
    leaf.prop_recursive(6, 64, 3, |inner| {
        let bin = prop::sample::select(vec![
            "+", "-", "*", "/", "%", "**", ".", "x", "<", "<=", "==", "!=", "<=>", "eq", "lt",
            "cmp", "&&", "||", "//", "and", "or", "xor", "&", "|", "^", "<<", ">>",
        ]);
        let unary = prop::sample::select(vec![
            "-", "!", "~", "not ", "lc ", "uc ", "length ", "defined ", "int ", "abs ", "ucfirst ",
        ]);
        let func = prop::sample::select(vec![
            "substr",
            "index",
            "rindex",
            "sprintf",
            "join",
            "sqrt",
            "log",
            "exp",
            "hex",
            "oct",
            "ord",
            "chr",
            "basename",
            "dirname",
            "reverse",
            "quotemeta",
            "atan2",
        ]);
        let pat = prop::sample::select(vec![
            "/a/",
            "/^(\\w+)/i",
            "/\\d+$/",
            "q{.+}",
            "/$nam/",
            "'('",
        ]);
        prop_oneof![
            (inner.clone(), bin, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
            (unary, inner.clone()).prop_map(|(u, a)| format!("({u}{a})")),
            (func, prop::collection::vec(inner.clone(), 0..4))
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
            (inner.clone(), pat).prop_map(|(a, p)| format!("({a} =~ {p})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(split /,/, {a}, {b})[1]")),
            inner.prop_map(|a| format!("\"<$nam {a}>\" . {a}")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn grammar_expressions_never_panic(src in grammar()) {
        exercise(&src);
    }

    #[test]
    fn arbitrary_strings_never_panic(src in any::<String>()) {
        exercise(&src);
    }

    #[test]
    fn printable_ascii_never_panics(src in "[ -~]{0,60}") {
        exercise(&src);
    }

    #[test]
    fn token_soup_never_panics(src in token_soup()) {
        exercise(&src);
    }

    #[test]
    fn spaced_token_soup_never_panics(src in spaced_token_soup()) {
        exercise(&src);
    }

    #[test]
    fn numbers_print_and_read_back(n in any::<f64>()) {
        let s = tracelab_expr::perl_number_to_string(n);
        let back = tracelab_expr::perl_str_to_num(&s);
        if n.is_nan() {
            prop_assert!(back.is_nan());
        } else if n == 0.0 {
            prop_assert_eq!(back, 0.0);
        } else {
            // %.15g keeps 15 significant digits.
            prop_assert!(((back - n) / n).abs() < 1e-14, "{} -> {} -> {}", n, s, back);
        }
    }
}

fn assert_too_deep(src: &str) {
    match Program::compile(src, &MockScope) {
        Ok(_) => panic!("{} chars of nesting compiled", src.len()),
        Err(e) => assert!(e.message.contains("nested too deeply"), "{}", e.message),
    }
}

#[test]
fn deep_nesting_is_a_compile_error_not_a_stack_overflow() {
    let n = 100_000;
    assert_too_deep(&"(".repeat(n));
    assert_too_deep(&format!("{}1{}", "(".repeat(n), ")".repeat(n)));
    assert_too_deep(&format!("{}1", "!".repeat(n)));
    assert_too_deep(&format!("{}1", "- ".repeat(n)));
    assert_too_deep(&format!("{}1", "not ".repeat(n)));
    assert_too_deep(&format!("{}1", "lc ".repeat(n)));
    assert_too_deep(&format!("{}1", "2**".repeat(n)));
    assert_too_deep(&format!("{}1", "$af ? 1 : ".repeat(n)));
    assert_too_deep(&format!("{}1", "$af+".repeat(n)));
    // A constant chain folds as it goes, so it is not deep at all.
    assert_eq!(
        compile(&format!("{}1", "1+".repeat(n))).constant(),
        Some(tracelab_expr::Value::Num(n as f64 + 1.0))
    );
    assert_too_deep(&format!("{}1", "$af*".repeat(n)));
    assert_too_deep(&format!("{}1{}", "lc(".repeat(n), ")".repeat(n)));
    assert_too_deep(&format!("\"{}1{}\"", "$bind[".repeat(n), "]".repeat(n)));
    assert_too_deep(&format!("{}1{}", "(1,".repeat(n), ")".repeat(n)));
    assert_too_deep(&format!("{}1", "$af =~ ".repeat(n)));
}

#[test]
fn long_flat_chains_are_fine() {
    // Chained comparisons and `and`/`or`/`.` lists are flat nodes.
    assert!(Program::compile(&format!("{}1", "1 < ".repeat(10_000)), &MockScope).is_ok());
    // cull-idle.rc style: one comparison per idle event, joined with `and`.
    let n = 5_000;
    let src = vec!["$nam ne 'x'"; n].join(" and ");
    assert!(compile(&src).eval_bool(&snmfc()).unwrap());
    let src = vec!["$nam eq 'x'"; n].join(" || ");
    assert!(!compile(&src).eval_bool(&snmfc()).unwrap());
    let src = vec!["'a'"; n].join(" . ");
    assert_eq!(compile(&src).eval(&snmfc()).unwrap().to_string().len(), n);
    let src = vec!["$line"; n].join(", ");
    assert_eq!(eval_on(&format!("join('', {src})"), &snmfc()).len(), 5 * n);
}

#[test]
fn nesting_just_under_the_limit_evaluates() {
    // Compile and run on a thread with the default 2 MiB stack, as worker
    // threads have (and this is an unoptimised build, with large frames).
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let depth = 120;
            let rec = snmfc();
            let parens = format!("{}$af{}", "(".repeat(depth), ")".repeat(depth));
            assert_eq!(compile(&parens).eval_num(&rec).unwrap(), 60.002586);
            let neg = format!("{}$af", "- ".repeat(depth));
            assert_eq!(compile(&neg).eval_num(&rec).unwrap(), 60.002586);
            let nots = format!("{}$af", "!".repeat(depth));
            assert!(compile(&nots).eval_bool(&rec).unwrap());
            let sums = format!("{}$af", "1+".repeat(depth));
            assert_eq!(
                compile(&sums).eval_num(&rec).unwrap(),
                60.002586 + depth as f64
            );
            let ternary = format!("{}$af", "$af < 0 ? 1 : ".repeat(depth));
            assert_eq!(
                compile(&ternary).eval(&rec).unwrap().to_string(),
                "60.002586"
            );
            let calls = format!("{}$nam{}", "lc(".repeat(80), ")".repeat(80));
            assert_eq!(
                compile(&calls).eval(&rec).unwrap().to_string(),
                "sql*net message from client"
            );
            let mixed = format!(
                "{}$af{}",
                "(1 + -(".repeat(depth / 3),
                "))".repeat(depth / 3)
            );
            assert!(compile(&mixed).eval_num(&rec).is_ok());
        })
        .unwrap();
    handle.join().unwrap();
}
