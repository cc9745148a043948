//! Times as AWS writes them: epoch milliseconds, calendar dates, ISO-8601 timestamps.

use std::time::SystemTime;

/// Milliseconds since the Unix epoch (negative before it).
pub fn millis_since_epoch(time: SystemTime) -> i64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_millis()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// An ISO-8601 UTC timestamp with milliseconds, such as `2019-11-14T00:38:06.021Z`, as in
/// Lambda's invocation records.
pub fn iso8601_millis(time: SystemTime) -> String {
    let millis = millis_since_epoch(time);
    let (year, month, day) = civil_date(millis.div_euclid(86_400_000));
    let in_day = millis.rem_euclid(86_400_000);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// The calendar date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
pub fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[track_caller]
    fn check_date(days: i64, expected: (i64, u32, u32)) {
        assert_eq!(civil_date(days), expected);
    }

    #[test]
    fn days_since_the_epoch_become_calendar_dates() {
        check_date(0, (1970, 1, 1));
        check_date(59, (1970, 3, 1));
        check_date(11_016, (2000, 2, 29));
        check_date(20_454, (2026, 1, 1));
        check_date(-1, (1969, 12, 31));
    }

    #[test]
    fn timestamps_are_iso8601_with_milliseconds() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_573_691_886_021);
        assert_eq!(iso8601_millis(at), "2019-11-14T00:38:06.021Z");
        assert_eq!(
            iso8601_millis(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000Z"
        );
        let before = SystemTime::UNIX_EPOCH - Duration::from_millis(1);
        assert_eq!(iso8601_millis(before), "1969-12-31T23:59:59.999Z");
    }
}
