//go:build !linux

package pace

// Yield does nothing where regghost does not run on a node (it is built
// for Linux); see yield_linux.go.
func Yield(nice int) error { return nil }
