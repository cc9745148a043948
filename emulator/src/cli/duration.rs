//! Durations as the command line takes them.

/// Reads durations such as `250ms`, `2s` or `1m` (a bare number is seconds).
pub(super) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 250ms, 2s or 1m"))?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" | "" => number,
        "m" => number * 60.0,
        _ => return Err(format!("`{text}`: the unit must be ms, s or m")),
    };
    std::time::Duration::try_from_secs_f64(seconds).map_err(|error| format!("`{text}`: {error}"))
}
