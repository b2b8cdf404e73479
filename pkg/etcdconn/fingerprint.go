package etcdconn

import "github.com/regghost/regghost/pkg/filesum"

// TLSFingerprint is a digest of the names and content of the TLS files
// (CA, client certificate and key): it changes when any is rewritten on
// disk. A client opened before keeps the certificate it presented on its
// connections; etcd's client library reads the files again at each new
// TLS handshake, so connecting afresh presents the new one.
func (c *Config) TLSFingerprint() string { return filesum.Of(c.CACert, c.Cert, c.Key) }
