// Command jsondecode is the baseline decoder for the benchmark: it reads
// `etcdctl get --prefix -w json` from stdin, as a user piping etcdctl into a
// script would, decodes every value with regghost's decoder and prints the
// number of objects decoded.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/regghost/regghost/pkg/decode"
)

func main() {
	var resp struct {
		Kvs []struct {
			Key   []byte `json:"key"`
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&resp); err != nil {
		fmt.Fprintln(os.Stderr, "jsondecode:", err)
		os.Exit(1)
	}
	n := 0
	for _, kv := range resp.Kvs {
		if _, err := decode.Meta(kv.Value); err == nil {
			n++
		}
	}
	fmt.Fprintln(os.Stderr, n)
}
