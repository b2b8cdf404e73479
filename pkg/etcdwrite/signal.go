package etcdwrite

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/regghost/regghost/pkg/notice"
)

// StopOnSignal turns the first SIGINT or SIGTERM of a write phase into a
// request to stop between transactions (Pacing.Stop): the one in flight
// finishes, the rest are left and read back, and the command prints its
// summary and how to undo it. done stops listening.
func StopOnSignal(say notice.Func) (stop <-chan struct{}, done func()) {
	ch := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			say.Info(fmt.Sprintf("%s: finishing the transaction in flight, then stopping (a second one kills regghost)", s))
			close(ch)
			signal.Stop(sigs)
		case <-quit:
		}
	}()
	return ch, func() {
		signal.Stop(sigs)
		close(quit)
	}
}
