//! Explorations: what the riding classes do from a known stack top — consume lexemes,
//! decide lookaheads, suspend on the next stack id — gathered into an [`Outcome`].

use super::*;

impl<'a> Explorer<'a> {
    pub(super) fn new(
        tables: TableRefs<'a>,
        sets: &'a ClassSets,
        actionable: &'a [TermSet],
        canon: &'a [ProductionId],
        rep: &'a [LrStateId],
        (groups, unions): (&'a MergedGroups, &'a PieceUnions),
    ) -> Self {
        Explorer {
            groups,
            unions,
            tables,
            sets,
            actionable,
            canon,
            rep,
            consume_memo: HashMap::new(),
            consumes: Vec::new(),
            looks: Vec::new(),
            look_index: HashMap::new(),
            keys: WeightTable::default(),
            explore_memo: HashMap::new(),
            rider_sets: Vec::new(),
            rider_of_key: HashMap::new(),
            and_memo: HashMap::new(),
        }
    }

    /// A new explorer over the same tables, class sets and shared unions, with empty
    /// memos and lookahead sets of its own.
    pub(super) fn fresh(&self) -> Explorer<'a> {
        Explorer::new(
            self.tables,
            self.sets,
            self.actionable,
            self.canon,
            self.rep,
            (self.groups, self.unions),
        )
    }

    /// Every way of consuming terminal `t` on the known stack `k`, by index into
    /// `consumes`. Behind an indenter, end of input is consumed after any number of
    /// `_DEDENT`s (the indenter closes every open level first, and balanced levels let
    /// only the right number through: `compile::grammar::indent_check`).
    pub(super) fn consume(&mut self, k: &[LrStateId], t: TerminalId) -> u32 {
        let key = (Stack::from_slice(k), t);
        if let Some(&c) = self.consume_memo.get(&key) {
            return c;
        }
        let lr = self.tables.lr;
        let closing = self
            .tables
            .indent
            .filter(|_| t == lr.eof())
            .map(|(ind, _)| ind.dedent);
        let mut out = Consume::default();
        let mut work: SmallVec<[Stack; 4]> = SmallVec::from_elem(key.0.clone(), 1);
        // Stacks reached by reductions: a short list (a lexeme's reduction chains are
        // short, and this runs millions of times in a large schema's build), hashed only
        // past `SEEN_LIST` stacks.
        const SEEN_LIST: usize = 16;
        let mut seen: SmallVec<[Stack; 4]> = SmallVec::new();
        let mut seen_set: hashbrown::HashSet<Stack> = hashbrown::HashSet::new();
        while let Some(s) = work.pop() {
            let dedents = match closing {
                Some(d) => lr.actions(s[0], d),
                None => &[],
            };
            let actions = lr.actions(s[0], t).iter().map(|a| (a, false));
            for (a, dedent) in actions.chain(dedents.iter().map(|a| (a, true))) {
                match *a {
                    // A `_DEDENT` shifted on the way to end of input: its stack goes on
                    // (each one closes a level the known stack opened, so they are few).
                    Action::Shift(n) if dedent => {
                        let ns = shifted(self.rep[n.index()], &s);
                        if !seen.contains(&ns) && !seen_set.contains(&ns) {
                            seen.push(ns.clone());
                            if seen.len() > SEEN_LIST {
                                seen_set.extend(seen.drain(..));
                            }
                            work.push(ns);
                        }
                    }
                    Action::Shift(n) => out.results.push(shifted(self.rep[n.index()], &s)),
                    Action::Accept => out.accepted = true,
                    Action::Reduce(p) => {
                        let len = lr.rhs_len(p);
                        if len >= s.len() {
                            // Named by its left-hand side's first production: the effect
                            // uses only that, so alike reductions share automaton states.
                            out.suspended
                                .push((self.canon[p.index()], (len - s.len()) as u32));
                            continue;
                        }
                        let Some(g) = lr.goto(s[len], lr.lhs(p)) else {
                            continue;
                        };
                        let mut ns = Stack::with_capacity(s.len() - len + 1);
                        ns.push(self.rep[g.index()]);
                        ns.extend_from_slice(&s[len..]);
                        let new = if seen_set.is_empty() {
                            let new = !seen.contains(&ns);
                            if new {
                                seen.push(ns.clone());
                                if seen.len() > SEEN_LIST {
                                    seen_set.extend(seen.drain(..));
                                }
                            }
                            new
                        } else {
                            seen_set.insert(ns.clone())
                        };
                        if new {
                            work.push(ns);
                        }
                    }
                }
            }
        }
        out.results.sort();
        out.results.dedup();
        out.suspended.sort();
        out.suspended.dedup();
        let id = self.consumes.len() as u32;
        self.consumes.push(out);
        self.consume_memo.insert(key, id);
        id
    }

    /// The id in `rider_sets` of riders `k`, interned in `keys` as `kid`.
    pub(super) fn rider_set(&mut self, kid: WeightId, k: &RoaringBitmap) -> u32 {
        if let Some(&r) = self.rider_of_key.get(&kid) {
            return r;
        }
        let r = self.rider_sets.len() as u32;
        self.rider_sets.push(Arc::new(k.clone()));
        self.rider_of_key.insert(kid, r);
        r
    }

    /// `c ∩` rider set `rid`, with its id in `rider_sets`; `None` when empty.
    pub(super) fn and_riders(
        &mut self,
        c: &'a RoaringBitmap,
        rid: u32,
    ) -> Option<(u32, Arc<RoaringBitmap>)> {
        let key = (std::ptr::from_ref(c) as usize, rid);
        let r = match self.and_memo.get(&key) {
            Some(&r) => r,
            None => {
                let w = c & &*self.rider_sets[rid as usize];
                let r = (!w.is_empty()).then(|| {
                    self.rider_sets.push(Arc::new(w));
                    (self.rider_sets.len() - 1) as u32
                });
                self.and_memo.insert(key, r);
                r
            }
        };
        r.map(|r| (r, self.rider_sets[r as usize].clone()))
    }

    /// [`Explorer::explore_fresh`] through a cache by `(depth, s, riders)`, for riders `k`
    /// interned as `kid`: resumed states meet the same explorations again and again.
    /// Only these outermost explorations are cached: the ones inside them repeat rarely
    /// (1–3% of lookups in the p90–p99 band and a median schema), and caching them cost
    /// uniting and interning their sets at every level.
    pub(super) fn explore_keyed(
        &mut self,
        depth: u32,
        s: &[LrStateId],
        kid: WeightId,
        k: &RoaringBitmap,
        out: &mut Pieces<'a>,
    ) {
        let key = (depth, Stack::from_slice(s), kid);
        if let Some(kept) = self.explore_memo.get(&key) {
            out.absorb_kept(kept, &self.keys);
            return;
        }
        let rid = self.rider_set(kid, k);
        let fresh = self.explore_fresh(depth, s, Riders::Set(rid));
        let mut waits: Vec<(Effect, WeightId)> = fresh
            .waits
            .iter()
            .map(|(e, w)| (*e, self.keys.intern(w)))
            .collect();
        waits.sort_unstable();
        let kept = Kept {
            decided: self.keys.intern(&fresh.decided),
            waits,
        };
        self.explore_memo.insert(key, kept);
        out.absorb(fresh);
    }

    /// What `riders` (each having consumed `depth` lexemes) do on known stack `s`, as an
    /// outcome: its pieces united, and classes decided anywhere in it no longer waiting.
    ///
    /// Starts are not cached: the explorations of start `x` run on stacks with `x` at the
    /// bottom (shifts push, reductions that reach the bottom suspend), so no other start
    /// meets them, and within one start repeats are rare (none in 435K explorations of a
    /// large schema). Caching them only cost memory (hundreds of MB) and a bitmap hash
    /// per call.
    pub(super) fn explore_fresh(
        &mut self,
        depth: u32,
        s: &[LrStateId],
        riders: Riders<'_>,
    ) -> Outcome {
        let mut pieces = Pieces::default();
        self.explore(depth, s, riders, &mut pieces);
        let mut out = pieces.into_outcome(self.unions);
        let Outcome { decided, waits } = &mut out;
        waits.retain(|_, w| {
            *w -= &*decided;
            !w.is_empty()
        });
        out
    }

    /// Adds what `riders` do on `s` to `pieces`, not united: sub-explorations add to
    /// their caller's pieces, and only the outermost unites them (in
    /// [`Explorer::explore_fresh`]). Uniting at every level merged deep sets once per
    /// level, nearly half of a Kubernetes schema's start instructions. The outcome is
    /// the same: what waits at a level had the level's decided classes removed, and those
    /// are among the outermost's decided.
    pub(super) fn explore(
        &mut self,
        depth: u32,
        s: &[LrStateId],
        riders: Riders<'_>,
        pieces: &mut Pieces<'a>,
    ) {
        let d = depth as usize;
        // The sets outlive the explorer's borrow, so consuming can go on while reading them.
        let sh: &'a ClassSets = self.sets;
        // Tokens ending here: decided when a terminal that may follow lexically can be
        // consumed.
        // Actions are checked before sets are intersected: most terminals have none on
        // this stack top, and intersections dominate the build.
        let top = s[0];
        let act: &'a TermSet = &self.actionable[top.index()];
        let finals: &'a [(TermSet, RoaringBitmap)] = sh.finals.get(d).map_or(&[], |f| f);
        // The merged view of a multi-node rider group, read by both halves below.
        let mut merged: Option<Arc<Merged>> = None;
        match riders {
            Riders::Set(rid) => {
                for (follow, c) in finals {
                    if !follow.intersects(act) {
                        continue;
                    }
                    if let Some((_, kf)) = self.and_riders(c, rid) {
                        self.decide_final(s, follow, Piece::Shared(kf), pieces);
                    }
                }
            }
            Riders::Nodes(&[n]) => {
                for (j, kf) in &sh.trie.nodes[n as usize].finals {
                    let follow = &finals[*j as usize].0;
                    if follow.intersects(act) {
                        self.decide_final(s, follow, Piece::Borrowed(kf), pieces);
                    }
                }
            }
            Riders::Nodes(ns) => {
                // Nodes ending in one final group are decided together: the decision
                // depends on the stack and the group only.
                let m: &Merged = merged.insert(self.groups.get(ns, &sh.trie));
                let final_set = |n: u32, k: u32| &sh.trie.nodes[n as usize].finals[k as usize].1;
                for g in &m.finals {
                    let follow = &finals[g.index as usize].0;
                    if !follow.intersects(act) {
                        continue;
                    }
                    let Some(effects) = self.decision(s, follow) else {
                        g.pieces(final_set, &mut pieces.decided);
                        continue;
                    };
                    let mut ws = Vec::new();
                    for e in effects {
                        if ws.is_empty() {
                            g.pieces(final_set, &mut ws);
                        }
                        for w in &ws {
                            pieces.wait(e, w.clone());
                        }
                    }
                }
            }
        }
        let nexts: &'a [(Vec<TerminalId>, RoaringBitmap)] = sh.emits.get(d + 1).map_or(&[], |e| e);
        let next_terms: &'a [(TermSet, bool)] = sh.emit_terms.get(d + 1).map_or(&[], |e| e);
        match riders {
            Riders::Set(rid) => {
                for ((ts, c), (terms, ignored)) in nexts.iter().zip(next_terms) {
                    if !*ignored && !terms.intersects(act) {
                        continue;
                    }
                    if let Some((rc, kc)) = self.and_riders(c, rid) {
                        self.take_emission(depth, s, ts, (rc, &kc), pieces);
                    }
                }
            }
            Riders::Nodes(&[n]) => {
                // Children that reach alike stacks ride on together: a string position
                // takes hundreds of literals, each its own child and shift target, all
                // of one class.
                let mut next = NextStacks::default();
                let mut waits = Vec::new();
                for &(i, child) in &sh.trie.nodes[n as usize].children {
                    let (terms, ignored) = &next_terms[i as usize];
                    if !*ignored && !terms.intersects(act) {
                        continue;
                    }
                    for &t in &nexts[i as usize].0 {
                        self.lexeme_targets(depth, s, t, child, &mut next, &mut waits);
                    }
                    // A trie node's set is the builder's own, borrowed for as long as
                    // the pieces.
                    let set = &sh.trie.nodes[child as usize].set;
                    for e in waits.drain(..) {
                        pieces.wait(e, Piece::Borrowed(set));
                    }
                }
                let NextStacks { shifts, others } = next;
                self.explore_next(depth, s, shifts, others, |kids| kids.to_vec(), pieces);
            }
            Riders::Nodes(_) => {
                // Each emission is consumed once for all the nodes' children by it,
                // which ride on together (tagged by emission group below).
                let m = merged.as_deref().expect("set for a multi-node group");
                let child_set = |n: u32, k: u32| {
                    let child = sh.trie.nodes[n as usize].children[k as usize].1;
                    &sh.trie.nodes[child as usize].set
                };
                let mut next = NextStacks::default();
                let mut waits = Vec::new();
                let mut ws = Vec::new();
                for (gi, (g, _)) in m.children.iter().enumerate() {
                    let i = g.index as usize;
                    let (terms, ignored) = &next_terms[i];
                    if !*ignored && !terms.intersects(act) {
                        continue;
                    }
                    for &t in &nexts[i].0 {
                        self.lexeme_targets(depth, s, t, gi as u32, &mut next, &mut waits);
                    }
                    if waits.is_empty() {
                        continue;
                    }
                    g.pieces(child_set, &mut ws);
                    for e in waits.drain(..) {
                        for w in &ws {
                            pieces.wait(e, w.clone());
                        }
                    }
                    ws.clear();
                }
                let NextStacks { shifts, others } = next;
                let kids = |tags: &[u32]| -> Vec<u32> {
                    let mut kids: Vec<u32> = tags
                        .iter()
                        .flat_map(|&gi| m.children[gi as usize].1.iter().copied())
                        .collect();
                    if tags.len() > 1 {
                        kids.sort_unstable();
                        kids.dedup();
                    }
                    kids
                };
                self.explore_next(depth, s, shifts, others, kids, pieces);
            }
        }
    }

    /// Explores the rider groups a multi-node exploration reached: `shifts` (stacks `s`
    /// with a state pushed) and `others` (stacks after reductions), each with a tag that
    /// `kids` turns, for all tags reaching one stack, into that stack's trie nodes.
    pub(super) fn explore_next(
        &mut self,
        depth: u32,
        s: &[LrStateId],
        mut shifts: Vec<(LrStateId, u32)>,
        mut others: Vec<(Stack, u32)>,
        kids: impl Fn(&[u32]) -> Vec<u32>,
        pieces: &mut Pieces<'a>,
    ) {
        shifts.sort_unstable();
        shifts.dedup();
        for group in shifts.chunk_by(|a, b| a.0 == b.0) {
            let tags: SmallVec<[u32; 8]> = group.iter().map(|g| g.1).collect();
            let r = shifted(group[0].0, s);
            self.explore(depth + 1, &r, Riders::Nodes(&kids(&tags)), pieces);
        }
        others.sort_unstable();
        others.dedup();
        for group in others.chunk_by(|a, b| a.0 == b.0) {
            let tags: SmallVec<[u32; 8]> = group.iter().map(|g| g.1).collect();
            self.explore(depth + 1, &group[0].0, Riders::Nodes(&kids(&tags)), pieces);
        }
    }

    /// Whether riders ending on stack `s`, where the terminals `follow` may come next, are
    /// decided (`None`: one of them can be consumed), else the effects they wait on (the
    /// reductions that would tell).
    pub(super) fn decision(&mut self, s: &[LrStateId], follow: &TermSet) -> Option<Vec<Effect>> {
        let top = s[0];
        let act: &TermSet = &self.actionable[top.index()];
        // Lookaheads that suspend, grouped by the reduction they wait in.
        let mut waiting: Vec<((ProductionId, u32), TerminalId)> = Vec::new();
        for t in follow.iter_and(act) {
            // A shift or accept on the top decides without reductions: no need to look
            // the consumption up (most lookaheads are such; the lookups were millions per
            // large schema).
            if self
                .tables
                .lr
                .actions(top, t)
                .iter()
                .any(|a| matches!(a, Action::Shift(_) | Action::Accept))
            {
                return None;
            }
            let c = self.consume(s, t);
            let c = &self.consumes[c as usize];
            if c.accepted || !c.results.is_empty() {
                return None;
            }
            waiting.extend(c.suspended.iter().map(|&ps| (ps, t)));
        }
        Some(self.lookahead_effects(waiting))
    }

    /// Decides riders `kf`, which end on stack `s` at a position where the terminals
    /// `follow` may come next: decided if one of them can be consumed, else waiting on
    /// the reductions that would tell.
    pub(super) fn decide_final(
        &mut self,
        s: &[LrStateId],
        follow: &TermSet,
        kf: Piece<'a>,
        pieces: &mut Pieces<'a>,
    ) {
        match self.decision(s, follow) {
            None => pieces.decided.push(kf),
            Some(effects) => {
                for e in effects {
                    pieces.wait(e, kf.clone());
                }
            }
        }
    }

    /// Explores riders `next` after they emit a lexeme of one of the terminals `ts` on
    /// stack `s`, each having consumed `depth` lexemes before it.
    pub(super) fn take_emission(
        &mut self,
        depth: u32,
        s: &[LrStateId],
        ts: &[TerminalId],
        (rid, next): (u32, &Arc<RoaringBitmap>),
        pieces: &mut Pieces<'a>,
    ) {
        let mut to = NextStacks::default();
        let mut waits = Vec::new();
        for &t in ts {
            self.lexeme_targets(depth, s, t, 0, &mut to, &mut waits);
            for (n, _) in to.shifts.drain(..) {
                self.explore(depth + 1, &shifted(n, s), Riders::Set(rid), pieces);
            }
            for (r, _) in to.others.drain(..) {
                self.explore(depth + 1, &r, Riders::Set(rid), pieces);
            }
            for e in waits.drain(..) {
                pieces.wait(e, Piece::Shared(next.clone()));
            }
        }
    }

    /// Where a lexeme of terminal `t` takes known stack `s` (its riders having consumed
    /// `depth` lexemes before it): added to `next` with `tag`, and the effects of
    /// reductions that suspend to `waits`.
    pub(super) fn lexeme_targets(
        &mut self,
        depth: u32,
        s: &[LrStateId],
        t: TerminalId,
        tag: u32,
        next: &mut NextStacks,
        waits: &mut Vec<Effect>,
    ) {
        if t == STAY || self.tables.lexer.is_ignored(t) {
            next.others.push((Stack::from_slice(s), tag));
            return;
        }
        let actions = self.tables.lr.actions(s[0], t);
        if actions.is_empty() {
            return;
        }
        if let [Action::Shift(n)] = *actions {
            // A lone shift: the one result is known without consuming (and without a
            // memo lookup keyed by the whole stack).
            next.shifts.push((self.rep[n.index()], tag));
            return;
        }
        let c = self.consume(s, t) as usize;
        let c = &self.consumes[c];
        next.others
            .extend(c.results.iter().map(|r| (r.clone(), tag)));
        waits.extend(c.suspended.iter().map(|&(prod, skip)| Effect {
            depth: depth + 1,
            what: Next::Shift(t),
            prod,
            skip,
        }));
    }

    /// Makes `riders` wait on lookahead effects: the suspended `(reduction, terminal)`
    /// pairs grouped by reduction, each group's terminals one lookahead set.
    pub(super) fn wait_lookaheads(
        &mut self,
        waiting: Vec<((ProductionId, u32), TerminalId)>,
        riders: &RoaringBitmap,
        out: &mut Outcome,
    ) {
        for e in self.lookahead_effects(waiting) {
            out.wait(e, riders);
        }
    }

    /// The lookahead effects of suspended `(reduction, terminal)` pairs: one per
    /// reduction, its terminals one lookahead set.
    pub(super) fn lookahead_effects(
        &mut self,
        mut waiting: Vec<((ProductionId, u32), TerminalId)>,
    ) -> Vec<Effect> {
        waiting.sort();
        waiting
            .chunk_by(|a, b| a.0 == b.0)
            .map(|group| {
                let (prod, skip) = group[0].0;
                Effect {
                    depth: 0,
                    what: Next::Look(self.look_set(group.iter().map(|g| g.1).collect())),
                    prod,
                    skip,
                }
            })
            .collect()
    }

    /// What riders `riders` (interned as `rid` in the builder's keys, which key the
    /// memo) do when state `e`'s reduction resumes on each goto source `ys` of its
    /// left-hand side; `looks` are the builder's lookahead sets, which `e` names.
    pub(super) fn resume(
        &mut self,
        e: Effect,
        rid: WeightId,
        riders: &RoaringBitmap,
        ys: &[LrStateId],
        looks: &[Vec<TerminalId>],
    ) -> Resumed {
        let lr = self.tables.lr;
        let lhs = lr.lhs(e.prod);
        let mut out = Resumed {
            sources: Vec::with_capacity(ys.len()),
            outcomes: Vec::new(),
            looks: Vec::new(),
        };
        // Goto sources whose stacks are alike (by class, state by state) share an outcome.
        let mut alike: HashMap<Stack, u32> = HashMap::new();
        for &y in ys {
            // A goto source always has the goto.
            let Some(g) = lr.goto(y, lhs) else { continue };
            let stack = Stack::from_slice(&[self.rep[g.index()], self.rep[y.index()]]);
            if let Some(&i) = alike.get(&stack) {
                out.sources.push((y, i));
                continue;
            }
            let mut o = Outcome::default();
            match e.what {
                Next::Look(look) => {
                    let mut waiting: Vec<((ProductionId, u32), TerminalId)> = Vec::new();
                    for &t in &looks[look as usize] {
                        let c = self.consume(&stack, t);
                        let c = &self.consumes[c as usize];
                        if c.accepted || !c.results.is_empty() {
                            o.decided = riders.clone();
                            waiting.clear();
                            break;
                        }
                        waiting.extend(c.suspended.iter().map(|&ps| (ps, t)));
                    }
                    self.wait_lookaheads(waiting, riders, &mut o);
                }
                Next::Shift(t) => {
                    let c = self.consume(&stack, t) as usize;
                    let mut pieces = Pieces::default();
                    for i in 0..self.consumes[c].results.len() {
                        let r = self.consumes[c].results[i].clone();
                        self.explore_keyed(e.depth, &r, rid, riders, &mut pieces);
                    }
                    o = pieces.into_outcome(self.unions);
                    if o.decided != *riders {
                        for &(prod, skip) in &self.consumes[c].suspended {
                            o.wait(Effect { prod, skip, ..e }, riders);
                        }
                    }
                }
            }
            let Outcome { decided, waits } = &mut o;
            waits.retain(|_, w| {
                *w -= &*decided;
                !w.is_empty()
            });
            let i = out.outcomes.len() as u32;
            out.outcomes.push(o);
            out.sources.push((y, i));
            alike.insert(stack, i);
        }
        let mut named: Vec<u32> = out
            .outcomes
            .iter()
            .flat_map(|o| o.waits.keys())
            .filter_map(Effect::look)
            .collect();
        named.sort_unstable();
        named.dedup();
        out.looks = named
            .into_iter()
            .map(|l| (l, self.looks[l as usize].clone()))
            .collect();
        out
    }

    /// `o`, explored by another explorer whose lookahead sets are `looks`, with those sets
    /// renumbered into this explorer's (`ids`: the other's ids renumbered so far,
    /// `u32::MAX` for not yet). Sets new here are numbered in order of their terminals,
    /// not of the other's ids: a drain worker's ids depend on which states it happened to
    /// explore, and the numbering must not.
    pub(super) fn adopt_looks<'l>(
        &mut self,
        o: Outcome,
        looks: impl Fn(u32) -> &'l [TerminalId],
        ids: &mut Vec<u32>,
    ) -> Outcome {
        let Some(last) = o.waits.keys().filter_map(Effect::look).max() else {
            return o;
        };
        if ids.len() <= last as usize {
            ids.resize(last as usize + 1, u32::MAX);
        }
        let mut unknown: Vec<u32> = o
            .waits
            .keys()
            .filter_map(Effect::look)
            .filter(|&l| ids[l as usize] == u32::MAX)
            .collect();
        unknown.sort_unstable_by(|&a, &b| looks(a).cmp(looks(b)));
        unknown.dedup();
        for l in unknown {
            ids[l as usize] = self.look_set(looks(l).to_vec());
        }
        let waits = o
            .waits
            .into_iter()
            .map(|(mut e, w)| {
                if let Next::Look(l) = &mut e.what {
                    *l = ids[*l as usize];
                }
                (e, w)
            })
            .collect();
        Outcome {
            decided: o.decided,
            waits,
        }
    }

    /// The id of a lookahead set (sorted, deduplicated here).
    pub(super) fn look_set(&mut self, mut ts: Vec<TerminalId>) -> u32 {
        ts.sort();
        ts.dedup();
        if let Some(&i) = self.look_index.get(&ts) {
            return i;
        }
        let i = self.looks.len() as u32;
        self.looks.push(ts.clone());
        self.look_index.insert(ts, i);
        i
    }
}
