//! The automaton build's internals: spanned weights read as dense ones, merged trie
//! groups keep every final and child once.

use super::{weight_words, Merged, Piece, GROUP_UNION_MIN};
use crate::compile::dwa::emission_trie::{EmissionTrie, ROOT};
use crate::dwa::ShapeWeights;
use crate::ids::WeightId;
use roaring::RoaringBitmap;

/// Every weight read through every shape's words holds exactly the weight's classes
/// of that shape, whether its span covers the shape or not: shapes of 0 to 70,000
/// classes (some sharing boundary words, some empty), weights inside one shape, across
/// several, far apart, and of more classes than one read batch, across roaring's
/// 65,536-class containers.
#[test]
fn spanned_weights_read_as_dense_ones_in_every_shape() {
    let counts: Vec<u32> = vec![3, 0, 70, 1, 150, 0, 64, 9, 130, 2, 70_000];
    let mut base = Vec::new();
    let mut next = 0;
    for &c in &counts {
        base.push(next);
        next += c;
    }
    let class_words = (next as usize).div_ceil(64);
    // A deterministic spread of sets: the empty one first, then runs and scatters.
    let mut sets = vec![RoaringBitmap::new()];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for k in 0..200u32 {
        let mut w = RoaringBitmap::new();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Mostly in the small shapes; one set in eight reaches into the large one.
        let small = u64::from(next - 70_000);
        let a = (x % small) as u32;
        let b = ((x >> 20) % if k % 8 == 1 { u64::from(next) } else { small }) as u32;
        match k % 4 {
            0 => {
                let (lo, hi) = (a.min(b), a.max(b));
                w.insert_range(lo..=lo + (hi - lo) % 40);
            }
            3 if k % 32 == 3 => {
                let lo = (x >> 32) as u32 % (next - 20_000);
                w.extend((lo..lo + 20_000).step_by(3));
            }
            1 => {
                w.insert(a);
                w.insert(b);
            }
            _ => {
                w.insert(a);
            }
        }
        sets.push(w);
    }
    let (spans, words) = weight_words(&sets, (&base, &counts), None, class_words);
    for (i, (&b, &c)) in base.iter().zip(&counts).enumerate() {
        let (lo, hi) = (b as usize, (b + c) as usize);
        let range = lo / 64..hi.div_ceil(64);
        let view = ShapeWeights::new(&words, &spans, range.clone());
        for (id, w) in sets.iter().enumerate() {
            let got = view.get(WeightId::new(id));
            assert_eq!(got.len(), range.len());
            for class in lo..hi {
                let bit = class - range.start * 64;
                let read = got[bit / 64] >> (bit % 64) & 1 == 1;
                assert_eq!(
                    read,
                    w.contains(class as u32),
                    "shape {i}, weight {id}, class {class}"
                );
            }
        }
    }
    // Most sets lie in one or two shapes: their spans are far smaller than dense rows.
    assert!(words.len() < sets.len() * class_words / 2);
}

/// A merged rider group holds each node's finals and children exactly once, grouped
/// by index in ascending order (node order within a group), each emission's children
/// sorted, and its pieces unite to the group's sets whether they are kept apart
/// (small groups) or united (large ones). The trie: 120 classes with pseudo-random
/// emission paths of up to three lexemes over 6 groups, ending in one of 2 groups.
#[test]
fn merged_groups_keep_every_final_and_child_once() {
    let (classes, groups) = (120u32, 6usize);
    let mut emits: Vec<Vec<((), RoaringBitmap)>> =
        vec![vec![((), RoaringBitmap::new()); groups]; 4];
    emits[0].clear();
    let mut finals: Vec<Vec<((), RoaringBitmap)>> = vec![vec![((), RoaringBitmap::new()); 2]; 4];
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for c in 0..classes {
        let len = (next() % 4) as usize;
        for depth in &mut emits[1..=len] {
            depth[(next() % groups as u64) as usize].1.insert(c);
        }
        finals[len][(next() % 2) as usize].1.insert(c);
    }
    let trie = EmissionTrie::new(classes, &emits, &finals);
    let mut ns: Vec<u32> = trie.nodes[ROOT as usize]
        .children
        .iter()
        .map(|c| c.1)
        .collect();
    // Not sorted, to show that node order, not id order, is kept within a group.
    ns.reverse();
    assert!(ns.len() > 1);
    let m = Merged::new(&ns, &trie);
    let mut seen_finals = Vec::new();
    for w in m.finals.windows(2) {
        assert!(w[0].index < w[1].index);
    }
    for g in &m.finals {
        let order: Vec<usize> =
            g.at.iter()
                .map(|&(n, _)| ns.iter().position(|&x| x == n).unwrap())
                .collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "node order within a group"
        );
        for &(n, k) in &g.at {
            assert_eq!(trie.nodes[n as usize].finals[k as usize].0, g.index);
            seen_finals.push((n, k));
        }
        let mut pieces = Vec::new();
        g.pieces(
            |n, k| &trie.nodes[n as usize].finals[k as usize].1,
            &mut pieces,
        );
        assert_eq!(
            pieces.len() == 1 && g.at.len() > 1,
            g.at.len() >= GROUP_UNION_MIN
        );
        assert!(matches!(pieces[0], Piece::Shared(_)) == (g.at.len() >= GROUP_UNION_MIN));
        let got: RoaringBitmap = pieces.iter().fold(RoaringBitmap::new(), |u, p| u | &**p);
        let want: RoaringBitmap = g.at.iter().fold(RoaringBitmap::new(), |u, &(n, k)| {
            u | &trie.nodes[n as usize].finals[k as usize].1
        });
        assert_eq!(got, want);
    }
    // Every `(node, k)` of the nodes, for `len` of each node's finals or children.
    let every = |len: &dyn Fn(u32) -> usize| -> Vec<(u32, u32)> {
        let mut all: Vec<(u32, u32)> = ns
            .iter()
            .flat_map(|&n| (0..len(n) as u32).map(move |k| (n, k)))
            .collect();
        all.sort_unstable();
        all
    };
    seen_finals.sort_unstable();
    assert_eq!(seen_finals, every(&|n| trie.nodes[n as usize].finals.len()));
    let mut seen_children = Vec::new();
    for w in m.children.windows(2) {
        assert!(w[0].0.index < w[1].0.index);
    }
    for (g, kids) in &m.children {
        let mut want: Vec<u32> =
            g.at.iter()
                .map(|&(n, k)| {
                    let (i, child) = trie.nodes[n as usize].children[k as usize];
                    assert_eq!(i, g.index);
                    child
                })
                .collect();
        seen_children.extend(g.at.iter().copied());
        want.sort_unstable();
        assert_eq!(kids, &want);
    }
    seen_children.sort_unstable();
    assert_eq!(
        seen_children,
        every(&|n| trie.nodes[n as usize].children.len())
    );
    assert!(m.finals.iter().any(|g| g.at.len() >= GROUP_UNION_MIN));
    assert!(m.children.iter().any(|(g, _)| g.at.len() > 1));
}
