package etcdscan

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/plural"
)

// confirmation is one object the API server is asked to read: the second
// witness of the classes etcd gave it, or, for an encrypted value nobody
// could decrypt locally (probe), the only one who can say it is unreadable.
type confirmation struct {
	key     string
	res     *catalog.Resource
	ns      string
	name    string
	classes []Class
	enc     *decode.Encryption
	probe   bool
	// f is the finding so far of a probe: it is recorded only when the API
	// server proves the value unreadable. Nil for the others, so that a
	// scan with many findings does not hold a copy of each.
	f *Finding
}

var (
	namespacesResource = catalog.Resource{Version: "v1", Resource: "namespaces"}
	crdResourceAPI     = catalog.Resource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// apiTally counts what the second witness answered, for the report.
type apiTally struct {
	asked, noEvidence int
	why               map[string]int
}

func (t *apiTally) note(e Evidence) {
	t.asked++
	if e.Answer == NoEvidence {
		t.noEvidence++
		t.why[e.Said]++
	}
}

// confirmWithAPI asks the API server about every ghost verdict etcd made:
// the namespace of each orphaned object, the CRD of each unserved custom
// resource, and each undecodable, undecryptable or mis-keyed object.
func (s *scan) confirmWithAPI(ctx context.Context) error {
	if s.opts.API == nil {
		return nil
	}
	tally := &apiTally{why: map[string]int{}}
	nsAnswers := map[string]Evidence{}
	crdAnswers := map[string]Evidence{}
	err := s.found.each(func(f *Finding) error {
		if f.Has(ClassOrphanedNamespace) {
			e, ok := nsAnswers[f.Namespace]
			if !ok {
				e = s.askNamespace(ctx, f.Namespace)
				nsAnswers[f.Namespace] = e
				tally.note(e)
			}
			f.addEvidence(ClassOrphanedNamespace, e.Witness, e.Asked, e.Answer, e.Said)
		}
		if f.Has(ClassUnservedType) {
			if _, asked := f.answerFrom(ClassUnservedType, WitnessAPIServer); !asked {
				prefix, _ := prefixOf(s.opts.Prefix, f.Key)
				crdName := s.resolve(prefix).crdName
				e, ok := crdAnswers[crdName]
				if !ok {
					e = s.askCRD(ctx, prefix, crdName)
					crdAnswers[crdName] = e
					tally.note(e)
				}
				f.addEvidence(ClassUnservedType, e.Witness, e.Asked, e.Answer, e.Said)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range s.confirm {
		if err := s.askObject(ctx, c, tally); err != nil {
			return err
		}
	}
	s.apiTally = tally
	return nil
}

// queueConfirmation keeps ask for the API server, up to --api-check-limit
// of them; past it, f's classes say they were not asked.
func (s *scan) queueConfirmation(ask confirmation, f *Finding) {
	if ask.res == nil || (len(ask.classes) == 0 && !ask.probe) || s.opts.API == nil {
		return
	}
	if len(s.confirm) >= s.opts.APICheckLimit {
		s.unconfirmed++
		if ask.probe {
			s.unprobed++
		}
		for _, cl := range ask.classes {
			f.addEvidence(cl, WitnessAPIServer, "-", NoEvidence, fmt.Sprintf("not asked: over --api-check-limit %d", s.opts.APICheckLimit))
		}
		return
	}
	if ask.probe {
		probe := *f
		ask.f = &probe
	}
	s.confirm = append(s.confirm, ask)
}

// answerFrom returns the answer a witness gave about class c.
func (f *Finding) answerFrom(c Class, w Witness) (Evidence, bool) {
	for _, e := range f.Evidence {
		if e.Class == c && e.Witness == w {
			return e, true
		}
	}
	return Evidence{}, false
}

func (s *scan) askNamespace(ctx context.Context, ns string) Evidence {
	asked := "GET namespaces/" + ns
	m, err := s.opts.API.Get(ctx, namespacesResource, "", ns)
	a := readAnswer(err, nil)
	switch a.kind {
	case apiRead:
		return Evidence{Witness: WitnessAPIServer, Asked: asked, Answer: Contradicts,
			Said: fmt.Sprintf("namespace %s exists (uid %s, created %s): this keyspace may hold only part of the cluster, or the namespace was created since the scan", ns, m.UID, m.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"))}
	case apiNotFound:
		return Evidence{Witness: WitnessAPIServer, Asked: asked, Answer: Confirms, Said: "404 NotFound"}
	}
	return Evidence{Witness: WitnessAPIServer, Asked: asked, Answer: NoEvidence, Said: a.said}
}

func (s *scan) askCRD(ctx context.Context, prefix, crdName string) Evidence {
	asked := fmt.Sprintf("discovery of %s and GET customresourcedefinitions/%s", s.opts.API.Address(), crdName)
	m, err := s.opts.API.Get(ctx, crdResourceAPI, "", crdName)
	a := readAnswer(err, nil)
	switch a.kind {
	case apiRead:
		return Evidence{Witness: WitnessAPIServer, Asked: asked, Answer: Contradicts,
			Said: fmt.Sprintf("CustomResourceDefinition %s exists (uid %s) though etcd holds no key for it: the API server may read another etcd or --etcd-prefix", crdName, m.UID)}
	case apiNotFound:
		return Evidence{Witness: WitnessAPIServer, Asked: asked, Answer: Confirms,
			Said: fmt.Sprintf("serves nothing stored under %s/, and the CustomResourceDefinition is 404 NotFound", prefix)}
	}
	return Evidence{Witness: WitnessAPIServer, Asked: asked, Answer: NoEvidence, Said: a.said}
}

// askObject reads one object through the API server and records what that
// says about each class etcd gave it.
func (s *scan) askObject(ctx context.Context, c confirmation, tally *apiTally) error {
	asked := fmt.Sprintf("GET %s %s", c.res.GroupResource(), nsName(c.ns, c.name))
	m, err := s.opts.API.Get(ctx, *c.res, c.ns, c.name)
	a := readAnswer(err, c.enc)
	if c.probe {
		tally.asked++
		switch a.kind {
		case apiCannotTransform:
			local := "no --encryption-provider-config was given"
			if c.enc.Provider == "kms" {
				local = "KMS values cannot be decrypted without the KMS plugin"
			}
			reason := fmt.Sprintf("encrypted with %s key %q and the API server cannot decrypt it: %s", c.enc.Provider, c.enc.KeyName, a.said)
			answer, how, said := s.everyAPIServer(ctx, c, asked, a.said)
			return s.record(*c.f, func(f *Finding) {
				f.add(ClassEncryptedUnknown, reason)
				f.addEvidence(ClassEncryptedUnknown, WitnessAPIServer, how, answer, said)
				f.addEvidence(ClassEncryptedUnknown, WitnessEncryptionConfig, "--encryption-provider-config", NoEvidence, local)
			})
		case apiRead:
		default:
			tally.noEvidence++
			tally.why[a.said]++
			s.unprobed++
		}
		return nil
	}
	var evidence []Evidence
	for _, cl := range c.classes {
		e := Evidence{Class: cl, Witness: WitnessAPIServer, Asked: asked, Answer: NoEvidence, Said: a.said}
		switch {
		case a.kind == apiRead && cl == ClassKeyMismatch && (m.Name != c.name || m.Namespace != c.ns):
			e.Answer, e.Said = Confirms, "returns an object named "+nsName(m.Namespace, m.Name)
		case a.kind == apiNotFound:
			e.Answer, e.Said = Contradicts, "404 NotFound for a key etcd holds: the API server reads another etcd or --etcd-prefix, or the object went since the scan"
		case a.kind == apiRead:
			e.Answer, e.Said = Contradicts, fmt.Sprintf("reads it (uid %s, resourceVersion %s)", m.UID, m.ResourceVersion)
			if cl == ClassEncryptedUnknown {
				e.Said += "; the local --encryption-provider-config is stale or wrong"
			}
		case a.kind == apiCannotTransform && cl == ClassEncryptedUnknown:
			e.Answer, e.Asked, e.Said = s.everyAPIServer(ctx, c, asked, a.said)
		case a.kind == apiCannotDecode && (cl == ClassUndecodable || cl == ClassKeyMismatch):
			e.Answer = Confirms
		}
		evidence = append(evidence, e)
	}
	return s.update(c.key, func(f *Finding) {
		for _, e := range evidence {
			tally.note(e)
			f.addEvidence(e.Class, e.Witness, e.Asked, e.Answer, e.Said)
		}
	})
}

// everyAPIServer asks each kube-apiserver of an HA control plane to read
// an encrypted value the API server could not decrypt: the answer that
// came through the kubeconfig's address may be the one whose encryption
// config is stale. One that reads it contradicts the verdict; one that
// cannot be asked leaves it without a second witness.
func (s *scan) everyAPIServer(ctx context.Context, c confirmation, asked, said string) (Answer, string, string) {
	if s.opts.APIServers == nil {
		return Confirms, asked, said
	}
	if s.peers == nil {
		s.peers = &peerList{}
		s.peers.list, s.peers.err = s.opts.APIServers(ctx)
	}
	asked += ", then on every kube-apiserver (the endpoints of default/kubernetes)"
	if s.peers.err != nil {
		return NoEvidence, asked, said + "; but the kube-apiservers cannot be listed, and another may read it: " + s.peers.err.Error()
	}
	if len(s.peers.list) == 0 {
		return Confirms, asked, said + "; the default/kubernetes Service lists no kube-apiserver (--endpoint-reconciler-type=none), so this one is the only one known"
	}
	var names []string
	for _, p := range s.peers.list {
		_, err := p.Get(ctx, *c.res, c.ns, c.name)
		a := readAnswer(err, c.enc)
		switch a.kind {
		case apiCannotTransform:
			names = append(names, p.Address())
		case apiRead:
			return Contradicts, asked, said + "; but kube-apiserver " + p.Address() + " reads it: the encryption config of the one that cannot is stale (an HA control plane out of step)"
		default:
			return NoEvidence, asked, said + "; but kube-apiserver " + p.Address() + " could not be asked (" + a.said + "), and it may read it"
		}
	}
	return Confirms, asked, fmt.Sprintf("%s; every kube-apiserver fails to decrypt it (%s)", said, strings.Join(names, ", "))
}

// peerList is every kube-apiserver, listed once per scan.
type peerList struct {
	list []APIChecker
	err  error
}

// apiCheck reports what the second witness could and could not answer.
func (s *scan) apiCheck() Check {
	if s.opts.API == nil {
		return Check{Name: "api server witness", Done: false,
			Note: "not asked (" + s.opts.APIUnavailable + "): every ghost verdict rests on etcd alone and is single-witness"}
	}
	t := s.apiTally
	note := fmt.Sprintf("%s to %s", plural.Of(t.asked, "question"), s.opts.API.Address())
	done := t.noEvidence == 0 && s.unconfirmed == 0
	if t.noEvidence > 0 {
		var whys []string
		for w, n := range t.why {
			whys = append(whys, fmt.Sprintf("%d× %s", n, w))
		}
		sort.Strings(whys)
		note += fmt.Sprintf("; %s no evidence either way: %s", plural.Verb(t.noEvidence, "answer", "was", "were"), strings.Join(whys, "; "))
	}
	if s.unconfirmed > 0 {
		note += fmt.Sprintf("; %s not asked (over --api-check-limit %d)", plural.Of(s.unconfirmed, "object"), s.opts.APICheckLimit)
	}
	if s.unprobed > 0 {
		note += fmt.Sprintf("; %s could not be judged", plural.Of(s.unprobed, "encrypted value"))
	}
	return Check{Name: "api server witness", Done: done, Note: note}
}

// checkSameCluster makes sure the API server fronts this etcd before it is
// taken as a witness: its kube-system namespace must be the one stored here
// (same UID). A kubeconfig that points at another cluster would otherwise
// "confirm" every orphan with a 404. When it does not match, the scan goes
// on as if the API server could not be asked.
func (s *scan) checkSameCluster(ctx context.Context) error {
	if s.opts.API == nil {
		return nil
	}
	key := s.opts.Prefix + "namespaces/kube-system"
	kv, err := s.store.Get(ctx, key)
	if err != nil || kv == nil {
		return err
	}
	live, err := s.opts.API.Get(ctx, namespacesResource, "", "kube-system")
	if err != nil {
		return nil
	}
	storedUID, readable := s.kubeSystemUID(ctx, key, kv.Value)
	switch {
	case readable && string(live.UID) == storedUID:
		return nil
	case readable:
		s.opts.APIUnavailable = fmt.Sprintf("the API server at %s belongs to another cluster: its kube-system namespace has uid %s, this etcd's has uid %s (check --kubeconfig and --context)",
			s.opts.API.Address(), live.UID, storedUID)
	case live.ResourceVersion == fmt.Sprint(kv.ModRevision):
		// The value cannot be read here, but the API server's
		// resourceVersion is this key's mod revision: it reads this etcd.
		return nil
	default:
		s.opts.APIUnavailable = fmt.Sprintf("the API server at %s cannot be matched to this etcd: kube-system is encrypted and cannot be read here (pass --encryption-provider-config), and its resourceVersion %s is not the key's mod revision %d (check --kubeconfig and --context)",
			s.opts.API.Address(), live.ResourceVersion, kv.ModRevision)
	}
	s.opts.API, s.opts.Served = nil, nil
	s.types.Served = nil
	s.verdicts = map[string]typeVerdict{}
	s.rep.Catalog = catalogSource(s.opts)
	return nil
}

// kubeSystemUID reads the UID stored in the kube-system namespace's value,
// decrypting it with --encryption-provider-config when it is encrypted.
func (s *scan) kubeSystemUID(ctx context.Context, key string, value []byte) (string, bool) {
	obj, err := decode.Meta(value)
	if err == nil && obj.Encryption != nil && s.opts.Decrypter != nil {
		plain, derr := s.opts.Decrypter.Decrypt(ctx, key, schema.GroupResource{Resource: "namespaces"}, value)
		if derr != nil {
			return "", false
		}
		obj, err = decode.Meta(plain)
	}
	if err != nil || obj.Encryption != nil || obj.Meta.UID == "" {
		return "", false
	}
	return string(obj.Meta.UID), true
}
