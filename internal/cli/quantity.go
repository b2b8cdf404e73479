package cli

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Quantity is a size flag's value: bytes, or a quantity such as 8Gi (the
// one parser every size flag takes, resource.Quantity's, as kubectl's).
type Quantity struct{ V *int64 }

func (q Quantity) String() string {
	if q.V == nil {
		return "0"
	}
	return strconv.FormatInt(*q.V, 10)
}

// Set parses s into the size.
func (q Quantity) Set(s string) error {
	n, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size (bytes, or a quantity such as 8Gi)", s)
	}
	// Value rounds a fraction of a byte up: 1.5Gi is whole, 100m is not.
	v := n.Value()
	if n.Cmp(*resource.NewQuantity(v, n.Format)) != 0 {
		return fmt.Errorf("%q is not a whole number of bytes (a quantity such as 8Gi)", s)
	}
	*q.V = v
	return nil
}

// Type names the flag's kind in its errors.
func (q Quantity) Type() string { return "quantity" }
