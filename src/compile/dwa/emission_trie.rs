//! The token classes grouped by their lexeme emissions: a trie whose node at depth `d`
//! holds the classes that share their first `d` emissions, with the emission groups its
//! classes go on to and the final groups they end in.
//!
//! An exploration from a stack top with every class riding (an automaton start) only
//! ever carries such a prefix group: after `d` lexemes its riders are exactly the classes
//! whose first `d` emissions it followed. Read off the trie, those sets cost nothing,
//! where intersecting every emission group with the riders, depth after depth, was most
//! of a start (a median schema's 58 starts made 6,800 roaring intersections).
//!
//! Built from the class sets the automaton build already has (`emits[d]` and
//! `finals[d]`, each a list of groups with their classes); depends on nothing else.

use hashbrown::HashMap;
use rayon::prelude::*;
use roaring::RoaringBitmap;
use smallvec::SmallVec;

/// Node id of the root (every class, no emission yet).
pub const ROOT: u32 = 0;

/// One prefix group of classes.
#[derive(Debug, Clone, Default)]
pub struct EmissionNode {
    /// The classes whose emissions begin with this node's path.
    pub set: RoaringBitmap,
    /// `(group index in emits[depth + 1], child)`, by group index: the groups some class
    /// here emits next, the child holding those classes.
    pub children: Vec<(u32, u32)>,
    /// `(group index in finals[depth], classes)`, by group index: the classes here that
    /// end in that group after `depth` lexemes (none empty).
    pub finals: Vec<(u32, RoaringBitmap)>,
}

/// The trie of emission paths over classes `0..num_classes`.
#[derive(Debug, Clone, Default)]
pub struct EmissionTrie {
    /// Node [`ROOT`] first; a node's children come after it.
    pub nodes: Vec<EmissionNode>,
}

impl EmissionTrie {
    /// Builds the trie: `emits[d]` (d ≥ 1) lists groups with the classes whose d-th
    /// emission is that group's, `finals[d]` groups with the classes ending in them after
    /// `d` lexemes. Every class's emissions run over depths `1..=len` without gaps.
    pub fn new<A: Sync, B: Sync>(
        num_classes: u32,
        emits: &[Vec<(A, RoaringBitmap)>],
        finals: &[Vec<(B, RoaringBitmap)>],
    ) -> Self {
        let n = num_classes as usize;
        // Each class's emission path and ends, read a block of classes at a time in
        // parallel: this whole build is serial beside little else, and reading the sets
        // value by value was a quarter of it on schemas of 160K classes. A group is read
        // only in the blocks its classes span (most groups lie within one shape's range).
        let span = |c: &RoaringBitmap| c.min().zip(c.max());
        let emit_spans: Vec<Vec<Option<(u32, u32)>>> = emits
            .iter()
            .map(|gs| gs.iter().map(|(_, c)| span(c)).collect())
            .collect();
        let final_spans: Vec<Vec<Option<(u32, u32)>>> = finals
            .iter()
            .map(|gs| gs.iter().map(|(_, c)| span(c)).collect())
            .collect();
        let mut paths: Vec<SmallVec<[u32; 4]>> = vec![SmallVec::new(); n];
        // A class ends in at most two groups (a lexeme that may be complete or grow).
        let mut ends: Vec<SmallVec<[(u32, u32); 2]>> = vec![SmallVec::new(); n];
        paths
            .par_chunks_mut(CLASS_BLOCK)
            .zip(ends.par_chunks_mut(CLASS_BLOCK))
            .enumerate()
            .for_each(|(k, (paths, ends))| {
                let lo = (k * CLASS_BLOCK) as u32;
                let hi = lo + paths.len() as u32;
                // An empty group meets no block.
                let meets = |sp: &Option<(u32, u32)>| sp.is_some_and(|(a, b)| a < hi && b >= lo);
                for (groups, spans) in emits.iter().zip(&emit_spans).skip(1) {
                    for (i, ((_, c), sp)) in groups.iter().zip(spans).enumerate() {
                        if meets(sp) {
                            for cl in c.range(lo..hi) {
                                paths[(cl - lo) as usize].push(i as u32);
                            }
                        }
                    }
                }
                for (d, (groups, spans)) in finals.iter().zip(&final_spans).enumerate() {
                    for (j, ((_, c), sp)) in groups.iter().zip(spans).enumerate() {
                        if meets(sp) {
                            for cl in c.range(lo..hi) {
                                ends[(cl - lo) as usize].push((d as u32, j as u32));
                            }
                        }
                    }
                }
            });
        // The trie is grown class by class, in id order, so every node's list (and each
        // of its finals') comes out sorted, with no per-node sort or one-by-one set
        // insertion. Nodes are made in order of first use, then numbered in preorder with
        // children by group (sorting the classes by path to cut them into nodes was a
        // third of this build on schemas of 160K classes).
        let mut child_of: HashMap<(u32, u32), u32> = HashMap::new();
        let mut members: Vec<Vec<u32>> = vec![Vec::new()];
        let mut ending: Vec<Vec<(u32, u32)>> = vec![Vec::new()];
        let mut kids: Vec<Vec<(u32, u32)>> = vec![Vec::new()];
        // The class's nodes, by depth from the root.
        let mut chain: SmallVec<[u32; 8]> = SmallVec::new();
        for cl in 0..num_classes {
            chain.clear();
            let mut v = ROOT;
            chain.push(v);
            members[v as usize].push(cl);
            for &g in &paths[cl as usize] {
                let next = members.len() as u32;
                let c = *child_of.entry((v, g)).or_insert(next);
                if c == next {
                    kids[v as usize].push((g, c));
                    members.push(Vec::new());
                    ending.push(Vec::new());
                    kids.push(Vec::new());
                }
                v = c;
                chain.push(v);
                members[v as usize].push(cl);
            }
            for &(d, j) in &ends[cl as usize] {
                // A class ends only at depths its path reaches.
                if let Some(&v) = chain.get(d as usize) {
                    ending[v as usize].push((j, cl));
                }
            }
        }
        drop(child_of);
        // Preorder, children by group: node `preorder[i]` (as made) is node `i`.
        let mut preorder: Vec<u32> = Vec::with_capacity(members.len());
        let mut id = vec![0u32; members.len()];
        let mut stack = vec![ROOT];
        while let Some(v) = stack.pop() {
            id[v as usize] = preorder.len() as u32;
            preorder.push(v);
            let ks = &mut kids[v as usize];
            ks.sort_unstable_by_key(|k| k.0);
            stack.extend(ks.iter().rev().map(|k| k.1));
        }
        let parts: Vec<NodeParts> = preorder
            .iter()
            .map(|&v| {
                let v = v as usize;
                let children = kids[v].iter().map(|&(g, c)| (g, id[c as usize])).collect();
                (
                    std::mem::take(&mut members[v]),
                    std::mem::take(&mut ending[v]),
                    children,
                )
            })
            .collect();
        // The sets are made node by node in parallel (tens of thousands of small sets,
        // each a few allocations).
        let nodes = parts
            .into_par_iter()
            .map(|(m, mut e, children)| {
                // Stable: each group's classes stay in increasing order.
                e.sort_by_key(|&(j, _)| j);
                let finals = e
                    .chunk_by(|a, b| a.0 == b.0)
                    .map(|g| {
                        let set = RoaringBitmap::from_sorted_iter(g.iter().map(|&(_, cl)| cl))
                            .expect("classes pushed in increasing order");
                        (g[0].0, set)
                    })
                    .collect();
                EmissionNode {
                    set: RoaringBitmap::from_sorted_iter(m)
                        .expect("classes pushed in increasing order"),
                    children,
                    finals,
                }
            })
            .collect();
        EmissionTrie { nodes }
    }
}

/// A node's classes, its ending classes `(group, class)` and its children, before sets.
type NodeParts = (Vec<u32>, Vec<(u32, u32)>, Vec<(u32, u32)>);

/// Classes per parallel block in [`EmissionTrie::new`].
const CLASS_BLOCK: usize = 1 << 13;

#[cfg(test)]
mod tests {
    use super::*;

    fn set(xs: &[u32]) -> RoaringBitmap {
        xs.iter().copied().collect()
    }

    /// Each node's set is exactly the classes with its path; children and finals are
    /// the groups' own sets cut down to the node, by group index.
    #[test]
    fn nodes_hold_the_classes_of_their_paths() {
        // Classes 0..6. Depth 1: group 0 = {0, 1, 2}, group 1 = {3, 4}; class 5 emits
        // nothing. Depth 2: group 0 = {1, 4}, group 1 = {2}.
        let emits: Vec<Vec<((), RoaringBitmap)>> = vec![
            vec![],
            vec![((), set(&[0, 1, 2])), ((), set(&[3, 4]))],
            vec![((), set(&[1, 4])), ((), set(&[2]))],
        ];
        // Depth 0: {5}; depth 1: group 0 = {0, 3}, group 1 = {1} (1 may also go on);
        // depth 2: group 0 = {1, 2, 4}.
        let finals: Vec<Vec<((), RoaringBitmap)>> = vec![
            vec![((), set(&[5]))],
            vec![((), set(&[0, 3])), ((), set(&[1]))],
            vec![((), set(&[1, 2, 4]))],
        ];
        let t = EmissionTrie::new(6, &emits, &finals);
        let root = &t.nodes[ROOT as usize];
        assert_eq!(root.set, set(&[0, 1, 2, 3, 4, 5]));
        assert_eq!(root.finals, vec![(0, set(&[5]))]);
        assert_eq!(root.children.len(), 2);
        let (g0, a) = root.children[0];
        let (g1, b) = root.children[1];
        assert_eq!((g0, g1), (0, 1));
        let a = &t.nodes[a as usize];
        let b = &t.nodes[b as usize];
        assert_eq!(a.set, set(&[0, 1, 2]));
        assert_eq!(b.set, set(&[3, 4]));
        assert_eq!(a.finals, vec![(0, set(&[0])), (1, set(&[1]))]);
        assert_eq!(b.finals, vec![(0, set(&[3]))]);
        let kids: Vec<(u32, RoaringBitmap)> = a
            .children
            .iter()
            .map(|&(g, c)| (g, t.nodes[c as usize].set.clone()))
            .collect();
        assert_eq!(kids, vec![(0, set(&[1])), (1, set(&[2]))]);
        let kid = &t.nodes[b.children[0].1 as usize];
        assert_eq!(b.children[0].0, 0);
        assert_eq!(kid.set, set(&[4]));
        assert_eq!(kid.finals, vec![(0, set(&[4]))]);
        assert!(kid.children.is_empty());
    }

    /// Over classes spanning several parallel blocks, with pseudo-random paths of up to
    /// three emissions and ends: node ids are a preorder with children by group, every
    /// node holds exactly the classes whose paths begin with its own, and its finals are
    /// exactly those of its classes ending there, by group.
    #[test]
    fn tries_over_many_blocks_match_their_definition() {
        let n = 3 * CLASS_BLOCK as u32 + 77;
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m) as u32
        };
        // Per class: its path (groups by depth) and its ends `(depth, group)`.
        let mut paths: Vec<Vec<u32>> = Vec::new();
        let mut ends: Vec<Vec<(u32, u32)>> = Vec::new();
        for _ in 0..n {
            let len = next(4);
            let path: Vec<u32> = (0..len).map(|d| next(3 + u64::from(d) * 2)).collect();
            let mut e = vec![(len, next(3))];
            if next(4) == 0 && len > 0 {
                e.push((next(u64::from(len)), 3 + next(2)));
            }
            paths.push(path);
            ends.push(e);
        }
        let depth = 4;
        let mut emits: Vec<Vec<((), RoaringBitmap)>> = vec![Vec::new(); depth];
        let mut finals: Vec<Vec<((), RoaringBitmap)>> = vec![Vec::new(); depth];
        for cl in 0..n {
            for (d, &g) in paths[cl as usize].iter().enumerate() {
                let groups = &mut emits[d + 1];
                while groups.len() <= g as usize {
                    groups.push(((), RoaringBitmap::new()));
                }
                groups[g as usize].1.insert(cl);
            }
            for &(d, j) in &ends[cl as usize] {
                let groups = &mut finals[d as usize];
                while groups.len() <= j as usize {
                    groups.push(((), RoaringBitmap::new()));
                }
                groups[j as usize].1.insert(cl);
            }
        }
        let t = EmissionTrie::new(n, &emits, &finals);
        // Walk the trie in preorder, checking ids and each node against its path.
        let mut expected_id = 0u32;
        let mut stack: Vec<(u32, Vec<u32>)> = vec![(ROOT, Vec::new())];
        while let Some((id, path)) = stack.pop() {
            assert_eq!(id, expected_id, "preorder ids");
            expected_id += 1;
            let node = &t.nodes[id as usize];
            let d = path.len();
            let mine: Vec<u32> = (0..n)
                .filter(|&cl| paths[cl as usize].starts_with(&path))
                .collect();
            assert_eq!(
                node.set,
                mine.iter().copied().collect::<RoaringBitmap>(),
                "{path:?}"
            );
            let mut want: Vec<(u32, RoaringBitmap)> = Vec::new();
            for &cl in &mine {
                for &(ed, j) in &ends[cl as usize] {
                    if ed as usize == d {
                        match want.iter_mut().find(|w| w.0 == j) {
                            Some(w) => {
                                w.1.insert(cl);
                            }
                            None => want.push((j, [cl].into_iter().collect())),
                        }
                    }
                }
            }
            want.sort_by_key(|w| w.0);
            assert_eq!(node.finals, want, "finals at {path:?}");
            let mut groups: Vec<u32> = mine
                .iter()
                .filter_map(|&cl| paths[cl as usize].get(d).copied())
                .collect();
            groups.sort_unstable();
            groups.dedup();
            let kids: Vec<u32> = node.children.iter().map(|c| c.0).collect();
            assert_eq!(kids, groups, "children of {path:?}");
            for &(g, c) in node.children.iter().rev() {
                let mut p = path.clone();
                p.push(g);
                stack.push((c, p));
            }
        }
        assert_eq!(
            expected_id as usize,
            t.nodes.len(),
            "every node reached once"
        );
    }
}
