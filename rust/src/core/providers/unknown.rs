//! Bounded bookkeeping of provider names that no mapper knows (the pure twin
//! is `python/decisions/_pure/providers/_unknown.py`).
//!
//! A mapper counts each unknown event type, item type or part key it sees.
//! The names come from the provider, so what is kept is bounded: at most
//! [`MAX_NAMES`] distinct names, each cut to [`MAX_NAME_CHARS`] characters (a
//! cut name ends with `…`); every name past the cap is counted under
//! [`OVERFLOW`]. Memory stays flat whatever the stream sends.

use std::collections::BTreeMap;

/// Distinct names kept with their own count.
pub const MAX_NAMES: usize = 64;
/// Characters (Unicode scalar values) kept of one name.
pub const MAX_NAME_CHARS: usize = 64;
/// The key counting every name past [`MAX_NAMES`].
pub const OVERFLOW: &str = "<other>";
/// Unknown items a mapper keeps state for (to pair their start and stop); one
/// more is `TOO_MANY_ITEMS_IN_RESPONSE`, as a known item past the limit is.
pub const MAX_RECORDED_ITEMS: usize = 4096;

/// Count one sighting of `name` in `counts`, within the bounds.
pub fn count_unknown(counts: &mut BTreeMap<String, u64>, name: &str) {
    let cut;
    let name = match name.char_indices().nth(MAX_NAME_CHARS) {
        Some((at, _)) => {
            cut = format!("{}…", name.get(..at).unwrap_or_default());
            cut.as_str()
        }
        None => name,
    };
    if let Some(seen) = counts.get_mut(name) {
        *seen = seen.saturating_add(1);
        return;
    }
    let kept = counts.len() - usize::from(counts.contains_key(OVERFLOW));
    if kept < MAX_NAMES {
        counts.insert(name.to_owned(), 1);
    } else {
        let overflow = counts.entry(OVERFLOW.to_owned()).or_insert(0);
        *overflow = overflow.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bounded() {
        let mut counts = BTreeMap::new();
        for i in 0..1000 {
            count_unknown(&mut counts, &format!("name{i}"));
        }
        count_unknown(&mut counts, "name0");
        count_unknown(&mut counts, &"é".repeat(100));
        assert_eq!(counts.len(), MAX_NAMES + 1);
        assert_eq!(counts.get("name0"), Some(&2));
        assert_eq!(counts.get(OVERFLOW), Some(&(1000 - MAX_NAMES as u64 + 1)));
        let mut long = BTreeMap::new();
        count_unknown(&mut long, &"é".repeat(100));
        assert_eq!(
            long.keys().next().map(|k| k.chars().count()),
            Some(MAX_NAME_CHARS + 1)
        );
    }
}
