//! `[report.published]` of a study file: the original study's published
//! figures, per cell or as ratios to the baseline (reported beside this
//! run's by `report::published`). Every built-in study has one: a reader
//! who knows the original checks its figures first.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::spec::{value_text, Study};

/// The key of a cell or ratio that says why ours differs.
pub const WHY: &str = "why";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// Where the figures come from.
    pub title: String,
    /// Report columns the cells give values of.
    pub columns: Vec<String>,
    /// The column whose ratios are compared (the first by default).
    pub ratio: Option<String>,
    /// Each: the levels of some factors (`cache = "off"`) and the
    /// published value of each column (`transactions = 18253215`), and
    /// optionally `why` (why ours differs, printed beside the ratio).
    #[serde(default)]
    pub cells: Vec<BTreeMap<String, toml::Value>>,
    /// Figures the original gives only relative to its baseline ("the
    /// response time fell 73 %", "x1.9"): each names a level of the rows
    /// factor other than the baseline (and of other factors if need be),
    /// the ratio level / baseline of each column it gives
    /// (`response = 0.27`) or, where the original's figures are not to
    /// be had, only the direction (`wal_bytes = "lower"`), and optionally
    /// `why`.
    #[serde(default)]
    pub ratios: Vec<BTreeMap<String, toml::Value>>,
    /// What else the original reported, printed under the tables.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Published {
    pub fn check(&self, s: &Study) -> Result<(), String> {
        if self.cells.is_empty() && self.ratios.is_empty() {
            return Err("expected `cells` or `ratios`: the original's figures".into());
        }
        for c in &self.columns {
            if !s.report.columns.iter().any(|x| &x.name == c) {
                return Err(format!("columns: no report column `{c}`"));
            }
        }
        if let Some(r) = &self.ratio {
            if !self.columns.contains(r) {
                return Err(format!("ratio: `{r}` is not one of its columns"));
            }
        }
        // The rows factor the baseline belongs to: the first.
        let rows_f = s.report.rows.first().map_or("", String::as_str);
        for (what, cell) in self
            .cells
            .iter()
            .map(|c| ("cells", c))
            .chain(self.ratios.iter().map(|c| ("ratios", c)))
        {
            for (k, v) in cell {
                if k == WHY {
                    if !v.is_str() {
                        return Err(format!("{what}: `why`: expected a string"));
                    }
                    continue;
                }
                if self.columns.contains(k) {
                    if what == "ratios" {
                        if number(v).is_some_and(|x| x > 0.0)
                            || v.as_str().and_then(Direction::parse).is_some()
                        {
                            continue;
                        }
                        return Err(format!(
                            "{what}: `{k}`: expected a ratio above 0, or \"higher\" or \"lower\" (the direction alone)"
                        ));
                    }
                    if !(v.is_integer() || v.is_float()) {
                        return Err(format!("{what}: `{k}`: expected a number"));
                    }
                    continue;
                }
                let Some(f) = s.factors.iter().find(|f| &f.name == k) else {
                    return Err(format!(
                        "{what}: `{k}` is neither a factor, one of its columns nor `why`"
                    ));
                };
                if !f.level_names().contains(&value_text(v)) {
                    return Err(format!(
                        "{what}: factor `{k}` has no level `{}`",
                        value_text(v)
                    ));
                }
            }
            if !cell.contains_key(rows_f) {
                return Err(format!(
                    "{what}: each names a level of `{rows_f}` (the report's rows)"
                ));
            }
            if what == "ratios" {
                if cell.get(rows_f).map(value_text).is_some_and(|l| {
                    s.report.baseline.as_deref() == Some(l.as_str())
                        || s.report.baselines.contains(&l)
                }) {
                    return Err(format!(
                        "ratios: each names a level of `{rows_f}` other than the baseline"
                    ));
                }
                if !cell.keys().any(|k| self.columns.contains(k)) {
                    return Err("ratios: each gives the ratio of one of its columns".into());
                }
            }
        }
        Ok(())
    }

    /// A cell's factor levels (its keys that are not columns nor `why`).
    pub fn levels<'a>(&self, cell: &'a BTreeMap<String, toml::Value>) -> Vec<(&'a str, String)> {
        cell.iter()
            .filter(|(k, _)| !self.columns.contains(k) && k.as_str() != WHY)
            .map(|(k, v)| (k.as_str(), value_text(v)))
            .collect()
    }
}

/// A published number (integer or float).
pub fn number(v: &toml::Value) -> Option<f64> {
    v.as_float().or(v.as_integer().map(|i| i as f64))
}

/// The direction of a change, where only that is known of the original.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Higher,
    Lower,
}

impl Direction {
    pub fn parse(s: &str) -> Option<Direction> {
        match s {
            "higher" => Some(Direction::Higher),
            "lower" => Some(Direction::Lower),
            _ => None,
        }
    }
}
