//! The add-VM form: its fields, the choices each one cycles through, and the request it becomes.

use super::*;

/// A choice in the add-VM form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Model,
    Profile,
    Count,
    Cores,
    Ram,
    Lifetime,
    Kind,
    Place,
}

impl Field {
    pub const ALL: [Field; 8] = [
        Field::Model,
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
            Field::Profile => "Profile",
            Field::Count => "GIs",
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

/// The add-VM form.
#[derive(Debug, Clone, PartialEq)]
pub struct AddForm {
    pub field: usize,
    /// Models present in the fleet, by catalog id.
    pub models: Vec<usize>,
    pub model: usize,
    pub profile: usize,
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
            field: 1,
            models,
            model,
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
            // The paper's sizing (§6.2): 4 cores and 16 GB RAM per compute slice.
            let c = self.compute(fleet);
            self.cores = (4 * c).to_string();
            self.ram = (16 * c).to_string();
        }
    }

    /// The placements offered by Left/Right on the placement field: the policy, then each
    /// permitted start of the profile on the selected GPU.
    pub fn place_choices(&self, fleet: &crate::fleet::Fleet, sel: Selection) -> Vec<String> {
        let mut out = vec!["policy".to_string()];
        if self.count != 1 {
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
        let fwd = dir == Dir::Next;
        let step = |i: usize, n: usize| dir.step(i, n);
        match Field::ALL[self.field] {
            Field::Model => {
                self.model = step(self.model, self.models.len());
                self.profile = 0;
            }
            Field::Profile => {
                let n = fleet.catalog.model(self.model_id()).profiles.len();
                self.profile = step(self.profile, n);
            }
            Field::Count => {
                self.count = if fwd {
                    (self.count % 4) + 1
                } else {
                    (self.count + 2) % 4 + 1
                }
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
            t => Some(session::parse_duration(t).map_err(|e| anyhow::anyhow!("lifetime: {e}"))?),
        };
        let pin = match self.place.trim() {
            "" | "policy" => None,
            p => {
                let host = &fleet.hosts[self.host.min(fleet.hosts.len().saturating_sub(1))].name;
                let (h, at) = p.split_once(':').unwrap_or((host.as_str(), p));
                Some(session::parse_placement(fleet, h, at).map_err(|e| anyhow::anyhow!("placement: {e}"))?)
            }
        };
        Ok(VmRequest {
            gis: vec![
                GiRequest {
                    model: m,
                    profile: self.profile
                };
                self.count as usize
            ],
            cores,
            ram_gb,
            lifetime_s,
            kind: self.kind,
            tenant: None,
            pin,
            shape: crate::fleet::Shape::Mig,
        })
    }
}
