package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/repair"
)

// startWriting takes the etcd lock for a write phase and turns the first
// SIGINT or SIGTERM into a request to stop between transactions: the one in
// flight finishes, the rest are left and read back, and the command prints
// its summary and how to undo it. done releases both.
func startWriting(ctx context.Context, cli *clientv3.Client, what string, errOut io.Writer) (stop <-chan struct{}, done func(), err error) {
	unlock, warning, err := repair.Lock(ctx, cli, what)
	if err != nil {
		if errors.Is(err, repair.ErrLocked) {
			return nil, nil, &exitError{code: ExitError, err: fmt.Errorf("%w; nothing was changed", err)}
		}
		return nil, nil, err
	}
	if warning != "" {
		fmt.Fprintf(errOut, "regghost: warning: %s\n", warning)
	}
	ch := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(errOut, "regghost: %s: finishing the transaction in flight, then stopping (a second one kills regghost)\n", s)
			close(ch)
			signal.Stop(sigs)
		case <-quit:
		}
	}()
	return ch, func() {
		signal.Stop(sigs)
		close(quit)
		unlock()
	}, nil
}
