//! The benchmark matrix: which grammar × tokenizer × document workloads `stackmask bench`
//! runs, read from a TOML file (`benches/data/matrix.toml`), so a new workload is a new
//! entry, not new code.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One workload: a grammar, a tokenizer and a document decoded token by token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Unique name, shown in the table (`json/llama3`).
    pub name: String,
    /// A grammar file, or `builtin:json`.
    pub grammar: String,
    /// `lark`, `gbnf`, `json-schema` or `regex` (default: from the file name).
    pub format: Option<String>,
    /// Droppable terminals (`--droppable`).
    #[serde(default)]
    pub droppable: Vec<String>,
    /// Lexing by longest match (`--longest-match`).
    #[serde(default)]
    pub longest_match: bool,
    /// Columns a tab counts for the indenter (`--tab-len`).
    pub tab_len: Option<u32>,
    /// A tokenizer file or `builtin:o200k`.
    pub tokenizer: String,
    /// The document decoded token by token.
    pub document: String,
    /// `canonical` (the tokenizer's own encoding) or `random:SEED`.
    #[serde(default = "canonical")]
    pub segment: String,
    /// Part of the `--quick` matrix.
    #[serde(default)]
    pub quick: bool,
    /// The workload is known not to compile: its error must contain this text (a row
    /// that documents a limit, and notices when the limit moves).
    pub expect_error: Option<String>,
}

fn canonical() -> String {
    "canonical".into()
}

/// The batch benchmark: how many concurrent matchers, on which workload's states.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchSpec {
    /// The workload whose document positions the matchers sit at.
    pub workload: String,
    /// The workload used instead under `--quick`.
    pub quick_workload: String,
    /// Batch sizes.
    pub sizes: Vec<usize>,
}

/// A parsed matrix file; paths are resolved against the file's directory.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// The workloads, in table order.
    #[serde(rename = "workload")]
    pub workloads: Vec<Workload>,
    /// The batch benchmark.
    pub batch: BatchSpec,
}

impl Matrix {
    /// Reads a matrix file and resolves its paths; the names must be unique.
    pub fn load(path: &str) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let mut m: Matrix = toml::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
        let dir = Path::new(path).parent().unwrap_or(Path::new("."));
        for w in &mut m.workloads {
            w.grammar = resolve(dir, &w.grammar);
            w.tokenizer = resolve(dir, &w.tokenizer);
            w.document = resolve(dir, &w.document);
        }
        let mut names: Vec<&str> = m.workloads.iter().map(|w| w.name.as_str()).collect();
        names.sort_unstable();
        if let Some(d) = names.windows(2).find(|p| p[0] == p[1]) {
            return Err(format!("{path}: workload {:?} appears twice", d[0]));
        }
        for name in [&m.batch.workload, &m.batch.quick_workload] {
            if m.workload(name).is_none() {
                return Err(format!(
                    "{path}: batch workload {name:?} is not in the matrix"
                ));
            }
        }
        Ok(m)
    }

    /// The workload with this name.
    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.name == name)
    }
}

/// Where `../shared` is: `$STACKMASK_SHARED`, else beside the checkout that holds the
/// matrix (`benches/data/` → `../../../shared`).
fn shared_dir(matrix_dir: &Path) -> PathBuf {
    let dir = match std::env::var_os("STACKMASK_SHARED") {
        Some(p) => PathBuf::from(p),
        None => matrix_dir.join("../../../shared"),
    };
    // Shorter paths in messages; a missing directory is reported per file later.
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// `builtin:` stays as is, `shared:X` is X under the shared directory, anything else is
/// relative to the matrix file.
fn resolve(dir: &Path, spec: &str) -> String {
    if spec.starts_with("builtin:") {
        spec.to_string()
    } else if let Some(rest) = spec.strip_prefix("shared:") {
        shared_dir(dir).join(rest).to_string_lossy().into_owned()
    } else {
        dir.join(spec).to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::Matrix;

    const MATRIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/data/matrix.toml");

    #[test]
    fn the_checked_in_matrix_loads_and_its_local_files_exist() {
        let m = Matrix::load(MATRIX).expect("matrix loads");
        assert!(m.workloads.iter().filter(|w| w.quick).count() >= 5);
        for w in &m.workloads {
            // Files of this checkout must exist; ../shared ones may be absent elsewhere.
            for p in [&w.grammar, &w.document] {
                if !p.starts_with("builtin:") && !p.contains("/shared/") {
                    assert!(std::path::Path::new(p).exists(), "{}: {p}", w.name);
                }
            }
        }
        // The workloads: JSON on five tokenizers, schemas, Go/Java/Python, the
        // ambiguous expression grammar and the dash grammar.
        for name in [
            "json/o200k",
            "json/gpt2",
            "json/llama2",
            "json/llama3",
            "json/qwen2",
        ] {
            assert!(m.workload(name).is_some(), "{name}");
        }
        for prefix in [
            "schema-",
            "go/",
            "java/",
            "python/",
            "expr-ambiguous/",
            "dash/",
        ] {
            assert!(
                m.workloads.iter().any(|w| w.name.starts_with(prefix)),
                "{prefix}"
            );
        }
    }

    #[test]
    fn duplicate_names_and_unknown_batch_workloads_are_refused() {
        let dir = std::env::temp_dir().join(format!("stackmask-matrix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let row = "[[workload]]\nname = \"a\"\ngrammar = \"builtin:json\"\ntokenizer = \"builtin:o200k\"\ndocument = \"d.json\"\n";
        let batch =
            |w: &str| format!("[batch]\nworkload = \"{w}\"\nquick_workload = \"a\"\nsizes = [1]\n");
        let cases = [
            (format!("{}{row}{row}", batch("a")), "appears twice"),
            (format!("{}{row}", batch("b")), "batch workload \"b\""),
            (format!("{}{row}typo = 1\n", batch("a")), "unknown field"),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let path = dir.join(format!("m{i}.toml"));
            std::fs::write(&path, text).expect("write");
            let err = Matrix::load(path.to_str().expect("utf-8 temp path")).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
        let path = dir.join("ok.toml");
        std::fs::write(&path, format!("{}{row}", batch("a"))).expect("write");
        let m = Matrix::load(path.to_str().expect("utf-8 temp path")).expect("loads");
        assert_eq!(
            m.workloads[0].document,
            dir.join("d.json").to_string_lossy()
        );
        assert_eq!(m.workloads[0].segment, "canonical");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
