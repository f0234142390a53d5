//! The compiled question: which calls count (`--where`, `--where1`,
//! `--name`), which group they fall in (`--group`, `--buckets`) and what is
//! summed (`--select`). Common forms take fast paths that skip the
//! expression evaluator; everything else goes through it.

use std::borrow::Cow;

use regex::Regex;
use tracelab_expr::{Program, Value};
use tracelab_trace::{Call, CallKind};

use crate::buckets::Buckets;
use crate::error::QueryError;
use crate::question::Question;
use crate::vars::{CallVars, Conversions, MrskewScope, Var, BIND};

enum Cond {
    True,
    /// `$dep==$depmin`, mrskew's default where1.
    DepIsMin,
    Expr(Program),
}

enum NameFilter {
    /// `.+`: any call with a name.
    Any,
    All,
    DbCalls,
    OsCalls,
    Regex(Regex),
}

enum Group {
    Name,
    Buckets(Buckets),
    Expr(Program),
}

enum Select {
    Af,
    Expr(Program),
}

/// `--name` verdicts per distinct call name, kept by whoever calls
/// [`Query::hit`] for as long as the reader that handed out the names
/// lives (one file, or one piece of a file).
#[derive(Default)]
pub struct NameCache(rustc_hash::FxHashMap<(usize, usize), bool>);

/// One call's verdict: its group and the value it adds (`None` for a
/// record with no value, such as a non-call line under `--name=:all`:
/// its group is shown with blank cells).
pub struct Hit<'a> {
    pub group: Cow<'a, str>,
    /// The group's label is a call's name or a bucket's label: its address
    /// stays put while the reader that handed out the call lives (see
    /// [`crate::Groups::add_stable`]).
    pub stable: bool,
    pub value: Option<f64>,
    /// The value in whole microseconds when it is `$af` (summed exactly).
    pub us: Option<i64>,
}

pub struct Query {
    where0: Cond,
    where1: Cond,
    name: NameFilter,
    group: Group,
    select: Select,
    /// mrskew's effective predicate, for messages and `--verbose`.
    pub effective_where: String,
    pub group_text: String,
    /// The header of column 1 and 2.
    pub group_label: String,
    pub select_label: String,
    /// Labels shown even when no call falls in them (histogram buckets).
    pub precreated: Vec<String>,
    pub needs_binds: bool,
    pub all_lines: bool,
    pub uses_depmin: bool,
    /// Reads `$parse_id`, `$exec_id` or `$island_id`, which chain through
    /// a whole file.
    pub chained: bool,
    /// Reads `$line` (the reader then numbers lines while reading).
    pub uses_line: bool,
    /// Reads statement context (`$sqlid`, `$sql`, ...).
    pub uses_statements: bool,
    /// The units of the trace's time fields.
    pub conv: Conversions,
}

fn compile(what: &str, src: &str) -> Result<Program, QueryError> {
    Program::compile(src, &MrskewScope).map_err(|e| QueryError::Expression {
        option: what.to_string(),
        error: e,
    })
}

fn cond(what: &str, src: &str) -> Result<Cond, QueryError> {
    let squeezed: String = src.chars().filter(|c| !c.is_whitespace()).collect();
    match squeezed.as_str() {
        "$dep==$depmin" => return Ok(Cond::DepIsMin),
        "1" => return Ok(Cond::True),
        _ => {}
    }
    let p = compile(what, src)?;
    Ok(match p.constant() {
        Some(v) if v.truthy() => Cond::True,
        _ => Cond::Expr(p),
    })
}

fn uses(p: &Program, var: Var) -> bool {
    p.variables().iter().any(|v| v.0 == var as u16)
}

impl Query {
    pub fn new(o: &Question) -> Result<Query, QueryError> {
        let where0 = cond("--where", &o.where0)?;
        let where1 = cond("--where1", &o.where1)?;
        let name =
            match o.name.trim() {
                ".+" => NameFilter::Any,
                ":all" => NameFilter::All,
                ":dbcall" => NameFilter::DbCalls,
                ":oscall" | ":syscall" => NameFilter::OsCalls,
                pat if pat.starts_with(':') => {
                    return Err(QueryError::Usage(format!(
                    "--name={pat}: unknown call class; expected :all, :dbcall, :oscall or :syscall"
                )))
                }
                pat => NameFilter::Regex(Regex::new(&format!("(?i){pat}")).map_err(|e| {
                    QueryError::Usage(format!("--name={pat}: not a valid regex: {e}"))
                })?),
            };
        let (group, group_text, default_label) = match (&o.buckets, &o.group) {
            (Some(spec), _) => (
                Group::Buckets(Buckets::parse(spec).map_err(QueryError::Usage)?),
                format!("bucket of $af ({spec})"),
                "RANGE {min ≤ e < max}".to_string(),
            ),
            (None, None) => (Group::Name, "$nam".to_string(), "CALL-NAME".to_string()),
            (None, Some(g)) if g.trim() == "$nam" || g.trim() == "$name" => {
                (Group::Name, g.clone(), g.clone())
            }
            (None, Some(g)) => (Group::Expr(compile("--group", g)?), g.clone(), g.clone()),
        };
        let select = match o.select.as_deref().map(str::trim) {
            None | Some("$af") => Select::Af,
            Some(s) => Select::Expr(compile("--select", s)?),
        };
        let group_label = match &o.group_label {
            Some(l) => label_of(l),
            None => default_label,
        };
        let select_label = o
            .select_label
            .as_deref()
            .map_or_else(|| "DURATION".to_string(), label_of);
        let precreated = match &group {
            Group::Buckets(b) => b.labels().to_vec(),
            _ => Vec::new(),
        };
        let programs: Vec<&Program> = [&where0, &where1]
            .into_iter()
            .filter_map(|c| match c {
                Cond::Expr(p) => Some(p),
                _ => None,
            })
            .chain(match &group {
                Group::Expr(p) => Some(p),
                _ => None,
            })
            .chain(match &select {
                Select::Expr(p) => Some(p),
                _ => None,
            })
            .collect();
        let needs_binds = programs.iter().any(|p| p.variables().contains(&BIND));
        let uses_depmin = matches!(where0, Cond::DepIsMin)
            || matches!(where1, Cond::DepIsMin)
            || programs.iter().any(|p| uses(p, Var::Depmin));
        // The wall clock ($time0, $time1) chains too: a piece of a file
        // does not know the `***` timestamp before its start.
        let chained = programs.iter().any(|p| {
            [
                Var::ParseId,
                Var::ExecId,
                Var::IslandId,
                Var::Time0,
                Var::Time1,
            ]
            .iter()
            .any(|v| uses(p, *v))
        });
        let uses_line = programs.iter().any(|p| uses(p, Var::Line));
        let uses_statements = programs.iter().any(|p| {
            [
                Var::Sqlid,
                Var::Sql,
                Var::Hv,
                Var::Oct,
                Var::Uid,
                Var::Lid,
                Var::Ad,
                Var::Ssqlid,
                Var::Ssql,
            ]
            .iter()
            .any(|v| uses(p, *v))
        });
        let name_text = match &name {
            NameFilter::Any => "$nam=~/.+/i".to_string(),
            NameFilter::Regex(_) => format!("$nam=~/{}/i", o.name),
            _ => o.name.clone(),
        };
        Ok(Query {
            effective_where: format!("(({}) and ({})) and ({})", o.where0, o.where1, name_text),
            all_lines: matches!(name, NameFilter::All),
            where0,
            where1,
            name,
            group,
            select,
            group_text,
            group_label,
            select_label,
            precreated,
            needs_binds,
            uses_depmin,
            chained,
            uses_line,
            uses_statements,
            conv: Conversions::new(&o.units),
        })
    }

    /// Decides one call. Expression errors are returned for the caller to
    /// report with the call's file and line.
    #[inline]
    pub fn hit<'v>(
        &'v self,
        vars: &'v CallVars<'_, '_>,
        names: &mut NameCache,
    ) -> Result<Option<Hit<'v>>, String> {
        let call = vars.call;
        if !self.name_ok(call, names) {
            return Ok(None);
        }
        if !self.cond_ok(&self.where0, vars, "--where")?
            || !self.cond_ok(&self.where1, vars, "--where1")?
        {
            return Ok(None);
        }
        let af = self.conv.af(call.kind);
        let (value, us) = match &self.select {
            Select::Af if call.kind == CallKind::Line => (None, None),
            Select::Af => (Some(af.secs(call.af_us())), af.us(call.af_us())),
            Select::Expr(p) => match p.eval(vars).map_err(|e| format!("--select: {e}"))? {
                Value::Undef => (None, None),
                Value::Num(n) => (Some(n), None),
                Value::Str(s) => (Some(tracelab_expr::perl_str_to_num(&s)), None),
            },
        };
        let (group, stable) = match &self.group {
            // The reader hands out each distinct name from one place (see
            // `name_ok`).
            Group::Name => (Cow::Borrowed(call.name), true),
            Group::Buckets(b) => (Cow::Borrowed(b.label_of(af.secs(call.af_us()))), true),
            Group::Expr(p) => match p.eval(vars).map_err(|e| format!("--group: {e}"))? {
                Value::Undef => (Cow::Borrowed(""), false),
                Value::Str(s) => (s, false),
                Value::Num(n) => (Cow::Owned(tracelab_expr::perl_number_to_string(n)), false),
            },
        };
        Ok(Some(Hit {
            group,
            stable,
            value,
            us,
        }))
    }

    /// Whether a call passes the filter alone (`--where`, `--where1`,
    /// `--name`), without grouping or selecting: for exports of the calls
    /// a profile would count (`tracelab calls`).
    #[inline]
    pub fn keeps(&self, vars: &CallVars<'_, '_>, names: &mut NameCache) -> Result<bool, String> {
        Ok(self.name_ok(vars.call, names)
            && self.cond_ok(&self.where0, vars, "--where")?
            && self.cond_ok(&self.where1, vars, "--where1")?)
    }

    #[inline]
    fn name_ok(&self, call: &Call<'_>, names: &mut NameCache) -> bool {
        match &self.name {
            // Names come from single lines: never a newline in them.
            NameFilter::Any => !call.name.is_empty(),
            NameFilter::All => true,
            NameFilter::DbCalls => call.kind.is_dbcall(),
            NameFilter::OsCalls => call.kind == CallKind::Wait,
            NameFilter::Regex(r) => {
                // The reader hands out each distinct name from one place
                // (wait names are interned, the others are constants), so
                // the verdict is kept by address: one regex match per name
                // instead of one per call.
                let key = (call.name.as_ptr() as usize, call.name.len());
                *names.0.entry(key).or_insert_with(|| r.is_match(call.name))
            }
        }
    }

    #[inline]
    fn cond_ok(&self, c: &Cond, vars: &CallVars<'_, '_>, what: &str) -> Result<bool, String> {
        match c {
            Cond::True => Ok(true),
            // An undefined $dep (WAIT, XCTEND, LOB lines) is 0 to Perl's ==.
            Cond::DepIsMin => Ok(vars.call.dep.unwrap_or(0) == vars.call.depmin),
            Cond::Expr(p) => p.eval_bool(vars).map_err(|e| format!("{what}: {e}")),
        }
    }
}

/// A label option is an expression since mrskew 9.3.0.17 (`--gl='"FILE"'`,
/// `--gl='FETCH . sprintf(q{%10s},q{acct for})'`); older rc files give
/// plain text (`--gl=FILE:LINE`, `--select-label=DISTINCT-TEXTS`). A label
/// with no quote, bracket or sigil is that plain text (as an expression of
/// barewords `DISTINCT-TEXTS` would be 0); otherwise the expression's value
/// when it is a constant, the text as written when it is not.
fn label_of(text: &str) -> String {
    if !text.contains(['\'', '"', '(', '{', '[', '$', '@']) {
        return text.to_string();
    }
    match Program::compile(text, &MrskewScope) {
        Ok(p) => match p.constant() {
            Some(Value::Str(s)) => s.into_owned(),
            Some(Value::Num(n)) => tracelab_expr::perl_number_to_string(n),
            _ => text.to_string(),
        },
        Err(_) => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::label_of;

    #[test]
    fn labels_are_plain_text_or_expressions() {
        for plain in [
            "FILE:LINE",
            "DISTINCT-TEXTS",
            "BLKS/READ",
            "CALL-NAME",
            "SQLID",
        ] {
            assert_eq!(label_of(plain), plain);
        }
        assert_eq!(label_of("\"FILE#:BLOCK#\""), "FILE#:BLOCK#");
        assert_eq!(
            label_of("FETCH . sprintf(q{%10s},q{acct for})"),
            "FETCH  acct for"
        );
        // Not a constant: shown as written.
        assert_eq!(label_of("$sqlid . q{:}"), "$sqlid . q{:}");
    }
}
