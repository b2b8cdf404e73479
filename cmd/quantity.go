package cmd

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityFlag is a size flag: bytes, or a quantity such as 8Gi (the one
// parser every size flag takes, resource.Quantity's, as kubectl's).
type quantityFlag struct{ v *int64 }

func (q quantityFlag) String() string {
	if q.v == nil {
		return "0"
	}
	return strconv.FormatInt(*q.v, 10)
}

func (q quantityFlag) Set(s string) error {
	n, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size (bytes, or a quantity such as 8Gi)", s)
	}
	// Value rounds a fraction of a byte up: 1.5Gi is whole, 100m is not.
	v := n.Value()
	if n.Cmp(*resource.NewQuantity(v, n.Format)) != 0 {
		return fmt.Errorf("%q is not a whole number of bytes (a quantity such as 8Gi)", s)
	}
	*q.v = v
	return nil
}

func (q quantityFlag) Type() string { return "quantity" }
