// Package history reads the revisions etcd still holds of a key, a
// namespace or a prefix, live (from a watch since the compacted revision) or
// from a db file (every revision since the file's compaction), and says what
// changed at each: the object's metadata fields, deletes, and for a
// namespace the moment its key was deleted with objects still in it (the
// moment they became ghosts).
package history

import (
	"errors"
	"fmt"
	"strings"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// Selection says which keys a history covers: exactly one of Key,
// Namespace and Prefix.
type Selection struct {
	// Registry is kube-apiserver's etcd prefix, ending in "/".
	Registry string `json:"registry"`
	// Key is one etcd key.
	Key string `json:"key,omitempty"`
	// Namespace is a namespace: its key and every object in it, built-in
	// or custom (/registry/<group>/<resource>/<namespace>/<name>).
	Namespace string `json:"namespace,omitempty"`
	// Prefix is every key under it.
	Prefix string `json:"prefix,omitempty"`
}

// Validate checks that one of Key, Namespace and Prefix is given.
func (s Selection) Validate() error {
	n := 0
	for _, v := range []string{s.Key, s.Namespace, s.Prefix} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return errors.New("give one key, one namespace or one prefix")
	}
	if s.Namespace != "" && strings.Contains(s.Namespace, "/") {
		return fmt.Errorf("namespace %q holds a /", s.Namespace)
	}
	return nil
}

// NamespaceKey is the key of the selected namespace ("" without one).
func (s Selection) NamespaceKey() string {
	if s.Namespace == "" {
		return ""
	}
	return etcdscan.ObjectKey(s.Registry, "namespaces", "", s.Namespace)
}

// Match reports whether key is selected. For a namespace it parses the key
// as kube-apiserver lays keys out, so a custom resource's key counts as
// well as a pod's, and a namespace whose name merely starts the same does
// not.
func (s Selection) Match(key []byte) bool {
	switch {
	case s.Key != "":
		return string(key) == s.Key
	case s.Prefix != "":
		return strings.HasPrefix(string(key), s.Prefix)
	}
	k := string(key)
	if !strings.HasPrefix(k, s.Registry) || !strings.Contains(k, "/"+s.Namespace) {
		return false // cheap refusals first: most keys of a file go here
	}
	if k == s.NamespaceKey() {
		return true
	}
	pk, err := etcdscan.ParseKey(s.Registry, k)
	return err == nil && pk.Namespace == s.Namespace
}

// watchRange is the key range a live watch of the selection reads: the
// key, the prefix, or for a namespace the whole registry (its objects are
// under every resource's prefix), filtered by Match.
func (s Selection) watchRange() (key string, prefix bool) {
	switch {
	case s.Key != "":
		return s.Key, false
	case s.Prefix != "":
		return s.Prefix, true
	}
	return s.Registry, true
}

// String names the selection.
func (s Selection) String() string {
	switch {
	case s.Key != "":
		return "key " + s.Key
	case s.Prefix != "":
		return "prefix " + s.Prefix
	}
	return "namespace " + s.Namespace + " (its key and every object in it)"
}

// ParseArgs reads history's arguments: a key, a prefix (ending in "/"),
// a key or prefix under registry given without it, or none (namespace
// selects). An object named as kubectl names one (TYPE NAME, or TYPE/NAME:
// one slash, not a key) is returned as target instead, for resolving once
// etcd can be read; namespace is then that object's, not the selection.
func ParseArgs(registry, namespace string, args []string) (sel Selection, target []string) {
	sel = Selection{Registry: registry, Namespace: namespace}
	if isObjectTarget(args) {
		sel.Namespace = ""
		return sel, args
	}
	if len(args) == 1 {
		arg := args[0]
		if !strings.HasPrefix(arg, "/") {
			arg = registry + arg
		}
		if strings.HasSuffix(arg, "/") {
			sel.Prefix = arg
		} else {
			sel.Key = arg
		}
	}
	return sel, nil
}

// isObjectTarget says whether args name an object as kubectl does (TYPE
// NAME, or TYPE/NAME: one slash, not a key), rather than a key or a prefix.
func isObjectTarget(args []string) bool {
	switch len(args) {
	case 2:
		return true
	case 1:
		a := args[0]
		return !strings.HasPrefix(a, "/") && strings.Count(a, "/") == 1 && !strings.HasSuffix(a, "/")
	}
	return false
}
