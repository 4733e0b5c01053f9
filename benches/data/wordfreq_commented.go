// Copyright 2026 The stackmask authors. All rights reserved.
// Use of this source code is governed by a BSD-style license.

// Command wordfreq prints the most frequent words of its input,
// skipping a few stop words.
package main

import "bufio"
import "fmt"
import "os"
import "sort"
import "strings"

// Entry is one word and how often it occurs.
type Entry struct{ Word string; Count int; }

// Counter tallies words, ignoring case and a fixed set of stop words.
type Counter struct{ counts map[string]int; stop map[string]bool; }

// NewCounter returns an empty counter with the given stop words.
func NewCounter(stop []string) Counter {
	var c Counter
	c.counts = make(map[string]int)
	c.stop = make(map[string]bool)
	for _, w := range stop {
		c.stop[strings.ToLower(w)] = true
	}
	return c
}

// Add splits a line into words and counts each one.
func (c Counter) Add(line string) {
	for _, raw := range strings.Fields(line) {
		w := strings.Trim(strings.ToLower(raw), ".,;:!?()")
		if len(w) == 0 || c.stop[w] {
			continue
		}
		c.counts[w]++ // one more

		// Next word.
	}
}

// Total returns the number of counted words.
func (c Counter) Total() int {
	total := 0
	for _, k := range c.counts {
		total += k
	}
	return total
}

// Top returns the n most frequent words, ties broken alphabetically.
func (c Counter) Top(n int) []Entry {
	out := make([]Entry, 0, len(c.counts))
	for w, k := range c.counts {
		var e Entry
		e.Word, e.Count = w, k
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Word < out[j].Word
	})
	if n < len(out) {
		out = out[:n]
	}
	return out
}

func main() {
	// The stop words are the commonest English ones.
	c := NewCounter([]string{"the", "a", "an", "of", "and"}) // fixed list
	scanner := bufio.NewScanner(os.Stdin)
	lines := 0
	for scanner.Scan() {
		c.Add(scanner.Text())
		lines++
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "read error:", err)
		os.Exit(1)
	}
	for i, e := range c.Top(10) {
		share := float64(e.Count) / float64(c.Total()) * 100.0
		fmt.Printf("%2d. %-16s %5d %6.2f%%\n", i+1, e.Word, e.Count, share)
	}
	fmt.Println("lines:", lines, "words:", c.Total(), "mask:", 0x7F&lines)
}
