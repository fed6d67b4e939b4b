//! The add-VM form: its fields, the choices each one cycles through, and the request it becomes.

use super::*;

/// A choice in the add-VM form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Model,
    Shape,
    Profile,
    Count,
    Cores,
    Ram,
    Lifetime,
    Kind,
    Place,
}

impl Field {
    pub const ALL: [Field; 9] = [
        Field::Model,
        Field::Shape,
        Field::Profile,
        Field::Count,
        Field::Cores,
        Field::Ram,
        Field::Lifetime,
        Field::Kind,
        Field::Place,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Field::Model => "GPU model",
            Field::Shape => "Shape",
            Field::Profile => "Profile",
            Field::Count => "Amount",
            Field::Cores => "Cores",
            Field::Ram => "RAM (GB)",
            Field::Lifetime => "Lifetime",
            Field::Kind => "Kind",
            Field::Place => "Placement",
        }
    }

    pub(super) fn is_text(self) -> bool {
        matches!(self, Field::Cores | Field::Ram | Field::Lifetime | Field::Place)
    }
}

/// What the add-VM form asks for: MIG GIs, a soft share on a shared GPU (with or without
/// isolation), or a gang of whole GPUs of one host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormShape {
    Mig,
    Share,
    IsolatedShare,
    Gang,
}

impl FormShape {
    const ALL: [FormShape; 4] = [
        FormShape::Mig,
        FormShape::Share,
        FormShape::IsolatedShare,
        FormShape::Gang,
    ];

    pub fn label(self) -> &'static str {
        match self {
            FormShape::Mig => "MIG profile",
            FormShape::Share => "soft share",
            FormShape::IsolatedShare => "soft share, isolated",
            FormShape::Gang => "gang of whole GPUs",
        }
    }
}

/// The GB a soft share cycles through on the amount field (those up to the GPU's memory).
const SHARE_GB: [u32; 10] = [5, 8, 10, 12, 16, 20, 24, 32, 40, 80];

/// The add-VM form.
#[derive(Debug, Clone, PartialEq)]
pub struct AddForm {
    pub field: usize,
    /// Models present in the fleet, by catalog id.
    pub models: Vec<usize>,
    pub model: usize,
    pub shape: FormShape,
    pub profile: usize,
    /// GIs of the profile (MIG), GB (share) or GPUs (gang).
    pub count: u32,
    pub cores: String,
    pub ram: String,
    pub lifetime: String,
    pub kind: VmKind,
    /// `policy`, or `GPU@START[,GPU@START]` on `host`.
    pub place: String,
    pub host: HostId,
    pub error: Option<String>,
    pub(super) resources_edited: bool,
}

impl AddForm {
    /// A form for a VM of the selected GPU's model (or the first model of the fleet).
    pub fn new(session: &Session, sel: Selection) -> Option<AddForm> {
        let fleet = session.fleet();
        let mut models: Vec<usize> = Vec::new();
        for g in fleet.hosts.iter().flat_map(|h| &h.gpus) {
            if !models.contains(&g.model) {
                models.push(g.model);
            }
        }
        if models.is_empty() {
            return None;
        }
        let selected = fleet
            .hosts
            .get(sel.host)
            .and_then(|h| h.gpus.get(sel.gpu))
            .map(|g| g.model);
        let model = selected
            .and_then(|m| models.iter().position(|&x| x == m))
            .unwrap_or(0);
        let mut f = AddForm {
            field: 2,
            models,
            model,
            shape: FormShape::Mig,
            profile: 0,
            count: 1,
            cores: String::new(),
            ram: String::new(),
            lifetime: "2h".into(),
            kind: VmKind::Job,
            place: "policy".into(),
            host: sel.host,
            error: None,
            resources_edited: false,
        };
        f.default_resources(fleet);
        Some(f)
    }

    pub fn model_id(&self) -> usize {
        self.models[self.model]
    }

    pub(super) fn text_mut(&mut self) -> &mut String {
        match Field::ALL[self.field] {
            Field::Cores => &mut self.cores,
            Field::Ram => &mut self.ram,
            Field::Lifetime => &mut self.lifetime,
            _ => &mut self.place,
        }
    }

    /// Compute slices asked for in total.
    fn compute(&self, fleet: &crate::fleet::Fleet) -> u32 {
        let m = fleet.catalog.model(self.model_id());
        m.profiles[self.profile].compute as u32 * self.count
    }

    fn default_resources(&mut self, fleet: &crate::fleet::Fleet) {
        if !self.resources_edited {
            let (cores, ram) = match self.shape {
                // The paper's sizing (§6.2): 4 cores and 16 GB RAM per compute slice.
                FormShape::Mig => {
                    let c = self.compute(fleet);
                    (4 * c, 16 * c)
                }
                // As `:add share=`: the sizing of the smallest slice.
                FormShape::Share | FormShape::IsolatedShare => (4, 16),
                // As `:add gang=`: 8 cores and 64 GB per GPU.
                FormShape::Gang => (8 * self.count, 64 * self.count),
            };
            self.cores = cores.to_string();
            self.ram = ram.to_string();
        }
    }

    /// The amounts the amount field cycles through for the current shape: GIs 1 to 4, the GB of
    /// [`SHARE_GB`] that fit the GPU, or 1 to the most GPUs of one host.
    fn amounts(&self, fleet: &crate::fleet::Fleet) -> Vec<u32> {
        match self.shape {
            FormShape::Mig => (1..=4).collect(),
            FormShape::Share | FormShape::IsolatedShare => {
                let cap = crate::fleet::gpu_gb(fleet.catalog, self.model_id());
                let mut v: Vec<u32> = SHARE_GB.iter().copied().filter(|&g| g <= cap).collect();
                if !v.contains(&cap) {
                    v.push(cap);
                }
                v
            }
            FormShape::Gang => {
                let most = fleet.hosts.iter().map(|h| h.gpus.len()).max().unwrap_or(1).max(1);
                (1..=most as u32).collect()
            }
        }
    }

    /// The placements offered by Left/Right on the placement field: the policy, then each
    /// permitted start of the profile on the selected GPU.
    pub(crate) fn place_choices(&self, fleet: &crate::fleet::Fleet, sel: Selection) -> Vec<String> {
        let mut out = vec!["policy".to_string()];
        if self.count != 1 || self.shape != FormShape::Mig {
            return out;
        }
        if let Some(g) = fleet.hosts.get(sel.host).and_then(|h| h.gpus.get(sel.gpu)) {
            if fleet.catalog.same_class(g.model, self.model_id()) {
                let m = fleet.catalog.model(g.model);
                for z in &m.profiles[self.profile].starts {
                    out.push(format!("{}@{z}", sel.gpu));
                }
            }
        }
        out
    }

    pub(super) fn cycle(&mut self, fleet: &crate::fleet::Fleet, sel: Selection, dir: Dir) {
        let step = |i: usize, n: usize| dir.step(i, n);
        match Field::ALL[self.field] {
            Field::Model => {
                self.model = step(self.model, self.models.len());
                self.profile = 0;
                let a = self.amounts(fleet);
                if !a.contains(&self.count) {
                    self.count = a[0];
                }
            }
            Field::Shape => {
                let i = FormShape::ALL.iter().position(|&x| x == self.shape).unwrap_or(0);
                self.shape = FormShape::ALL[step(i, FormShape::ALL.len())];
                self.count = match self.shape {
                    FormShape::Mig | FormShape::Gang => 1,
                    FormShape::Share | FormShape::IsolatedShare => 10,
                };
                let a = self.amounts(fleet);
                if !a.contains(&self.count) {
                    self.count = a[0];
                }
                self.place = "policy".into();
            }
            Field::Profile => {
                if self.shape == FormShape::Mig {
                    let n = fleet.catalog.model(self.model_id()).profiles.len();
                    self.profile = step(self.profile, n);
                }
            }
            Field::Count => {
                let a = self.amounts(fleet);
                let i = a.iter().position(|&x| x == self.count).unwrap_or(0);
                self.count = a[step(i, a.len())];
            }
            Field::Kind => {
                self.kind = match self.kind {
                    VmKind::Job => VmKind::Tenant,
                    VmKind::Tenant => VmKind::Job,
                }
            }
            Field::Lifetime => {
                const CHOICES: [&str; 6] = ["open", "30m", "2h", "6h", "24h", "72h"];
                let i = CHOICES.iter().position(|c| *c == self.lifetime).unwrap_or(0);
                self.lifetime = CHOICES[step(i, CHOICES.len())].into();
            }
            Field::Place => {
                let choices = self.place_choices(fleet, sel);
                let i = choices.iter().position(|c| *c == self.place).unwrap_or(0);
                self.place = choices[step(i, choices.len())].clone();
                self.host = sel.host;
            }
            Field::Cores | Field::Ram => {}
        }
        self.default_resources(fleet);
        self.error = None;
    }

    /// The request the form describes.
    pub fn request(&self, session: &Session) -> Result<VmRequest> {
        let fleet = session.fleet();
        let m = self.model_id();
        let cores: u32 = self
            .cores
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("cores: `{}` is not a whole number", self.cores))?;
        let ram_gb: u32 = self
            .ram
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("RAM: `{}` is not a whole number of GB", self.ram))?;
        let lifetime_s = match self.lifetime.trim() {
            "" | "open" => None,
            t => Some(session::parse_positive_duration(t).map_err(|e| anyhow::anyhow!("lifetime: {e}"))?),
        };
        let pin = match self.place.trim() {
            "" | "policy" => None,
            p => {
                let host = &fleet.hosts[self.host.min(fleet.hosts.len().saturating_sub(1))].name;
                let (h, at) = p.split_once(':').unwrap_or((host.as_str(), p));
                Some(session::parse_placement(fleet, h, at).map_err(|e| anyhow::anyhow!("placement: {e}"))?)
            }
        };
        let memory_gb = fleet.catalog.model(m).memory_gb;
        let (gis, shape) = match self.shape {
            FormShape::Mig => (
                vec![
                    GiRequest {
                        model: m,
                        profile: self.profile
                    };
                    self.count as usize
                ],
                crate::fleet::Shape::Mig,
            ),
            // The weight is the share's part of the GPU's memory, as `:add share=` without
            // `weight=`.
            FormShape::Share | FormShape::IsolatedShare => (
                Vec::new(),
                crate::fleet::Shape::Share {
                    model: m,
                    gb: self.count,
                    weight: self.count as f64 / memory_gb,
                    isolation: self.shape == FormShape::IsolatedShare,
                },
            ),
            FormShape::Gang => (
                Vec::new(),
                crate::fleet::Shape::Gang {
                    model: m,
                    gpus: self.count,
                },
            ),
        };
        Ok(VmRequest {
            gis,
            cores,
            ram_gb,
            lifetime_s,
            kind: self.kind,
            tenant: None,
            pin,
            shape,
        })
    }
}
