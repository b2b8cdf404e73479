// Package cli is the toolkit cmd/'s commands are written with, as kubectl's
// cmdutil is kubectl's: the exit codes and the errors that carry them, the
// one line a mistyped command, flag or argument gets, the confirmation
// question and the password prompt, the flags every writing command shares,
// and the libraries' logging. It holds no command, and nothing of pkg/'s
// work: cmd/ is its only user.
package cli
