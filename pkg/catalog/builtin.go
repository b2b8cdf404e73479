package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// builtinJSON is the discovery of a stock kube-apiserver (the version the e2e
// suite builds), written by `make catalog` and checked against a live
// kube-apiserver by the e2e suite. It lets scan decide which prefixes are
// served when the API server cannot be reached.
//
//go:embed builtin.json
var builtinJSON []byte

// Builtin returns the resources a stock kube-apiserver serves, without CRDs
// and aggregated APIs.
func Builtin() []Resource {
	var rs []Resource
	if err := json.Unmarshal(builtinJSON, &rs); err != nil {
		panic(fmt.Sprintf("catalog: embedded builtin.json is invalid: %v", err))
	}
	return rs
}

// CustomFromCRDName returns the resource a CustomResourceDefinition named
// "<plural>.<group>" defines. Kind and scope are unknown from the name alone.
func CustomFromCRDName(name string) (Resource, bool) {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			if i == 0 || i == len(name)-1 {
				return Resource{}, false
			}
			return Resource{Group: name[i+1:], Resource: name[:i], Custom: true}, true
		}
	}
	return Resource{}, false
}
