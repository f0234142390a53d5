//! `[freshness]` of a study file: the cell and the change of the freshness
//! check (run by `execute::freshness`, reported by `report::freshness`).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::spec::{Num, Sql, Study};

/// `[freshness]` of a study file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreshnessSpec {
    /// The cell it runs in: a level of each factor named; the engine is
    /// each engine of the plan, any other factor its first level run.
    pub levels: BTreeMap<String, String>,
    /// Seconds of the run.
    pub runtime: Num,
    /// Milliseconds between two changes.
    pub every_ms: Num,
    /// Vars of the check over the study's (a shorter lag, say).
    #[serde(default)]
    pub vars: BTreeMap<String, toml::Value>,
    /// The change; `{version}` is its number, from 1.
    pub write: Sql,
    /// The result column (from 1) that shows which change a result holds.
    pub column: usize,
    /// What that column holds in a row of change N: `fresh {version}`.
    pub value: String,
}

impl FreshnessSpec {
    pub fn check(&self, s: &Study) -> Result<(), String> {
        let mut cached = false;
        for (f, l) in &self.levels {
            let Some(factor) = s.factors.iter().find(|x| &x.name == f) else {
                return Err(format!("levels: no factor `{f}`"));
            };
            let Some(level) = factor.all_levels().into_iter().find(|x| &x.name == l) else {
                return Err(format!("levels: factor `{f}` has no level `{l}`"));
            };
            cached |= level.result_cache.is_some();
        }
        if !cached {
            return Err("levels: expected a level with a result_cache".into());
        }
        if self.column == 0 {
            return Err("column: expected a column number from 1".into());
        }
        if !self.value.contains("{version}") {
            return Err("value: expected `{version}` where the change's number shows".into());
        }
        Ok(())
    }
}
