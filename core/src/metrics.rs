//! TEMPORARY stand-in for the metrics writer of issue 31 (branch i31-core): the contract's signatures
//! only, so that weir-tower's surface can be built and tested against it; reverted when the real writer
//! is merged.
#![allow(missing_docs)]

use crate::balance::NodeState;
use crate::balance::Balancer;
use crate::NodeSlot;
use core::fmt::{self, Write};

#[derive(Clone, Copy, Debug)]
pub struct MetricsFormat<'a> {
    pub prefix: &'a str,
    pub labels: &'a [(&'a str, &'a str)],
}

impl Default for MetricsFormat<'_> {
    fn default() -> Self {
        MetricsFormat {
            prefix: "weir",
            labels: &[],
        }
    }
}

pub fn node_id_name(id: u64, out: &mut dyn Write) -> fmt::Result {
    write!(out, "{id}")
}

const OUTCOMES: [&str; 6] = [
    "success",
    "failure",
    "dropped",
    "ignored",
    "throttled",
    "client_error",
];

impl<S: AsRef<[NodeSlot]>> Balancer<S> {
    pub fn write_metrics<W: Write + ?Sized>(
        &self,
        out: &mut W,
        format: &MetricsFormat<'_>,
        names: &dyn Fn(u64, &mut dyn Write) -> fmt::Result,
        now: u64,
    ) -> fmt::Result {
        let p = format.prefix;
        let labels = |out: &mut W| -> fmt::Result {
            for (k, v) in format.labels {
                write!(out, "{k}=\"{v}\",")?;
            }
            Ok(())
        };
        let node = |out: &mut W, id: u64| -> fmt::Result {
            out.write_str("node=\"")?;
            let mut adapter = Adapter(out);
            names(id, &mut adapter)?;
            out.write_str("\"")
        };
        writeln!(out, "# TYPE {p}_node_in_flight gauge")?;
        for n in self.nodes(now) {
            write!(out, "{p}_node_in_flight{{")?;
            labels(out)?;
            node(out, n.id)?;
            writeln!(out, "}} {}", n.in_flight)?;
        }
        writeln!(out, "# TYPE {p}_node_limit gauge")?;
        for n in self.nodes(now) {
            write!(out, "{p}_node_limit{{")?;
            labels(out)?;
            node(out, n.id)?;
            writeln!(out, "}} {}", n.limit)?;
        }
        writeln!(out, "# TYPE {p}_node_state gauge")?;
        for n in self.nodes(now) {
            for (state, value) in [
                ("active", n.state == NodeState::Active),
                ("lame_duck", n.state == NodeState::LameDuck),
            ] {
                write!(out, "{p}_node_state{{")?;
                labels(out)?;
                node(out, n.id)?;
                writeln!(out, ",state=\"{state}\"}} {}", u8::from(value))?;
            }
        }
        writeln!(out, "# TYPE {p}_node_released_total counter")?;
        for n in self.nodes(now) {
            let Some((_, slot)) = self.find(n.id) else {
                continue;
            };
            for (outcome, count) in OUTCOMES.iter().zip(&slot.released) {
                write!(out, "{p}_node_released_total{{")?;
                labels(out)?;
                node(out, n.id)?;
                writeln!(
                    out,
                    ",outcome=\"{outcome}\"}} {}",
                    count.load(crate::internal::sync::Ordering::Relaxed)
                )?;
            }
        }
        let st = self.stats();
        writeln!(out, "# TYPE {p}_acquired_total counter")?;
        write!(out, "{p}_acquired_total{{")?;
        labels(out)?;
        writeln!(out, "}} {}", st.acquired)?;
        writeln!(out, "# TYPE {p}_rejected_total counter")?;
        for (cause, v) in [
            ("all_busy", st.rejected_all_busy),
            ("no_active_nodes", st.rejected_no_active),
        ] {
            write!(out, "{p}_rejected_total{{")?;
            labels(out)?;
            writeln!(out, "cause=\"{cause}\"}} {v}")?;
        }
        writeln!(out, "# TYPE {p}_waiting gauge")?;
        write!(out, "{p}_waiting{{")?;
        labels(out)?;
        writeln!(out, "}} {}", st.waiting)
    }
}

struct Adapter<'a, W: ?Sized>(&'a mut W);
impl<W: Write + ?Sized> Write for Adapter<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write_str(s)
    }
}
