//! The device library's architecture, held (issue 26, "device tiers that hold"): reads the
//! sources of `crates/cohort/src` as text (no build of anything) and fails, naming the file, the
//! line and the rule, on
//!
//! - **inline PTX outside `src/raw/`**: the tokens `asm`, `global_asm`, `naked_asm` (a call or
//!   an import), `nvptx` (`core::arch::nvptx`), or an LLVM intrinsic (`"llvm.…"`, as
//!   `link_name`s are) anywhere but the `raw` tree;
//! - **an upward import**: a `crate::…` (or `$crate::…`) path in a module of one tier that names
//!   a module of a higher tier, by the tier table in the crate docs (`src/lib.rs`, "Tiers");
//! - **a module without a tier**: a module `src/lib.rs` declares, or a file or folder of `src/`,
//!   that the table does not list (or a table entry that is no module);
//! - **an import cycle** between modules (which the tier rule allows within one tier), or between
//!   the files of a folder module (`cg/`, `cg/reduce/`, `raw/`, `matrix/`): a path resolves to
//!   the file that defines its item, through the `pub use` re-exports of a folder's `mod.rs`
//!   (`pub use x::*`: the names `x.rs` defines by keyword, not by a macro); a `mod.rs` declaring
//!   and re-exporting its files is not an import, as `lib.rs`'s are not, and a name it uses bare
//!   through such a re-export is not followed.
//!
//! Comments (doc comments included: an intra-doc link may point anywhere) and string literals
//! are not code. `crate::NAME` of an item the crate root re-exports (`crate::DeviceCopy`) or of
//! an exported macro (`crate::shared!`) counts as the module that defines it; `super::…` that
//! climbs to the crate root counts as `crate::…`. What would hide a module's imports or code is
//! refused: an alias or a glob of the crate root, `extern crate self`, a `#[path]` module,
//! `include!`, `#[macro_use]`. A folder module (`cg/`, `raw/`) is one module of the tier table:
//! its files may use each other, but not in a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

mod files;
mod paths;
mod rules;
mod source;

use files::*;
use paths::*;
use rules::*;
use source::*;

/// The sources: path relative to `src/` (with `/`) → text.
pub(crate) type Tree = BTreeMap<String, String>;

/// One broken rule: which, and the message naming where.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Violation {
    pub(crate) rule: Rule,
    pub(crate) message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rule {
    InlinePtx,
    Upward,
    NoTier,
    Cycle,
    FileCycle,
    Unresolved,
}

/// This crate's sources, or those under `COHORT_ARCH_SRC` (another tree's `src/`, say an older
/// commit's: `git archive <commit> crates/cohort/src | tar -x -C /tmp/old`, then
/// `COHORT_ARCH_SRC=/tmp/old/crates/cohort/src cargo test -p cohort --test architecture`).
fn cohort_src() -> Tree {
    match std::env::var_os("COHORT_ARCH_SRC") {
        Some(dir) => load(Path::new(&dir)),
        None => load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")),
    }
}

fn assert_none(rules: &[Rule]) {
    let bad: Vec<_> = check(&cohort_src()).into_iter().filter(|v| rules.contains(&v.rule)).map(|v| v.message).collect();
    assert!(bad.is_empty(), "{} violation(s) of the device library's architecture:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn inline_ptx_only_in_raw() {
    assert_none(&[Rule::InlinePtx]);
}

#[test]
fn tiers_import_only_downward() {
    assert_none(&[Rule::Upward, Rule::Unresolved]);
}

#[test]
fn every_module_has_a_tier() {
    assert_none(&[Rule::NoTier]);
}

#[test]
fn no_import_cycles() {
    assert_none(&[Rule::Cycle]);
}

#[test]
fn no_import_cycles_between_files() {
    assert_none(&[Rule::FileCycle]);
}

/// Prints the file imports inside folder modules and every import cycle, of modules and of
/// files, and passes: `cargo test -p cohort --test
/// architecture import_cycles -- --nocapture` (with `COHORT_ARCH_SRC` for another tree).
#[test]
fn import_cycles() {
    let found: Vec<_> =
        check(&cohort_src()).into_iter().filter(|v| matches!(v.rule, Rule::Cycle | Rule::FileCycle)).collect();
    let edges = file_edges(&cohort_src());
    println!("{} file import(s) inside folder modules:", edges.len());
    for ((a, b), site) in &edges {
        println!("    {a} → {b}: {site}");
    }
    println!("{} import cycle(s)", found.len());
    for v in found {
        println!("{}", v.message);
    }
}

/// The file rule, on a made-up folder module: a cycle through a `mod.rs` re-export is found,
/// with the file that defines the item (a glob re-export's too); the `mod.rs` declaring and
/// re-exporting its files, and its files using what it defines, are no cycle.
#[test]
fn the_checker_finds_file_cycles() {
    let lib =
        "//! | tier | modules |\n//! |---|---|\n//! | 1 | `grp` |\n//! | 2 | `top` |\n\npub mod grp;\npub mod top;\n";
    let files: &[(&str, &str)] = &[
        ("lib.rs", lib),
        (
            "grp/mod.rs",
            "mod a;\nmod b;\nmod c;\nmod d;\npub use a::A;\npub(crate) use b::{B, helper as h};\npub use d::*;\npub trait T {}\n",
        ),
        ("grp/a.rs", "use super::T;\npub struct A;\nfn f() { super::h() }\nfn g() -> super::D { super::D }\n"),
        ("grp/d.rs", "pub struct D;\n"),
        ("grp/b.rs", "use super::T;\npub struct B;\nmod inner {\n    use super::super::c::C;\n}\npub fn helper() {}\n"),
        (
            "grp/c.rs",
            "use crate::grp::{self, a::{self, A}};\npub struct C;\nfn g() -> self::C { C }\nfn k() { let _ = grp::B; }\n",
        ),
        ("top.rs", "use crate::grp::A;\n"),
    ];
    let tree: Tree = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
    let got = check(&tree);
    let all = got.iter().map(|v| format!("{:?}: {}", v.rule, v.message)).collect::<Vec<_>>().join("\n");
    let edges = file_edges(&tree);
    let e = |a: &str, b: &str| edges.contains_key(&(a.to_string(), b.to_string()));
    assert!(e("grp/a", "grp/b"), "`super::h` is b's `helper` (through `as`): {edges:?}");
    assert!(e("grp/b", "grp/c"), "`super::super::c` out of an inline module: {edges:?}");
    assert!(e("grp/c", "grp/a"), "{edges:?}");
    assert!(e("grp/a", "grp"), "`super::T` is mod.rs's own: {edges:?}");
    assert!(e("grp/a", "grp/d"), "`super::D` comes from d.rs through `pub use d::*`: {edges:?}");
    assert!(!e("grp", "grp/a") && !e("grp", "grp/b"), "re-exports are no imports: {edges:?}");
    assert!(!e("grp/c", "grp/b"), "a bare `grp::B` after `use crate::grp::{{self}}` is not followed: {edges:?}");
    assert_eq!(got.len(), 1, "{all}");
    assert!(
        got[0].rule == Rule::FileCycle
            && ["`grp/a`, `grp/b`, `grp/c`", "src/grp/a.rs:3", "src/grp/b.rs:4", "src/grp/c.rs:1"]
                .iter()
                .all(|p| got[0].message.contains(p)),
        "{all}"
    );
}

/// The checker itself, on a small made-up crate with one violation of each rule.
#[test]
fn the_checker_reports_each_rule() {
    let lib = r#"//! ## Tiers
//!
//! | tier | modules | what |
//! |---|---|---|
//! | 0 | `host` | glue |
//! | 1 | [`raw`] | PTX |
//! | 2 | [`low`], `twin`, `pair` | values |
//! | 3 | [`high`](mod@high) | groups |
//! | 4 | `ghost` | not a module |

pub mod high;
mod host;
pub mod low;
pub mod pair;
pub mod raw;
pub mod stray;
mod twin;
pub use low::Thing;
pub mod prelude {
    pub use crate::high::Group;
}
"#;
    let files: &[(&str, &str)] = &[
        ("lib.rs", lib),
        ("host.rs", "pub fn glue() {}\n"),
        ("raw/mod.rs", "pub mod sreg;\npub use sreg::*;\n"),
        (
            "raw/sreg.rs",
            "use crate::host::glue;\npub fn tid() -> u32 { let r; unsafe { core::arch::asm!(\"mov.u32 {0}, %tid.x;\", out(reg32) r) }; r }\n",
        ),
        (
            "low.rs",
            "// asm!(\"in a comment\") and a string \"core::arch::asm!\" are not code\n\
             use crate::raw;\n\
             pub struct Thing;\n\
             pub fn bad() { unsafe { core::arch::asm!(\"trap;\") } }\n\
             pub fn up() -> crate::high::Group { crate::high::Group }\n\
             const S: &str = \"core::arch::asm!(crate::high)\"; const B: u8 = b'\"'; const R: &str = r#\"asm!\"#;\n",
        ),
        (
            "high.rs",
            "use crate::{low::{self, Thing}, raw};\npub struct Group;\n#[macro_export]\nmacro_rules! group { () => { $crate::Thing } }\n",
        ),
        ("twin.rs", "pub fn a() { crate::pair::b() }\n"),
        ("pair.rs", "pub fn b() { crate::twin::a() }\nconst C: char = '\"'; fn l<'a>(x: &'a str) -> &'a str { x }\n"),
        ("stray.rs", "pub fn s() { crate::group!(); crate::nowhere::f() }\n"),
    ];
    let tree: Tree = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
    let got = check(&tree);
    let has =
        |rule: Rule, parts: &[&str]| got.iter().any(|v| v.rule == rule && parts.iter().all(|p| v.message.contains(p)));
    let all = got.iter().map(|v| format!("{:?}: {}", v.rule, v.message)).collect::<Vec<_>>().join("\n");
    assert!(has(Rule::InlinePtx, &["src/low.rs:4:", "outside src/raw/"]), "{all}");
    assert!(has(Rule::Upward, &["src/low.rs:5:", "`low` (tier 2)", "`crate::high`", "tier 3"]), "{all}");
    assert!(has(Rule::NoTier, &["src/stray.rs: module `stray`", "not in the tier table"]), "{all}");
    assert!(has(Rule::NoTier, &["names `ghost`"]), "{all}");
    assert!(has(Rule::Cycle, &["`pair`, `twin`", "src/twin.rs:1", "src/pair.rs:1"]), "{all}");
    // The upward import closes a cycle with `high`'s (downward) use of `low`.
    assert!(has(Rule::Cycle, &["`high`, `low`", "src/high.rs:1", "src/low.rs:5"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/stray.rs:1:", "`crate::nowhere`"]), "{all}");
    // Nothing else: not the comment, the strings (`b'"'` and the raw one included), raw's
    // `asm!`, the macro's `$crate::Thing` (`low`'s, through the root's `pub use`), `stray`'s
    // `crate::group!` (`high`'s macro; `stray` has no tier to compare), the prelude, the char
    // literal or the lifetimes.
    assert_eq!(got.len(), 7, "{all}");
}

/// The checker on code that hides its inline PTX or its imports: `asm !` spaced, an alias or a
/// glob of the crate root, `super::super::` out of an inline module, a `#[path]` module, the
/// crate naming itself, `#[macro_use]`.
#[test]
fn the_checker_sees_through_evasions() {
    let lib = "//! | tier | modules |\n//! |---|---|\n//! | 0 | `host` |\n//! | 1 | `raw` |\n\
               //! | 2 | `low` |\n//! | 3 | `high` |\n\nmod high;\nmod host;\nmod low;\nmod raw;\n\
               extern crate self as me;\n#[macro_use]\nmod macros {}\n";
    let low = "mod inner {\n    pub fn f() -> super::super::high::Group { todo!() }\n}\n\
               use crate as root;\n\
               use crate::*;\n\
               pub fn g() { unsafe { core::arch::asm ! (\"trap;\") } }\n\
               #[path = \"raw/evil.rs\"]\nmod evil;\n\
               use core::arch::{asm as a};\n";
    let files: &[(&str, &str)] =
        &[("lib.rs", lib), ("host.rs", ""), ("raw/mod.rs", ""), ("low.rs", low), ("high.rs", "pub struct Group;\n")];
    let tree: Tree = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
    let got = check(&tree);
    let has =
        |rule: Rule, parts: &[&str]| got.iter().any(|v| v.rule == rule && parts.iter().all(|p| v.message.contains(p)));
    let all = got.iter().map(|v| format!("{:?}: {}", v.rule, v.message)).collect::<Vec<_>>().join("\n");
    assert!(has(Rule::Upward, &["src/low.rs:2:", "`crate::high`"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/low.rs:4:", "alias of the crate root"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/low.rs:5:", "`crate::*`"]), "{all}");
    assert!(has(Rule::InlinePtx, &["src/low.rs:6:"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/low.rs:7:", "`#[path]`"]), "{all}");
    assert!(has(Rule::InlinePtx, &["src/low.rs:9:"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/lib.rs:12:", "extern crate self"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/lib.rs:13:", "`#[macro_use]`"]), "{all}");
    assert_eq!(got.len(), 8, "{all}");
}
