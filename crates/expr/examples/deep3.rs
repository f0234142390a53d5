use tracelab_expr::{Program, Scope, VarId, Vars, Value};
struct S;
impl Scope for S {
    fn scalar(&self, n: &str) -> Option<VarId> { (n == "af").then_some(VarId(0)) }
    fn array(&self, n: &str) -> Option<VarId> { (n == "bind").then_some(VarId(1)) }
}
struct V;
impl Vars for V { fn scalar(&self, _: VarId) -> Value<'_> { Value::Num(2.0) } fn array(&self, _: VarId) -> Vec<Value<'_>> { vec![] } }
fn main() {
    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let kind: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let src = match kind { 0 => format!("{}$af{}", "-(".repeat(n), ")".repeat(n)), 1 => format!("{}$af", "! ".repeat(n)), 2 => format!("{}$af", "$af < 0 ? 1 : ".repeat(n)), 3 => format!("{}$af{}", "lc(".repeat(n), ")".repeat(n)), _ => format!("{}$af", "1+".repeat(n)) };
    let p = std::thread::Builder::new().stack_size(1 << 30).spawn(move || Program::compile(&src, &S).unwrap()).unwrap().join().unwrap();
    let h = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
        println!("{:?} {:?} {:?}", p.eval(&V).map(|v| v.to_string()), p.eval_num(&V), p.eval_bool(&V));
    }).unwrap();
    h.join().unwrap();
}
