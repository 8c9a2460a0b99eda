//! The README's "Use it from a tower stack" example is this crate's doc example, line for line (the
//! README's Rust blocks are the core's doc tests, which cannot see this crate). A test file rather than a
//! unit test: it reads the repository's README, which the published package does not hold.

#[test]
fn the_readme_example_is_the_doc_example() {
    let readme = include_str!("../../../README.md");
    let section = readme
        .split("## Use it from a tower stack")
        .nth(1)
        .expect("the README has the section");
    let block = section
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section has an example");
    let docs = include_str!("../src/lib.rs");
    let lines: Vec<&str> = block.lines().collect();
    assert!(lines.len() >= 8, "{block}");
    for line in lines {
        let documented = format!("//! {line}");
        assert!(
            docs.lines().any(|d| d.trim_end() == documented.trim_end()),
            "README line missing from the crate docs: {line}"
        );
    }
}
