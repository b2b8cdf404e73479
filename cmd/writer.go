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

	"github.com/regghost/regghost/pkg/etcdwrite"
)

// writerLock returns the taking of the etcd lock for a write phase, which
// prints a warning when the lock cannot be had at all.
func writerLock(cli *clientv3.Client, what string, errOut io.Writer) func(ctx context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		unlock, warning, err := etcdwrite.Lock(ctx, cli, what, etcdwrite.WithLockNotices(errOut))
		if err != nil {
			return nil, err
		}
		if warning != "" {
			fmt.Fprintf(errOut, "regghost: warning: %s\n", warning)
		}
		return unlock, nil
	}
}

// startWriting takes the etcd lock for a write phase and turns the first
// SIGINT or SIGTERM into a request to stop between transactions: the one in
// flight finishes, the rest are left and read back, and the command prints
// its summary and how to undo it. done releases both. With no lock function
// (purge takes it itself, once its backup is verified) only the signals
// are handled.
func startWriting(ctx context.Context, lock func(context.Context) (func(), error), errOut io.Writer) (stop <-chan struct{}, done func(), err error) {
	unlock := func() {}
	if lock != nil {
		if unlock, err = lock(ctx); err != nil {
			if errors.Is(err, etcdwrite.ErrLocked) {
				return nil, nil, &exitError{code: ExitError, err: fmt.Errorf("%w; nothing was changed", err)}
			}
			return nil, nil, err
		}
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
