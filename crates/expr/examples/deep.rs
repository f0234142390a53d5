use tracelab_expr::{Program, Scope, VarId};
struct S;
impl Scope for S {
    fn scalar(&self, n: &str) -> Option<VarId> { (n == "af").then_some(VarId(0)) }
    fn array(&self, n: &str) -> Option<VarId> { (n == "bind").then_some(VarId(1)) }
}
fn main() {
    let n = 100_000;
    let which: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let cases = vec![
        "(".repeat(n),
        format!("{}1", "-".repeat(n)),
        format!("{}1", "!".repeat(n)),
        format!("{}1", "not ".repeat(n)),
        format!("{}1", "lc ".repeat(n)),
        format!("{}1", "2**".repeat(n)),
        format!("{}1", "$af ? 1 : ".repeat(n)),
        format!("{}1", "1+".repeat(n)),
        format!("{}1{}", "lc(".repeat(n), ")".repeat(n)),
        format!("\"{}1{}\"", "$bind[".repeat(n), "]".repeat(n)),
        format!("{}1{}", "(1,".repeat(n), ")".repeat(n)),
        format!("{}1", "$af =~ ".repeat(n)),
        format!("{}1", "1 < ".repeat(n)),
    ];
    let src = &cases[which];
    let h = std::thread::Builder::new().stack_size(2 << 20).spawn({ let src = src.clone(); move || {
        match Program::compile(&src, &S) { Ok(_) => println!("{which}: compiled"), Err(e) => println!("{which}: {}", e.message) }
    }}).unwrap();
    h.join().unwrap();
}
