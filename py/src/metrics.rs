//! Metrics as Prometheus text (`metrics_text` on `Balancer`, `Shedder`, `Throttle`, `Backoff`): the
//! caller's prefix and constant labels, read and checked once, and the core's writer into a `String`.

use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyMapping, PyString};
use weir::metrics::MetricsFormat;

/// The caller's prefix and constant labels, owned.
pub struct Format {
    prefix: String,
    labels: Vec<(String, String)>,
}

impl Format {
    /// Reads `prefix` (a str) and `labels` (None, a mapping or an iterable of (name, value) pairs of
    /// str), and checks them as the core does: `ValueError` for a refused name, `TypeError` for a
    /// non-str.
    pub fn read(prefix: &str, labels: Option<&Bound<'_, PyAny>>) -> PyResult<Format> {
        let mut f = Format {
            prefix: prefix.to_owned(),
            labels: Vec::new(),
        };
        if let Some(l) = labels.filter(|l| !l.is_none()) {
            let pairs = match l.cast::<PyMapping>() {
                Ok(m) => m.items()?.into_any(),
                Err(_) => l.clone(),
            };
            for pair in pairs.try_iter()? {
                let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                    pair?.extract().map_err(|_| {
                        PyTypeError::new_err(
                            "labels must be a mapping or (name, value) pairs of str",
                        )
                    })?;
                f.labels
                    .push((text(&k, "label name")?, text(&v, "label value")?));
            }
        }
        f.with_core(|c| c.check())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(f)
    }

    /// Writes a text with `write` and the core's view of the format.
    pub fn text(
        &self,
        write: impl FnOnce(&mut String, &MetricsFormat<'_>) -> std::fmt::Result,
    ) -> PyResult<String> {
        let mut out = String::new();
        self.with_core(|f| write(&mut out, f))
            .map_err(|_| PyValueError::new_err("writing the metrics failed"))?;
        Ok(out)
    }

    /// Runs `write` with the core's view of the format (which borrows the labels as `&str` pairs).
    pub fn with_core<R>(&self, write: impl FnOnce(&MetricsFormat<'_>) -> R) -> R {
        let labels: Vec<(&str, &str)> = self
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        write(&MetricsFormat {
            prefix: &self.prefix,
            labels: &labels,
        })
    }
}

fn text(v: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    v.cast::<PyString>()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} must be str, not {}",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?
        .to_cow()
        .map(|s| s.into_owned())
}

/// A node's `node` label: `names[node]` (a mapping; `str(node)` for a node it lacks), `names(node)` (a
/// callable), or `str(node)`; the name must be a str.
pub fn node_name(
    py: Python<'_>,
    node: &Bound<'_, PyAny>,
    names: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let name = match names.filter(|n| !n.is_none()) {
        None => node.str()?.into_any(),
        Some(n) if n.is_callable() => n.call1((node,))?,
        Some(n) => match n.get_item(node) {
            Ok(v) => v,
            Err(e) if e.is_instance_of::<PyKeyError>(py) => node.str()?.into_any(),
            Err(e) => return Err(e),
        },
    };
    text(&name, "node name")
}
