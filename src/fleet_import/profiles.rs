//! GPU product names and MIG profile names as real tools print them, mapped to the catalog.
//!
//! `nvidia-smi` names a GPU `NVIDIA A100-SXM4-40GB`, GPU feature discovery labels the same node
//! `NVIDIA-A100-SXM4-40GB`; instance profiles appear as `MIG 1g.5gb` (nvidia-smi), `1g.5gb`
//! (mig-parted), `nvidia.com/mig-1g.5gb` (Kubernetes resources), with the media extensions written
//! `+me` or `.me`, and DCGM rounds some memory sizes differently (`1g.11gb`, `7g.79gb`). Every one
//! of these is resolved here against the model's own profile table, so `1g.12gb` is an H100 NVL
//! profile and `1g.10gb` an H100 one.

use crate::catalog::{Catalog, GpuModel, ModelId, ProfileId};

/// Product names (upper case, spaces as `-`, without the `NVIDIA-` prefix) and catalog models.
const PRODUCTS: &[(&str, &str)] = &[
    ("A100-SXM4-40GB", "a100-40gb"),
    ("A100-PCIE-40GB", "a100-40gb"),
    ("A100-SXM4-80GB", "a100-80gb"),
    ("A100-80GB-PCIE", "a100-80gb"),
    ("A100-PCIE-80GB", "a100-80gb"),
    ("A30", "a30-24gb"),
    ("H100-80GB-HBM3", "h100-80gb"),
    ("H100-SXM5-80GB", "h100-80gb"),
    ("H100-PCIE", "h100-80gb"),
    ("H100-80GB-PCIE", "h100-80gb"),
    ("H100-NVL", "h100-nvl-94gb"),
    ("H200", "h200-141gb"),
    ("B200", "b200-180gb"),
];

/// The product key of a name: upper case, runs of spaces and `_` as one `-`, no `NVIDIA-`.
fn product_key(name: &str) -> String {
    let up = name.trim().to_ascii_uppercase().replace(['_', ' '], "-");
    let mut key = String::new();
    for c in up.chars() {
        if !(c == '-' && key.ends_with('-')) {
            key.push(c);
        }
    }
    key.strip_prefix("NVIDIA-").map(str::to_string).unwrap_or(key)
}

/// The catalog model of a product name (`NVIDIA A100-SXM4-40GB`, `NVIDIA-H100-80GB-HBM3`).
pub(crate) fn model_of_product(catalog: &Catalog, product: &str) -> Option<ModelId> {
    let key = product_key(product);
    PRODUCTS
        .iter()
        .find(|(p, _)| *p == key)
        .and_then(|(_, m)| catalog.model_id(m))
}

/// The product names known, for error messages.
pub(crate) fn known_products() -> String {
    PRODUCTS
        .iter()
        .map(|(p, _)| format!("NVIDIA {p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The GPU-instance profile ID nvidia-smi reports for a profile (`mig -lgi`, `-lgip`).
///
/// On 8-slice models the IDs follow the profile's shape (the MIG user guide lists them for the
/// A100-40GB; later 8-slice models reuse the same IDs for the same positions): 1 slice 19 (+me
/// 20), 1 compute slice on 2 memory slices 15, 2g 14, 3g 9, 4g 5, 7g 0. On the A30: 1g 14 (+me
/// 21), 2g 5, 4g 0; the ID of the A30's 2g.12gb+me is not known here (`None`: matched by name and
/// size only).
pub(crate) fn gi_profile_id(model: &GpuModel, p: ProfileId) -> Option<u32> {
    let pr = &model.profiles[p];
    let me = pr.media_ext;
    match (model.memory_slices, pr.compute, pr.size, me) {
        (8, 1, 1, false) => Some(19),
        (8, 1, 1, true) => Some(20),
        (8, 1, 2, false) => Some(15),
        (8, 2, 2, false) => Some(14),
        (8, 3, 4, false) => Some(9),
        (8, 4, 4, false) => Some(5),
        (8, 7, 8, false) => Some(0),
        (4, 1, 1, false) => Some(14),
        (4, 1, 1, true) => Some(21),
        (4, 2, 2, false) => Some(5),
        (4, 4, 4, false) => Some(0),
        _ => None,
    }
}

/// The profile of `model` whose nvidia-smi GI profile ID is `id`.
pub(crate) fn profile_of_id(model: &GpuModel, id: u32) -> Option<ProfileId> {
    (0..model.profiles.len()).find(|&p| gi_profile_id(model, p) == Some(id))
}

/// Parses a profile name into (compute slices, memory GB, media extensions): `MIG 1g.5gb+me`,
/// `nvidia.com/mig-1g.5gb`, `1g.5gb.me`, `2g.20gb`.
fn parse_name(name: &str) -> Option<(u32, u32, bool)> {
    let mut s = name.trim().to_ascii_lowercase();
    for prefix in ["nvidia.com/mig-", "mig-", "mig "] {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = rest.trim().to_string();
        }
    }
    let (body, me) = match s.strip_suffix("+me").or_else(|| s.strip_suffix(".me")) {
        Some(b) => (b.to_string(), true),
        None => (s, false),
    };
    let (c, m) = body.split_once("g.")?;
    let m = m.strip_suffix("gb")?;
    Some((c.parse().ok()?, m.parse().ok()?, me))
}

/// The profile of `model` a name from any source means: the catalog's own name after the
/// source's prefix is removed and the media suffix normalised, else the profile with the same
/// compute slices and media extensions whose memory is nearest the name's, within 15 % (DCGM's
/// `1g.11gb` is the H100's 1g.10gb). `None` when the model has no such profile.
pub fn resolve(model: &GpuModel, name: &str) -> Option<ProfileId> {
    let (c, m, me) = parse_name(name)?;
    let canonical = format!("{c}g.{m}gb{}", if me { "+me" } else { "" });
    if let Some(p) = model.profile(&canonical) {
        return Some(p);
    }
    model
        .profiles
        .iter()
        .enumerate()
        .filter(|(_, p)| p.compute as u32 == c && p.media_ext == me)
        .map(|(i, p)| (i, (p.memory_gb - m as f64).abs()))
        .filter(|&(i, d)| d <= 0.15 * model.profiles[i].memory_gb)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::embedded;

    fn model(name: &str) -> &'static GpuModel {
        let c = embedded();
        c.model(c.model_id(name).unwrap())
    }

    #[test]
    fn products_from_nvidia_smi_and_labels_map_to_models() {
        let c = embedded();
        let m = |p: &str| model_of_product(c, p).map(|m| c.model(m).name.as_str());
        assert_eq!(m("NVIDIA A100-SXM4-40GB"), Some("a100-40gb"));
        assert_eq!(m("NVIDIA-A100-SXM4-40GB"), Some("a100-40gb"));
        assert_eq!(m("NVIDIA A100 80GB PCIe"), Some("a100-80gb"));
        assert_eq!(m("NVIDIA-H100-80GB-HBM3"), Some("h100-80gb"));
        assert_eq!(m("NVIDIA H100 NVL"), Some("h100-nvl-94gb"));
        assert_eq!(m("NVIDIA A30"), Some("a30-24gb"));
        assert_eq!(m("NVIDIA B200"), Some("b200-180gb"));
        assert_eq!(m("Tesla T4"), None);
    }

    #[test]
    fn profile_names_normalise_per_model() {
        let a100 = model("a100-40gb");
        assert_eq!(resolve(a100, "MIG 1g.5gb"), a100.profile("1g.5gb"));
        assert_eq!(resolve(a100, "MIG 1g.5gb+me"), a100.profile("1g.5gb+me"));
        assert_eq!(resolve(a100, "1g.5gb.me"), a100.profile("1g.5gb+me"));
        assert_eq!(resolve(a100, "nvidia.com/mig-3g.20gb"), a100.profile("3g.20gb"));
        let h100 = model("h100-80gb");
        assert_eq!(resolve(h100, "1g.11gb"), h100.profile("1g.10gb"));
        assert_eq!(resolve(h100, "7g.79gb"), h100.profile("7g.80gb"));
        assert_eq!(resolve(h100, "1g.20gb"), h100.profile("1g.20gb"));
        assert_eq!(resolve(h100, "1g.5gb"), None);
        let nvl = model("h100-nvl-94gb");
        assert_eq!(resolve(nvl, "MIG 1g.12gb"), nvl.profile("1g.12gb"));
        assert_eq!(resolve(nvl, "garbage"), None);
    }

    #[test]
    fn profile_ids_follow_the_user_guide() {
        let a100 = model("a100-40gb");
        let ids: Vec<Option<u32>> = (0..a100.profiles.len()).map(|p| gi_profile_id(a100, p)).collect();
        // 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb
        assert_eq!(ids, [19, 20, 15, 14, 9, 5, 0].map(Some));
        let a30 = model("a30-24gb");
        assert_eq!(profile_of_id(a30, 14), a30.profile("1g.6gb"));
        assert_eq!(profile_of_id(a30, 5), a30.profile("2g.12gb"));
        assert_eq!(gi_profile_id(a30, a30.profile("2g.12gb+me").unwrap()), None);
        let h100 = model("h100-80gb");
        assert_eq!(profile_of_id(h100, 15), h100.profile("1g.20gb"));
    }
}
