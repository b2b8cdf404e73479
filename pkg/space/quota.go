package space

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ParseQuota reads a quota given on the command line: bytes, or a quantity
// such as 8Gi.
func ParseQuota(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Value() <= 0 {
		return 0, fmt.Errorf("%q is not a positive size (bytes, or a quantity such as 8Gi)", s)
	}
	return q.Value(), nil
}
