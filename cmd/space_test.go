package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpaceRefusesBadInput: bad flags are refused in one line with the
// usage exit code, before anything connects or opens.
func TestSpaceRefusesBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.db")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"negative top", []string{"--top", "-1"}, ExitUsage, "--top must be 0 or more"},
		{"quota not a size", []string{"--quota-backend-bytes", "lots"}, ExitUsage, "--quota-backend-bytes: \"lots\" is not a size"},
		{"quota zero", []string{"--quota-backend-bytes", "0"}, ExitUsage, "--quota-backend-bytes"},
		{"output", []string{"-o", "name"}, ExitUsage, "--output \"name\""},
		{"page size", []string{"--page-size", "0"}, ExitUsage, "--page-size"},
		{"pace", []string{"--max-keys-per-second", "-1"}, ExitUsage, "--max-keys-per-second"},
		{"argument", []string{"extra"}, ExitUsage, "unknown command \"extra\" for \"regghost space\""},
		{"db file missing", []string{"--db", missing}, ExitError, "none.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(append([]string{"space", "--endpoints", "127.0.0.1:1", "--dial-timeout", "100ms"}, tt.args...), strings.NewReader(""), &out, &errOut)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, errOut.String())
			}
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line with %q", errOut.String(), tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
}
