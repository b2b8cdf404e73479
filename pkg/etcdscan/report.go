package etcdscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// ReadReport reads a report written by `regghost scan -o json`: the reviewed
// scan a purge may be limited to.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read reviewed scan: %w", err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("reviewed scan %s is not a `regghost scan -o json` report: %w", path, err)
	}
	if rep.Prefix == "" || rep.Revision == 0 {
		return nil, errors.New("reviewed scan " + path + " has no prefix or revision; is it a `regghost scan -o json` report?")
	}
	return &rep, nil
}
