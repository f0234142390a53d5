pub fn render(_p: &[&crate::FileProfile]) -> String { String::new() }
