package main

import "fmt"

// Add returns the sum of two integers.
func Add(a int, b int) int {
	return a + b
}

func main() {
	x := Add(1, 2)
	s := `raw string`
	fmt.Println("sum", x, 0x1F, 3.5, s)
}
