//! Kubernetes resource quantities (`80`, `79500m`, `527939588Ki`, `512Gi`, `1.5`, `1e3`): a
//! number with an optional decimal (`n u m k M G T P E`) or binary (`Ki Mi Gi Ti Pi Ei`) suffix,
//! or a decimal exponent.

/// Why a quantity does not parse (the file and JSON path are the caller's to add).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("empty quantity")]
    Empty,
    #[error("`{q}`: unknown quantity suffix `{suffix}`")]
    BadExponent { q: String, suffix: String },
    #[error("`{q}`: unknown quantity suffix `{suffix}` (known: n u m k M G T P E Ki Mi Gi Ti Pi Ei)")]
    UnknownSuffix { q: String, suffix: String },
    #[error("`{q}`: `{num}` is not a number")]
    NotANumber { q: String, num: String },
    #[error("`{0}`: not a quantity >= 0")]
    Negative(String),
}

/// The value of a quantity in base units (cores for cpu, bytes for memory). `Err` names what is
/// wrong; the caller adds the file and JSON path.
pub fn parse(q: &str) -> Result<f64, QuantityError> {
    let s = q.trim();
    if s.is_empty() {
        return Err(QuantityError::Empty);
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if (e.starts_with('e') || e.starts_with('E')) && e.len() > 1 => {
            let exp: i32 = e[1..].parse().map_err(|_| QuantityError::BadExponent {
                q: q.to_string(),
                suffix: suffix.to_string(),
            })?;
            10f64.powi(exp)
        }
        _ => {
            return Err(QuantityError::UnknownSuffix {
                q: q.to_string(),
                suffix: suffix.to_string(),
            })
        }
    };
    let v: f64 = num.parse().map_err(|_| QuantityError::NotANumber {
        q: q.to_string(),
        num: num.to_string(),
    })?;
    if !v.is_finite() || v < 0.0 {
        return Err(QuantityError::Negative(q.to_string()));
    }
    Ok(v * mult)
}

/// Whole cores of a cpu quantity, rounded down (allocatable capacity).
pub(crate) fn cores_floor(q: &str) -> Result<u32, QuantityError> {
    Ok((parse(q)? + 1e-9).floor().min(u32::MAX as f64) as u32)
}

/// Whole cores of a cpu quantity, rounded up (a request: `500m` takes one core).
pub fn cores_ceil(q: &str) -> Result<u32, QuantityError> {
    Ok((parse(q)? - 1e-9).ceil().max(0.0).min(u32::MAX as f64) as u32)
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Whole GiB of a memory quantity, rounded down (allocatable capacity).
pub(crate) fn gib_floor(q: &str) -> Result<u32, QuantityError> {
    Ok((parse(q)? / GIB + 1e-9).floor().min(u32::MAX as f64) as u32)
}

/// Whole GiB of a memory quantity, rounded up (a request).
pub fn gib_ceil(q: &str) -> Result<u32, QuantityError> {
    Ok((parse(q)? / GIB - 1e-9).ceil().max(0.0).min(u32::MAX as f64) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_of_nodes_and_pods() {
        assert_eq!(parse("80").unwrap(), 80.0);
        assert!((parse("79500m").unwrap() - 79.5).abs() < 1e-9);
        assert_eq!(parse("527939588Ki").unwrap(), 527939588.0 * 1024.0);
        assert_eq!(parse("512Gi").unwrap(), 512.0 * GIB);
        assert_eq!(parse("1e3").unwrap(), 1000.0);
        assert_eq!(parse("1.5").unwrap(), 1.5);
        assert_eq!(parse("2G").unwrap(), 2e9);
        assert_eq!(cores_floor("79500m").unwrap(), 79);
        assert_eq!(cores_ceil("500m").unwrap(), 1);
        assert_eq!(cores_ceil("4").unwrap(), 4);
        assert_eq!(gib_floor("527939588Ki").unwrap(), 503);
        assert_eq!(gib_ceil("16Gi").unwrap(), 16);
        assert_eq!(gib_ceil("1500Mi").unwrap(), 2);
    }

    #[test]
    fn bad_quantities_say_what_is_wrong() {
        assert!(parse("12Qi")
            .unwrap_err()
            .to_string()
            .contains("unknown quantity suffix `Qi`"));
        assert!(parse("").is_err());
        assert!(parse("abc").is_err());
        assert!(parse("1.2.3").unwrap_err().to_string().contains("not a number"));
        assert!(parse("-4").is_err());
    }
}
