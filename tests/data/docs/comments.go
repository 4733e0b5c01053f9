// Copyright 2026 The stackmask authors.
// A small program whose comments stand where Go allows them and statements cannot end.

// More comment lines,

// and a blank line between them.
package main

import (
	"fmt" // formatting
	"strings"
)

// Pair is a word and its count.
type Pair struct {
	Word  string // the word
	Count int
}

// Count tallies the words of text.
func Count(text string) map[string]int {
	counts := make(map[string]int)

	// Lower-case first.
	for _, w := range strings.Fields(strings.ToLower(text)) {
		counts[w]++ // one more
	}

	return counts
}

func main() {
	c := Count("a b a") // two words
	if c["a"] > 1 {
		// more than once
		fmt.Println("a",
			c["a"])
	} else {
		fmt.Println("once")
	}
}
