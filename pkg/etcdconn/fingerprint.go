package etcdconn

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
)

// TLSFingerprint is a digest of the names and content of the TLS files
// (CA, client certificate and key): it changes when any is rewritten on
// disk. A client opened before keeps the certificate it presented on its
// connections; etcd's client library reads the files again at each new
// TLS handshake, so connecting afresh presents the new one.
func (c *Config) TLSFingerprint() string {
	h := sha256.New()
	for _, f := range []string{c.CACert, c.Cert, c.Key} {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(h, "%s\x00unreadable\x00", f)
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
