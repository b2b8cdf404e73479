package cli

import (
	"time"
)

// WaitFits refuses a --wait that does not fit in --command-timeout, naming
// the flag the user typed: a --command-timeout too short for the default
// --wait is about --command-timeout.
func WaitFits(wait, timeout time.Duration, waitGiven bool) error {
	switch {
	case wait <= 0:
		return Usage("--wait must be positive, got %s", wait)
	case wait < timeout:
		return nil
	case waitGiven:
		return Usage("--wait %s must be shorter than --command-timeout (%s)", wait, timeout)
	}
	return Usage("--command-timeout %s leaves no time for the wait for the deletion (--wait, %s by default): give a longer --command-timeout, or a shorter --wait", timeout, wait)
}
