//! Every expression of shared/traces/MANIFEST.md and the idioms of the
//! reference (§A.1–§A.8) that need no `--init` code compile with the §A.5
//! variable names and give the right value on a mock record.

mod common;

use common::*;

#[test]
fn manifest_commands() {
    let snmfc = snmfc();
    let fetch = fetch();

    // mrskew --where='$dur < 1'
    let p = compile("$dur < 1");
    assert!(!p.eval_bool(&snmfc).unwrap());
    assert!(p.eval_bool(&fetch).unwrap());

    // --where='$af >= 1 and $dur < 65' --group='qq{$basename:$line}'
    let w = compile("$af >= 1 and $dur < 65");
    assert!(w.eval_bool(&snmfc).unwrap());
    assert!(!w.eval_bool(&fetch).unwrap());
    assert!(!w
        .eval_bool(&Record::default().num("af", 65.5).num("dur", 65.5))
        .unwrap());
    let g = compile("qq{$basename:$line}");
    assert_eq!(
        g.eval(&snmfc).unwrap().to_string(),
        "orcl_ora_30561_RC-20230830160541-20230703160541.trc:58081"
    );

    // -where='$line >= 55660 and $line <= 55660+230' --group='qq{$line:$text}'
    let w = compile("$line >= 55660 and $line <= 55660+230");
    assert!(!w.eval_bool(&snmfc).unwrap());
    for (line, inside) in [
        (55659.0, false),
        (55660.0, true),
        (55890.0, true),
        (55891.0, false),
    ] {
        assert_eq!(
            w.eval_bool(&Record::default().num("line", line)).unwrap(),
            inside,
            "line {line}"
        );
    }
    let rec = snmfc.clone().num("line", 55660.0);
    assert_eq!(
        compile("qq{$line:$text}").eval(&rec).unwrap().to_string(),
        "55660:WAIT #140661336887528: nam='SQL*Net message from client' ela= 60001584 driver id=1952673792 #bytes=1 p3=0 obj#=-1 tim=14522473254855"
    );

    // The default filter and group mrskew prints.
    let f = compile("((1) and ($dep==$depmin)) and ($nam=~/.+/i)");
    assert!(f.eval_bool(&snmfc).unwrap());
    assert!(!f.eval_bool(&fetch).unwrap());
    assert!(!f
        .eval_bool(
            &Record::default()
                .num("dep", 0.0)
                .num("depmin", 0.0)
                .str("nam", "")
        )
        .unwrap());
    assert!(!f
        .eval_bool(
            &Record::default()
                .num("dep", 0.0)
                .num("depmin", 0.0)
                .str("nam", "\n")
        )
        .unwrap());
    let f = compile("(($af >=1 and $af <= 59) and ($dep==$depmin)) and ($nam=~/.+/i)");
    assert!(!f.eval_bool(&snmfc).unwrap());
    assert_eq!(
        compile("$nam").eval(&snmfc).unwrap().to_string(),
        "SQL*Net message from client"
    );

    // --group-label='FILE:LINE' and -gl='LINE:TEXT' are not expressions
    // (a bareword, then a ':' with no '?'); the host shows them as
    // written. They must fail cleanly, pointing at the ':'.
    for label in ["FILE:LINE", "LINE:TEXT"] {
        let e = compile_err(label);
        assert_eq!(e.position, 4, "{label}: {}", e.message);
    }
}

#[test]
fn barewords_are_strings_outside_strict() {
    let rec = snmfc();
    // The header of a published mrskew table.
    assert_eq!(
        compile("FETCH . sprintf(q{%10s},q{acct for})")
            .eval(&rec)
            .unwrap()
            .to_string(),
        "FETCH  acct for"
    );
    assert_eq!(
        compile("FETCH x 2").eval(&rec).unwrap().to_string(),
        "FETCHFETCH"
    );
    assert!(compile("$nam eq SQL ? 0 : 1").eval_bool(&rec).unwrap());
    assert!(compile("FETCH").constant().is_some());
    // A misspelt function is still an error at the word.
    for (src, col) in [
        ("sprntf(q{%d}, 1)", 0),
        ("1 + lenght $nam", 4),
        ("uc lenght(1)", 3),
    ] {
        let e = compile_err(src);
        assert!(
            e.message.contains("unknown function 'lenght'") || e.message.contains("'sprntf'"),
            "{src}: {}",
            e.message
        );
        assert_eq!(e.position, col, "{src}");
    }
}

#[test]
fn reference_one_liners() {
    let rec = snmfc();
    // §A.1 documented one-liners (--group and --gl expressions)
    for (src, want) in [
        ("\"$p3\"", "0"),
        ("\"BLKS/READ\"", "BLKS/READ"),
        ("\"$p1:$p2\"", "1952673792:1"),
        ("\"FILE#:BLOCK#\"", "FILE#:BLOCK#"),
        ("\"$p1\"", "1952673792"),
        ("\"FILE\"", "FILE"),
        ("\"$sqlid\"", "9babjv8yq8ru3"),
        // §A.2 group expressions and labels
        (
            "$sqlid . q{:} . substr($sql,0,60)",
            "9babjv8yq8ru3:BEGIN DBMS_OUTPUT.GET_LINES(:LINES, :NUMLINES); END;",
        ),
        (
            "join(\",\",@bind)",
            "1686,\"5/11/2023 0:0:0\",AAAR3sAAEAAAACXAAA",
        ),
        // §A.5 idioms
        ("sprintf(q{%3.5f},$af)", "60.00259"),
        ("($ela ? $ela : $e)", "60.002586"),
        ("$tim", "14522473.254855"),
        ("sprintf('%17.6f', $tim)", "  14522473.254855"),
        // §A.8
        (
            "$base . \":\" . $island_id",
            "orcl_ora_30561_RC-20230830160541-20230703160541.trc:3",
        ),
        ("\"RANGE {min ≤ e < max}\"", "RANGE {min ≤ e < max}"),
        ("\"RANGE {min <= e < max}\"", "RANGE {min <= e < max}"),
        ("'DISTINCT-TEXTS'", "DISTINCT-TEXTS"),
    ] {
        assert_eq!(eval_on(src, &rec), want, "{src}");
    }
    let fetch = fetch();
    assert_eq!(eval_on("($ela ? $ela : $e)", &fetch), "0.000456");
    assert_eq!(eval_on("\"· \"x$dep . $nam", &fetch), "· · FETCH");
    assert_eq!(
        eval_on("sprintf(\"[$ssqlid] %.50s\", $ssql)", &fetch),
        "[abc] select * from t where x = :1 and a very long tail "
    );
    assert_eq!(eval_on("$ssqlid", &fetch), "abc");
}

#[test]
fn reference_filters() {
    let snmfc = snmfc();
    let fetch = fetch();
    let exec = Record::default()
        .str("call", "EXEC")
        .str("nam", "EXEC")
        .str("name", "EXEC");
    let yes = |src: &str, rec: &Record| {
        assert!(compile(src).eval_bool(rec).unwrap(), "{src} should hold")
    };
    let no = |src: &str, rec: &Record| {
        assert!(
            !compile(src).eval_bool(rec).unwrap(),
            "{src} should not hold"
        )
    };

    // §A.4 / shareable-texts.rc / calls-totaled-2.rc
    yes("$sqlid !~ /^#/", &snmfc);
    no("$sqlid !~ /^#/", &fetch);
    yes("length($sqlid)==13", &snmfc);
    no("length($sqlid)==13", &fetch);
    // §A.5
    yes("$call =~ /EXEC|FETCH/", &exec);
    yes("$call =~ /EXEC|FETCH/", &fetch);
    no("$call =~ /EXEC|FETCH/", &snmfc);
    // §A.7 cull-snmfc.rc
    let cull =
        "($name =~ q{message from client} and $af < 1) or ! ( $name =~ q{message from client})";
    no(cull, &snmfc);
    yes(cull, &snmfc.clone().num("af", 0.5));
    yes(cull, &fetch);
    yes("$dur < 1", &fetch);
    // §A.8 island.rc
    yes("$island_id > 0", &snmfc);
    no("$island_id > 0", &fetch);
    // fetch-rowcounts.rc, first-read-only.rc style filters
    yes("$oct == 3 and $nam eq 'FETCH'", &fetch);
    yes("$dep==$depmin", &snmfc);
    yes("1", &snmfc);
    // --name='read' becomes $nam =~ /read/i
    yes(
        "$nam =~ /read/i",
        &Record::default().str("nam", "db file sequential READ"),
    );
    no("$nam =~ /read/i", &snmfc);
    // cell-blocks.rc splits the line text on whitespace
    assert_eq!(eval_on("(split /\\s+/, $text)[7]", &snmfc), "60001584");
}

#[test]
fn p10_histogram_group() {
    // p10.rc's group, with its label() calls (which need --init) replaced
    // by the labels they return.
    let labels = [
        " 1.     0.000000     0.000001",
        " 2.     0.000001     0.000010",
        " 3.     0.000010     0.000100",
        " 4.     0.000100     0.001000",
        " 5.     0.001000     0.010000",
        " 6.     0.010000     0.100000",
        " 7.     0.100000     1.000000",
        " 8.     1.000000    10.000000",
        " 9.    10.000000   100.000000",
        "10.   100.000000 1,000.000000",
        "11. 1,000.000000           +∞",
    ];
    let bounds = [
        "1e-6", "1e-5", "1e-4", "1e-3", "1e-2", "1e-1", "1e+0", "1e+1", "1e+2", "1e+3",
    ];
    let mut src = String::new();
    for (b, l) in bounds.iter().zip(labels.iter()) {
        src.push_str(&format!("$af < {b} ? \"{l}\" : "));
    }
    src.push_str(&format!("\"{}\"", labels[10]));
    let p = compile(&src);
    let bucket = |af: f64| {
        p.eval(&Record::default().num("af", af))
            .unwrap()
            .to_string()
    };
    assert_eq!(bucket(0.0), labels[0]);
    assert_eq!(
        bucket(100.0 * 1e-6),
        labels[2],
        "100 µs × 1e-6 falls in bucket 3 (§F.3)"
    );
    assert_eq!(bucket(0.000101), labels[3]);
    assert_eq!(bucket(60.002586), labels[8]);
    assert_eq!(bucket(1000.0), labels[10]);
    // And with label() itself, the --init sub is refused by name.
    assert!(compile_err("$af < 1e-6 ? label(1) : label(2)")
        .message
        .contains("unknown function 'label'"));
}

#[test]
fn every_documented_variable_name_compiles() {
    for name in SCALARS {
        compile(&format!("${name}"));
        compile(&format!("\"${name}\""));
        compile(&format!("defined ${name}"));
    }
    compile("@bind");
    compile("\"@bind\"");
    compile("$bind[0]");
    compile("scalar(@bind)");
}
