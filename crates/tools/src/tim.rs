//! `tim`: a trace's `tim` values as wall-clock times and back (Method R's
//! mrtim and mrwhen). A `tim` counts µs from an origin Oracle takes from
//! the OS (on some platforms the Unix epoch, on Linux since 12c a clock of
//! its own): only the file's `***` timestamps tie it to the wall clock.

use tracelab_trace::{
    format_wall_clock, parse_wall_clock, CallKind, LineKinds, ReadOptions, Reader, Source,
    WallClock,
};

use crate::error::ToolsError;

/// One value converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversion {
    pub input: String,
    pub output: String,
}

/// Every place the file's `tim` clock meets its wall clock (a `***`
/// timestamp and the `tim` of the first call after it), in file order.
pub fn anchors(file: &str) -> Result<Vec<WallClock>, ToolsError> {
    let trace = tracelab_trace::open(&Source::from_arg(file))?;
    let mut reader = Reader::new(ReadOptions {
        chained: true,
        line_kinds: LineKinds {
            sql_text: false,
            bind_details: false,
        },
        ..ReadOptions::default()
    });
    let mut out: Vec<WallClock> = Vec::new();
    reader.read(trace, |c| {
        if c.kind == CallKind::Line {
            return;
        }
        if let Some(w) = c.wall {
            if out.last() != Some(&w) {
                out.push(w);
            }
        }
    })?;
    Ok(out)
}

/// Converts each value: an integer is a `tim`, printed as a wall-clock
/// time; a wall-clock time is printed as a `tim`. With no anchors (no
/// file), a `tim` is taken as µs since 1970-01-01 UTC.
pub fn convert(values: &[String], anchors: &[WallClock]) -> Result<Vec<Conversion>, ToolsError> {
    let epoch = [WallClock { wall_us: 0, tim: 0 }];
    let anchors = if anchors.is_empty() {
        &epoch[..]
    } else {
        anchors
    };
    values
        .iter()
        .map(|v| {
            let s = v.trim();
            let output = if !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) {
                let tim: i64 = s.parse().map_err(|_| {
                    ToolsError::Usage(format!("{v:?}: the tim does not fit in 64 bits"))
                })?;
                let a = anchors
                    .iter()
                    .rev()
                    .find(|a| a.tim <= tim)
                    .unwrap_or(&anchors[0]);
                format_wall_clock(a.wall_us + (tim - a.tim))
            } else {
                let wall = parse_wall_clock(s.as_bytes()).ok_or_else(|| {
                    ToolsError::Usage(format!(
                        "{v:?}: expected a tim (an integer) or a wall-clock time such as 2022-09-01T17:39:34.556684 or 2018-04-05 18:18:44.341"
                    ))
                })?;
                let a = anchors
                    .iter()
                    .rev()
                    .find(|a| a.wall_us <= wall)
                    .unwrap_or(&anchors[0]);
                (a.tim + (wall - a.wall_us)).to_string()
            };
            Ok(Conversion {
                input: v.clone(),
                output,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_anchor_before_a_value_converts_it() {
        let w = |s: &str| parse_wall_clock(s.as_bytes()).unwrap();
        let anchors = [
            WallClock {
                wall_us: w("2022-09-01T17:39:34.556715"),
                tim: 1000,
            },
            WallClock {
                wall_us: w("2022-09-01T18:00:00.000000"),
                tim: 2_000_000_000,
            },
        ];
        let c = convert(
            &[
                "1500".into(),
                "2000000001".into(),
                "2022-09-01T17:39:34.557215".into(),
                "10".into(),
            ],
            &anchors,
        )
        .unwrap();
        let out: Vec<&str> = c.iter().map(|c| c.output.as_str()).collect();
        assert_eq!(
            out,
            [
                "2022-09-01T17:39:34.557215",
                "2022-09-01T18:00:00.000001",
                "1500",
                "2022-09-01T17:39:34.555725"
            ]
        );
        let e = convert(&["noon".into()], &anchors).unwrap_err().to_string();
        assert!(e.contains("\"noon\": expected a tim"), "{e}");
    }

    #[test]
    fn without_a_file_a_tim_is_microseconds_since_the_epoch() {
        let c = convert(&["1522977524319640".into()], &[]).unwrap();
        assert_eq!(c[0].output, "2018-04-06T01:18:44.319640");
    }
}
