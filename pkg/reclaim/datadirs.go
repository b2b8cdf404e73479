package reclaim

import (
	"path/filepath"
	"strings"

	"github.com/regghost/regghost/pkg/usage"
)

// ParseDataDirs reads --data-dir: NAME=DIR, or DIR alone once (the member
// on this node); a value that is neither is a usage error.
func ParseDataDirs(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		name, dir, ok := strings.Cut(v, "=")
		if !ok {
			name, dir = "", v
		}
		if dir == "" || (ok && name == "") {
			return nil, usage.Errorf("--data-dir %q: want NAME=DIR or DIR", v)
		}
		if _, dup := out[name]; dup {
			return nil, usage.Errorf("--data-dir: given twice for %s", orThisNode(name))
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, usage.Errorf("--data-dir %q: %v", v, err)
		}
		out[name] = abs
	}
	return out, nil
}

func orThisNode(name string) string {
	if name == "" {
		return "the member on this node"
	}
	return "member " + name
}
