package render

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// progressAfter is how long a scan runs before it shows progress.
const progressAfter = 2 * time.Second

// ScanProgress shows a long scan's progress on one line of errOut, when
// errOut is a terminal: keys read, keys a second, and the share of the
// keyspace when it is known. Nothing is written when errOut is not a
// terminal (a pipe, a file, CI), nor for a scan shorter than two seconds.
// done clears the line.
func ScanProgress(errOut io.Writer) (report func(read, total int), done func()) {
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
