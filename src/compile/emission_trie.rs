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

use roaring::RoaringBitmap;
use smallvec::SmallVec;

/// Node id of the root (every class, no emission yet).
pub const ROOT: u32 = 0;

/// One prefix group of classes.
#[derive(Debug, Clone, Default)]
pub struct TrieNode {
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
    pub nodes: Vec<TrieNode>,
}

impl EmissionTrie {
    /// Builds the trie: `emits[d]` (d ≥ 1) lists groups with the classes whose d-th
    /// emission is that group's, `finals[d]` groups with the classes ending in them after
    /// `d` lexemes. Every class's emissions run over depths `1..=len` without gaps.
    pub fn new<A, B>(
        num_classes: u32,
        emits: &[Vec<(A, RoaringBitmap)>],
        finals: &[Vec<(B, RoaringBitmap)>],
    ) -> Self {
        let n = num_classes as usize;
        let mut paths: Vec<SmallVec<[u32; 4]>> = vec![SmallVec::new(); n];
        for groups in emits.iter().skip(1) {
            for (i, (_, c)) in groups.iter().enumerate() {
                for cl in c {
                    paths[cl as usize].push(i as u32);
                }
            }
        }
        // A class ends in at most two groups (a lexeme that may be complete or grow).
        let mut ends: Vec<SmallVec<[(u32, u32); 2]>> = vec![SmallVec::new(); n];
        for (d, groups) in finals.iter().enumerate() {
            for (j, (_, c)) in groups.iter().enumerate() {
                for cl in c {
                    ends[cl as usize].push((d as u32, j as u32));
                }
            }
        }
        let mut order: Vec<u32> = (0..num_classes).collect();
        // By path (stable: ties stay in id order), so each node's classes are one run of
        // `order`.
        order.sort_by(|&a, &b| paths[a as usize].cmp(&paths[b as usize]));
        let mut shape = Shape {
            parent: Vec::new(),
            children: Vec::new(),
            deepest: vec![NO_NODE; n],
        };
        shape.build(&order, 0, NO_NODE, &paths);
        // Each class joins the sets of the nodes on its path, visited in id order so every
        // node's list (and each of its finals') comes out sorted, with no per-node sort or
        // one-by-one set insertion.
        let num_nodes = shape.parent.len();
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); num_nodes];
        let mut ending: Vec<Vec<(u32, u32)>> = vec![Vec::new(); num_nodes];
        let mut chain: SmallVec<[u32; 8]> = SmallVec::new();
        for cl in 0..num_classes {
            chain.clear();
            let mut v = shape.deepest[cl as usize];
            while v != NO_NODE {
                chain.push(v);
                v = shape.parent[v as usize];
            }
            // `chain` runs from the class's deepest node up to the root (depth 0).
            for &v in &chain {
                members[v as usize].push(cl);
            }
            for &(d, j) in &ends[cl as usize] {
                // A class ends only at depths its path reaches.
                if let Some(&v) = chain
                    .len()
                    .checked_sub(d as usize + 1)
                    .and_then(|i| chain.get(i))
                {
                    ending[v as usize].push((j, cl));
                }
            }
        }
        let nodes = members
            .into_iter()
            .zip(ending)
            .zip(shape.children)
            .map(|((m, mut e), children)| {
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
                TrieNode {
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

/// No node (a class with no deepest node yet, the root's parent).
const NO_NODE: u32 = u32::MAX;

/// The trie's nodes before their sets: numbered in preorder, as [`EmissionTrie::nodes`].
struct Shape {
    parent: Vec<u32>,
    children: Vec<Vec<(u32, u32)>>,
    /// Per class, the node where its path ends.
    deepest: Vec<u32>,
}

impl Shape {
    /// Adds the node for `classes` (a run of classes sorted by path, all sharing their
    /// first `depth` emissions), then its subtree; returns its id.
    fn build(
        &mut self,
        classes: &[u32],
        depth: usize,
        parent: u32,
        paths: &[SmallVec<[u32; 4]>],
    ) -> u32 {
        let id = self.parent.len() as u32;
        self.parent.push(parent);
        self.children.push(Vec::new());
        // Classes whose path ends here sort first; the rest group by their next emission.
        let mut rest = classes;
        while let Some(&first) = rest.first() {
            if paths[first as usize].len() > depth {
                break;
            }
            self.deepest[first as usize] = id;
            rest = &rest[1..];
        }
        let mut children = Vec::new();
        while let Some(&first) = rest.first() {
            let g = paths[first as usize][depth];
            let len = rest
                .iter()
                .position(|&cl| paths[cl as usize][depth] != g)
                .unwrap_or(rest.len());
            let child = self.build(&rest[..len], depth + 1, id, paths);
            children.push((g, child));
            rest = &rest[len..];
        }
        self.children[id as usize] = children;
        id
    }
}

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
}
