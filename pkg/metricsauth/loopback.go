package metricsauth

import (
	"net"
	"net/netip"
	"strings"
)

// Loopback reports whether a listen address (host:port) binds a loopback
// address only: an IP in 127.0.0.0/8 or ::1, or the name localhost. An
// address without a host (":9819") binds every interface and is not.
func Loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
