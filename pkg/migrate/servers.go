package migrate

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/apiview"
)

// Servers are the kube-apiservers a migration asked, and those it could
// not ask with why: every one listed in the default/kubernetes Service's
// EndpointSlices is asked on its own address, and where none of them
// answers from here (a bastion that reaches only the load balancer) the
// address the kubeconfig names is asked instead, as one server of which it
// is not known which answered.
type Servers struct {
	Asked []Server `json:"asked"`
	// NotAsked are the servers (or the list of them) that could not be
	// asked, each with why.
	NotAsked []string `json:"notAsked,omitempty"`
}

// Server is one kube-apiserver that answered, by its address.
type Server struct {
	Address string `json:"address"`
	Version string `json:"version"`
	// Through says it was asked through the kubeconfig's address, not its
	// own (the others did not answer from here).
	Through bool          `json:"through,omitempty"`
	View    *apiview.View `json:"-"`
}

// AskServers asks every kube-apiserver of the control plane its version,
// and never fails: what could not be asked is named in NotAsked.
func AskServers(ctx context.Context, view *apiview.View) *Servers {
	s := &Servers{}
	peers, err := view.Peers(ctx)
	if err != nil {
		s.NotAsked = append(s.NotAsked, "the other kube-apiservers: "+err.Error())
	}
	if len(peers) > 1 {
		for _, p := range peers {
			version, err := p.Version()
			if err != nil {
				s.NotAsked = append(s.NotAsked, p.Address()+": "+oneLine(err.Error()))
				continue
			}
			s.Asked = append(s.Asked, Server{Address: p.Address(), Version: version, View: p})
		}
		if len(s.Asked) > 0 {
			return s
		}
	}
	version, err := view.Version()
	if err != nil {
		s.NotAsked = append(s.NotAsked, view.Address()+": "+oneLine(err.Error()))
		return s
	}
	s.Asked = append(s.Asked, Server{Address: view.Address(), Version: version, View: view, Through: len(peers) > 1})
	return s
}

// Views are the servers that answered.
func (s *Servers) Views() []*apiview.View {
	if s == nil {
		return nil
	}
	var out []*apiview.View
	for _, a := range s.Asked {
		out = append(out, a.View)
	}
	return out
}

// Unasked says which servers were not asked ("" when every one was).
func (s *Servers) Unasked() string {
	if s == nil || len(s.NotAsked) == 0 {
		return ""
	}
	return strings.Join(s.NotAsked, "; ")
}

// StoreAt refuses unless every kube-apiserver was asked and each says (by
// its discovery's storageVersionHash) that it stores gr at version as
// kind: one whose CRD cache still holds the old storage version would
// write it after the count, so status.storedVersions is narrowed only
// when none can.
func (s *Servers) StoreAt(ctx context.Context, gr schema.GroupResource, version, kind string) error {
	if s == nil {
		return fmt.Errorf("the API servers were not asked where they store %s", gr)
	}
	if u := s.Unasked(); u != "" {
		return fmt.Errorf("not every kube-apiserver could be asked where it stores %s (%s): one of them may still write an old version", gr, u)
	}
	for _, a := range s.Asked {
		st, served, err := a.View.StoredResource(ctx, gr, nil)
		if err != nil {
			return fmt.Errorf("kube-apiserver %s was not asked where it stores %s: %w", a.Address, gr, err)
		}
		at, said := st.StoredAt(schema.GroupVersion{Group: gr.Group, Version: version}.String(), kind)
		switch {
		case !served:
			return fmt.Errorf("kube-apiserver %s does not serve %s yet", a.Address, gr)
		case !said:
			return fmt.Errorf("kube-apiserver %s does not say where it stores %s (no storageVersionHash)", a.Address, gr)
		case !at:
			return fmt.Errorf("kube-apiserver %s still stores %s at %s, not %s", a.Address, gr, orUnsaid(st), version)
		}
	}
	return nil
}

// oneLine is s on one line, its runs of white space as one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
