package nodeconfig

import (
	"bytes"
	"os"
	"sort"
	"strings"
)

// Flag names of the settings Fill merges, as regghost (and etcdctl) spell
// them.
const (
	FlagEndpoints        = "endpoints"
	FlagCACert           = "cacert"
	FlagCert             = "cert"
	FlagKey              = "key"
	FlagPrefix           = "etcd-prefix"
	FlagEncryptionConfig = "encryption-provider-config"
)

// Flags are the flag names of every setting Fill merges.
var Flags = []string{FlagEndpoints, FlagCACert, FlagCert, FlagKey, FlagPrefix, FlagEncryptionConfig}

// Settings are the values regghost reads etcd with.
type Settings struct {
	Endpoints        []string
	CACert           string
	Cert             string
	Key              string
	Prefix           string
	EncryptionConfig string
}

// Given names, by flag name (FlagPrefix, ...), where each setting the user
// chose came from: "--prefix" for a flag, "ETCDCTL_ENDPOINTS" for a
// variable. A setting not in Given was not given.
type Given map[string]string

// Merged is what Fill decided.
type Merged struct {
	// Settings are the values to use.
	Settings Settings
	// Line says in one line what is used and where each setting came from
	// (a flag, a variable, the default, or the node's file).
	Line string
	// Notes are given settings that disagree with the node's
	// kube-apiserver, one sentence each.
	Notes []string
}

// Where a setting came from, besides the name of a flag or variable.
const (
	fromNode    = ""
	fromDefault = "default"
)

// Fill takes from f each setting that given does not hold. cur holds the
// values of the given settings and the defaults of the others; a default is
// kept when the node has no value for it. The client certificate and key are
// one setting: when either is given, neither is taken from the node, since a
// key only works with its own certificate.
func Fill(cur Settings, given Given, f *Found) Merged {
	s := cur
	origin := map[string]string{}
	take := func(name string, node bool, set func()) {
		switch {
		case given[name] != "":
			origin[name] = given[name]
		case node:
			set()
			origin[name] = fromNode
		default:
			origin[name] = fromDefault
		}
	}
	take(FlagEndpoints, len(f.Endpoints) > 0, func() { s.Endpoints = append([]string{}, f.Endpoints...) })
	take(FlagCACert, f.CACert != "", func() { s.CACert = f.CACert })
	pairGiven := given[FlagCert] != "" || given[FlagKey] != ""
	take(FlagCert, !pairGiven && f.Cert != "", func() { s.Cert = f.Cert })
	take(FlagKey, !pairGiven && f.Key != "", func() { s.Key = f.Key })
	take(FlagPrefix, f.Prefix != "", func() { s.Prefix = f.Prefix })
	take(FlagEncryptionConfig, f.EncryptionConfig != "", func() { s.EncryptionConfig = f.EncryptionConfig })
	return Merged{Settings: s, Line: line(s, origin, f), Notes: notes(s, given, f)}
}

// item is one setting as the line names it.
type item struct{ text, origin string }

// line says what is used: each setting given with the flag or variable it
// came from (and each default as "default"), then what the node gave, if
// anything, as one group naming the file it was read from.
func line(s Settings, origin map[string]string, f *Found) string {
	var items []item
	add := func(text, origin string) { items = append(items, item{text, origin}) }
	add("etcd "+strings.Join(s.Endpoints, ","), origin[FlagEndpoints])
	// The CA goes with the client certificate; it is named only when it
	// came from elsewhere, or there is no client certificate.
	if s.CACert != "" && (s.Cert == "" || group(origin[FlagCACert]) != group(origin[FlagCert])) {
		add("CA "+s.CACert, origin[FlagCACert])
	}
	if s.Cert != "" {
		o := origin[FlagCert]
		if k := origin[FlagKey]; group(k) == "given" && isFlag(k) != isFlag(o) {
			o += ", " + k
		}
		add("client certificate "+s.Cert, o)
	}
	add("prefix "+s.Prefix, origin[FlagPrefix])
	if s.EncryptionConfig != "" {
		add("encryption config "+s.EncryptionConfig, origin[FlagEncryptionConfig])
	}
	if len(f.Overrides) > 0 {
		add("other etcds for "+strings.Join(sorted(f.Overrides), ", "), fromNode)
	}
	var parts, node []string
	for _, it := range items {
		if it.origin != fromNode {
			parts = append(parts, it.text+" ("+it.origin+")")
		}
	}
	for _, it := range items {
		if it.origin == fromNode {
			node = append(node, it.text)
		}
	}
	if len(node) > 0 {
		parts = append(parts, and(node)+" (from "+f.Source+")")
	}
	return "using " + strings.Join(parts, ", ")
}

// group is where a setting came from: the node, the defaults, or the user.
func group(origin string) string {
	if origin == fromNode || origin == fromDefault {
		return origin
	}
	return "given"
}

// isFlag says whether origin is a command-line flag rather than a variable.
func isFlag(origin string) bool { return strings.HasPrefix(origin, "--") }

// sorted is a sorted copy of s.
func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// and joins "a", "b", "c" as "a, b and c".
func and(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// notes say where a given setting disagrees with the node: a prefix other
// than kube-apiserver's makes every key look missing, and an encryption
// config other than kube-apiserver's may not decrypt what it wrote.
func notes(s Settings, given Given, f *Found) []string {
	var out []string
	if o := given[FlagPrefix]; o != "" && f.Prefix != "" && s.Prefix != f.Prefix {
		out = append(out, "note: kube-apiserver on this node uses prefix "+f.Prefix+" ("+f.Source+"); using "+s.Prefix+" from "+o)
	}
	if o := given[FlagEncryptionConfig]; o != "" && f.EncryptionConfig != "" && s.EncryptionConfig != "" && !sameFile(s.EncryptionConfig, f.EncryptionConfig) {
		out = append(out, "note: kube-apiserver on this node uses encryption config "+f.EncryptionConfig+"; using "+s.EncryptionConfig+" from "+o+", which differs")
	}
	return out
}

// sameFile says whether a and b are one path or hold the same bytes. A file
// that cannot be read is not the same.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	da, err := os.ReadFile(a)
	if err != nil {
		return false
	}
	db, err := os.ReadFile(b)
	return err == nil && bytes.Equal(da, db)
}
