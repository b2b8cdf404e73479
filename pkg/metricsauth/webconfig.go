package metricsauth

import (
	"os"

	"sigs.k8s.io/yaml"
)

// WebConfigHasUsers reports whether an exporter-toolkit web configuration
// turns on basic auth.
func WebConfigHasUsers(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var cfg struct {
		Users map[string]any `json:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return false, err
	}
	return len(cfg.Users) > 0, nil
}
