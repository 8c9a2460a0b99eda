//! The two pieces of the Java runtime whose exact behaviour dialogue's simulation depends on:
//! `java.util.Random` (every shuffle, pin, jitter and request assignment is drawn from one) and the
//! iteration order of a `java.util.HashMap` keyed by server name (the order of a client's URI list).

/// `java.util.Random`, draw for draw: the 48-bit linear congruential generator of its Javadoc, with
/// `nextInt()`, `nextInt(bound)`, `nextDouble()` and `Collections.shuffle`'s use of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JavaRandom {
    state: u64,
}

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const ADDEND: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;

impl JavaRandom {
    /// `new Random(seed)`.
    pub fn new(seed: i64) -> Self {
        JavaRandom {
            state: (seed as u64 ^ MULTIPLIER) & MASK,
        }
    }

    /// `next(bits)`: the top `bits` of the advanced state, as Java's `int` (so 32 bits may be negative).
    fn next(&mut self, bits: u32) -> i32 {
        self.state = self.state.wrapping_mul(MULTIPLIER).wrapping_add(ADDEND) & MASK;
        (self.state >> (48 - bits)) as i32
    }

    /// `nextInt()`.
    pub fn next_int(&mut self) -> i32 {
        self.next(32)
    }

    /// `nextInt(bound)`: uniform in `[0, bound)`, by Java's rejection loop (bounds below 1 are treated as 1,
    /// where Java throws).
    pub fn next_int_below(&mut self, bound: i32) -> i32 {
        let bound = bound.max(1);
        let mut r = self.next(31);
        let m = bound - 1;
        if bound & m == 0 {
            return ((i64::from(bound) * i64::from(r)) >> 31) as i32;
        }
        let mut u = r;
        loop {
            r = u % bound;
            // Java's `u - r + m < 0` in wrapping int arithmetic: the draw fell in the incomplete last block.
            if u.wrapping_sub(r).wrapping_add(m) >= 0 {
                return r;
            }
            u = self.next(31);
        }
    }

    /// `nextDouble()`: uniform in `[0, 1)` with 53 random bits.
    pub fn next_double(&mut self) -> f64 {
        let high = i64::from(self.next(26)) << 27;
        let low = i64::from(self.next(27));
        (high + low) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `Collections.shuffle(list, this)`: from the last position down, swap each with a uniformly chosen
    /// earlier-or-same one (a list of one or none draws nothing).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (2..=items.len()).rev() {
            let j = self.next_int_below(i as i32) as usize;
            items.swap(i - 1, j);
        }
    }
}

/// `String.hashCode()`: `s[0]·31^(n−1) + … + s[n−1]` over UTF-16 units, in wrapping `int` arithmetic.
pub fn string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The order in which a `java.util.HashMap` built by inserting `keys` in order (as `Collectors.toMap`
/// does) iterates them: by bucket, `(h ^ h >>> 16) & (capacity − 1)` with the default capacity 16 doubled
/// until the map is at most three quarters full, then by insertion within a bucket. Returns indices into
/// `keys`. Duplicate keys keep their first position.
pub fn hash_map_order(keys: &[&str]) -> Vec<usize> {
    let mut capacity = 16usize;
    while keys.len() * 4 > capacity * 3 {
        capacity *= 2;
    }
    let bucket = |k: &str| {
        let h = string_hash(k);
        ((h ^ ((h as u32) >> 16) as i32) as u32 as usize) & (capacity - 1)
    };
    let mut order: Vec<usize> = (0..keys.len())
        .filter(|&i| !keys[..i].contains(&keys[i]))
        .collect();
    // A stable sort keeps insertion order within a bucket.
    order.sort_by_key(|&i| bucket(keys[i]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every expected value below was printed by OpenJDK's java.util.Random, Collections.shuffle and
    // HashMap.keySet (the seeds are dialogue's: 3218974678 shared, 21876781263 request assignment, 4 flakes).

    #[test]
    fn draws_match_java_util_random() {
        let mut r = JavaRandom::new(3_218_974_678);
        let ints: Vec<i32> = (0..5).map(|_| r.next_int()).collect();
        assert_eq!(
            ints,
            [1890346346, 491880467, 962290370, -1554814830, -954159208]
        );
        let tens: Vec<i32> = (0..5).map(|_| r.next_int_below(10)).collect();
        assert_eq!(tens, [4, 0, 5, 9, 3]);
        let sixties: Vec<i32> = (0..3).map(|_| r.next_int_below(60)).collect();
        assert_eq!(sixties, [1, 40, 31]);
        let doubles: Vec<f64> = (0..3).map(|_| r.next_double()).collect();
        assert_eq!(
            doubles,
            [0.3686180070828666, 0.04225604913586978, 0.913682377645209]
        );
        // A power of two, a small power of two, the largest bound, and a bound that forces rejections.
        assert_eq!(r.next_int_below(1 << 30), 508864680);
        assert_eq!(r.next_int_below(16), 12);
        assert_eq!(r.next_int_below(i32::MAX), 1420507952);
        assert_eq!(r.next_int_below(1_500_000_001), 332618129);

        let mut chooser = JavaRandom::new(21_876_781_263);
        let picks: Vec<i32> = (0..10).map(|_| chooser.next_int_below(20)).collect();
        assert_eq!(picks, [18, 8, 1, 13, 0, 3, 19, 4, 17, 16]);

        let mut flakes = JavaRandom::new(4);
        assert_eq!(flakes.next_double(), 0.7306094602878371);
        assert_eq!(flakes.next_double(), 0.9187140138555101);
    }

    #[test]
    fn shuffle_matches_collections_shuffle() {
        let mut items = [0, 1, 2, 3, 4, 5];
        JavaRandom::new(7).shuffle(&mut items);
        assert_eq!(items, [3, 0, 1, 2, 5, 4]);
        // One element or none: no draw.
        let mut r = JavaRandom::new(7);
        r.shuffle(&mut [9]);
        r.shuffle::<u8>(&mut []);
        assert_eq!(r, JavaRandom::new(7));
    }

    #[test]
    fn hash_map_order_matches_java() {
        let cases: [(&[&str], &[&str]); 7] = [
            (
                &["fast", "medium", "slightly_slow"],
                &["fast", "slightly_slow", "medium"],
            ),
            (
                &["node1", "node2_black_hole"],
                &["node2_black_hole", "node1"],
            ),
            (
                &["always_on", "always_broken", "added_halfway"],
                &["always_on", "added_halfway", "always_broken"],
            ),
            (
                &["server_where_e1_breaks", "server_where_e2_breaks"],
                &["server_where_e2_breaks", "server_where_e1_breaks"],
            ),
            (
                &["node0", "node1", "node2", "node3"],
                &["node2", "node3", "node0", "node1"],
            ),
            (&["fast0", "fast1"], &["fast1", "fast0"]),
            (
                &["normal", "fast_503s_then_revert"],
                &["normal", "fast_503s_then_revert"],
            ),
        ];
        for (keys, java) in cases {
            let ours: Vec<&str> = hash_map_order(keys).iter().map(|&i| keys[i]).collect();
            assert_eq!(ours, java, "{keys:?}");
        }
        assert_eq!(string_hash("node1"), 104_993_391);
        assert_eq!(string_hash("server_where_e1_breaks"), -1_426_733_005);
    }
}
