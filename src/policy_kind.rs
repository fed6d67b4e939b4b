//! The names of the placement policies: one enum for the scenario files (`policy.arrival`), the
//! command line (`--policy`) and the planner (`:policy NAME`). A leaf module: it knows the names,
//! the `policy` module builds the policies.

use std::fmt;
use std::str::FromStr;

/// A placement policy by name. Names are matched case-insensitively and written in lower case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
#[value(rename_all = "lower")]
pub enum PolicyKind {
    /// First fit (§6.3).
    Ff,
    /// Minimum fragmentation increment (§6.3).
    Mfi,
    /// Best-fit placement with periodic compaction (§6.3).
    Tc,
    /// OrigaMIG (§5).
    Origamig,
    /// OrigaMIG solving the whole fleet on every call (§6.3).
    Opt,
    /// Fill a GPU, then a host, before opening another; keep free hosts for gangs.
    Packing,
}

impl PolicyKind {
    /// Every policy, in the order lists of known names show them.
    pub const ALL: [PolicyKind; 6] = [
        PolicyKind::Ff,
        PolicyKind::Mfi,
        PolicyKind::Tc,
        PolicyKind::Origamig,
        PolicyKind::Opt,
        PolicyKind::Packing,
    ];

    /// The arrival policies the planner offers, in the order `policy next` cycles. The
    /// whole-fleet OPT is an on-demand call there, not an arrival policy: it would solve the
    /// whole fleet on every step.
    pub(crate) const PLANNER: [PolicyKind; 5] = [
        PolicyKind::Ff,
        PolicyKind::Mfi,
        PolicyKind::Tc,
        PolicyKind::Origamig,
        PolicyKind::Packing,
    ];

    /// The lower-case name (`ff`, `mfi`, `tc`, `origamig`, `opt`, `packing`).
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Ff => "ff",
            PolicyKind::Mfi => "mfi",
            PolicyKind::Tc => "tc",
            PolicyKind::Origamig => "origamig",
            PolicyKind::Opt => "opt",
            PolicyKind::Packing => "packing",
        }
    }

    /// The names of `kinds` joined by `, ` (for error messages).
    pub fn list(kinds: &[PolicyKind]) -> String {
        kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
    }

    /// The policy called `name`, in any case, or `None`.
    pub fn find(name: &str) -> Option<PolicyKind> {
        PolicyKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy `{0}` (known: {known})", known = PolicyKind::list(&PolicyKind::ALL))]
pub struct UnknownPolicy(pub String);

impl FromStr for PolicyKind {
    type Err = UnknownPolicy;

    fn from_str(name: &str) -> Result<PolicyKind, UnknownPolicy> {
        PolicyKind::find(name).ok_or_else(|| UnknownPolicy(name.to_string()))
    }
}

impl serde::Serialize for PolicyKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for PolicyKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PolicyKind, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::PolicyKind;

    #[test]
    fn names_parse_in_any_case_and_print_in_lower_case() {
        for k in PolicyKind::ALL {
            assert_eq!(k.name().parse::<PolicyKind>(), Ok(k));
            assert_eq!(k.name().to_ascii_uppercase().parse::<PolicyKind>(), Ok(k));
            assert_eq!(k.to_string(), k.name());
            let v = <PolicyKind as clap::ValueEnum>::to_possible_value(&k).expect("a value");
            assert_eq!(v.get_name(), k.name());
        }
        let e = "best-fit".parse::<PolicyKind>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown policy `best-fit` (known: ff, mfi, tc, origamig, opt, packing)"
        );
    }

    #[test]
    fn serde_writes_the_name_and_reads_any_case() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct T {
            p: PolicyKind,
        }
        let t: T = toml::from_str("p = \"OrigaMIG\"").expect("a policy");
        assert_eq!(t.p, PolicyKind::Origamig);
        assert_eq!(toml::to_string(&t).expect("toml"), "p = \"origamig\"\n");
        assert!(toml::from_str::<T>("p = \"best\"").is_err());
    }
}
