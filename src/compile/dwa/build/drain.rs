//! The effect automaton's states and edges: interning effects with their riders, and
//! the drain that explores every state reached from the starts in parallel batches,
//! freezing edges in state order.

use super::*;

impl Builder<'_> {
    /// The state for `e` (made if new).
    pub(super) fn state(&mut self, e: Effect) -> Result<DwaStateId, GrammarError> {
        Ok(match self.state_index.get(&e) {
            Some(&id) => id,
            None => {
                if self.info.len() >= self.max_states {
                    return Err(too_large("mask automaton states", self.max_states));
                }
                let id = DwaStateId::new(self.info.len());
                self.info.push(StateInfo {
                    key: e,
                    // Id 0 is the empty set.
                    riders: WeightId::new(0),
                    built_for: None,
                });
                self.skip_to.push(None);
                self.trans.push(Vec::new());
                self.state_index.insert(e, id);
                id
            }
        })
    }

    /// The state for `e`, with the rider set `rid` of the explorer's `keys` added to its
    /// riders (queued when they grow): what a skip state hands on, by id, since a chain
    /// of skip states carries one set all along (a Kubernetes schema's drain has 11K skip
    /// states of its 19K) and cloning it for each was a copy of thousands of classes.
    pub(super) fn add_rider_key(
        &mut self,
        e: Effect,
        rid: WeightId,
    ) -> Result<DwaStateId, GrammarError> {
        let id = self.state(e)?;
        let old = self.info[id.index()].riders;
        if old == rid || rid == WeightId::new(0) {
            return Ok(id);
        }
        // Id 0 is the empty set: the new riders are the set itself.
        if old == WeightId::new(0) {
            self.grow(id, rid);
            return Ok(id);
        }
        let (o, w) = (self.ex.keys.get(old), self.ex.keys.get(rid));
        if !w.is_subset(o) {
            let grown = o | w;
            let riders = self.ex.keys.intern_owned(grown);
            self.grow(id, riders);
        }
        Ok(id)
    }

    /// Sets state `id`'s riders to `riders` (interned in the explorer's `keys`, a superset
    /// of the old ones) and queues it to be built again.
    pub(super) fn grow(&mut self, id: DwaStateId, riders: WeightId) {
        let info = &mut self.info[id.index()];
        info.riders = riders;
        self.queue.insert((info.key.order(), id));
    }

    /// The state for `e`, with the set `wid` of [`Builder::weights`] added to its riders
    /// (queued when they grow).
    pub(super) fn add_riders(
        &mut self,
        e: Effect,
        wid: WeightId,
    ) -> Result<DwaStateId, GrammarError> {
        let id = self.state(e)?;
        if !self.covered.insert((id, wid)) {
            return Ok(id);
        }
        let w = self.weights.get(wid);
        let old = self.ex.keys.get(self.info[id.index()].riders);
        if !w.is_subset(old) {
            let grown = old | w;
            let riders = self.ex.keys.intern_owned(grown);
            self.grow(id, riders);
        }
        Ok(id)
    }

    /// Freezes an outcome into an edge (interned), registering riders of its targets.
    pub(super) fn edge(&mut self, o: Outcome) -> Result<Option<u32>, GrammarError> {
        if o.decided.is_empty() && o.waits.is_empty() {
            return Ok(None);
        }
        let decided = self.weights.intern_owned(o.decided);
        let mut ts: Vec<(DwaStateId, WeightId)> = Vec::with_capacity(o.waits.len());
        let mut waits: Vec<(Effect, RoaringBitmap)> = o.waits.into_iter().collect();
        waits.sort_unstable_by_key(|(e, _)| *e);
        for (e, w) in waits {
            let wid = self.weights.intern_owned(w);
            let s = self.add_riders(e, wid)?;
            ts.push((s, wid));
        }
        ts.sort();
        if let Some(&id) = self.edge_index.get(&(decided, ts.clone())) {
            return Ok(Some(id));
        }
        let start = self.targets.len() as u32;
        self.targets.extend_from_slice(&ts);
        let id = self.edges.len() as u32;
        self.edges.push(NfaEdge {
            decided,
            targets: (start, self.targets.len() as u32),
        });
        self.edge_index.insert((decided, ts), id);
        Ok(Some(id))
    }

    /// Freezes state `id`'s build into its transitions: a skip state hands its riders
    /// (`rid`) on, any other takes its exploration's outcomes (`resumed`, made by the
    /// explorer of worker `slot`) as edges.
    pub(super) fn freeze_built(
        &mut self,
        id: DwaStateId,
        e: Effect,
        rid: WeightId,
        resumed: Option<(usize, Resumed)>,
        look_ids: &mut [Vec<u32>],
    ) -> Result<(), GrammarError> {
        let Some((slot, r)) = resumed else {
            let next = self.add_rider_key(
                Effect {
                    skip: e.skip - 1,
                    ..e
                },
                rid,
            )?;
            self.skip_to[id.index()] = Some(next);
            return Ok(());
        };
        let mut edges = Vec::with_capacity(r.outcomes.len());
        // `r.looks` holds every set the outcomes name.
        let look = |l: u32| -> &[TerminalId] {
            let i = r.looks.binary_search_by_key(&l, |x| x.0);
            &r.looks[i.expect("a named lookahead set is copied")].1
        };
        for o in r.outcomes {
            let o = self.ex.adopt_looks(o, look, &mut look_ids[slot]);
            edges.push(self.edge(o)?);
        }
        self.trans[id.index()] = r
            .sources
            .iter()
            .filter_map(|&(y, i)| edges[i as usize].map(|edge| (y, edge)))
            .collect();
        Ok(())
    }

    /// Builds every queued state's transitions for its current riders, until no riders
    /// grow.
    ///
    /// States are taken in batches of one [`Effect::order`] key, in id order, and their
    /// explorations run in parallel, one explorer per thread, each with memos of its own
    /// (they are pure caches: an outcome does not depend on which explorer made it). The
    /// outcomes are then frozen into edges in state order, so the automaton does not
    /// depend on the thread count. A state fed by one before it in its batch is built
    /// again in a later batch; any build order reaches the same riders.
    pub(super) fn drain(&mut self, stop: &Interrupt) -> Result<(), GrammarError> {
        let mut workers: Vec<Mutex<Explorer<'_>>> = (0..rayon::current_num_threads())
            .map(|_| Mutex::new(self.ex.fresh()))
            .collect();
        // Per worker, its lookahead sets' ids in the builder's explorer (see `adopt_looks`).
        let mut look_ids: Vec<Vec<u32>> = vec![Vec::new(); workers.len()];
        let mut batch: Vec<(DwaStateId, Effect, WeightId)> = Vec::new();
        let parallel = self.queue.len() >= DRAIN_PARALLEL_STATES;
        while let Some(&(order, _)) = self.queue.first() {
            stop.check()?;
            // A wave too small to share is built one state at a time, each seeing what the
            // one before it fed (as in id order, with no rebuilds from batching).
            let wide = parallel
                && self
                    .queue
                    .iter()
                    .take(DRAIN_PARALLEL_MIN)
                    .take_while(|q| q.0 == order)
                    .count()
                    == DRAIN_PARALLEL_MIN;
            let take = if wide { DRAIN_BATCH } else { 1 };
            batch.clear();
            while batch.len() < take {
                match self.queue.first() {
                    Some(&(o, id)) if o == order => {
                        self.queue.pop_first();
                        let info = &mut self.info[id.index()];
                        if info.built_for != Some(info.riders) {
                            info.built_for = Some(info.riders);
                            batch.push((id, info.key, info.riders));
                        }
                    }
                    _ => break,
                }
            }
            if batch.len() < DRAIN_PARALLEL_MIN {
                for &(id, e, rid) in &batch {
                    let resumed = (e.skip == 0).then(|| {
                        let w = workers[0].get_mut().unwrap_or_else(|e| e.into_inner());
                        let ys = &self.goto_sources[self.tables.lr.lhs(e.prod).index()];
                        w.resume(e, rid, self.ex.keys.get(rid), ys, &self.ex.looks)
                    });
                    self.freeze_built(id, e, rid, resumed.map(|r| (0, r)), &mut look_ids)?;
                }
                continue;
            }
            // The batch's explorations read the riders and lookahead sets as they stand
            // now, from copies (a batch shares a few rider sets), so that each state's
            // edges are made as soon as its exploration and those before it are done,
            // while the rest of the batch is still explored: the same edges in the same
            // order as freezing after the whole batch, with the second thread kept busy
            // (freezing alone was a third of a Kubernetes schema's drain, on one thread).
            let mut riders: HashMap<WeightId, RoaringBitmap> = HashMap::new();
            for &(_, e, rid) in &batch {
                if e.skip == 0 {
                    riders
                        .entry(rid)
                        .or_insert_with(|| self.ex.keys.get(rid).clone());
                }
            }
            let looks: Vec<Vec<TerminalId>> = if order == u32::MAX {
                self.ex.looks.clone()
            } else {
                Vec::new()
            };
            let sources = std::mem::take(&mut self.goto_sources);
            let lr = self.tables.lr;
            let slots: Vec<Mutex<Option<(usize, Resumed)>>> =
                batch.iter().map(|_| Mutex::new(None)).collect();
            let done: Vec<AtomicBool> = batch.iter().map(|_| AtomicBool::new(false)).collect();
            let (workers_ref, slots_ref, done_ref) = (&workers, &slots, &done);
            let (riders_ref, looks_ref, sources_ref, batch_ref) =
                (&riders, &looks, &sources, &batch);
            let frozen = rayon::scope_fifo(|sc| {
                for (c, chunk) in batch_ref.chunks(DRAIN_FREEZE_CHUNK).enumerate() {
                    sc.spawn_fifo(move |_| {
                        for (j, &(_, e, rid)) in chunk.iter().enumerate() {
                            let i = c * DRAIN_FREEZE_CHUNK + j;
                            // Marks the state explored even if its exploration panics,
                            // so that the freezing loop stops waiting for it.
                            let _done = MarkDone(&done_ref[i]);
                            if e.skip == 0 {
                                // Each thread locks only its own explorer; the lock is
                                // held for one exploration, which spawns nothing.
                                let slot =
                                    rayon::current_thread_index().unwrap_or(0) % workers_ref.len();
                                let mut w =
                                    workers_ref[slot].lock().unwrap_or_else(|e| e.into_inner());
                                let ys = &sources_ref[lr.lhs(e.prod).index()];
                                let r = w.resume(e, rid, &riders_ref[&rid], ys, looks_ref);
                                drop(w);
                                *slots_ref[i].lock().unwrap_or_else(|e| e.into_inner()) =
                                    Some((slot, r));
                            }
                        }
                    });
                }
                for (i, &(id, e, rid)) in batch_ref.iter().enumerate() {
                    // Explore while waiting: the batch's remaining chunks, in order.
                    while !done_ref[i].load(Ordering::Acquire) {
                        if rayon::yield_now() != Some(rayon::Yield::Executed) {
                            std::hint::spin_loop();
                        }
                    }
                    let r = slots_ref[i]
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take();
                    if e.skip == 0 && r.is_none() {
                        // Its exploration panicked: the scope re-raises the panic.
                        break;
                    }
                    self.freeze_built(id, e, rid, r, &mut look_ids)?;
                }
                Ok::<_, GrammarError>(())
            });
            self.goto_sources = sources;
            frozen?;
        }
        Ok(())
    }
}
