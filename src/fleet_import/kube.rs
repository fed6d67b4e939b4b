//! What every reader of kubectl JSON shares: the error type naming the file and the JSON path,
//! JSON parsing with line and column, and the `items` of a `List`.

use serde_json::Value;

/// Why Kubernetes input cannot be read: one line naming the file and the JSON (or YAML) path of
/// the field to blame, or the line and column of broken JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum K8sError {
    #[error("{file}:{line}:{column}: not JSON: {problem}")]
    Json {
        file: String,
        line: usize,
        column: usize,
        problem: String,
    },
    /// A mig-parted config that cannot be read (with its line, column or key path).
    #[error(transparent)]
    MigParted(#[from] crate::ops::mig_parted::MigPartedError),
    /// A missing or wrong field: `path` is its JSON path (`items[3].status.allocatable.memory`)
    /// or YAML key path (`mig-configs.x[0].devices`).
    #[error("{file}: {path}: {problem}")]
    Field {
        file: String,
        path: String,
        problem: String,
    },
    /// The imported fleet refuses what the file says (`file` is the file to blame).
    #[error("{file}: {problem}")]
    Fleet { file: String, problem: String },
    /// The scenario built from the input does not load (a bug).
    #[error("the imported scenario does not load: {0}")]
    Scenario(String),
}

/// A [`K8sError::Field`].
pub(crate) fn field(file: &str, path: impl Into<String>, problem: impl Into<String>) -> K8sError {
    K8sError::Field {
        file: file.to_string(),
        path: path.into(),
        problem: problem.into(),
    }
}

/// Parses JSON text; errors name the file, line and column.
pub(crate) fn parse_json(text: &str, file: &str) -> Result<Value, K8sError> {
    serde_json::from_str(text).map_err(|e| K8sError::Json {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        problem: crate::catalog::one_line(&e.to_string()),
    })
}

/// The `items` of a `kubectl get ... -o json` list.
pub(crate) fn items<'a>(v: &'a Value, file: &str) -> Result<&'a Vec<Value>, K8sError> {
    v.get("items").and_then(Value::as_array).ok_or_else(|| {
        field(
            file,
            "items",
            "missing or not an array (expected `kubectl get ... -o json` output)",
        )
    })
}
