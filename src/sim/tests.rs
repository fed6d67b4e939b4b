//! Unit tests of `sim`.

use super::*;

#[test]
fn durations() {
    assert_eq!(parse_duration("90").unwrap(), 90.0);
    assert_eq!(parse_duration("1h30m").unwrap(), 5400.0);
    assert_eq!(parse_duration("2d").unwrap(), 172800.0);
    assert_eq!(parse_duration("1.5h").unwrap(), 5400.0);
    assert!(parse_duration("5x").is_err());
    assert!(parse_duration("h").is_err());
    assert!(parse_duration("10m5").is_err());
    assert!(parse_duration("-3").is_err());
}
