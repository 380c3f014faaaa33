//! Random canonical traces for the tests of the readers of canonical text: written through
//! `kanata-writer`, with the instructions reading them back must give.

use kanata_writer::{DepKind, InsnId, LabelKind, Lane, Stage, WriterBuilder};

use crate::output::canonical::{Dependency, Instruction, Retirement, Segment};

/// A stage segment, for expected instructions.
pub(crate) fn segment(lane: u64, name: &str, start: u64, end: Option<u64>, notes: &str) -> Segment {
    Segment {
        lane,
        name: name.into(),
        start,
        end,
        notes: notes.to_owned(),
    }
}

/// xorshift64*: a small seeded generator for the random traces.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random small trace written with the writer, and what reading it back must give:
/// the instructions, the start cycle and the last cycle.
pub(crate) fn random_trace(
    seed: u64,
    compact: Option<bool>,
) -> (Vec<u8>, Vec<Instruction>, i64, u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let start = rng.below(2001) as i64 - 1000;
    let compact = compact.unwrap_or_else(|| rng.below(2) == 1);
    let mut w = WriterBuilder::new()
        .start_cycle(start)
        .compact(compact)
        .from_writer(Vec::new())
        .unwrap();
    let names = ["F", "D", "X", "Mem", "Xmiss", "wb 2"];
    let stages: Vec<Stage> = names.iter().map(|n| w.stage(n).unwrap()).collect();
    let texts = ["a", " b", "x=1 ", "ü€", "0x10: add"];
    let mut handles: Vec<InsnId> = Vec::new();
    let mut model: Vec<Instruction> = Vec::new();
    // Per instruction: the open segment per lane.
    let mut open: Vec<Vec<(u64, usize)>> = Vec::new();
    let mut live: Vec<usize> = Vec::new();
    let mut cycle = 0u64;
    let mut retire_id = 0i64;
    for _ in 0..rng.below(120) {
        let action = rng.below(10);
        if live.is_empty() || action == 0 {
            let (sim_id, thread) = (rng.below(1000) as i128 - 500, rng.below(4) as i64);
            handles.push(w.begin_signed(sim_id, thread).unwrap());
            model.push(Instruction {
                id: model.len() as u64,
                sim_id,
                thread,
                begin: cycle,
                ..Instruction::default()
            });
            open.push(Vec::new());
            live.push(model.len() - 1);
            continue;
        }
        let at = rng.below(live.len() as u64) as usize;
        let i = live[at];
        let insn = &mut model[i];
        match action {
            1 | 2 => {
                let lane = [0, 0, 1, 2, 5][rng.below(5) as usize];
                let (stage, name) = if lane == 1 {
                    (Stage::STALL, "stl")
                } else {
                    let k = rng.below(names.len() as u64) as usize;
                    (stages[k], names[k])
                };
                w.enter(handles[i], Lane::new(lane as u32), stage).unwrap();
                let index = insn.stages.len();
                if let Some(slot) = open[i].iter_mut().find(|(l, _)| *l == lane) {
                    insn.stages[slot.1].end = Some(cycle);
                    slot.1 = index;
                } else {
                    open[i].push((lane, index));
                }
                insn.stages.push(segment(lane, name, cycle, None, ""));
            }
            3 => {
                if let Some(k) =
                    (!open[i].is_empty()).then(|| rng.below(open[i].len() as u64) as usize)
                {
                    let (lane, index) = open[i].swap_remove(k);
                    w.leave(handles[i], Lane::new(lane as u32)).unwrap();
                    insn.stages[index].end = Some(cycle);
                }
            }
            4 | 5 => {
                let text = texts[rng.below(texts.len() as u64) as usize];
                match rng.below(3) {
                    0 => {
                        w.label(handles[i], LabelKind::Name, text).unwrap();
                        insn.name.push_str(text);
                    }
                    1 => {
                        w.label(handles[i], LabelKind::Detail, text).unwrap();
                        insn.detail.push_str(text);
                    }
                    _ => {
                        if let Some(last) = insn.stages.last_mut() {
                            w.label(handles[i], LabelKind::StageNote, text).unwrap();
                            if !last.notes.is_empty() {
                                last.notes.push('\n');
                            }
                            last.notes.push_str(text);
                        }
                    }
                }
            }
            6 => {
                let flushed = rng.below(3) == 0;
                let id = if rng.below(8) == 0 {
                    // A retire id of the simulator's, as kanata-pp keeps them.
                    let id = rng.below(2000) as i64 - 1000;
                    if flushed {
                        w.flush_as(handles[i], id).unwrap();
                    } else {
                        w.retire_as(handles[i], id).unwrap();
                    }
                    id
                } else if flushed {
                    w.flush(handles[i]).unwrap();
                    0
                } else {
                    w.retire(handles[i]).unwrap();
                    retire_id += 1;
                    retire_id - 1
                };
                for (_, index) in open[i].drain(..) {
                    insn.stages[index].end = Some(cycle);
                }
                insn.end = Some(cycle);
                insn.retire = Some(Retirement {
                    retire_id: id,
                    flushed,
                });
                live.swap_remove(at);
            }
            7 if i > 0 => {
                let producer = rng.below(i as u64) as usize;
                let kind = rng.below(3);
                w.depend(handles[i], handles[producer], DepKind::new(kind as u32))
                    .unwrap();
                insn.deps.push(Dependency {
                    producer: producer as u64,
                    kind,
                });
            }
            _ => {
                let n = 1 + rng.below(4);
                w.advance(n).unwrap();
                cycle += n;
            }
        }
    }
    if rng.below(2) == 0 {
        let n = 1 + rng.below(9);
        w.advance(n).unwrap();
        cycle += n;
    }
    (w.finish().unwrap().output, model, start, cycle)
}
