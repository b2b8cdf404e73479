// Package flagnames names the command-line flags that more than one library
// package tells a person to add when it refuses something, so that a
// refusal, the flag cmd defines, and the test that checks one against the
// other all spell a flag from the same constant. It imports nothing, so any
// package may use it.
//
// Each name carries its leading "--", as a refusal writes it; cmd defines
// the flag with the name without it (strings.TrimPrefix(name, "--")).
package flagnames

const (
	// IntoRecreated writes keys (restore) or objects (recover) into a
	// namespace or CustomResourceDefinition deleted and created again since
	// the source, which they would join without ever having belonged to it.
	IntoRecreated = "--into-recreated"

	// AcceptSingleWitness lets a ghost verdict (purge) or a gone reference
	// (dangling, unstick) that only etcd could confirm, the API server not
	// answering or not asked, be acted on.
	AcceptSingleWitness = "--accept-single-witness"
)
