package metricsauth

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// WebConfig is what serve needs to know of an exporter-toolkit web
// configuration file to judge the flags it comes with.
type WebConfig struct {
	// BasicAuth: basic_auth_users guards the endpoint.
	BasicAuth bool
	// TLS: tls_server_config names a certificate, so the endpoint speaks
	// HTTPS (exporter-toolkit's web.Validate checks it can be loaded).
	TLS bool
}

// webConfigFile is the part of the file ReadWebConfig looks at.
type webConfigFile struct {
	Users map[string]any `json:"basic_auth_users"`
	TLS   struct {
		CertFile string `json:"cert_file"`
		Cert     string `json:"cert"`
	} `json:"tls_server_config"`
}

// ReadWebConfig reads an exporter-toolkit web configuration file.
func ReadWebConfig(path string) (WebConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return WebConfig{}, err
	}
	var f webConfigFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return WebConfig{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return WebConfig{BasicAuth: len(f.Users) > 0, TLS: f.TLS.CertFile != "" || f.TLS.Cert != ""}, nil
}
