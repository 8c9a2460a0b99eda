//! Subsetting (the SRE book's): which few backends each client connects to, over caller-provided
//! arrays of `uint64_t` backend ids. The results go into the caller's buffer, sized as
//! `weir_balancer_nodes`'s.

use crate::boundary::{
    arg_mut, guard, null, weir_status, write_list, Error, Out, WEIR_ERR_INVALID_ARGUMENT,
};
use crate::rng::weir_rng;
use weir_core::subset::{deterministic_subset, random_subset, shuffle, SubsetError};
use weir_core::Rng;

/// `len` ids at `ptr` as a slice (`ptr` may be NULL only when `len` is 0).
///
/// # Safety
/// `ptr` is NULL or points to `len` readable, aligned `u64`s that nothing mutates during `'a`.
pub(crate) unsafe fn ids<'a>(ptr: *const u64, len: usize, name: &str) -> Result<&'a [u64], Error> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(null(name));
    }
    if len > isize::MAX as usize / core::mem::size_of::<u64>() {
        return Err(Error::invalid(
            name,
            format_args!("{len} ids do not fit in memory"),
        ));
    }
    // SAFETY: non-NULL, length bounded for `from_raw_parts`; readability and alignment are the
    // caller's contract.
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// A zeroed scratch buffer of `n` ids, or an error instead of an allocation failure's abort.
fn scratch(n: usize) -> Result<Vec<u64>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Error::invalid(
            "backends_len",
            format_args!("no memory for a copy of {n} ids"),
        )
    })?;
    v.resize(n, 0);
    Ok(v)
}

fn subset_error(e: SubsetError) -> Error {
    let argument = match e {
        SubsetError::NoBackends => "backends_len",
        _ => "subset_size",
    };
    Error::new(WEIR_ERR_INVALID_ARGUMENT, format!("{argument}: {e}"))
}

/// Writes `subset` into `out` (room for `cap`) and its length to `len`, as `weir_balancer_nodes` does:
/// with `out` NULL and `cap` 0 only the length; a buffer too small gets `WEIR_ERR_BUFFER_TOO_SMALL` and
/// nothing.
///
/// # Safety
/// `out` is NULL or points to `cap` writable `u64`s that do not overlap `subset` (weir's own scratch).
unsafe fn write_ids(
    subset: &[u64],
    out: *mut u64,
    cap: usize,
    len: Out<usize>,
) -> Result<(), Error> {
    // SAFETY: the contract above is `write_list`'s.
    unsafe {
        write_list(subset, out, cap, len, "out", || {
            format!("out: room for {cap} ids, the subset has {}", subset.len())
        })
    }
}

/// Shuffles `items` (`len` ids) in place with the documented SplitMix64 Fisher-Yates shuffle seeded with
/// `seed`: the same seed gives the same order in every language. `items` may be NULL when `len` is 0.
/// Errors: `WEIR_ERR_NULL`.
///
/// # Safety
/// `items` is NULL or points to `len` readable and writable `uint64_t`s no other thread uses during the
/// call.
///
/// Thread safety: a pure function of its arguments; safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_subset_shuffle(
    items: *mut u64,
    len: usize,
    seed: u64,
) -> weir_status {
    guard(|| {
        if len == 0 {
            return Ok(());
        }
        if items.is_null() {
            return Err(null("items"));
        }
        if len > isize::MAX as usize / core::mem::size_of::<u64>() {
            return Err(Error::invalid(
                "len",
                format_args!("{len} ids do not fit in memory"),
            ));
        }
        // SAFETY: non-NULL, length bounded; validity and exclusivity are the caller's contract.
        shuffle(unsafe { core::slice::from_raw_parts_mut(items, len) }, seed);
        Ok(())
    })
}

/// The SRE book's deterministic subset of client `client_id`: `backends` (`backends_len` ids, listed in
/// the same order by every client) shuffled per round of clients (`weir_subset_shuffle` with seed
/// `client_id / (backends_len / subset_size)`) and cut into `backends_len / subset_size` subsets, of
/// `subset_size` ids or one more when the division is not exact. Writes the subset into `out` (room for
/// `cap`) and its length to `*len`; with `out` NULL and `cap` 0, only the length. A buffer of
/// `2 * subset_size` ids is always enough; a smaller one that cannot hold the subset gets
/// `WEIR_ERR_BUFFER_TOO_SMALL` and nothing written. `out` may be `backends` itself. Errors:
/// `WEIR_ERR_INVALID_ARGUMENT` (no backends, a `subset_size` of 0 or above `backends_len`),
/// `WEIR_ERR_NULL`.
///
/// # Safety
/// `backends` is NULL (only with `backends_len` 0) or points to `backends_len` readable `uint64_t`s;
/// `out` is NULL (only with `cap` 0) or points to `cap` writable `uint64_t`s; `len` is NULL or writable.
///
/// Thread safety: a pure function of its arguments; safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_subset_deterministic(
    backends: *const u64,
    backends_len: usize,
    client_id: u64,
    subset_size: usize,
    out: *mut u64,
    cap: usize,
    len: *mut usize,
) -> weir_status {
    guard(|| {
        let len = unsafe { Out::new(len, "len") }?;
        // The input is read in full before anything is written, so `out` may alias it.
        let buffer = {
            // SAFETY: the caller's contract above.
            let backends = unsafe { ids(backends, backends_len, "backends") }?;
            let mut buffer = scratch(backends.len())?;
            let subset = deterministic_subset(backends, client_id, subset_size, &mut buffer)
                .map_err(subset_error)?;
            subset.to_vec()
        };
        // SAFETY: the caller's contract above.
        unsafe { write_ids(&buffer, out, cap, len) }
    })
}

/// The SRE book's naive random subset, kept for comparison: `backends` shuffled with a seed drawn from
/// the caller's generator `*rng`, and the first `subset_size` ids. Writes them into `out` (room for
/// `cap`) and their number to `*len`; with `out` NULL and `cap` 0, only the number. `out` may be
/// `backends` itself. The generator advances only when the subset is written: on any error, or a
/// length query, `*rng` is unchanged. Errors: `WEIR_ERR_BUFFER_TOO_SMALL` (`cap` below `subset_size`;
/// nothing written), `WEIR_ERR_INVALID_ARGUMENT` (no backends, a `subset_size` of 0 or above
/// `backends_len`), `WEIR_ERR_NULL`.
///
/// # Safety
/// `backends` is NULL (only with `backends_len` 0) or points to `backends_len` readable `uint64_t`s;
/// `rng` is NULL or points to a `weir_rng` no other thread uses during the call; `out` is NULL (only
/// with `cap` 0) or points to `cap` writable `uint64_t`s; `len` is NULL or writable.
///
/// Thread safety: safe from any thread (each thread with its own generator).
#[no_mangle]
pub unsafe extern "C" fn weir_subset_random(
    backends: *const u64,
    backends_len: usize,
    subset_size: usize,
    rng: *mut weir_rng,
    out: *mut u64,
    cap: usize,
    len: *mut usize,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let rng = unsafe { arg_mut(rng, "rng") }?;
        let len = unsafe { Out::new(len, "len") }?;
        let mut draw = Rng::with_seed(rng.state);
        let buffer = {
            // SAFETY: the caller's contract above.
            let backends = unsafe { ids(backends, backends_len, "backends") }?;
            let mut buffer = scratch(backends.len())?;
            let subset = random_subset(backends, subset_size, &mut draw, &mut buffer)
                .map_err(subset_error)?;
            subset.to_vec()
        };
        let query = out.is_null() && cap == 0;
        // SAFETY: the caller's contract above.
        unsafe { write_ids(&buffer, out, cap, len) }?;
        if !query {
            rng.state = draw.get_seed();
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::testing::last;
    use crate::boundary::{WEIR_ERR_BUFFER_TOO_SMALL, WEIR_ERR_NULL, WEIR_OK};
    use crate::rng::weir_rng_seed;
    use std::ptr::{null, null_mut};

    #[test]
    fn shuffle_is_the_documented_one() {
        let mut a: Vec<u64> = (0..12).collect();
        assert_eq!(
            unsafe { weir_subset_shuffle(a.as_mut_ptr(), a.len(), 0) },
            WEIR_OK
        );
        assert_eq!(a, [5, 11, 6, 7, 3, 1, 2, 9, 8, 0, 4, 10]);
        assert_eq!(unsafe { weir_subset_shuffle(null_mut(), 0, 0) }, WEIR_OK);
        assert_eq!(
            unsafe { weir_subset_shuffle(null_mut(), 3, 0) },
            WEIR_ERR_NULL
        );
        assert_eq!(last(), "argument `items` is NULL");
    }

    #[test]
    fn deterministic_subsets_are_the_books_and_fill_the_buffer_exactly() {
        let list: Vec<u64> = (0..12).collect();
        let rounds = [
            [5, 11, 6, 7, 3, 1, 2, 9, 8, 0, 4, 10],
            [7, 0, 4, 1, 2, 11, 5, 10, 3, 9, 8, 6],
        ];
        for (round, want) in rounds.iter().enumerate() {
            for subset in 0..4u64 {
                let client = round as u64 * 4 + subset;
                let mut out = [u64::MAX; 3];
                let mut len = 0;
                let status = unsafe {
                    weir_subset_deterministic(
                        list.as_ptr(),
                        12,
                        client,
                        3,
                        out.as_mut_ptr(),
                        3,
                        &mut len,
                    )
                };
                assert_eq!(status, WEIR_OK);
                let s = subset as usize * 3;
                assert_eq!((len, &out[..]), (3, &want[s..s + 3]));
            }
        }
        // 10 backends in subsets of 3: 3 subsets of 3, 3 and 4 ids; client 2 gets the 4.
        let ten: Vec<u64> = (100..110).collect();
        let mut len = 0;
        let status =
            unsafe { weir_subset_deterministic(ten.as_ptr(), 10, 2, 3, null_mut(), 0, &mut len) };
        assert_eq!((status, len), (WEIR_OK, 4));
        let mut small = [u64::MAX; 3];
        len = 77;
        let status = unsafe {
            weir_subset_deterministic(ten.as_ptr(), 10, 2, 3, small.as_mut_ptr(), 3, &mut len)
        };
        assert_eq!(status, WEIR_ERR_BUFFER_TOO_SMALL);
        assert_eq!(last(), "out: room for 3 ids, the subset has 4");
        assert_eq!((small, len), ([u64::MAX; 3], 77));
        let mut scratch = [0u64; 10];
        let want = deterministic_subset(&ten, 2, 3, &mut scratch)
            .unwrap()
            .to_vec();
        // In place: the output may be the input.
        let mut inplace = ten.clone();
        let status = unsafe {
            weir_subset_deterministic(
                inplace.as_ptr(),
                10,
                2,
                3,
                inplace.as_mut_ptr(),
                10,
                &mut len,
            )
        };
        assert_eq!((status, len), (WEIR_OK, 4));
        assert_eq!(&inplace[..4], &want[..]);
        assert_eq!(
            &inplace[4..],
            &ten[4..],
            "nothing past the subset is written"
        );
    }

    #[test]
    fn subset_arguments_are_checked() {
        let list = [1u64, 2, 3];
        let mut out = [0u64; 3];
        let mut len = 0usize;
        let mut rng = weir_rng_seed(9);
        type Case = (usize, usize, &'static str);
        let cases: [Case; 3] = [
            (0, 1, "backends_len: subsetting needs at least one backend"),
            (3, 0, "subset_size: subset_size must be at least 1"),
            (
                3,
                4,
                "subset_size: subset_size 4 is larger than the 3 backends",
            ),
        ];
        for (n, size, text) in cases {
            let status = unsafe {
                weir_subset_deterministic(list.as_ptr(), n, 0, size, out.as_mut_ptr(), 3, &mut len)
            };
            assert_eq!((status, last().as_str()), (WEIR_ERR_INVALID_ARGUMENT, text));
            let status = unsafe {
                weir_subset_random(
                    list.as_ptr(),
                    n,
                    size,
                    &mut rng,
                    out.as_mut_ptr(),
                    3,
                    &mut len,
                )
            };
            assert_eq!((status, last().as_str()), (WEIR_ERR_INVALID_ARGUMENT, text));
        }
        let nulls = [
            (
                unsafe {
                    weir_subset_deterministic(null(), 3, 0, 1, out.as_mut_ptr(), 3, &mut len)
                },
                "backends",
            ),
            (
                unsafe {
                    weir_subset_deterministic(list.as_ptr(), 3, 0, 1, null_mut(), 3, &mut len)
                },
                "out",
            ),
            (
                unsafe {
                    weir_subset_deterministic(
                        list.as_ptr(),
                        3,
                        0,
                        1,
                        out.as_mut_ptr(),
                        3,
                        null_mut(),
                    )
                },
                "len",
            ),
            (
                unsafe {
                    weir_subset_random(null(), 3, 1, &mut rng, out.as_mut_ptr(), 3, &mut len)
                },
                "backends",
            ),
            (
                unsafe {
                    weir_subset_random(
                        list.as_ptr(),
                        3,
                        1,
                        null_mut(),
                        out.as_mut_ptr(),
                        3,
                        &mut len,
                    )
                },
                "rng",
            ),
            (
                unsafe {
                    weir_subset_random(list.as_ptr(), 3, 1, &mut rng, null_mut(), 3, &mut len)
                },
                "out",
            ),
            (
                unsafe {
                    weir_subset_random(
                        list.as_ptr(),
                        3,
                        1,
                        &mut rng,
                        out.as_mut_ptr(),
                        3,
                        null_mut(),
                    )
                },
                "len",
            ),
        ];
        for (status, name) in nulls {
            assert_eq!(status, WEIR_ERR_NULL, "{name}");
        }
        assert_eq!((out, len, rng.state), ([0; 3], 0, 9), "nothing written");
    }

    #[test]
    fn random_subsets_match_the_core_and_advance_the_generator_only_when_written() {
        let list: Vec<u64> = (0..20).collect();
        let mut rng = weir_rng_seed(11);
        let mut draw = Rng::with_seed(11);
        let mut scratch = [0u64; 20];
        for _ in 0..5 {
            let mut out = [0u64; 6];
            let mut len = 0;
            // A length query and a buffer too small leave the generator as it was.
            let status = unsafe {
                weir_subset_random(list.as_ptr(), 20, 6, &mut rng, null_mut(), 0, &mut len)
            };
            assert_eq!((status, len, rng.state), (WEIR_OK, 6, draw.get_seed()));
            let status = unsafe {
                weir_subset_random(
                    list.as_ptr(),
                    20,
                    6,
                    &mut rng,
                    out.as_mut_ptr(),
                    5,
                    &mut len,
                )
            };
            assert_eq!(status, WEIR_ERR_BUFFER_TOO_SMALL);
            assert_eq!((out, rng.state), ([0; 6], draw.get_seed()));
            let status = unsafe {
                weir_subset_random(
                    list.as_ptr(),
                    20,
                    6,
                    &mut rng,
                    out.as_mut_ptr(),
                    6,
                    &mut len,
                )
            };
            assert_eq!((status, len), (WEIR_OK, 6));
            let want = random_subset(&list, 6, &mut draw, &mut scratch).unwrap();
            assert_eq!(&out[..], want);
            assert_eq!(rng.state, draw.get_seed());
        }
    }
}
