package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPacedLines: the progress paragraphs that say how a member's read was
// paced are found in regghost's wrapped stderr, each joined into one line.
func TestPacedLines(t *testing.T) {
	stderr := "regghost: reading the keyspace of m0, m1 at revision 7, serializably, each on its own\n" +
		"regghost: m0: 100000 keys read in 6.3s; its probe answered in 310µs idle, 2.1ms at worst; paced between 1000\n" +
		"  and 25000 keys a second, backed off 12 times\n" +
		"regghost: m1: 100000 keys read in 6.3s; its probe answered in 300µs idle, read at 2500 keys a second\n" +
		"regghost: comparing the members' leases and member lists\n"
	want := []string{
		"m0: 100000 keys read in 6.3s; its probe answered in 310µs idle, 2.1ms at worst; paced between 1000 and 25000 keys a second, backed off 12 times",
		"m1: 100000 keys read in 6.3s; its probe answered in 300µs idle, read at 2500 keys a second",
	}
	if got := pacedLines(stderr); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestGoalSaid: the members rows are judged against idle's p99, a full
// hash's row is not.
func TestGoalSaid(t *testing.T) {
	puts := func(d time.Duration) []time.Duration { return []time.Duration{d} }
	rows := []latencyRow{
		{name: "idle", puts: puts(10 * time.Millisecond)},
		{name: "regghost members, then regghost members --compare-keys always", puts: puts(14 * time.Millisecond)},
		{name: "serve's comparison (regghost members --compare-keys mismatch)", puts: puts(16 * time.Millisecond)},
		{name: "regghost members --hash full --compare-keys never", puts: puts(900 * time.Millisecond)},
	}
	got := goalSaid(rows)
	for _, w := range []string{"kept by regghost members, then regghost members --compare-keys always (1.40x)",
		"missed by serve's comparison (regghost members --compare-keys mismatch) (1.60x)."} {
		if !strings.Contains(got, w) {
			t.Errorf("%q does not say %q", got, w)
		}
	}
	if strings.Contains(got, "--hash full") {
		t.Errorf("%q judges the full hash", got)
	}
}
