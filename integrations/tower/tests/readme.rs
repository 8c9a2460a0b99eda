//! The repository README's tower quick start cannot run there (its Rust blocks are the core's doc tests,
//! which cannot see this crate), so each of its lines must be a line of this crate's README, whose example
//! runs as a doc test (`ReadmeDoctests` in `src/lib.rs`). A test file rather than a unit test: it reads the
//! repository's README, which the published package does not hold.

#[test]
fn the_root_readme_quick_start_is_the_tower_readme_example() {
    let root = include_str!("../../../README.md");
    let section = root
        .split("\n### tower\n")
        .nth(1)
        .expect("the repository README has the tower quick start");
    let block = section
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the quick start has an example");
    let guide = include_str!("../README.md");
    let lines: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 6, "{block}");
    for line in lines {
        assert!(
            guide.lines().any(|g| g.trim() == line.trim()),
            "a line of the repository README's tower quick start is not in the tower README: {line}"
        );
    }
}
