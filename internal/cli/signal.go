package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// FirstInterrupt is closed by the first SIGINT or SIGTERM, for a step that
// only a signal stops (the command's deadline is its own reason); after the
// first, a second one kills regghost, as by default. stop stops listening.
func FirstInterrupt() (interrupted <-chan struct{}, stop func()) {
	ctx, stopListening := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stopListening()
	}()
	return ctx.Done(), stopListening
}
