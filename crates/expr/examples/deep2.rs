use tracelab_expr::{Program, Scope, VarId};
struct S;
impl Scope for S {
    fn scalar(&self, n: &str) -> Option<VarId> { (n == "af").then_some(VarId(0)) }
    fn array(&self, n: &str) -> Option<VarId> { (n == "bind").then_some(VarId(1)) }
}
fn main() {
    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let kind: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let src = match kind { 0 => format!("{}1{}", "(".repeat(n), ")".repeat(n)), 1 => format!("{}1", "! ".repeat(n)), 2 => format!("{}1", "$af ? 1 : ".repeat(n)), _ => format!("{}1{}", "lc(".repeat(n), ")".repeat(n)) };
    let h = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
        match Program::compile(&src, &S) { Ok(_) => println!("ok"), Err(e) => println!("{}", e.message) }
    }).unwrap();
    h.join().unwrap();
}
