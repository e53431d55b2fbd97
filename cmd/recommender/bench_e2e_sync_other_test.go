//go:build !linux

package main

// syncfs does nothing where there is no syncfs: the benchmark's figures
// are measured on Linux.
func syncfs(string) error { return nil }
