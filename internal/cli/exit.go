package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/regghost/regghost/internal/help"
	"github.com/regghost/regghost/pkg/table"
	"github.com/regghost/regghost/pkg/usage"
)

// Exit codes, documented in the README.
const (
	// ExitOK means success; for scan, that no ghost was found.
	ExitOK = 0
	// ExitError means the command failed.
	ExitError = 1
	// ExitUsage means bad flags or arguments.
	ExitUsage = 2
	// ExitGhosts means scan found ghosts (or purge left ghosts behind).
	ExitGhosts = 3
)

// Error carries an exit code through cobra; Err, when not nil, is
// what the command ends with, on one line.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

// Exit ends a command with code, saying err when it is not nil.
func Exit(code int, err error) error {
	return &Error{Code: code, Err: err}
}

// Failed makes err, why a command's results fail it, the command's error
// (exit code 1); nil for nil.
func Failed(err error) error {
	if err == nil {
		return nil
	}
	return Exit(ExitError, err)
}

// Usage is a usage error (exit code 2): bad flags or arguments.
func Usage(format string, args ...any) error {
	return Exit(ExitUsage, fmt.Errorf(format, args...))
}

// OneLine folds a text onto one line (cobra's suggestions come on lines
// of their own).
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Report says err, the error a command ended with, on errOut and returns
// the exit code: an Error's, 2 for a usage error or a mistyped
// command, else 1.
func Report(errOut io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	if usage.Is(err) {
		// A mistake in what was typed, found below cmd/: exit 2 whatever
		// else it was wrapped in.
		err = Exit(ExitUsage, err)
	}
	var ee *Error
	if errors.As(err, &ee) {
		if ee.Err != nil {
			msg := ee.Err.Error()
			if ee.Code != ExitUsage || !strings.Contains(msg, "flag") {
				// A refusal an override lifts says where to read what it
				// risks; a mistyped flag does not.
				msg = help.WithOverrideLink(msg)
			}
			sayError(errOut, msg)
		}
		return ee.Code
	}
	if msg := err.Error(); strings.HasPrefix(msg, "unknown command ") {
		for old, now := range renamedCommands {
			if strings.HasPrefix(msg, fmt.Sprintf("unknown command %q ", old)) {
				fmt.Fprintf(errOut, "regghost: %s\n", now)
				return ExitUsage
			}
		}
		// A mistyped command: a usage error, on one line.
		fmt.Fprintf(errOut, "regghost: %s (see regghost --help)\n", OneLine(msg))
		return ExitUsage
	}
	sayError(errOut, help.WithOverrideLink(err.Error()))
	return ExitError
}

// sayError writes the error a command ends with: one line for a script or
// a log (stderr is not a terminal), wrapped to the screen on a terminal,
// continuation lines indented by two blanks.
func sayError(errOut io.Writer, msg string) {
	// Joined errors are one message too; names from etcd are escaped.
	msg = strings.Join(strings.Split(strings.TrimSpace(msg), "\n"), "; ")
	if f, ok := errOut.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		table.Para(errOut, "regghost: ", "  ", msg)
		return
	}
	fmt.Fprintf(errOut, "regghost: %s\n", table.Escape(msg))
}
