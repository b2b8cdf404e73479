package metricsauth

import "testing"

// TestLoopback: only an address bound to loopback alone is loopback.
func TestLoopback(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:9819":         true,
		"127.1.2.3:9819":         true,
		"[::1]:9819":             true,
		"[::ffff:127.0.0.1]:0":   true,
		"localhost:9819":         true,
		"LOCALHOST:9819":         true,
		":9819":                  false,
		"0.0.0.0:9819":           false,
		"[::]:9819":              false,
		"10.0.0.5:9819":          false,
		"128.0.0.1:9819":         false,
		"localhost.example:9819": false,
		"127.0.0.1":              false, // no port: not a listen address
		"":                       false,
	} {
		if got := Loopback(listen); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", listen, got, want)
		}
	}
}
