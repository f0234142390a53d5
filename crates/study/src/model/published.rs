//! `[report.published]` of a study file: the original study's published
//! figures, per cell (reported beside this run's by `report::published`).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::spec::{value_text, Study};

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
    /// published value of each column (`transactions = 18253215`).
    pub cells: Vec<BTreeMap<String, toml::Value>>,
    /// What else the original reported, printed under the tables.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Published {
    pub fn check(&self, s: &Study) -> Result<(), String> {
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
        for cell in &self.cells {
            for (k, v) in cell {
                if self.columns.contains(k) {
                    if !(v.is_integer() || v.is_float()) {
                        return Err(format!("cells: `{k}`: expected a number"));
                    }
                    continue;
                }
                let Some(f) = s.factors.iter().find(|f| &f.name == k) else {
                    return Err(format!(
                        "cells: `{k}` is neither a factor nor one of its columns"
                    ));
                };
                if !f.level_names().contains(&value_text(v)) {
                    return Err(format!(
                        "cells: factor `{k}` has no level `{}`",
                        value_text(v)
                    ));
                }
            }
            // The rows factor the baseline belongs to: the first.
            let rows_f = s.report.rows.first().map_or("", String::as_str);
            if !cell.contains_key(rows_f) {
                return Err(format!(
                    "cells: each cell names a level of `{rows_f}` (the report's rows)"
                ));
            }
        }
        Ok(())
    }

    /// A cell's factor levels (its keys that are not columns).
    pub fn levels<'a>(&self, cell: &'a BTreeMap<String, toml::Value>) -> Vec<(&'a str, String)> {
        cell.iter()
            .filter(|(k, _)| !self.columns.contains(k))
            .map(|(k, v)| (k.as_str(), value_text(v)))
            .collect()
    }
}
