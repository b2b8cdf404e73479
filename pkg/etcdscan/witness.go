package etcdscan

import (
	"fmt"
	"strings"
)

// Witness names who was asked about a verdict.
type Witness string

// The witnesses. etcd is the keyspace itself at the scan's revision (keys,
// value bytes, the namespace and CRD keys, and the kube-apiserver release
// catalog of what can be stored there); the API server is the other witness
// (GET of the object, its namespace or its CRD, and discovery). For
// encrypted values the first witness is the EncryptionConfiguration given
// with --encryption-provider-config.
const (
	WitnessEtcd             Witness = "etcd"
	WitnessAPIServer        Witness = "api-server"
	WitnessEncryptionConfig Witness = "encryption-config"
)

// Answer is what a witness's reply means for a verdict.
type Answer string

// Answers.
const (
	// Confirms: the witness saw what the verdict says.
	Confirms Answer = "confirms"
	// Contradicts: the witness saw the object alive or readable.
	Contradicts Answer = "contradicts"
	// NoEvidence: the witness could not be asked, or its reply proves
	// nothing either way (a timeout, a KMS plugin down, a 403).
	NoEvidence Answer = "no-evidence"
)

// Evidence is one witness's answer about one class of a finding.
type Evidence struct {
	Class   Class   `json:"class"`
	Witness Witness `json:"witness"`
	// Asked says what was looked at: a key at a revision, a GET, discovery.
	Asked  string `json:"asked"`
	Answer Answer `json:"answer"`
	// Said is the witness's reply in words.
	Said string `json:"said"`
}

// The rule per ghost class (README "Two witnesses"):
//
//	class               first witness (etcd side)                 second witness (API server)
//	undecodable         value bytes do not decode                 GET fails with "object not decodable"/corrupt object
//	encrypted-unknown   --encryption-provider-config cannot        GET fails with "no matching prefix found",
//	                    decrypt it                                 "identity transformer tried to read encrypted data"
//	                                                               or a deterministic cipher error (not a KMS call)
//	unserved-type       no CRD key and no compiled-in resource     discovery does not serve it and GET of the CRD is 404
//	                    stores under the prefix
//	orphaned-namespace  no namespace key (and the keyspace holds   GET of the namespace is 404
//	                    the cluster's namespaces)
//	key-mismatch        the object inside disagrees with the key   GET returns the other name, or cannot decode it;
//	                                                               discovery gives the scope
//
// A class stands when its first witness confirms it and the second does not
// contradict it. If the second confirms too, the verdict has two witnesses;
// if it could not be asked, the verdict is single-witness. If a second
// witness contradicts any ghost class, the finding is disputed: a suspect
// with both answers in its reason, never a ghost.

// addEvidence records a witness's answer about class c.
func (f *Finding) addEvidence(c Class, w Witness, asked string, a Answer, said string) {
	f.Evidence = append(f.Evidence, Evidence{Class: c, Witness: w, Asked: asked, Answer: a, Said: said})
}

// verdict adds class c on its first witness's confirmation.
func (f *Finding) verdict(c Class, w Witness, asked, said string) {
	f.add(c, said)
	f.addEvidence(c, w, asked, Confirms, said)
}

// settle applies the two-witness rule once every witness has answered.
func (f *Finding) settle() {
	var disputes, others []string
	confirmed := false
	for i, c := range f.Classes {
		if !c.Ghost() {
			continue
		}
		confirms := map[Witness]bool{}
		var against *Evidence
		apiAsked := false
		for j, e := range f.Evidence {
			if e.Class != c {
				continue
			}
			apiAsked = apiAsked || e.Witness == WitnessAPIServer
			switch e.Answer {
			case Confirms:
				confirms[e.Witness] = true
			case Contradicts:
				against = &f.Evidence[j]
			}
		}
		switch {
		case against != nil:
			disputes = append(disputes, fmt.Sprintf("%s (%s), but %s contradicts it (%s: %s)", c, f.Reasons[i], against.Witness, against.Asked, against.Said))
		case len(confirms) >= 2:
			confirmed = true
			others = append(others, string(c)+": "+f.Reasons[i])
		default:
			if !apiAsked {
				f.addEvidence(c, WitnessAPIServer, "-", NoEvidence, "not asked")
			}
			others = append(others, string(c)+": "+f.Reasons[i])
		}
	}
	if len(disputes) > 0 {
		reason := "witnesses disagree: " + strings.Join(disputes, "; ")
		if len(others) > 0 {
			reason += "; also " + strings.Join(others, "; ")
		}
		var classes []Class
		var reasons []string
		for i, c := range f.Classes {
			if !c.Ghost() {
				classes, reasons = append(classes, c), append(reasons, f.Reasons[i])
			}
		}
		f.Classes, f.Reasons = classes, reasons
		f.add(ClassDisputed, reason)
	}
	f.Ghost = false
	for _, c := range f.Classes {
		f.Ghost = f.Ghost || c.Ghost()
	}
	f.SingleWitness = f.Ghost && !confirmed
}

// Witnesses describes, in a few words, who stands behind a finding.
func (f *Finding) Witnesses() string {
	switch {
	case !f.Ghost:
		return "-"
	case f.SingleWitness:
		for _, e := range f.Evidence {
			if e.Answer == NoEvidence && e.Class.Ghost() {
				return fmt.Sprintf("single (%s: %s)", e.Witness, e.Said)
			}
		}
		return "single"
	}
	return "two"
}
