//! Each kind of mistake in a file gives an error that names the line, the column and the field.

use super::parse;

/// A valid file; each case breaks it in one place.
const BASE: &str = r#"name = "base"
about = "a valid scenario that each case breaks in one place"
abort = "1m"

[[servers]]
names = ["a", "b"]
latency = { kind = "linear", base = "20ms", capacity = 50 }

[[servers]]
name = "c"
latency = "20ms"
phases = [
    { from = "10s", status = 500 },
    { from = "20s" },
]

[[servers]]
name = "d"
latency = "20ms"
present = false

[clients]
count = 2
timeout = "1s"

[clients.retries]
max = 2
on = "retryable"
backoff = { kind = "exponential", slot = "50ms" }

[[arrivals]]
kind = "poisson"
rps = 100
duration = "30s"

[[actions]]
at = "15s"
add = "d"
"#;

/// `BASE` with `from` (which must occur once) replaced by `to`.
fn broken(from: &str, to: &str) -> String {
    assert_eq!(BASE.matches(from).count(), 1, "{from}");
    BASE.replace(from, to)
}

#[test]
fn the_base_is_valid() {
    let s = parse(BASE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.servers.len(), 4);
    assert_eq!(s.requests(), 3_000);
}

#[test]
fn every_mistake_names_its_line_and_field() {
    let cases = [
        // TOML itself.
        ("abort = \"1m\"", "abort = \"1m", "3:12: invalid basic string, expected `\"`"),
        // Keys the format does not have.
        ("[clients]", "[client]", "22:2: client: unknown field `client`, expected one of `name`, `about`, `seed`, `java`, `abort`, `bucket`, `at_capacity`, `not_comparable`, `servers`, `clients`, `arrivals`, `actions`, `faults`"),
        ("{ from = \"20s\" }", "{ form = \"20s\" }", "14:7: servers[1].phases[1].form: unknown field `form`, expected one of `from`, `latency`, `status`, `endpoints`"),
        // Missing fields.
        ("[[arrivals]]\nkind = \"poisson\"\nrps = 100\nduration = \"30s\"\n", "", "1:1: missing field `arrivals`"),
        ("at = \"15s\"\n", "", "36:1: actions[0]: missing field `at`"),
        ("name = \"c\"", "nom = \"c\"", "10:1: servers[1].nom: unknown field `nom`, expected one of `name`, `names`, `count`, `latency`, `status`, `endpoints`, `phases`, `slowness`, `crash`, `present`, `shed_above`"),
        ("name = \"d\"\n", "", "17:1: servers[2]: a server needs `name` (or `names`)"),
        ("latency = \"20ms\"\npresent", "status = 503\npresent", "17:1: servers[2]: no `latency`: give one here or on the server (a status alone needs one too)"),
        // Types.
        ("count = 2", "count = \"two\"", "23:9: clients.count: invalid type: string \"two\", expected usize"),
        ("count = 2", "count = -2", "23:9: clients.count: invalid value: integer `-2`, expected usize"),
        ("name = \"base\"", "name = \"base\"\nseed = -1", "2:8: seed: invalid value: integer `-1`, expected u64"),
        // Durations.
        ("abort = \"1m\"", "abort = 60", "3:9: abort: 60 has no unit: write a string such as \"60ms\" or \"60s\""),
        ("abort = \"1m\"", "abort = \"1 minute\"", "3:9: abort: \"1 minute\" is not a duration: write a number and a unit (ns, us, ms, s, m, h), such as \"250ms\" or \"1.5s\""),
        ("slot = \"50ms\"", "slot = \"0.5ns\"", "29:42: clients.retries.backoff.slot: \"0.5ns\" is not a whole number of nanoseconds"),
        ("timeout = \"1s\"", "timeout = \"0s\"", "24:11: clients.timeout: must be longer than 0"),
        ("latency = \"20ms\"\nphases", "latency = \"20 furlongs\"\nphases", "11:11: servers[1].latency: \"20 furlongs\" is not a duration: write a number and a unit (ns, us, ms, s, m, h), such as \"250ms\" or \"1.5s\", or \"never\""),
        // Phases.
        ("{ from = \"10s\", status = 500 }", "{ from = \"0s\", status = 500 }", "13:14: servers[1].phases[0].from: a phase starts after 0 (the server's own latency and status are its behaviour from 0)"),
        ("{ from = \"20s\" }", "{ from = \"5s\" }", "14:14: servers[1].phases[1].from: phases must be in time order: this one starts at or before the previous one (10s)"),
        ("status = 500 }", "endpoints = [] }", "13:33: servers[1].phases[0].endpoints: no endpoints: leave `endpoints` out, or give at least one"),
        // Kinds and their fields.
        ("kind = \"linear\"", "kind = \"linaer\"", "7:20: servers[0].latency.kind: \"linaer\" is not a latency kind: fixed, linear, uniform, log_normal, queue or never"),
        ("capacity = 50 }", "capacity = 50, sigma = 0.5 }", "7:68: servers[0].latency.sigma: `sigma` does not apply to a latency of kind \"linear\" (it takes `base`, `capacity`)"),
        (", capacity = 50 }", " }", "7:11: servers[0].latency: a latency of kind \"linear\" needs `capacity`"),
        ("capacity = 50 }", "capacity = 0 }", "7:56: servers[0].latency.capacity: must be at least 1"),
        ("kind = \"linear\", base = \"20ms\", capacity = 50", "kind = \"uniform\", low = \"20ms\", high = \"10ms\"", "7:52: servers[0].latency.high: `high` (10ms) is below `low` (20ms)"),
        ("kind = \"linear\", base = \"20ms\", capacity = 50", "kind = \"queue\", workers = 0, median = \"20ms\"", "7:39: servers[0].latency.workers: must be at least 1"),
        ("kind = \"linear\", base = \"20ms\", capacity = 50", "kind = \"log_normal\", median = \"2ms\", sigma = -1", "7:58: servers[0].latency.sigma: must be a finite number at least 0"),
        ("status = 500 }", "status = 700 }", "13:30: servers[1].phases[0].status: 700 is not an HTTP status (100 to 599)"),
        ("status = 500 }", "status = \"oops\" }", "13:30: servers[1].phases[0].status: \"oops\" is not a status: write a code such as 503, \"refuse\", or a table with a `kind`"),
        ("status = 500 }", "status = { kind = \"error_rate\", code = 500, p = 1.5 } }", "13:69: servers[1].phases[0].status.p: 1.5 is not a probability (0 to 1)"),
        ("status = 500 }", "status = { kind = \"error_rate\", code = 500 } }", "13:30: servers[1].phases[0].status: a status of kind \"error_rate\" needs `p`"),
        ("status = 500 }", "status = { kind = \"one_minute_rate\", per_sec = 0 } }", "13:68: servers[1].phases[0].status.per_sec: 0: must be a positive number"),
        // Server-wide fields.
        ("present = false", "present = false\nslowness = 0", "21:12: servers[2].slowness: must be a positive number (1 = nominal, 2 = half as fast)"),
        ("present = false", "present = false\nshed_above = 0", "21:14: servers[2].shed_above: must be at least 1"),
        ("present = false", "present = false\ncrash = { active_above = 10, sustained = \"1s\", down_for = \"0s\" }", "21:59: servers[2].crash.down_for: must be longer than 0"),
        // Names.
        ("name = \"base\"", "name = \"Base case\"", "1:8: name: \"Base case\" is not a scenario name: use lowercase letters, digits and `_`"),
        ("name = \"c\"", "name = \"a\"", "10:8: servers[1].name: a server is already named `a`"),
        ("name = \"c\"", "name = \"c d\"", "10:8: servers[1].name: \"c d\" is not a server name: use letters, digits, `_`, `-` and `.`"),
        ("add = \"d\"", "add = \"e\"", "38:7: actions[0].add: no server is named `e` (the servers: a, b, c, d)"),
        // Membership actions.
        ("add = \"d\"", "add = \"a\"", "36:1: actions[0]: `a` is present at 15s already: only an absent or removed server can be added"),
        ("add = \"d\"", "remove = \"d\"", "36:1: actions[0]: `d` is not present at 15s: it cannot be removed"),
        ("add = \"d\"", "add = \"d\"\ndrain = \"a\"", "36:1: actions[0]: an action is exactly one of `add`, `remove`, `drain` or `undrain`, with a server's name"),
        ("add = \"d\"\n", "add = \"d\"\n\n[[actions]]\nat = \"5s\"\ndrain = \"a\"\n", "41:6: actions[1].at: actions must be in time order: this one is before the previous one (15s)"),
        // Clients.
        ("count = 2", "count = 0", "23:9: clients.count: must be from 1 to 10000"),
        ("count = 2", "count = 2\nendpoints = 1001", "24:13: clients.endpoints: must be from 1 to 1000"),
        ("name = \"d\"", "name = \"d\"\ncount = 4000000000", "19:9: servers[2].count: must be from 1 to 10000"),
        ("name = \"d\"", "name = \"d\"\ncount = 9999", "18:8: servers[2].name: more than 10000 servers"),
        ("timeout = \"1s\"", "timeout = \"1s\"\nsubset = { kind = \"random\", size = 9 }", "25:36: clients.subset.size: a subset has 1 to 4 servers (the scenario's)"),
        ("timeout = \"1s\"", "timeout = \"1s\"\nsubset = { kind = \"sticky\", size = 2 }", "25:19: clients.subset.kind: \"sticky\" is not a subsetting: deterministic or random"),
        ("on = \"retryable\"", "on = \"always\"", "28:6: clients.retries.on: \"always\" is not a retry rule: retryable or dialogue"),
        ("on = \"retryable\"", "on = \"retryable\"\nsafe_method = true", "29:15: clients.retries.safe_method: `safe_method` goes with on = \"dialogue\" only"),
        ("slot = \"50ms\"", "slot = \"60000h\"", "29:42: clients.retries.backoff.slot: slot × 2^(max − 1) must be at most 100000h"),
        ("{ kind = \"exponential\", slot = \"50ms\" }", "{ kind = \"responsive\", up_multiplier = 0.5 }", "29:50: clients.retries.backoff.up_multiplier: `up_multiplier` must be finite and at least 1"),
        ("{ kind = \"exponential\", slot = \"50ms\" }", "{ kind = \"responsive\", slot = \"50ms\" }", "29:41: clients.retries.backoff.slot: `slot` does not apply to a backoff of kind \"responsive\" (it takes `initial`, `max`, `up_multiplier`, `down_multiplier`, `down_threshold`, `jitter`)"),
        ("{ kind = \"exponential\", slot = \"50ms\" }", "{ kind = \"responsive\", jitter = \"lots\" }", "29:43: clients.retries.backoff.jitter: \"lots\" is not a jitter: none, full, equal, decorrelated or { factor, max }"),
        ("slot = \"50ms\" }", "slot = \"50ms\" }\nbudget = { retry_ratio = 2 }", "30:26: clients.retries.budget.retry_ratio: `retry_ratio` must be between 0 and 1"),
        ("slot = \"50ms\" }", "slot = \"50ms\" }\nbudget = { buckets = 1000 }", "30:22: clients.retries.budget.buckets: `buckets` must be between 1 and 128"),
        // Arrivals.
        ("rps = 100", "rps = 100\nspacing = \"10ms\"", "34:11: arrivals[0].spacing: give `rps` or `spacing`, not both"),
        ("rps = 100\n", "", "31:1: arrivals[0]: a stream needs `rps` or `spacing`"),
        ("rps = 100", "rps = 0", "33:7: arrivals[0].rps: 0: must be a positive number"),
        ("duration = \"30s\"", "duration = \"30s\"\ncount = 5", "35:9: arrivals[0].count: give `duration` or `count`, not both"),
        ("duration = \"30s\"", "duration = \"1ms\"", "34:12: arrivals[0].duration: shorter than one spacing (10ms): no requests"),
        ("kind = \"poisson\"", "kind = \"bursty\"", "32:8: arrivals[0].kind: \"bursty\" is not a stream kind: steady or poisson"),
        ("duration = \"30s\"", "duration = \"30s\"\nclient = 2", "35:10: arrivals[0].client: there is no client 2 (clients are numbered 0 to 1)"),
        ("duration = \"30s\"", "duration = \"30s\"\nbad = 1.2", "35:7: arrivals[0].bad: 1.2 is not a probability (0 to 1)"),
        ("duration = \"30s\"", "duration = \"30s\"\nheavy = { fraction = 0.1, cost = -3 }", "35:34: arrivals[0].heavy.cost: -3: must be a positive number"),
        ("duration = \"30s\"", "duration = \"2m\"", "31:1: arrivals[0]: the stream's last request is due at 2m, after `abort` (1m): the run would stop before its load ends"),
        ("rps = 100\nduration = \"30s\"", "spacing = \"1ns\"\ncount = 20000000", "31:1: arrivals[0]: 20000000 requests in all: at most 10000000"),
        // The run.
        ("abort = \"1m\"", "abort = \"1001h\"", "3:9: abort: at most 1000h (the run keeps a series per second)"),
        ("abort = \"1m\"", "abort = \"1m\"\nbucket = \"1us\"", "4:10: bucket: 60000000 buckets of 1us until `abort` (1m): at most 100000"),
        ("present = false", "present = false\n\n[[faults]]\nserver = \"z\"\nfrom = \"1s\"\nto = \"2s\"", "23:10: faults[0].server: no server is named `z` (the servers: a, b, c, d)"),
        ("present = false", "present = false\n\n[[faults]]\nfrom = \"2s\"\nto = \"2s\"", "24:6: faults[0].to: a fault must end after it starts (2s)"),
        ("abort = \"1m\"", "abort = \"1m\"\njava = \"java\"", "4:8: java: \"java\" is not a set of seeds: write \"dialogue\" or { shared, chooser, server }"),
        ("abort = \"1m\"", "abort = \"1m\"\nnot_comparable = \" \"", "4:18: not_comparable: say why the policies cannot be compared, or leave it out"),
    ];
    let mut wrong = Vec::new();
    for (from, to, expected) in cases {
        let text = broken(from, to);
        let got = match parse(&text) {
            Ok(_) => "parsed".to_string(),
            Err(e) => e.to_string().lines().next().unwrap_or_default().to_string(),
        };
        if got != expected {
            wrong.push(format!(
                "{from:?} -> {to:?}\n  expected: {expected}\n  got:      {got}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn an_error_shows_the_line_it_points_at() {
    let e = parse(&broken("capacity = 50 }", "capacity = 0 }")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "7:56: servers[0].latency.capacity: must be at least 1\n     7 | latency = { kind = \"linear\", base = \"20ms\", capacity = 0 }"
    );
    assert_eq!((e.line, e.column), (7, 56));
}

#[test]
fn no_server_present_at_the_start_is_refused() {
    let text = broken(
        "names = [\"a\", \"b\"]",
        "names = [\"a\", \"b\"]\npresent = false",
    )
    .replace("name = \"c\"\n", "name = \"c\"\npresent = false\n");
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.message,
        "no server is present at the start: every one has `present = false`"
    );
    assert_eq!((e.line, e.field.as_str()), (5, "servers[0]"));
}
