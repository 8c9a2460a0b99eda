//! Metrics as Prometheus text: the format the caller passes (prefix, constant labels, node names) and
//! the one routine every `weir_*_write_metrics` export writes its text through.

use crate::boundary::{
    arg, null, Error, Out, WEIR_ERR_BUFFER_TOO_SMALL, WEIR_ERR_INVALID_ARGUMENT,
};
use std::ffi::{c_char, CStr};
use std::fmt::Write;
use weir_core::metrics::MetricsFormat;

/// One constant label: a name and a value, NUL-terminated UTF-8.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_metrics_label {
    /// The label's name: `[a-zA-Z_][a-zA-Z0-9_]*`, not `__`-prefixed, not one the metrics use
    /// (`node`, `cause`, `outcome`, `state`, `result`, `criticality`, `direction`).
    pub name: *const c_char,
    /// The label's value: any text (the writer escapes it).
    pub value: *const c_char,
}

/// The `node` label's value for one node id.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_metrics_node_name {
    /// The node's id.
    pub id: u64,
    /// Its name: NUL-terminated UTF-8, any text (the writer escapes it).
    pub name: *const c_char,
}

/// How the `weir_*_write_metrics` functions write (docs/metrics.md has the metrics). A NULL format
/// pointer means the defaults: prefix `weir`, no constant labels, node ids in decimal. Zero-initialise
/// it and set what you need; the writer only reads it, during the call.
///
/// Thread safety: a plain value the caller owns; the writer reads it and the strings it points to only
/// during the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_metrics_format {
    /// The metric name prefix (joined with `_`): NULL means `weir`, `""` none; otherwise
    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    pub prefix: *const c_char,
    /// `labels_len` constant labels put on every sample (NULL only with `labels_len` 0).
    pub labels: *const weir_metrics_label,
    /// How many constant labels `labels` holds.
    pub labels_len: usize,
    /// `node_names_len` names for node ids (NULL only with `node_names_len` 0); a node not listed is
    /// named by its id in decimal. If an id is listed twice, the first entry names it.
    pub node_names: *const weir_metrics_node_name,
    /// How many entries `node_names` holds.
    pub node_names_len: usize,
}

/// A C string as UTF-8, naming the argument when it is NULL or not UTF-8.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string that lives and does not change during `'a`.
unsafe fn text<'a>(s: *const c_char, name: impl Fn() -> String) -> Result<&'a str, Error> {
    if s.is_null() {
        return Err(null(&name()));
    }
    // SAFETY: non-NULL and NUL-terminated (the contract above).
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| Error::invalid(&name(), "not UTF-8"))
}

/// A caller's array as a slice: NULL with length 0 is empty, NULL with a length is `WEIR_ERR_NULL`.
///
/// # Safety
/// `p` is NULL or points to `len` readable `T`s that live and do not change during `'a`.
unsafe fn list<'a, T>(p: *const T, len: usize, name: &str) -> Result<&'a [T], Error> {
    match (p.is_null(), len) {
        (true, 0) => Ok(&[]),
        (true, _) => Err(null(name)),
        // SAFETY: non-NULL with `len` elements (the contract above).
        (false, _) => Ok(unsafe { std::slice::from_raw_parts(p, len) }),
    }
}

/// The caller's format, read: the core's format parts and the node names.
pub(crate) struct Format<'a> {
    prefix: &'a str,
    labels: Vec<(&'a str, &'a str)>,
    names: Vec<(u64, &'a str)>,
}

impl<'a> Format<'a> {
    /// Reads and checks the caller's format (NULL: the defaults).
    ///
    /// # Safety
    /// `format` is NULL or points to a `weir_metrics_format` whose pointers hold as its documentation
    /// says, all of it live and unchanged during `'a`.
    pub(crate) unsafe fn read(format: *const weir_metrics_format) -> Result<Self, Error> {
        let mut f = Format {
            prefix: "weir",
            labels: Vec::new(),
            names: Vec::new(),
        };
        if format.is_null() {
            return Ok(f);
        }
        // SAFETY: the contract above, for this and every pointer read below.
        let c = unsafe { arg(format, "format") }?;
        if !c.prefix.is_null() {
            f.prefix = unsafe { text(c.prefix, || "format->prefix".into()) }?;
        }
        for (i, l) in unsafe { list(c.labels, c.labels_len, "format->labels") }?
            .iter()
            .enumerate()
        {
            let name = unsafe { text(l.name, || format!("format->labels[{i}].name")) }?;
            let value = unsafe { text(l.value, || format!("format->labels[{i}].value")) }?;
            f.labels.push((name, value));
        }
        for (i, n) in unsafe { list(c.node_names, c.node_names_len, "format->node_names") }?
            .iter()
            .enumerate()
        {
            let name = unsafe { text(n.name, || format!("format->node_names[{i}].name")) }?;
            f.names.push((n.id, name));
        }
        f.core()
            .check()
            .map_err(|e| Error::new(WEIR_ERR_INVALID_ARGUMENT, format!("format: {e}")))?;
        Ok(f)
    }

    /// The core's view of the prefix and labels.
    pub(crate) fn core(&self) -> MetricsFormat<'_> {
        MetricsFormat {
            prefix: self.prefix,
            labels: &self.labels,
        }
    }

    /// Writes node `id`'s name: the caller's, or the id in decimal.
    pub(crate) fn name(&self, id: u64, out: &mut dyn Write) -> std::fmt::Result {
        match self.names.iter().find(|(n, _)| *n == id) {
            Some((_, name)) => out.write_str(name),
            None => weir_core::metrics::node_id_name(id, out),
        }
    }
}

/// Runs a writer with the caller's format and copies its text, NUL-terminated, into `buf` (room for
/// `cap` bytes), its length (without the NUL) into `len`. A size query (`buf` NULL, `cap` 0) writes only
/// the length. A text that does not fit is `WEIR_ERR_BUFFER_TOO_SMALL` with `buf` untouched and the
/// length written all the same (retry with `cap` at least `*len + 1`).
///
/// # Safety
/// `format` as in [`Format::read`]; `buf` is NULL or points to `cap` writable bytes; `len` is NULL or
/// writable.
pub(crate) unsafe fn write_text(
    format: *const weir_metrics_format,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
    write: impl FnOnce(&mut String, &Format<'_>) -> std::fmt::Result,
) -> Result<(), Error> {
    // SAFETY: the contract above.
    let len = unsafe { Out::new(len, "len") }?;
    let format = unsafe { Format::read(format) }?;
    if buf.is_null() && cap != 0 {
        return Err(null("buf"));
    }
    let mut s = String::new();
    // Writing into a String fails only if the writer does; with a checked format it does not.
    write(&mut s, &format).map_err(|_| Error::invalid("format", "the metrics writer failed"))?;
    if buf.is_null() {
        len.write(s.len());
        return Ok(());
    }
    if s.len() >= cap {
        let need = s.len();
        len.write(need);
        return Err(Error::new(
            WEIR_ERR_BUFFER_TOO_SMALL,
            format!(
                "buf: room for {cap} bytes, the text needs {} (with its NUL)",
                need + 1
            ),
        ));
    }
    // SAFETY: `buf` has room for `cap > s.len()` bytes (the contract above) and cannot overlap the
    // fresh string.
    unsafe {
        core::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
        buf.add(s.len()).write(0);
    }
    len.write(s.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::testing::fails;
    use crate::boundary::{guard, WEIR_ERR_NULL, WEIR_OK};
    use std::ptr::{null, null_mut};

    /// `write_text` over a fixed text, through the boundary as an export would call it.
    fn call(
        format: *const weir_metrics_format,
        buf: *mut c_char,
        cap: usize,
        len: *mut usize,
    ) -> i32 {
        guard(|| unsafe {
            write_text(format, buf, cap, len, |out, f| {
                out.write_str(f.prefix)?;
                for (k, v) in &f.labels {
                    write!(out, " {k}={v}")?;
                }
                out.write_char(' ')?;
                f.name(7, out)?;
                out.write_char(' ')?;
                f.name(8, out)
            })
        })
    }

    #[test]
    fn the_text_its_length_and_a_buffer_too_small() {
        let mut len = 0;
        assert_eq!(call(null(), null_mut(), 0, &mut len), WEIR_OK);
        assert_eq!(len, "weir 7 8".len());
        let mut buf = [b'x' as c_char; 16];
        len = 0;
        fails(
            call(null(), buf.as_mut_ptr(), 8, &mut len),
            WEIR_ERR_BUFFER_TOO_SMALL,
            "needs 9",
        );
        assert_eq!((len, buf[0]), (8, b'x' as c_char));
        assert_eq!(call(null(), buf.as_mut_ptr(), 9, &mut len), WEIR_OK);
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!((text.to_str().unwrap(), len), ("weir 7 8", 8));
        fails(
            call(null(), null_mut(), 4, &mut len),
            WEIR_ERR_NULL,
            "`buf`",
        );
        fails(
            call(null(), buf.as_mut_ptr(), 16, null_mut()),
            WEIR_ERR_NULL,
            "`len`",
        );
    }

    #[test]
    fn the_format_is_read_and_checked() {
        let labels = [weir_metrics_label {
            name: c"zone".as_ptr(),
            value: c"eu".as_ptr(),
        }];
        let names = [
            weir_metrics_node_name {
                id: 8,
                name: c"db-8".as_ptr(),
            },
            weir_metrics_node_name {
                id: 8,
                name: c"second".as_ptr(),
            },
        ];
        let mut f = weir_metrics_format {
            prefix: c"".as_ptr(),
            labels: labels.as_ptr(),
            labels_len: 1,
            node_names: names.as_ptr(),
            node_names_len: 2,
        };
        let mut buf = [0 as c_char; 64];
        let mut len = 0;
        assert_eq!(call(&f, buf.as_mut_ptr(), 64, &mut len), WEIR_OK);
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(text.to_str().unwrap(), " zone=eu 7 db-8");
        f.prefix = c"1x".as_ptr();
        fails(
            call(&f, buf.as_mut_ptr(), 64, &mut len),
            WEIR_ERR_INVALID_ARGUMENT,
            "prefix",
        );
        f.prefix = c"\xff".as_ptr();
        fails(
            call(&f, buf.as_mut_ptr(), 64, &mut len),
            WEIR_ERR_INVALID_ARGUMENT,
            "UTF-8",
        );
        f.prefix = null();
        f.node_names = null();
        fails(
            call(&f, buf.as_mut_ptr(), 64, &mut len),
            WEIR_ERR_NULL,
            "format->node_names",
        );
        f.node_names_len = 0;
        assert_eq!(call(&f, buf.as_mut_ptr(), 64, &mut len), WEIR_OK);
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(text.to_str().unwrap(), "weir zone=eu 7 8");
    }
}
