//! The core's layout, as `core/README.md` ("Layout checks") states it: each algorithm family keeps to its
//! room (no file under `balance/lowest/` names `balance/weighted/`, nor the reverse), and the balancer
//! knows nothing of the `std` layer (no file under `balance/` imports `rt` or names it in code; a doc
//! link to it is documentation, not a dependency).

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn balance() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/balance")
}

/// The lines of the files under `dir` (outside comments) that contain any of `needles`, as
/// `file:line: text`.
fn code_lines_naming(dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut hits = Vec::new();
    for f in rust_files(dir) {
        let text = fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if needles.iter().any(|n| code.contains(n)) {
                hits.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    hits
}

#[test]
fn the_lowest_score_family_does_not_name_the_weighted_one() {
    let dir = balance().join("lowest");
    assert!(
        rust_files(&dir).len() >= 3,
        "the lowest-score family's room"
    );
    let hits = code_lines_naming(&dir, &["weighted::", "weighted/"]);
    assert!(hits.is_empty(), "{hits:#?}");
}

#[test]
fn the_weighted_family_does_not_name_the_lowest_score_one() {
    let dir = balance().join("weighted");
    assert!(rust_files(&dir).len() >= 4, "the weighted family's room");
    let hits = code_lines_naming(&dir, &["lowest::", "lowest/", "LowestScore"]);
    assert!(hits.is_empty(), "{hits:#?}");
}

#[test]
fn the_balancer_knows_nothing_of_the_std_layer() {
    let hits = code_lines_naming(&balance(), &["crate::rt", "rt::", "mod rt"]);
    assert!(hits.is_empty(), "{hits:#?}");
}

/// The checks above read code, not comments: a line that names the other family only in a comment
/// passes, one that names it in code is found.
#[test]
fn the_reader_tells_code_from_comments() {
    let dir = std::env::temp_dir().join(format!("weir-layout-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("a.rs"),
        "// see weighted::draw\nuse crate::balance::weighted::Draw;\n",
    )
    .unwrap();
    let hits = code_lines_naming(&dir, &["weighted::"]);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(hits[0].ends_with(":2: use crate::balance::weighted::Draw;"));
}
