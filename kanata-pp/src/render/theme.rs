//! Konata's two themes and its colour schemes, as numbers.
//!
//! Every value here is taken from Konata's sources (repository `shioyadan/Konata`):
//!
//! - `theme/light/style.json` and `theme/dark/style.json`: the pane colours, the stripe, the
//!   border, the stage colour parameters (`stageBackgroundColor`: `hRateBegin`, `sBegin`,
//!   `lBegin`, `hRateEnd`, `sEnd`, `lEnd`), `stallBackgroundColor`, `arrowColor`,
//!   `arrowWeight`, `flushedRegionColor`, the font size and family; the light theme's
//!   `colorScheme.Onikiri` table of colours per stage name.
//! - `src/core/konata_renderer.ts`, `KonataRenderer.getStageColor_`: the "Auto" scheme
//!   (Konata's default, `DEFAULT_KONATA_RENDER_SPEC.colorScheme`), whose hue is
//!   `(250 - level * hRate + lanePosition * 28 * 8 + 3600) % 360` with the saturation and
//!   lightness of the theme, `level` being the stage name's `appearance` level in its lane
//!   (`StageLevelMap`, `src/core/model.ts`), and whose stages named `f` or `stl` take
//!   `stallBackgroundColor`.

use std::fmt;

/// A colour with its opacity (`a` 255: opaque).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Colour {
    /// Red.
    pub r: u8,
    /// Green.
    pub g: u8,
    /// Blue.
    pub b: u8,
    /// Alpha: 255 opaque, 0 transparent.
    pub a: u8,
}

impl Colour {
    /// An opaque colour.
    pub const fn rgb(r: u8, g: u8, b: u8) -> Colour {
        Colour { r, g, b, a: 255 }
    }

    /// A colour with its alpha.
    pub const fn rgba(r: u8, g: u8, b: u8, a: u8) -> Colour {
        Colour { r, g, b, a }
    }

    /// CSS `hsl(h, s%, l%)`, rounded to 8 bits a channel (CSS Color 3's algorithm).
    pub fn hsl(hue: f64, saturation: f64, lightness: f64) -> Colour {
        let h = hue.rem_euclid(360.0) / 360.0;
        let s = (saturation / 100.0).clamp(0.0, 1.0);
        let l = (lightness / 100.0).clamp(0.0, 1.0);
        let m2 = if l <= 0.5 {
            l * (s + 1.0)
        } else {
            l + s - l * s
        };
        let m1 = l * 2.0 - m2;
        let channel = |h: f64| {
            let h = h.rem_euclid(1.0);
            let v = if h * 6.0 < 1.0 {
                m1 + (m2 - m1) * h * 6.0
            } else if h * 2.0 < 1.0 {
                m2
            } else if h * 3.0 < 2.0 {
                m1 + (m2 - m1) * (2.0 / 3.0 - h) * 6.0
            } else {
                m1
            };
            (v * 255.0).round().clamp(0.0, 255.0) as u8
        };
        Colour::rgb(channel(h + 1.0 / 3.0), channel(h), channel(h - 1.0 / 3.0))
    }

    /// `#rrggbb` (the alpha is given apart: [`opacity`](Self::opacity)).
    pub fn hex(&self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.r, self.g, self.b)
    }

    /// The alpha as a fraction, 0 to 1.
    pub fn opacity(&self) -> f64 {
        f64::from(self.a) / 255.0
    }
}

impl fmt::Display for Colour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())?;
        if self.a != 255 {
            write!(f, "{:02x}", self.a)?;
        }
        Ok(())
    }
}

/// Konata's theme: `--theme light|dark`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ThemeName {
    /// `theme/light/style.json`.
    #[default]
    Light,
    /// `theme/dark/style.json` (Konata's own default).
    Dark,
}

/// How stages are coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Konata's default scheme "Auto": a hue per stage name from the level at which the
    /// name first appears in its lane, so the stages of a pipeline go round the colour
    /// wheel in pipeline order; `f` and `stl` are stall grey.
    #[default]
    Auto,
    /// The light theme's `colorScheme.Onikiri` table: a colour per stage name of Onikiri2's
    /// pipeline. A name the table has no colour for gets a colour of its own, stable across
    /// pictures (a hue from a hash of its lane and name), rather than Konata's one
    /// `defaultColor` for all of them.
    Onikiri,
}

/// The colour parameters of one end of a stage box (`stageBackgroundColor`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageTone {
    /// Degrees of hue a level turns (`hRateBegin`/`hRateEnd`).
    pub hue_rate: f64,
    /// Saturation, percent.
    pub saturation: f64,
    /// Lightness, percent.
    pub lightness: f64,
}

/// The colours and sizes of a theme.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    /// Which theme.
    pub name: ThemeName,
    /// `labelPane.backgroundColor`.
    pub label_background: Colour,
    /// `labelPane.fontColor`.
    pub label_font: Colour,
    /// `pipelinePane.backgroundColor`.
    pub background: Colour,
    /// `pipelinePane.backgroundColorStripeOverlay`, over every other row.
    pub stripe: Colour,
    /// `pipelinePane.fontColor`: stage names and cycle counts.
    pub font: Colour,
    /// `pipelinePane.borderColor`.
    pub border: Colour,
    /// `pipelinePane.borderWeight`, pixels.
    pub border_weight: f64,
    /// `stageBackgroundColor`, top of a box.
    pub stage_begin: StageTone,
    /// `stageBackgroundColor`, bottom of a box.
    pub stage_end: StageTone,
    /// `stallBackgroundColor`.
    pub stall: Colour,
    /// `arrowColor`.
    pub arrow: Colour,
    /// `arrowWeight`, pixels.
    pub arrow_weight: f64,
    /// `flushedRegionColor`, over the boxes of a flushed instruction.
    pub flushed: Colour,
    /// `fontSize`, pixels.
    pub font_size: f64,
    /// `fontFamily`.
    pub font_family: &'static str,
}

/// Konata's `fontFamily` (both themes), after the font the PNG is drawn with
/// ([`super::png::FONT_FAMILY`]), so that a browser that has it draws the SVG as the PNG.
const FONT_FAMILY: &str =
    "'DejaVu Sans Mono', SFMono-Regular, Consolas, 'Liberation Mono', Menlo, Courier, monospace";

impl Theme {
    /// The theme called `name`.
    pub fn new(name: ThemeName) -> Theme {
        match name {
            // theme/light/style.json
            ThemeName::Light => Theme {
                name,
                label_background: Colour::rgb(0xf4, 0xf4, 0xf4),
                label_font: Colour::rgb(0x22, 0x22, 0x22),
                background: Colour::rgb(0xff, 0xff, 0xff),
                stripe: Colour::rgba(0, 0, 0, 0x10),
                font: Colour::rgb(0x44, 0x44, 0x44),
                border: Colour::rgb(0x44, 0x44, 0x44),
                border_weight: 1.0,
                stage_begin: StageTone {
                    hue_rate: 55.0,
                    saturation: 95.0,
                    lightness: 95.0,
                },
                stage_end: StageTone {
                    hue_rate: 55.0,
                    saturation: 70.0,
                    lightness: 80.0,
                },
                stall: Colour::rgb(0xaa, 0xaa, 0xaa),
                arrow: Colour::rgb(170, 30, 30),
                arrow_weight: 1.0,
                flushed: Colour::rgba(0, 0, 0, 102), // rgba(0,0,0,0.4)
                font_size: 14.0,
                font_family: FONT_FAMILY,
            },
            // theme/dark/style.json
            ThemeName::Dark => Theme {
                name,
                label_background: Colour::rgb(0x30, 0x33, 0x40),
                label_font: Colour::rgb(0xc7, 0xc8, 0xca),
                background: Colour::rgb(0x26, 0x29, 0x30),
                stripe: Colour::rgba(0xff, 0xff, 0xff, 0x08),
                font: Colour::rgb(0xf0, 0xf0, 0xf0),
                border: Colour::rgb(0xf0, 0xf0, 0xf0),
                border_weight: 0.5,
                stage_begin: StageTone {
                    hue_rate: 55.0,
                    saturation: 40.0,
                    lightness: 40.0,
                },
                stage_end: StageTone {
                    hue_rate: 55.0,
                    saturation: 40.0,
                    lightness: 40.0,
                },
                stall: Colour::hsl(0.0, 0.0, 50.0), // hsl(0,0%,50%)
                arrow: Colour::rgb(255, 200, 0),
                arrow_weight: 1.0,
                flushed: Colour::rgba(0, 0, 0, 128), // rgba(0,0,0,0.5)
                font_size: 14.0,
                font_family: FONT_FAMILY,
            },
        }
    }

    /// The colours of a stage box, top and bottom (Konata fills boxes with a vertical
    /// gradient), for a stage `name` in the lane at `lane_position` (the lane's index
    /// among the trace's lane names in sorted order) whose appearance level is `level`.
    pub fn stage_colour(
        &self,
        scheme: Scheme,
        lane: u64,
        lane_position: usize,
        name: &str,
        level: u32,
    ) -> StageColour {
        match scheme {
            Scheme::Auto => {
                // konata_renderer.ts, getStageColor_: "f" and "stl" are stalls.
                if name == "f" || name == "stl" {
                    return StageColour::flat(self.stall);
                }
                let tone = |t: &StageTone| {
                    let hue = 250.0 - f64::from(level) * t.hue_rate
                        + lane_position as f64 * 28.0 * 8.0
                        + 3600.0;
                    Colour::hsl(hue.rem_euclid(360.0), t.saturation, t.lightness)
                };
                StageColour {
                    begin: tone(&self.stage_begin),
                    end: tone(&self.stage_end),
                }
            }
            Scheme::Onikiri => match onikiri_colour(lane, name) {
                Some(colour) => StageColour::flat(colour),
                None => {
                    let hue = (stable_hash(lane, name) % 360) as f64;
                    StageColour {
                        begin: Colour::hsl(
                            hue,
                            self.stage_begin.saturation,
                            self.stage_begin.lightness,
                        ),
                        end: Colour::hsl(hue, self.stage_end.saturation, self.stage_end.lightness),
                    }
                }
            },
        }
    }
}

/// The two colours of a stage box's vertical gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StageColour {
    /// The top.
    pub begin: Colour,
    /// The bottom.
    pub end: Colour,
}

impl StageColour {
    /// One colour, top to bottom.
    pub const fn flat(colour: Colour) -> StageColour {
        StageColour {
            begin: colour,
            end: colour,
        }
    }
}

/// `colorScheme.Onikiri` of `theme/light/style.json`: lane "0" and lane "1".
fn onikiri_colour(lane: u64, name: &str) -> Option<Colour> {
    let hex: u32 = match (lane, name) {
        (0, "F") => 0xb9a5e8,
        (0, "Rn") => 0xa0c0ff,
        (0, "D") => 0x8cdddf,
        (0, "Sr") => 0x9bed88,
        (0, "Sw") => 0x83d2ab,
        (0, "rs") => 0x73d29b,
        (0, "Wku") => 0xabed88,
        (0, "Slc") => 0xe6d990,
        (0, "rsc") => 0x83e2ab,
        (0, "Ip") => 0xeebb77,
        (0, "I") => 0xeeaa88,
        (0, "X" | "Xam" | "Xbm" | "Xlu" | "Xlm" | "iXlR0" | "iXlR1" | "iXlR2") => 0xee7777,
        (0, "Wb") => 0xdd8899,
        (0, "Cm") => 0xcca5c8,
        (0, "f") | (1, "stl") => 0xaaaaaa,
        _ => return None,
    };
    Some(Colour::rgb((hex >> 16) as u8, (hex >> 8) as u8, hex as u8))
}

/// FNV-1a of the lane and the name: the same on every machine and in every picture.
fn stable_hash(lane: u64, name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in lane.to_string().bytes().chain([0]).chain(name.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hsl_is_css() {
        assert_eq!(Colour::hsl(0.0, 100.0, 50.0), Colour::rgb(255, 0, 0));
        assert_eq!(Colour::hsl(120.0, 100.0, 50.0), Colour::rgb(0, 255, 0));
        assert_eq!(Colour::hsl(240.0, 100.0, 25.0), Colour::rgb(0, 0, 128));
        assert_eq!(Colour::hsl(0.0, 0.0, 50.0), Colour::rgb(128, 128, 128));
        assert_eq!(Colour::hsl(-120.0, 100.0, 50.0).hex(), "#0000ff");
    }

    #[test]
    fn auto_turns_by_level_and_lane() {
        let theme = Theme::new(ThemeName::Light);
        let f = theme.stage_colour(Scheme::Auto, 0, 0, "F", 0);
        assert_eq!(f.begin, Colour::hsl(250.0, 95.0, 95.0));
        assert_eq!(f.end, Colour::hsl(250.0, 70.0, 80.0));
        let x = theme.stage_colour(Scheme::Auto, 0, 0, "X", 3);
        assert_eq!(x.begin, Colour::hsl(250.0 - 165.0, 95.0, 95.0));
        let lane1 = theme.stage_colour(Scheme::Auto, 1, 1, "Y", 0);
        assert_eq!(
            lane1.begin,
            Colour::hsl((250.0 + 224.0) % 360.0, 95.0, 95.0)
        );
        assert_eq!(
            theme.stage_colour(Scheme::Auto, 1, 1, "stl", 0),
            StageColour::flat(Colour::rgb(0xaa, 0xaa, 0xaa))
        );
    }

    #[test]
    fn onikiri_names_and_stable_others() {
        let theme = Theme::new(ThemeName::Light);
        let x = theme.stage_colour(Scheme::Onikiri, 0, 0, "X", 9);
        assert_eq!(x, StageColour::flat(Colour::rgb(0xee, 0x77, 0x77)));
        let a = theme.stage_colour(Scheme::Onikiri, 0, 0, "Zz", 0);
        assert_eq!(a, theme.stage_colour(Scheme::Onikiri, 0, 0, "Zz", 5));
        assert_ne!(a, theme.stage_colour(Scheme::Onikiri, 0, 0, "Zy", 0));
    }
}
