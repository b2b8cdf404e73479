// Package usage marks an error as a mistake in what the person typed (a
// flag, an argument, a value that cannot be used), wherever below cmd/ it
// is found: regghost then exits 2 on one line, as on a flag cobra refuses,
// however fmt.Errorf wrapped it (unless a command chose an exit code of
// its own for it), and the command's file does not translate each
// package's own kind of mistake.
package usage

import (
	"errors"
	"fmt"
)

// Error is a mistake in what the person typed; Err says it.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap is Err.
func (e *Error) Unwrap() error { return e.Err }

// Usage marks Error as the person's mistake.
func (e *Error) Usage() {}

// Errorf is a usage error saying format (with %w as fmt.Errorf's).
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// Mark is err marked as a usage error; nil for nil.
func Mark(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err}
}

// Marked is an error that is the person's mistake: *Error, or a package's
// own error type with a Usage method.
type Marked interface{ Usage() }

// Is says whether err, or an error it wraps, is a usage error.
func Is(err error) bool {
	var m Marked
	return errors.As(err, &m)
}
