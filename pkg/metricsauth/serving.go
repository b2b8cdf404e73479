package metricsauth

import (
	"fmt"
	"strings"

	"github.com/prometheus/exporter-toolkit/web"
)

// The values of serve's --metrics-auth.
const (
	// AuthNone lets anyone who reaches the endpoint read /metrics (the web
	// configuration's basic_auth_users still apply).
	AuthNone = "none"
	// AuthDelegated asks the API server to review each scrape's bearer
	// token and whether its user may get the non-resource URL /metrics.
	AuthDelegated = "delegated"
)

// Serving is how serve's endpoint is reached: where it listens, what
// guards it and whether it speaks TLS, as its flags say.
type Serving struct {
	// Listen is --listen-address.
	Listen string
	// WebConfigFile is --web-config-file ("" none); Web is what Check
	// read of it.
	WebConfigFile string
	Web           WebConfig
	// Auth is --metrics-auth (AuthNone or AuthDelegated).
	Auth string
	// CertDir is --cert-dir ("" none).
	CertDir string
	// InsecureHTTP is --insecure-http.
	InsecureHTTP bool
	// NoAPI is --no-api: no API server to review a token.
	NoAPI bool
}

// Check refuses a way of serving that would not work or would send a
// credential in clear, before anything listens, and reads the web
// configuration's TLS and users into s.Web. Its errors name the flags.
func (s *Serving) Check() error {
	if s.WebConfigFile != "" {
		if err := web.Validate(s.WebConfigFile); err != nil {
			return fmt.Errorf("--web-config-file %s: %s", s.WebConfigFile, firstLine(err))
		}
		var err error
		if s.Web, err = ReadWebConfig(s.WebConfigFile); err != nil {
			return fmt.Errorf("--web-config-file %s: %s", s.WebConfigFile, firstLine(err))
		}
	}
	switch s.Auth {
	case AuthNone:
	case AuthDelegated:
		if s.NoAPI {
			return fmt.Errorf("--metrics-auth=delegated asks the API server to review each scrape; it cannot go with --no-api (use --metrics-auth=none, with --web-config-file)")
		}
		if s.Web.BasicAuth {
			return fmt.Errorf("--web-config-file %s sets basic_auth_users and --metrics-auth=delegated asks for a bearer token: a scraper sends one Authorization header, so none could pass both (keep the file's TLS, drop its users, or use --metrics-auth=none)", s.WebConfigFile)
		}
	default:
		return fmt.Errorf("--metrics-auth must be %q or %q, got %q", AuthDelegated, AuthNone, s.Auth)
	}
	return s.checkTLS()
}

// checkTLS: no credential crosses the network in clear. Whenever the
// endpoint takes one (a bearer token under delegated auth, or the web
// configuration's basic_auth_users under either mode) it speaks TLS
// (--cert-dir, or the web configuration's tls_server_config), or plain
// HTTP on loopback when --insecure-http says so.
func (s *Serving) checkTLS() error {
	if s.CertDir != "" && s.Web.TLS {
		return fmt.Errorf("--cert-dir serves a certificate of its own and --web-config-file %s has a tls_server_config: give TLS one way (drop --cert-dir, or the file's tls_server_config)", s.WebConfigFile)
	}
	tlsOn := ""
	switch {
	case s.CertDir != "":
		tlsOn = "--cert-dir"
	case s.Web.TLS:
		tlsOn = "--web-config-file's tls_server_config"
	}
	credential := ""
	switch {
	case s.Auth == AuthDelegated:
		credential = "--metrics-auth=delegated takes bearer tokens, which"
	case s.Web.BasicAuth:
		credential = "--web-config-file " + s.WebConfigFile + " sets basic_auth_users: their passwords"
	}
	if s.InsecureHTTP {
		switch {
		case !Loopback(s.Listen):
			return fmt.Errorf("--insecure-http needs a loopback --listen-address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT), got %q: elsewhere credentials would cross the network in clear; serve TLS with --cert-dir DIR instead", s.Listen)
		case credential == "":
			return fmt.Errorf("--insecure-http only goes with credentials (--metrics-auth=delegated, or a --web-config-file with basic_auth_users): nothing is sent in clear without them, drop it")
		case tlsOn != "":
			return fmt.Errorf("--insecure-http asks for plain HTTP and %s turns TLS on: drop one", tlsOn)
		}
		return nil
	}
	if credential != "" && tlsOn == "" {
		return fmt.Errorf("%s must not cross the network in clear: serve TLS with --cert-dir DIR (a self-signed certificate, made and renewed there) or a --web-config-file with tls_server_config (or, on a loopback --listen-address only, add --insecure-http)", credential)
	}
	return nil
}

// firstLine is err's first line: a YAML error quotes the file after it.
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
