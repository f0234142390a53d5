//! Report columns: expressions over one run's measurements and vars, in
//! tracelab's expression language (the one `skew` uses), so that a column
//! such as `$backend_cpu_ms / $statements` needs no new syntax.

use std::cell::RefCell;
use std::collections::BTreeMap;

use tracelab_expr::{CompileError, Program, Scope, Value, VarId, Vars};

/// Every `$name` an expression uses gets an id; names are resolved at
/// evaluation against the run's values.
#[derive(Default)]
struct Names(RefCell<Vec<String>>);

impl Scope for Names {
    fn scalar(&self, name: &str) -> Option<VarId> {
        let mut v = self.0.borrow_mut();
        let i = v.iter().position(|n| n == name).unwrap_or_else(|| {
            v.push(name.to_string());
            v.len() - 1
        });
        Some(VarId(i as u16))
    }
    fn array(&self, _name: &str) -> Option<VarId> {
        None
    }
}

/// A compiled column expression.
pub struct Expr {
    program: Program,
    names: Vec<String>,
}

struct RunVars<'a> {
    names: &'a [String],
    values: &'a BTreeMap<String, f64>,
}

impl Vars for RunVars<'_> {
    fn scalar(&self, id: VarId) -> Value<'_> {
        self.names
            .get(id.0 as usize)
            .and_then(|n| self.values.get(n))
            .map_or(Value::Undef, |v| Value::Num(*v))
    }
    fn array(&self, _id: VarId) -> Vec<Value<'_>> {
        Vec::new()
    }
}

pub fn compile(src: &str) -> Result<Expr, CompileError> {
    let names = Names::default();
    let program = Program::compile(src, &names)?;
    Ok(Expr {
        program,
        names: names.0.into_inner(),
    })
}

impl Expr {
    /// The `$names` the expression reads, in order of first use.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The value for one run; `None` when a name it uses was not measured
    /// or the arithmetic failed (a division by zero), so that a missing
    /// measurement shows as missing rather than as 0.
    pub fn eval(&self, values: &BTreeMap<String, f64>) -> Option<f64> {
        if self.names.iter().any(|n| !values.contains_key(n)) {
            return None;
        }
        let vars = RunVars {
            names: &self.names,
            values,
        };
        match self.program.eval(&vars) {
            Ok(v) if v.is_defined() => Some(v.to_num()).filter(|x| x.is_finite()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_over_named_values() {
        let e = compile("$elapsed_ms / $statements").unwrap();
        let mut v = BTreeMap::new();
        v.insert("elapsed_ms".to_string(), 10.0);
        assert_eq!(e.eval(&v), None, "a missing value is missing");
        v.insert("statements".to_string(), 4.0);
        assert_eq!(e.eval(&v), Some(2.5));
        v.insert("statements".to_string(), 0.0);
        assert_eq!(e.eval(&v), None, "division by zero is missing");
    }
}
