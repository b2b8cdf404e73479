package render

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/regghost/regghost/pkg/notice"
)

// progressAfter is how long a scan runs before it shows progress.
const progressAfter = 2 * time.Second

// ScanProgress shows a long scan's progress on one line of errOut, when
// errOut is a terminal: keys read, keys a second, and the share of the
// keyspace when it is known. Nothing is written when errOut is not a
// terminal (a pipe, a file, CI), nor for a scan shorter than two seconds.
// done clears the line.
func ScanProgress(errOut io.Writer) (report notice.Progress, done func()) {
	f, ok := errOut.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, func() {}
	}
	start := time.Now()
	var mu sync.Mutex
	var last time.Time
	shown := false
	return func(read, total int) {
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			if now.Sub(start) < progressAfter || now.Sub(last) < 200*time.Millisecond {
				return
			}
			last, shown = now, true
			rate := float64(read) / now.Sub(start).Seconds()
			share := ""
			if total > 0 {
				share = fmt.Sprintf(" (%d%% of %d)", min(100, read*100/total), total)
			}
			fmt.Fprintf(f, "\rregghost: scanned %d keys%s, %.0f keys/s\x1b[K", read, share, rate)
		}, func() {
			mu.Lock()
			defer mu.Unlock()
			if shown {
				fmt.Fprint(f, "\r\x1b[K")
			}
		}
}

// EveryTenth writes a step's progress to w as a line every tenth of total
// (and at the end): "rewrote 30 of 300".
func EveryTenth(w io.Writer, verb string, total int) notice.Progress {
	step := max(total/10, 1)
	return func(done, total int) {
		if done%step == 0 || done == total {
			fmt.Fprintf(w, "%s %d of %d\n", verb, done, total)
		}
	}
}
