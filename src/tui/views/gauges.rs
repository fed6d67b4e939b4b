//! The gauges: simulated clock, active hosts and GPUs, packing, power and energy, acceptance,
//! Γh per class (Eq. 17), stranded capacity (first the one measure across modes,
//! `metrics::stranded_capacity`: stranded over free MIG compute slices and shared GB against the
//! pending shapes; then per profile, free slices no instance of the profile can use without
//! moving anything) and the pending queue with its waits. Figures come
//! precomputed from the session.

use super::super::app::App;
use super::super::widgets::Bar;
use super::fleet::truncate;
use crate::session;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

const LABEL_W: u16 = 9;

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let s = &app.session;
    let g = s.gauges();
    let block = Block::bordered()
        .title(Span::styled(" Gauges ", t.title))
        .border_style(t.border);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height == 0 || inner.width < 30 {
        return;
    }
    let x = inner.x + 1;
    let w = inner.width - 2;
    let mut y = inner.y;
    let bottom = inner.bottom();
    let label = |buf: &mut Buffer, y: u16, text: &str| {
        buf.set_string(x, y, text, t.header);
    };
    // Clock.
    let play = if s.playing() {
        format!(
            "▶ playing ({}/tick)",
            session::format_duration(app.view.play_step_s)
        )
    } else {
        "paused".into()
    };
    label(buf, y, "Clock");
    buf.set_stringn(
        x + LABEL_W,
        y,
        format!(
            "{}  +{}  {play}",
            s.now_date().format("%a %Y-%m-%d %H:%M:%S"),
            session::format_duration(s.now_s())
        ),
        (w - LABEL_W) as usize,
        t.base,
    );
    y += 1;
    let bars: [(&str, f64, String); 3] = [
        (
            "Hosts on",
            ratio(g.active_hosts, g.hosts),
            format!("{}/{}", g.active_hosts, g.hosts),
        ),
        (
            "GPUs on",
            ratio(g.active_gpus, g.gpus),
            format!("{}/{} · {} if packed full", g.active_gpus, g.gpus, g.least_gpus),
        ),
        (
            "Packing",
            g.packing,
            format!("{:.0}% of active GPUs' slices", 100.0 * g.packing),
        ),
    ];
    for (name, r, text) in bars {
        if y >= bottom {
            return;
        }
        label(buf, y, name);
        let bw = (w - LABEL_W).min(48);
        Bar {
            ratio: r,
            text,
            theme: t,
        }
        .render(Rect::new(x + LABEL_W, y, bw, 1), buf);
        y += 1;
    }
    let lines: Vec<(&str, Line)> = vec![
        (
            "Power",
            Line::from(format!(
                "{:.2} kW now · {:.2} kWh so far · acceptance {:.1}%",
                g.power_w / 1000.0,
                g.energy_kwh,
                100.0 * g.acceptance
            )),
        ),
        ("Γh gap", Line::from(gamma_text(app, (w - LABEL_W) as usize))),
        ("Stranded", Line::from(stranded_text(app, (w - LABEL_W) as usize))),
    ];
    for (name, line) in lines {
        if y >= bottom {
            return;
        }
        label(buf, y, name);
        Paragraph::new(line).render(Rect::new(x + LABEL_W, y, w - LABEL_W, 1), buf);
        y += 1;
    }
    if y >= bottom {
        return;
    }
    label(buf, y, "Pending");
    if g.pending.is_empty() {
        buf.set_string(x + LABEL_W, y, "none", t.dim);
        return;
    }
    buf.set_string(
        x + LABEL_W,
        y,
        format!("{} waiting (oldest first)", g.pending.len()),
        t.warn,
    );
    y += 1;
    for p in &g.pending {
        if y >= bottom {
            break;
        }
        let head = format!(
            " #{} {} · waits {} · ",
            p.vm,
            p.shape,
            session::format_duration(p.wait_s)
        );
        let hw = head.chars().count();
        buf.set_stringn(x, y, &head, w as usize, t.base);
        if hw + 4 < w as usize {
            buf.set_string(x + hw as u16, y, truncate(&p.reason, w as usize - hw), t.dim);
        }
        y += 1;
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn gamma_text(app: &App, width: usize) -> String {
    let s = &app.session;
    let catalog = s.fleet().catalog;
    let g = s.gauges();
    if g.gamma.is_empty() {
        return "no GPUs".into();
    }
    let items: Vec<String> = g
        .gamma
        .iter()
        .map(|(m, v)| format!("{} {v}", catalog.model(*m).class))
        .collect();
    let eq = "  (Eq. 17)";
    let text = fit_items("", &items, width.saturating_sub(eq.chars().count()));
    truncate(&(text + eq), width)
}

fn stranded_text(app: &App, width: usize) -> String {
    let s = &app.session;
    let catalog = s.fleet().catalog;
    let g = s.gauges();
    // The one measure across modes first: MIG compute slices and shared GB no pending shape uses.
    let c = &g.capacity;
    let mut head = format!("{}/{} slices", c.mig_stranded_slices, c.mig_free_slices);
    if c.shared_free_gb > 0 {
        head += &format!(" · {}/{} GB shared", c.shared_stranded_gb, c.shared_free_gb);
    }
    let mut worst: Vec<&session::Stranded> = g.stranded.iter().filter(|x| x.count > 0).collect();
    if worst.is_empty() {
        return truncate(&(head + " · every free slice can take every profile"), width);
    }
    worst.sort_by(|a, b| b.share.total_cmp(&a.share).then(b.count.cmp(&a.count)));
    let items: Vec<String> = worst
        .iter()
        .map(|x| {
            format!(
                "{} {} ({:.0}%)",
                catalog.model(x.model).profiles[x.profile].name,
                x.count,
                100.0 * x.share
            )
        })
        .collect();
    fit_items(&head, &items, width)
}

/// `head`, then as many of `items` (most important first) as fit in `width` characters, all
/// joined by " · ", and " · +N more" for the N items left out, so that a gauge line never
/// ends in half an item; cut with `…` only if `head` alone is too wide.
pub(crate) fn fit_items(head: &str, items: &[String], width: usize) -> String {
    const SEP: &str = " · ";
    let len = |s: &str| s.chars().count();
    let more = |n: usize, first: bool| format!("{}+{n} more", if first { "" } else { SEP });
    let mut out = head.to_string();
    for (i, item) in items.iter().enumerate() {
        let left_after = items.len() - i - 1;
        let sep = if out.is_empty() { 0 } else { len(SEP) };
        let reserve = if left_after > 0 {
            len(&more(left_after, false))
        } else {
            0
        };
        if len(&out) + sep + len(item) + reserve > width {
            out += &more(items.len() - i, out.is_empty());
            break;
        }
        if sep > 0 {
            out += SEP;
        }
        out += item;
    }
    truncate(&out, width)
}

#[cfg(test)]
mod tests {
    use super::fit_items;

    fn items() -> Vec<String> {
        ["7g.40gb 44 (100%)", "4g.20gb 36 (82%)", "2g.10gb 16 (30%)"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn every_item_when_the_line_is_wide_enough() {
        let all = "12/53 slices · 7g.40gb 44 (100%) · 4g.20gb 36 (82%) · 2g.10gb 16 (30%)";
        assert_eq!(all.chars().count(), 70);
        assert_eq!(fit_items("12/53 slices", &items(), 80), all);
        // The last item needs no room for a count of what is left out.
        assert_eq!(fit_items("12/53 slices", &items(), 70), all);
    }

    #[test]
    fn whole_items_then_a_count_of_the_rest() {
        // 12 + 3 + 17 = 32 characters, then " · +2 more" (10): 42 fit in 50; the next item would
        // make 51 + 10.
        assert_eq!(
            fit_items("12/53 slices", &items(), 50),
            "12/53 slices · 7g.40gb 44 (100%) · +2 more"
        );
        assert_eq!(fit_items("12/53 slices", &items(), 41), "12/53 slices · +3 more");
        assert_eq!(fit_items("", &items(), 12), "+3 more");
        assert_eq!(fit_items("", &items(), 27), "7g.40gb 44 (100%) · +2 more");
    }

    #[test]
    fn a_head_too_wide_is_cut() {
        assert_eq!(fit_items("12/53 slices", &items(), 5), "12/5…");
        assert_eq!(fit_items("12/53 slices", &[], 12), "12/53 slices");
    }
}
