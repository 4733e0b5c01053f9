//! An Earley recognizer over terminals, with the nullable-completion fix of Aycock and
//! Horspool ("Practical Earley Parsing", 2002): predicting a nullable nonterminal also
//! advances over it. A lexeme offers a set of terminals, and may be skipped when one of
//! its readings is an ignored terminal.
//!
//! The input is a lattice, not a sequence: a chart is an arena of Earley sets, one per
//! node, and each reading of the input so far stands at some node. A set made by reading
//! a terminal from another ([`Earley::scan`]) or by joining several ([`Earley::join`],
//! readings that meet where their futures are alike) is closed when it is made; an item's
//! origin is the node its rule started at, on whichever path led there.

use hashbrown::HashSet;

use crate::compile::grammar::ir::{Grammar, Symbol};
use crate::ids::{NonterminalId, TerminalId};

/// An item: production (index `productions.len()` is the augmented `S' → S`), dot,
/// origin set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Item {
    prod: u32,
    dot: u32,
    origin: u32,
}

/// One Earley set.
#[derive(Debug, Clone, Default)]
pub struct EarleySet {
    items: Vec<Item>,
    seen: HashSet<Item>,
}

/// Earley sets by node: a shared, frozen base and a private tail, so that trying many
/// continuations of one prefix copies only the tail. Nodes only point back (an item's
/// origin is an earlier node).
#[derive(Debug, Clone, Default)]
pub struct Chart {
    base: std::sync::Arc<Vec<EarleySet>>,
    tail: Vec<EarleySet>,
}

/// A node of a chart (an index into its sets).
pub type Node = u32;

impl Chart {
    fn len(&self) -> usize {
        self.base.len() + self.tail.len()
    }

    fn get(&self, i: usize) -> &EarleySet {
        if i < self.base.len() {
            &self.base[i]
        } else {
            &self.tail[i - self.base.len()]
        }
    }

    fn last_mut(&mut self) -> &mut EarleySet {
        // Sets are only pushed to the tail, and `close` runs right after a push.
        self.tail
            .last_mut()
            .expect("the set being closed is in the tail")
    }

    fn last(&self) -> &EarleySet {
        self.get(self.len() - 1)
    }

    /// Moves the tail into the shared base (after a prefix is committed for good).
    pub fn freeze(&mut self) {
        if !self.tail.is_empty() {
            // In place when this chart is the only owner of its base; a copy otherwise.
            std::sync::Arc::make_mut(&mut self.base).append(&mut self.tail);
        }
    }
}

/// The grammar in the shape Earley needs.
pub struct Earley {
    lhs: Vec<NonterminalId>,
    rhs: Vec<Vec<Symbol>>,
    by_lhs: Vec<Vec<u32>>,
    nullable: Vec<bool>,
    augmented: u32,
}

impl Earley {
    /// Prepares a grammar.
    pub fn new(g: &Grammar) -> Self {
        let nt = g.nonterminals.len();
        let mut lhs: Vec<NonterminalId> = g.productions.iter().map(|p| p.lhs).collect();
        let mut rhs: Vec<Vec<Symbol>> = g.productions.iter().map(|p| p.rhs.clone()).collect();
        let mut by_lhs = vec![Vec::new(); nt];
        for (i, p) in g.productions.iter().enumerate() {
            by_lhs[p.lhs.index()].push(i as u32);
        }
        let augmented = rhs.len() as u32;
        lhs.push(NonterminalId::new(nt)); // a fresh id, never predicted
        rhs.push(vec![Symbol::N(g.start)]);
        let nullable = g.nullable();
        Self {
            lhs,
            rhs,
            by_lhs,
            nullable,
            augmented,
        }
    }

    fn next(&self, it: Item) -> Option<Symbol> {
        self.rhs[it.prod as usize].get(it.dot as usize).copied()
    }

    fn add(set: &mut EarleySet, it: Item) {
        if set.seen.insert(it) {
            set.items.push(it);
        }
    }

    /// Predicts and completes within the last set of `chart` until nothing changes.
    fn close(&self, chart: &mut Chart) {
        let k = chart.len() - 1;
        let mut i = 0;
        while i < chart.last().items.len() {
            let it = chart.last().items[i];
            match self.next(it) {
                Some(Symbol::N(b)) => {
                    for &p in &self.by_lhs[b.index()] {
                        Self::add(
                            chart.last_mut(),
                            Item {
                                prod: p,
                                dot: 0,
                                origin: k as u32,
                            },
                        );
                    }
                    if self.nullable[b.index()] {
                        Self::add(
                            chart.last_mut(),
                            Item {
                                dot: it.dot + 1,
                                ..it
                            },
                        );
                    }
                }
                Some(Symbol::T(_)) => {}
                None => {
                    let a = self.lhs[it.prod as usize];
                    let origin = it.origin as usize;
                    let mut j = 0;
                    while j < chart.get(origin).items.len() {
                        let w = chart.get(origin).items[j];
                        if self.next(w) == Some(Symbol::N(a)) {
                            Self::add(
                                chart.last_mut(),
                                Item {
                                    dot: w.dot + 1,
                                    ..w
                                },
                            );
                        }
                        j += 1;
                    }
                }
            }
            i += 1;
        }
    }

    /// Pushes `set` as a new node and closes it.
    fn push(&self, chart: &mut Chart, set: EarleySet) -> Node {
        chart.tail.push(set);
        self.close(chart);
        (chart.len() - 1) as Node
    }

    /// The chart before any lexeme, and its one node.
    pub fn start(&self) -> (Chart, Node) {
        let mut chart = Chart::default();
        let mut set = EarleySet::default();
        Self::add(
            &mut set,
            Item {
                prod: self.augmented,
                dot: 0,
                origin: 0,
            },
        );
        let node = self.push(&mut chart, set);
        chart.freeze();
        (chart, node)
    }

    /// The node after reading a lexeme as any of `terms` at node `at` (or skipping it, if
    /// `skippable`); `None` if no item survives (then nothing is added).
    pub fn scan(
        &self,
        chart: &mut Chart,
        at: Node,
        terms: &[TerminalId],
        skippable: bool,
    ) -> Option<Node> {
        let mut next = EarleySet::default();
        for &it in &chart.get(at as usize).items {
            if let Some(Symbol::T(t)) = self.next(it) {
                if terms.contains(&t) {
                    Self::add(
                        &mut next,
                        Item {
                            dot: it.dot + 1,
                            ..it
                        },
                    );
                }
            }
            if skippable {
                Self::add(&mut next, it);
            }
        }
        if next.items.is_empty() {
            return None;
        }
        Some(self.push(chart, next))
    }

    /// One node standing for several that end at the same place with alike futures: the
    /// union of their sets (a node itself when there is one).
    pub fn join(&self, chart: &mut Chart, nodes: &[Node]) -> Node {
        if let [one] = nodes {
            return *one;
        }
        let mut set = EarleySet::default();
        for &n in nodes {
            for &it in &chart.get(n as usize).items {
                Self::add(&mut set, it);
            }
        }
        self.push(chart, set)
    }

    /// Whether terminal `t` can be read next at node `at`.
    pub fn expects(&self, chart: &Chart, at: Node, t: TerminalId) -> bool {
        chart
            .get(at as usize)
            .items
            .iter()
            .any(|&it| self.next(it) == Some(Symbol::T(t)))
    }

    /// Whether the lexemes read up to node `at` form a complete document.
    pub fn accepts(&self, chart: &Chart, at: Node) -> bool {
        chart
            .get(at as usize)
            .items
            .iter()
            .any(|it| it.prod == self.augmented && it.dot == 1 && it.origin == 0)
    }
}
